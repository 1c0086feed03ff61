"""The analysis keeps each partition's window sums between polls (`analysis._windows`):
what it judges with them is what summing every partition's activity again says, as
writes come and slots leave the window."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from partdash.health import recent
from partdash.health.partitions import PartitionState
from partdash.metrics.analysis import PollConditions, table_health, window
from partdash.metrics.models import PartitionedTable

START = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)


def activity(writes: dict[int, int], now: datetime, before: list) -> list:
    """Each partition's stored activity after a poll at `now` that saw `writes` (index ->
    bytes written), as the store keeps it: a partition that did nothing keeps its text,
    slots that left the window included (`store._recorded`)."""
    seconds = window().total_seconds()
    texts = []
    for i, text in enumerate(before):
        deltas = [writes.get(i, 0), 0, writes.get(i, 0) // 100, writes.get(i, 0) // 50]
        if not any(deltas):
            texts.append(text)
            continue
        texts.append(
            recent.dumps(recent.record(recent.loads(text), deltas, now.timestamp(), seconds))
        )
    return texts


def health_at(table, states, texts, now, memo=None):
    """The table's health at `now` on a 16 KiB page, 1 GiB buffer pool server."""
    conditions = PollConditions(now=now, page_size=16384, buffer_pool=1 << 30)
    return table_health(table, conditions, states=states, recents=texts, windows=memo)


def test_window_sums_kept_between_polls_judge_what_summing_them_again_judges():
    table = PartitionedTable(schema="s", name="t", method="HASH", expression="`id`")
    states = [PartitionState(f"p{i}", ordinal=i, rows=1000 + 40 * i) for i in range(16)]
    texts: list = [None] * len(states)
    memo: dict = {}
    now = START
    seconds = window().total_seconds()
    # Polls every 7 minutes for three windows: a write burst, quiet, then one partition.
    for poll in range(int(3 * seconds // 420)):
        now = START + timedelta(seconds=420 * poll)
        if poll < 4:
            writes = {i: 4096 * (i + 1) for i in range(0, 16, 3)}
        elif poll % 5 == 0 and poll > 12:
            writes = {2: 1 << 20}
        else:
            writes = {}
        texts = activity(writes, now, texts)
        remembered = health_at(table, states, texts, now, memo)
        summed_again = health_at(table, states, texts, now)
        assert remembered == summed_again, poll
    assert memo  # kept: partitions still had activity in the window at the end


def test_a_memo_of_another_time_or_window_is_not_used():
    """Sums kept at a later time, or for another window length, are summed again."""
    table = PartitionedTable(schema="s", name="t", method="HASH", expression="`id`")
    states = [PartitionState("p0"), PartitionState("p1", ordinal=1)]
    texts = activity({0: 5000}, START, [None, None])
    later = START + timedelta(seconds=window().total_seconds() + 600)
    memo: dict = {}
    health_at(table, states, texts, later, memo)  # nothing in the window
    earlier = health_at(table, states, texts, START, memo)
    assert earlier == health_at(table, states, texts, START)
    assert earlier["written"]["partitions"] == 1


def test_skew_verdicts_kept_between_polls_are_judged_again_when_the_statistics_change(
    monkeypatch,
):
    """`analysis._skews`: a table whose partitions' I/O and activity moved but not their
    statistics keeps its verdicts (judge_skew is not run); any change to what skew is
    judged on (rows, sizes, their age, a partition's name or bound) judges again, and
    every verdict equals one judged afresh."""
    from partdash.metrics import analysis

    judged = []
    real = analysis.judge_skew
    monkeypatch.setattr(analysis, "judge_skew", lambda *args: judged.append(args[2]) or real(*args))
    table = PartitionedTable(schema="s", name="t", method="HASH", expression="`id`")
    states = [
        PartitionState(f"p{i}", ordinal=i, rows=2000, data_bytes=1 << 21, index_bytes=0)
        for i in range(8)
    ]
    texts: list = [None] * len(states)
    windows: dict = {}
    skews: dict = {}

    def health(states, texts, now):
        at = PollConditions(now=now, page_size=16384, buffer_pool=1 << 30)
        kept = table_health(table, at, states=states, recents=texts, windows=windows, skews=skews)
        assert kept == table_health(table, at, states=states, recents=texts), now
        return kept

    first = health(states, texts, START)
    assert judged == ["rows", "bytes"] * 2 and not first["skew"]["is_finding"]
    # Written: activity and I/O move, statistics not recalculated yet.
    judged.clear()
    now = START + timedelta(minutes=1)
    texts = activity({0: 1 << 20, 3: 4096}, now, texts)
    io = [replace(s, file_bytes=(s.file_bytes or 0) + 16384) for s in states]
    health(io, texts, now)
    assert judged == ["rows", "bytes"]  # the afresh comparison's only
    # InnoDB recalculated p0's statistics: judged again, and now uneven.
    judged.clear()
    recalculated = [replace(io[0], rows=9000, stats_updated_at=now), *io[1:]]
    skewed = health(recalculated, texts, now + timedelta(minutes=1))
    assert judged == ["rows", "bytes"] * 2
    assert skewed["skew"]["is_finding"] and skewed["skew"]["largest"] == "p0"
    # A partition renamed, and a method changed, are no longer what was judged either.
    for changed_table, changed_states in (
        (table, [replace(recalculated[0], name="q0"), *recalculated[1:]]),
        (PartitionedTable(schema="s", name="t", method="KEY", expression="`id`"), recalculated),
    ):
        judged.clear()
        table = changed_table
        health(changed_states, texts, now + timedelta(minutes=2))
        assert judged == ["rows", "bytes"] * 2

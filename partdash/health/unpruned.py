"""The `pruning` finding: statements that read every partition of a table.

A statement with no predicate on the partitioning column reads every partition, each a
B-tree to descend: slower than the same table unpartitioned. From the table's statement
digests and their verdicts (`health.pruning.judge`, or the server's EXPLAIN), the finding
names those that read all partitions, worst first by their share of the table's rows
examined and statement time (the larger of the two), with advice that names the column
the table is partitioned on and the predicate to add; where most of them filter on one
other column, that the table may be partitioned on the wrong key.

- A finding where statements that read every partition take at least `FINDING_SHARE`
  (1%) of the table's rows examined or time: a rare administrator's scan is not one.
- Critical from `CRITICAL_SHARE` (half), else a warning.
- The alert `pruning` fires past `PARTDASH_ALERT_PRUNING_SHARE` (10% by default) and is
  critical past `PARTDASH_ALERT_PRUNING_CRITICAL_SHARE` (half).

Statements `some`, `one` or `unknown` count in the table's totals, never as unpruned:
never a guess called a fact. The advice is words only: no statement partdash could run
rewrites an application's queries or repartitions a table safely.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from partdash.health.alerting import Condition
from partdash.health.findings import Finding, Severity
from partdash.health.fixes import Fix
from partdash.health.kinds import AlertSpec, Figure, FindingKind, Observed, Setting, register
from partdash.health.pruning import StatementVerdict, columns_of

FINDING_SHARE = 0.01
CRITICAL_SHARE = 0.5
NAMED = 3  # statements quoted in the advice (the stored health keeps 10)
KEPT = 10
QUOTED_CHARACTERS = 160  # of a digest text in the message and the advice
# The alert's thresholds: shares of the table's rows examined or statement time.
ALERT_SHARE = Setting("PARTDASH_ALERT_PRUNING_SHARE", 0.1)
ALERT_CRITICAL_SHARE = Setting("PARTDASH_ALERT_PRUNING_CRITICAL_SHARE", 0.5)


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def statement_share(statement: StatementVerdict, rows: float, seconds: float) -> float:
    """One statement's share of the table's rows examined or time, the larger."""
    return max(_share(statement.rows_examined, rows), _share(statement.seconds, seconds))


def unpruned(statements: Sequence[StatementVerdict]) -> list[tuple[StatementVerdict, float]]:
    """The statements that read every partition, with their shares, worst first."""
    rows = sum(s.rows_examined for s in statements)
    seconds = sum(s.seconds for s in statements)
    found = [
        (s, statement_share(s, rows, seconds))
        for s in statements
        # One partition is all there is to read: nothing to prune.
        if s.verdict.prunes == "all" and s.calls > 0 and s.verdict.partitions_total > 1
    ]
    return sorted(found, key=lambda pair: (-pair[1], pair[0].digest))


def shares(statements: Sequence[StatementVerdict]) -> tuple[float, float]:
    """(rows examined, time): the unpruned statements' shares of the table's."""
    reading = [s for s, _ in unpruned(statements)]
    return (
        _share(sum(s.rows_examined for s in reading), sum(s.rows_examined for s in statements)),
        _share(sum(s.seconds for s in reading), sum(s.seconds for s in statements)),
    )


def other_key(reading: Sequence[StatementVerdict], partitioned_on: Sequence[str]) -> str | None:
    """The column most of the unpruned statements filter on instead, if one does."""
    counts = Counter(
        column
        for s in reading
        for column in set(s.verdict.filters_on)
        if column not in partitioned_on
    )
    column, count = counts.most_common(1)[0] if counts else (None, 0)
    return column if count * 2 > len(reading) else None


def _text(statement: StatementVerdict) -> str:
    text = " ".join(statement.text.split())
    return text if len(text) <= QUOTED_CHARACTERS else text[: QUOTED_CHARACTERS - 3] + "..."


def _quoted(names: Sequence[str]) -> str:
    return " and ".join(f"`{name}`" for name in names) or "its partitioning expression"


def pruning_finding(seen: Observed) -> Finding | None:
    """The table's statements that read all its partitions, or None (no statement read,
    or they all prune, or those that do not are a rounding error)."""
    statements = seen.statements or []
    reading = unpruned(statements)
    rows_share, time_share = shares(statements)
    share = max(rows_share, time_share)
    if not reading or share < FINDING_SHARE:
        return None
    severity: Severity = "critical" if share >= CRITICAL_SHARE else "warning"
    total = reading[0][0].verdict.partitions_total
    worst = reading[0][0]
    return Finding(
        "pruning",
        severity,
        (100.0 if severity == "critical" else 10.0) + 50 * share,
        f"{len(reading)} statement(s) read all {total} partitions: {rows_share:.0%} of the "
        f"rows examined on the table, {time_share:.0%} of its statement time; worst: "
        f"{_text(worst)} ({worst.calls:,} calls)",
        _fix(seen, [s for s, _ in reading]),
    )


def _predicate(seen: Observed, partitioned_on: Sequence[str]) -> str:
    """The predicate that prunes: HASH and KEY prune on equalities only (on every column),
    RANGE on ranges of the first column too."""
    method = (seen.facts.method or "").upper()
    if "HASH" in method or "KEY" in method or ("LIST" in method and partitioned_on[1:]):
        return f"an equality or an IN list on {_quoted(partitioned_on)}"
    return f"an equality, an IN list or a range on {_quoted(partitioned_on[:1])}"


def _fix(seen: Observed, reading: Sequence[StatementVerdict]) -> Fix:
    partitioned_on = columns_of(seen.facts.expression or "")
    named = "; ".join(_text(s) for s in reading[:NAMED])
    more = f" (and {len(reading) - NAMED} more)" if len(reading) > NAMED else ""
    predicate = _predicate(seen, partitioned_on)
    advice = (
        f"The table is partitioned on {_quoted(partitioned_on)}: add {predicate} "
        f"to the statements that read every partition, so MySQL reads only the partitions "
        f"it names: {named}{more}."
    )
    column = other_key(reading, partitioned_on)
    if column is not None:
        advice += (
            f" Most of them filter on `{column}` instead: the table may be partitioned on "
            f"the wrong key."
        )
    return Fix(advice)


def stored(seen: Observed) -> dict[str, Any] | None:
    """What the table's health keeps of its statements (None: never read)."""
    if seen.statements is None:
        return None
    statements = seen.statements
    reading = unpruned(statements)
    rows_share, time_share = shares(statements)
    return {
        "statements": len(statements),
        "unpruned": len(reading),
        "rows_share": rows_share,
        "time_share": time_share,
        "share": max(rows_share, time_share),
        "worst": [
            {
                "digest": s.digest,
                "text": s.text,
                "calls": s.calls,
                "rows_examined": s.rows_examined,
                "seconds": s.seconds,
                "share": share,
            }
            for s, share in reading[:KEPT]
        ],
    }


Health = Mapping[str, Any]


def _condition(health: Health, finding: Health | None, settings: Health) -> Condition:
    """The unpruned statements' share of the table's rows examined or time against
    PARTDASH_ALERT_PRUNING_SHARE; critical past PARTDASH_ALERT_PRUNING_CRITICAL_SHARE."""
    share = (health.get("pruning") or {}).get("share") if finding else 0.0
    critical = share is not None and share >= settings[ALERT_CRITICAL_SHARE.name]
    return Condition(
        value=share,
        limit=settings[ALERT_SHARE.name],
        holds=finding is not None,
        severity="critical" if critical else "warning",
        message=(finding or {}).get("message") or "every statement prunes",
        fix=(finding or {}).get("fix"),
    )


def _urgency(finding: Health, health: Health) -> tuple[str, float]:
    """The largest share first."""
    share = (health.get("pruning") or {}).get("share") or 0.0
    return f"{share:.0%} of its statements' cost reads every partition", -share


def _unpruned_count(health: Health) -> float | None:
    found = health.get("pruning")
    return found.get("unpruned") if found else None


register(
    FindingKind(
        "pruning",
        "Statements reading every partition",
        urgency=8.5,  # after skew (8): both ask for a change of design, not maintenance
        analyse=pruning_finding,
        alert=AlertSpec(
            "table",
            "share of the table's rows examined or statement time spent in statements that "
            "read every partition (the pruning finding)",
            "ratio",
            judge=_condition,
            reads=(ALERT_SHARE, ALERT_CRITICAL_SHARE),
        ),
        figures=(
            Figure(
                "table_unpruned_statements",
                "Statement digests that read every partition of the table (absent: its "
                "statements were never read).",
                _unpruned_count,
                paths=(("pruning", "unpruned"),),
            ),
        ),
        within=_urgency,
        stores=stored,
    )
)

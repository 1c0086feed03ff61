"""Stored snapshots of what polls saw.

Polls are stored compactly: `ServerSnapshot` is one row per poll; `PartitionedTable` and
`Partition` hold each table's definition and its partitions' latest figures; the sample
tables get a row only when a partition's figures changed since its last sample.
Counters (I/O, compression) are stored raw, so rates can be derived across resets.
"""

import re
from datetime import UTC

from django.core.exceptions import ValidationError
from django.db import NotSupportedError, models
from django.db.models import OuterRef, Subquery

from partdash.lib.fields import ClippedCharField
from partdash.lib.folding import folded
from partdash.mysql import figures

# The figures a PartitionSample records (each NULL when unchanged), as the registry of
# partition figures declares them (`partdash.mysql.figures`): each is a column of its name
# on Partition and PartitionSample below.
SIZE_FIGURES = figures.sampled("size")
ACTIVITY_FIGURES = figures.sampled("activity")
COMPRESSION_FIGURES = figures.sampled("compression")
SAMPLED_FIGURES = SIZE_FIGURES + ACTIVITY_FIGURES + COMPRESSION_FIGURES


def aware(value):
    """A time read with raw SQL (naive from SQLite and MySQL, which hold UTC) as UTC."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


# Disk bytes (physical) and rows changed (logical) per second between a server's last
# two polls: stored on `Partition` by the poll that last changed the partition.
RATES = ("read_bytes_per_s", "write_bytes_per_s", "rows_changed_per_s")


def current_rates(partition: dict, polled_at) -> dict:
    """A partition's stored row (`values()`: its RATES and `changed_at`) with its rates
    as of its server's latest poll (`polled_at`, that poll's `taken_at`, read before the
    partitions: a poll stored between the two reads then shows the partitions it wrote
    at its rates and the others at the previous poll's, never every partition at 0).

    A poll that finds a partition standing still does not write its rates back to 0 (a
    written 64,000-partition poll would update the ~600 partitions written the poll
    before): its stored rates are those of the poll that last changed it (`changed_at`,
    which every poll storing a rate that is not 0 sets to its own time), so a partition
    that did not change at the latest poll moved at 0. A rate not known stays unknown."""
    changed_at = partition["changed_at"]
    if polled_at is not None and changed_at is not None and changed_at < polled_at:
        for name in RATES:
            if partition[name] is not None:
                partition[name] = 0.0
    return partition


class LiveQuerySet(models.QuerySet):
    """Tables and partitions, which are kept (with their history) once dropped."""

    def live(self) -> "LiveQuerySet":
        """Those the server still has."""
        return self.filter(dropped_at=None)


class FindingCount(models.Func):
    """How many findings a table's stored health holds (0 for none), counted by the
    database: a page of the fleet's findings counts them all and reads only the tables
    it shows."""

    output_field = models.IntegerField()
    arity = 1
    template = (  # MySQL, MariaDB
        "CASE WHEN JSON_TYPE(JSON_EXTRACT(%(expressions)s, '$.findings')) = 'ARRAY' "
        "THEN JSON_LENGTH(%(expressions)s, '$.findings') ELSE 0 END"
    )

    def as_sqlite(self, compiler, connection, **extra):  # 0 for a non-array, NULL if absent
        template = "COALESCE(json_array_length(%(expressions)s, '$.findings'), 0)"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_postgresql(self, compiler, connection, **extra):
        template = (
            "CASE WHEN jsonb_typeof(%(expressions)s -> 'findings') = 'array' "
            "THEN jsonb_array_length(%(expressions)s -> 'findings') ELSE 0 END"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


_KEY = re.compile(r"[a-z_]+")


class HealthValues(models.Func):
    """On PostgreSQL, the values at `paths` in a table's stored health (each a path of
    keys; null where absent) and its findings' (kind, severity), as one small JSON array:
    `[value, ..., [[kind, severity], ...]]`. What /metrics needs of a table, read without
    sending and decoding its whole health (1-2 KB, most of it the findings' fixes): at
    9,000 tables with findings, most of a whole scrape's time."""

    output_field = models.JSONField()
    arity = 1

    def __init__(self, expression, paths: list[tuple[str, ...]], **extra) -> None:
        for path in paths:  # written into the statement: the code's own key names only
            if not path or not all(_KEY.fullmatch(key) for key in path):
                raise ValueError(f"not a path of health keys: {path!r}")
        self.paths = paths
        super().__init__(expression, **extra)

    def as_sql(self, compiler, connection, **extra):
        raise NotSupportedError("HealthValues is PostgreSQL's alone")

    def as_postgresql(self, compiler, connection, **extra):
        values = [f"h #> '{{{','.join(path)}}}'" for path in self.paths]
        findings = (
            "(SELECT COALESCE(jsonb_agg(jsonb_build_array(f -> 'kind', f -> 'severity')), "
            "'[]'::jsonb) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(h -> 'findings') "
            "= 'array' THEN h -> 'findings' ELSE '[]'::jsonb END) AS f)"
        )
        # A health over 2 KB is stored compressed, and each operator on the column would
        # decompress it again: `|| '{}'` decompresses it once, behind OFFSET 0 (which
        # keeps the planner from putting the expression back in each place). 8,135
        # tables: 210-280 ms of the server's time, against 600-970 ms naming the column
        # in each place and 280 ms to send the whole health as text.
        template = (
            f"(SELECT jsonb_build_array({', '.join([*values, findings])}) "
            "FROM (SELECT %(expressions)s || '{}'::jsonb AS h OFFSET 0) AS health)"
        )
        return super().as_sql(compiler, connection, template=template, **extra)


class SnapshotQuerySet(models.QuerySet):
    def latest_for(self, server) -> "SnapshotQuerySet":
        """A server's polls, newest first (`server`: a Server, an id or an OuterRef):
        `.first()` is its latest."""
        return self.filter(server=server).order_by("-taken_at")

    def latest_of(self, server_ids: "list[int] | models.QuerySet | None") -> "SnapshotQuerySet":
        """Each server's latest snapshot (of `server_ids`, a list or a query of them,
        else of every server), in one
        query: found from the servers, an index probe each, never by reading every
        snapshot they have (1,440 a day a server at the default interval)."""
        servers = self.model._meta.get_field("server").related_model.objects.all()
        if server_ids is not None:
            servers = servers.filter(pk__in=server_ids)
        newest = self.model.objects.latest_for(OuterRef("pk")).values("pk")[:1]
        return self.filter(pk__in=servers.annotate(newest=Subquery(newest)).values("newest"))


class ServerSnapshot(models.Model):
    """One poll of one server: settings, status counters and what the poll saw."""

    class Resolution(models.TextChoices):
        RAW = "raw", "Every poll"
        HOUR = "hour", "Hourly"
        DAY = "day", "Daily"

    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="snapshots")
    taken_at = models.DateTimeField(db_index=True)
    poll_id = models.CharField(max_length=64, unique=True)
    resolution = models.CharField(max_length=4, choices=Resolution, default=Resolution.RAW)
    flavor = models.CharField(max_length=10)
    version = ClippedCharField(max_length=100)
    variables = models.JSONField(default=dict)
    status_counters = models.JSONField(default=dict)
    innodb_cmp = models.JSONField(default=list)
    sources = models.JSONField(default=dict)
    partitioned_tables = models.PositiveIntegerField(null=True)
    partitions = models.PositiveIntegerField(null=True)
    changed = models.PositiveIntegerField(default=0)
    definitions_read = models.PositiveIntegerField(default=0)
    # The server clock (epoch s) as of which every statistics refresh was read.
    stats_watermark = models.BigIntegerField(null=True)
    files_cover_partitions = models.BooleanField(default=False)
    warnings = models.JSONField(default=list)
    seconds = models.FloatField(default=0)
    # Partitions against the server's limits, the written working set against the buffer
    # pool, server-wide findings: written by `partdash.metrics.analysis` after each poll.
    pressure = models.JSONField(default=dict)

    objects = SnapshotQuerySet.as_manager()

    class Meta:
        ordering = ["-taken_at"]
        get_latest_by = "taken_at"
        indexes = [models.Index(fields=["server", "taken_at"])]

    def __str__(self) -> str:
        return f"{self.server} at {self.taken_at:%Y-%m-%d %H:%M:%S}"


class PartitionedTable(models.Model):
    """A partitioned table on a monitored server, with its definition and latest totals."""

    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="tables")
    schema = models.CharField(max_length=64)
    name = models.CharField(max_length=64)
    method = ClippedCharField(max_length=20, blank=True)
    expression = models.TextField(blank=True)
    subpartition_method = ClippedCharField(max_length=20, blank=True)
    subpartition_expression = models.TextField(blank=True)
    create_options = models.TextField(blank=True)
    signature = models.CharField(max_length=40, blank=True)
    # What the table's layout is, comparable across servers (`health.drift.layout_digest`:
    # the method, expressions, partition names and bounds): written with its definitions,
    # so a server group's members are compared by this alone until two differ.
    layout = models.CharField(max_length=40, blank=True)
    partition_count = models.PositiveIntegerField(default=0)
    first_seen_at = models.DateTimeField()
    definitions_read_at = models.DateTimeField(null=True)
    dropped_at = models.DateTimeField(null=True, blank=True)
    # Written by `partdash.metrics.analysis` after each poll, so lists read one row per
    # table: totals over live partitions, the health figures and findings, their score.
    total_rows = models.BigIntegerField(null=True)
    total_data_bytes = models.BigIntegerField(null=True)
    total_index_bytes = models.BigIntegerField(null=True)
    total_file_bytes = models.BigIntegerField(null=True)
    health = models.JSONField(default=dict)
    activity = models.JSONField(null=True)  # shares of the window's I/O, per partition
    score = models.FloatField(default=0, db_index=True)
    analysed_at = models.DateTimeField(null=True)
    # Whether /metrics shows this table's partitions one by one (an operator opts in): a
    # 64,000-partition server otherwise stays at one series per table per figure.
    export_partitions = models.BooleanField(
        default=False, help_text="Show each partition's figures in /metrics."
    )
    # The schema and name as search compares them (`lib.folding.folded`: no accents, no
    # case), kept by `save`, so a search for "ete" finds `commandes_été` on every
    # metadata store (SQLite, MySQL and PostgreSQL fold accents each its own way, or not).
    folded_schema = models.CharField(max_length=200, blank=True, editable=False)
    folded_name = models.CharField(max_length=200, blank=True, editable=False)

    objects = LiveQuerySet.as_manager()

    class Meta:
        ordering = ["schema", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "schema", "name"], name="table_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}"

    def save(self, *args, **kwargs) -> None:
        self.folded_schema, self.folded_name = folded(self.schema), folded(self.name)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and {"schema", "name"} & set(update_fields):
            kwargs["update_fields"] = {*update_fields, "folded_schema", "folded_name"}
        super().save(*args, **kwargs)


class Partition(models.Model):
    """One partition (or subpartition) and its latest figures. `key` is the lower-cased
    `partition#subpartition` used to match the sources' spellings."""

    table = models.ForeignKey(PartitionedTable, on_delete=models.CASCADE, related_name="partitions")
    key = models.CharField(max_length=200)
    name = models.CharField(max_length=64)
    subpartition = models.CharField(max_length=64, blank=True)
    ordinal = models.PositiveIntegerField(default=0)
    subpartition_ordinal = models.PositiveIntegerField(null=True)
    description = models.TextField(null=True)  # noqa: DJ001 NULL: HASH/KEY have no bound
    row_format = ClippedCharField(max_length=20, blank=True)
    page_size = models.PositiveIntegerField(null=True)
    space_id = models.BigIntegerField(null=True)
    # Latest figures (estimates from the persistent statistics and the tablespace list).
    rows = models.BigIntegerField(null=True)
    data_bytes = models.BigIntegerField(null=True)
    index_bytes = models.BigIntegerField(null=True)
    file_bytes = models.BigIntegerField(null=True)
    allocated_bytes = models.BigIntegerField(null=True)
    stats_updated_at = models.DateTimeField(null=True)
    modified_counter = models.BigIntegerField(null=True)
    autoinc = models.BigIntegerField(null=True)
    # Latest raw counters, and the rates derived from the previous poll.
    read_ops = models.BigIntegerField(null=True)
    write_ops = models.BigIntegerField(null=True)
    read_bytes = models.BigIntegerField(null=True)
    write_bytes = models.BigIntegerField(null=True)
    # Microseconds the server waited on reads of the partition's file (a counter).
    read_wait_us = models.BigIntegerField(null=True)
    # The file's other operations (opens, closes, flushes): a counter the store reads
    # table reopens' header-page reads from (`metrics.store`); not sampled.
    misc_ops = models.BigIntegerField(null=True)
    read_bytes_per_s = models.FloatField(null=True)
    write_bytes_per_s = models.FloatField(null=True)
    # Rows the application changed per second (MODIFIED_COUNTER's delta: logical).
    rows_changed_per_s = models.FloatField(null=True)
    compress_ops = models.BigIntegerField(null=True)
    compress_ops_ok = models.BigIntegerField(null=True)
    compress_time = models.BigIntegerField(null=True)
    uncompress_ops = models.BigIntegerField(null=True)
    uncompress_time = models.BigIntegerField(null=True)
    changed_at = models.DateTimeField(null=True)
    dropped_at = models.DateTimeField(null=True, blank=True)
    # What each recent poll saw the partition do, per time slot (compact text, see
    # `partdash.health.recent`): the hotspot and compression window, with its baseline.
    recent = models.TextField(null=True)  # noqa: DJ001 NULL: nothing recent

    objects = LiveQuerySet.as_manager()

    class Meta:
        ordering = ["ordinal", "subpartition_ordinal"]
        constraints = [models.UniqueConstraint(fields=["table", "key"], name="partition_key")]

    def __str__(self) -> str:
        return f"{self.table}#{self.name}" + (f"#{self.subpartition}" if self.subpartition else "")


class UnmonitoredTable(models.Model):
    """A partitioned table of an engine partdash does not monitor (MyISAM, Aria, MEMORY...),
    as of the poll that last listed them (after DDL): counted in the server's totals and
    its file and cache pressure, listed on the server page, never analysed."""

    server = models.ForeignKey(
        "servers.Server", on_delete=models.CASCADE, related_name="unmonitored"
    )
    schema = ClippedCharField(max_length=64)
    name = ClippedCharField(max_length=64)
    engine = ClippedCharField(max_length=64)
    partitions = models.PositiveIntegerField()
    rows = models.BigIntegerField(null=True)
    data_bytes = models.BigIntegerField(null=True)
    index_bytes = models.BigIntegerField(null=True)
    files = models.PositiveIntegerField(default=0)  # data and index files of its partitions
    read_at = models.DateTimeField()

    class Meta:
        ordering = ["schema", "name"]

    def __str__(self) -> str:
        return f"{self.schema}.{self.name} ({self.engine})"


class PartitionSample(models.Model):
    """What changed in one partition at one poll. Only the figures that changed since the
    partition's previous sample are stored; the others are NULL (unchanged), which keeps
    a poll of 64,000 mostly idle partitions down to a few rows."""

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, db_index=False)
    snapshot = models.ForeignKey(ServerSnapshot, on_delete=models.CASCADE, db_index=False)
    rows = models.BigIntegerField(null=True)
    data_bytes = models.BigIntegerField(null=True)
    index_bytes = models.BigIntegerField(null=True)
    file_bytes = models.BigIntegerField(null=True)
    allocated_bytes = models.BigIntegerField(null=True)
    read_ops = models.BigIntegerField(null=True)
    write_ops = models.BigIntegerField(null=True)
    read_bytes = models.BigIntegerField(null=True)
    write_bytes = models.BigIntegerField(null=True)
    read_wait_us = models.BigIntegerField(null=True)
    modified_counter = models.BigIntegerField(null=True)
    compress_ops = models.BigIntegerField(null=True)
    compress_ops_ok = models.BigIntegerField(null=True)
    compress_time = models.BigIntegerField(null=True)
    uncompress_ops = models.BigIntegerField(null=True)
    uncompress_time = models.BigIntegerField(null=True)

    class Meta:
        indexes = [models.Index(fields=["partition", "snapshot"])]

    def __str__(self) -> str:
        return f"partition {self.partition_id} at poll {self.snapshot_id}"


class PollBucket(models.Model):
    """One server's polls over one 5 minutes, hour or day (`partdash.metrics.rollups`):
    when its last poll was, and the seconds its counters' deltas cover."""

    class Width(models.TextChoices):
        MINUTES_5 = "5min", "5 minutes"
        HOUR = "hour", "Hourly"
        DAY = "day", "Daily"

    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="+")
    width = models.CharField(max_length=4, choices=Width)
    start = models.DateTimeField()
    taken_at = models.DateTimeField()  # its last poll
    seconds = models.FloatField(null=True)  # from the poll before it to its last poll
    polls = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["server", "width", "start"], name="bucket_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server_id} {self.width} from {self.start:%Y-%m-%d %H:%M}"


class TableRollup(models.Model):
    """What a table's partitions did in one bucket, one list per figure, each aligned with
    `partitions` (the ids of those that did something; the others did nothing): the
    last sampled levels and counters (null: not sampled in it) and the counters' deltas
    summed over the bucket's polls (null: nothing to compare with yet). One row per
    table and bucket, one column per figure: a chart of 300 buckets reads 300 rows and
    the one list it draws."""

    bucket = models.ForeignKey(PollBucket, on_delete=models.CASCADE, db_index=False)
    table = models.ForeignKey(PartitionedTable, on_delete=models.CASCADE, db_index=False)
    partitions = models.JSONField()
    rows = models.JSONField(null=True)
    data_bytes = models.JSONField(null=True)
    index_bytes = models.JSONField(null=True)
    file_bytes = models.JSONField(null=True)
    modified_counter = models.JSONField(null=True)
    write_bytes = models.JSONField(null=True)
    read_bytes = models.JSONField(null=True)
    rows_changed = models.JSONField(null=True)
    write_bytes_delta = models.JSONField(null=True)
    read_bytes_delta = models.JSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["table", "bucket"], name="rollup_per_table_bucket")
        ]

    def __str__(self) -> str:
        return f"table {self.table_id} in bucket {self.bucket_id}"


class RollupCursor(models.Model):
    """Which of a table's buckets of one width are stored: those starting from
    `first_start` and before `next_start`."""

    table = models.ForeignKey(PartitionedTable, on_delete=models.CASCADE, related_name="+")
    width = models.CharField(max_length=4, choices=PollBucket.Width)
    first_start = models.DateTimeField()
    next_start = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["table", "width"], name="cursor_per_table")]

    def __str__(self) -> str:
        return f"table {self.table_id} {self.width} rolled up to {self.next_start}"


class RetentionPolicy(models.Model):
    """How long a DBA keeps the partitions of the tables a `schema.table` glob names: days
    (time RANGE tables) or a number of partitions (any RANGE table). partdash only shows
    the partitions past it and the DROP PARTITION that enforces it
    (`partdash.health.retention`); it never drops anything. `server` null: every server."""

    pattern = models.CharField(
        max_length=200,
        help_text="schema.table, with * ? [..] wildcards (shop.events_*, *.audit): the "
        "schema part matches the schema, the table part the table; case-sensitive where "
        "the server's lower_case_table_names is 0.",
    )
    keep_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Keep this many days (time RANGE tables)."
    )
    keep_partitions = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Keep the newest this many partitions holding data (id RANGE tables).",
    )
    server = models.ForeignKey(
        "servers.Server",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="retention_policies",
        help_text="Empty: every server.",
    )
    name = models.CharField(max_length=100, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pattern", "id"]
        verbose_name_plural = "retention policies"

    def __str__(self) -> str:
        keep = (
            f"{self.keep_days} days"
            if self.keep_days is not None
            else f"{self.keep_partitions} partitions"
        )
        return f"{self.pattern}: keep {keep}"

    def clean(self) -> None:
        problem = policy_problem(self.pattern, self.keep_days, self.keep_partitions)
        if problem:
            raise ValidationError(problem)


def policy_problem(pattern: str | None, keep_days, keep_partitions) -> str | None:
    """Why a retention policy cannot stand, in one line, or None."""
    text = (pattern or "").strip()
    if not text:
        return "give a pattern: schema.table, with * and ? wildcards (shop.events_*, *.audit)"
    if text.count(".") > 1:
        return f"the pattern {text!r} has more than one dot: give schema.table"
    if (keep_days is None) == (keep_partitions is None):
        return "give exactly one of keep_days and keep_partitions"
    keep = keep_days if keep_days is not None else keep_partitions
    if keep < 1:
        return "keep_days and keep_partitions must be at least 1"
    if keep_days is not None and keep_days > MAX_KEEP_DAYS:
        return f"keep_days is at most {MAX_KEEP_DAYS} (100 years)"
    if keep_partitions is not None and keep_partitions > MAX_KEEP_PARTITIONS:
        return f"keep_partitions is at most {MAX_KEEP_PARTITIONS} (a table holds 8,192)"
    return None


MAX_KEEP_DAYS = 36500  # past it, "now - keep_days" leaves the calendar's range
MAX_KEEP_PARTITIONS = 8192  # MySQL's and MariaDB's most partitions in one table


class StatementDigest(models.Model):
    """One statement digest (performance_schema's normalised statement) as it reads one
    partitioned table: its counters as last read (cumulative since the server began
    counting it), its digest text (literals as `?`: never a statement's literal text) and
    whether it prunes that table's partitions (`partdash.health.pruning`), found by
    parsing the text or, on a server opted in, by the server's EXPLAIN."""

    class Prunes(models.TextChoices):
        ONE = "one", "One partition"
        SOME = "some", "Some partitions"
        ALL = "all", "Every partition"
        UNKNOWN = "unknown", "Unknown"

    class How(models.TextChoices):
        PARSED = "parsed", "Parsed"
        EXPLAINED = "explained", "Explained"

    table = models.ForeignKey(PartitionedTable, on_delete=models.CASCADE, related_name="statements")
    digest = models.CharField(max_length=64)
    text = models.TextField()
    calls = models.BigIntegerField(default=0)
    rows_examined = models.BigIntegerField(default=0)
    seconds = models.FloatField(default=0)
    no_index_used = models.BigIntegerField(default=0)
    first_seen = models.DateTimeField(null=True)
    last_seen = models.DateTimeField()
    prunes = models.CharField(max_length=8, choices=Prunes)
    partitions_read = models.PositiveIntegerField(null=True)
    partitions_total = models.PositiveIntegerField(default=0)
    how = models.CharField(max_length=9, choices=How, default=How.PARSED)
    why = models.TextField(blank=True)
    filters_on = models.JSONField(default=list)  # the table's columns it filters on
    # The table's layout (`PartitionedTable.layout`) the verdict was judged against: a
    # digest is judged again only once the layout changed (or EXPLAIN counted it).
    judged_layout = models.CharField(max_length=40, blank=True)

    class Meta:
        ordering = ["-seconds", "digest"]
        constraints = [
            models.UniqueConstraint(fields=["table", "digest"], name="statement_per_table")
        ]

    def __str__(self) -> str:
        return f"{self.digest[:12]} on {self.table}"


class StatementRead(models.Model):
    """When a server's statement digests were last read, and the server clock before that
    read: the next read takes only the digests seen since."""

    server = models.OneToOneField("servers.Server", on_delete=models.CASCADE, related_name="+")
    read_at = models.DateTimeField()
    watermark = models.BigIntegerField(null=True)  # server epoch seconds; None: never read

    def __str__(self) -> str:
        return f"statements of {self.server} read at {self.read_at:%Y-%m-%d %H:%M:%S}"

"""What evens a skewed table, by how its method places rows (`fixes.skew_fix` adds the
ANALYZE the rewritten partitions need).

- HASH puts value v in partition v mod n: values in steps sharing a factor g with n fill
  only every g-th partition (a stride). A prime count spreads them; a few stray values
  around the stride (noise) do not hide it.
- LINEAR HASH keeps the low bits of v (v & (2^k - 1)): a stride of a power of two stays
  in every g-th partition whatever the count. Only plain HASH over a prime count spreads it.
- KEY hashes the column's bytes (MariaDB: `ha_partition::calculate_key_hash_value`, then
  `Field::hash`, which runs an integer's little-endian bytes through latin1's
  `my_hash_sort_simple`), then takes the hash mod n. That hash mixes its low bits so
  poorly that an even count is skewed even on consecutive ids (measured on MariaDB 10.11:
  ids 1..16,000 over KEY 8 partitions, 2.25x the mean; ids in steps of 4, 5.4x), and
  LINEAR KEY, which keeps only the low bits, is skewed at any count. An odd prime count
  spreads them.
- Otherwise a few values hold most rows: no count helps.
- LIST: the DEFAULT partition (MariaDB) holds the values no list names; they need lists
  of their own.

Every new partition is named (`PARTITIONS n` names them p<ordinal>, which fails with
"Duplicate partition name" on a table whose names are not p0..pn-1).
"""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median_low

from partdash.health.fix_values import Unsafe, expression_sql, name_sql
from partdash.health.partitions import LIST_METHODS, PartitionState

# A stride's rows: the fewest largest partitions holding this share of the rows above the
# background (the median partition). The rest is noise, which a new count leaves wherever
# its values land: 5% at most keeps the largest of 11 partitions under 1.5x the mean.
STRIDE_COVER = 0.95
# Primes p where 256 = +-1 (mod p): KEY's byte-wise hash repeats itself modulo them
# (measured: consecutive ids over KEY 17 partitions, 1.69x the mean; over 11, 1.12x).
KEY_WEAK_PRIMES = frozenset({17, 257})
# How many of the DEFAULT partition's values the query in the advice lists.
DEFAULT_VALUES_LISTED = 20

_NUMBERED = re.compile(r"^(.*?)(\d+)$", re.S)


@dataclass(frozen=True, slots=True)
class SkewPlan:
    """Advice, the statement (or None), and whether the partitions it writes need an
    ANALYZE after it."""

    advice: str
    sql: str | None = None
    analyze: bool = False


def excess_partitions(rows: Sequence[int | None]) -> list[int]:
    """The partitions holding a skewed table's excess rows (its rows above the median
    partition's): the fewest largest that hold `STRIDE_COVER` of it, so a few stray values
    elsewhere are not counted. Empty when nothing is known or nothing is in excess."""
    if not rows or any(r is None for r in rows):
        return []
    background = median_low(rows)  # type: ignore[type-var]
    excess = [max(0, r - background) for r in rows]  # type: ignore[operator]
    total = sum(excess)
    holding: list[int] = []
    covered = 0
    for i in sorted(range(len(rows)), key=lambda i: -excess[i]):
        if total <= 0 or covered >= STRIDE_COVER * total:
            break
        holding.append(i)
        covered += excess[i]
    return holding


def stride_period(rows: Sequence[int | None]) -> int | None:
    """The period g > 1 of the partitions holding a HASH table's excess rows (p0 and p4
    of 8: 4), or None. g == n: one partition holds it all."""
    holding = excess_partitions(rows)
    if not holding:
        return None
    period = len(rows)
    for i in holding:
        period = math.gcd(period, i - holding[0])
    return period if period > 1 else None


def is_prime(number: int) -> bool:
    return number > 1 and all(number % d for d in range(2, math.isqrt(number) + 1))


def next_prime(number: int, avoid: frozenset[int] = frozenset()) -> int:
    """The smallest prime above `number` not in `avoid`."""
    candidate = number + 1
    while not is_prime(candidate) or candidate in avoid:
        candidate += 1
    return candidate


def new_partition_names(existing: Sequence[str], count: int) -> list[str]:
    """`count` names not in `existing` (compared as the server does, ignoring case),
    continuing its numbering where all its numbered names share one prefix (p1, p2 -> p3;
    part07 -> part8), else p<n> from the partition count."""
    used = {name.lower() for name in existing}
    numbered = [m for m in map(_NUMBERED.match, existing) if m]
    prefix, number = "p", len(existing)
    if numbered and len({m[1] for m in numbered}) == 1:
        prefix, number = numbered[0][1], max(int(m[2]) for m in numbered) + 1
    names: list[str] = []
    while len(names) < count:
        name = f"{prefix}{number}"
        if name.lower() not in used:
            names.append(name)
            used.add(name.lower())
        number += 1
    return names


def _partitions_clause(names: Sequence[str]) -> str:
    return "(" + ", ".join(f"PARTITION {name_sql(name)}" for name in names) + ")"


def add_partitions_sql(quoted: str, names: Sequence[str], count: int) -> str:
    """ADD PARTITION of named partitions up to `count` (HASH, KEY)."""
    added = new_partition_names(names, count - len(names))
    return f"ALTER TABLE {quoted} ADD PARTITION {_partitions_clause(added)}"


def repartition_sql(quoted: str, method: str, expression: str, names: Sequence[str], count: int):
    """PARTITION BY HASH/KEY (expression) over `count` partitions: the current names,
    then new ones."""
    all_names = [*names, *new_partition_names(names, count - len(names))][:count]
    clause = _partitions_clause(all_names)
    return f"ALTER TABLE {quoted} PARTITION BY {method} ({expression}) {clause}"


_REWRITES = "It rewrites every row and blocks writes to the table while it runs: plan it off-peak."


_FEW_VALUES = {
    "HASH": "the partitions holding the extra rows ({held}) are not every g-th one, as "
    "values in steps would fill them",
    "LINEAR HASH": "the partitions holding the extra rows ({held}) are not every g-th one, "
    "as values in steps would fill them",
    "KEY": "KEY spreads many values evenly over an odd count, so the extra rows in {held} "
    "come from a few",
}


def _few_values(method: str, names: list[str], rows: list) -> SkewPlan:
    held = ", ".join(name_sql(names[i]) for i in sorted(excess_partitions(rows))) or "some"
    return SkewPlan(
        f"A few values of the partitioning key hold most rows: "
        f"{_FEW_VALUES[method].format(held=held)}. No partition count spreads a value's "
        "rows: partition on a column (or columns) with many evenly used values."
    )


def ordinal(number: int) -> str:
    """2nd, 3rd, 4th, 11th, 21st."""
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{'th' if number % 100 in (11, 12, 13) else suffix}"


def _one_partition(
    quoted: str, expression: str, largest: str, placed: str, spread: str, sql: str
) -> SkewPlan:
    """All the excess in one partition: many values the method places there (which a new
    count spreads) or a few values (which nothing spreads); a query tells which."""
    distinct = expression or "<the key's columns>"
    check = f"SELECT COUNT(*), COUNT(DISTINCT {distinct}) FROM {quoted} PARTITION ({largest})"
    return SkewPlan(
        f"The extra rows are all in {largest}. Either {placed}, and {spread} spreads them, or "
        f"a few values hold them, which no count spreads. Tell which with {check} (it reads "
        f"the partition): if nearly every row has a value of its own, run {sql}. {_REWRITES}",
        analyze=True,
    )


def _hash_plan(quoted: str, expression: str, names: list[str], rows: list) -> SkewPlan:
    count = len(names)
    period = stride_period(rows)
    if period is None:
        return _few_values("HASH", names, rows)
    prime = next_prime(count)
    sql = add_partitions_sql(quoted, names, prime)
    if period == count:
        largest = name_sql(names[rows.index(max(rows))])
        placed = f"its values go in steps of {count} (HASH puts value v in partition v mod {count})"
        spread = f"a prime number of partitions ({prime})"
        return _one_partition(quoted, expression, largest, placed, spread, sql)
    return SkewPlan(
        f"HASH puts a row in partition (value mod {count}); the rows are in every "
        f"{ordinal(period)} partition, so the values go in steps that share a factor with {count}. "
        f"A prime number of partitions ({prime}) spreads such steps evenly. {_REWRITES}",
        sql,
        analyze=True,
    )


def _linear_hash_plan(quoted: str, expression: str, names: list[str], rows: list) -> SkewPlan:
    period = stride_period(rows)
    if period is None:
        return _few_values("LINEAR HASH", names, rows)
    prime = next_prime(len(names))
    sql = repartition_sql(quoted, "HASH", expression, names, prime)
    placed = (
        f"LINEAR HASH keeps the low bits of the value (value & {_mask(len(names))}, then "
        "fewer bits for the partitions past the count)"
    )
    if period == len(names):
        largest = name_sql(names[rows.index(max(rows))])
        spread = f"plain HASH over {prime} partitions"
        return _one_partition(
            quoted,
            expression,
            largest,
            "its values go in steps of a power of two, whose low bits LINEAR HASH keeps",
            spread,
            sql,
        )
    return SkewPlan(
        f"{placed}; the rows are in every {ordinal(period)} partition, so the values go in steps "
        f"of a power of two, which stay in every {ordinal(period)} partition whatever the count. "
        f"Plain HASH over a prime number of partitions ({prime}) spreads them. {_REWRITES}",
        sql,
        analyze=True,
    )


def _mask(count: int) -> int:
    return (1 << (count - 1).bit_length()) - 1


_KEY_WORDS = {
    "KEY": "KEY hashes the key's bytes and takes the hash mod {count}; that hash spreads "
    "integers so poorly over an even count that even consecutive ids land unevenly (on "
    "MariaDB 10.11, ids 1 to 16,000 over 8 partitions: 2.25x the mean)",
    "LINEAR KEY": "LINEAR KEY keeps the low bits of the key's hash, which spread integers "
    "poorly whatever the count (on MariaDB 10.11, consecutive ids over 8 or 11 partitions: "
    "about 2x the mean)",
}


def _key_plan(quoted: str, method: str, expression: str, names: list[str], rows: list) -> SkewPlan:
    """KEY over an even count, or LINEAR KEY: the hash, where the excess is over several
    partitions; a few values, where it is in one, cannot be told from it without a query."""
    count = len(names)
    if method == "KEY" and count % 2:
        return _few_values("KEY", names, rows)
    prime = next_prime(count, KEY_WEAK_PRIMES)
    if method == "KEY":
        sql = add_partitions_sql(quoted, names, prime)
    else:
        sql = repartition_sql(quoted, "KEY", expression, names, prime)
    words = _KEY_WORDS[method].format(count=count)
    spread = f"an odd prime number of partitions ({prime})"
    if method == "LINEAR KEY":
        spread = f"plain KEY over {spread}"
    holding = excess_partitions(rows)
    if len(holding) == 1:
        largest = name_sql(names[holding[0]])
        placed = "many values land there, as KEY's hash of integers does " + (
            "over an even count" if method == "KEY" else "at any LINEAR count"
        )
        return _one_partition(quoted, expression, largest, placed, spread, sql)
    return SkewPlan(
        f"{words}. {spread[0].upper()}{spread[1:]} spreads them. {_REWRITES}", sql, analyze=True
    )


def is_list_default(partition: PartitionState, partitions: Sequence[PartitionState]) -> bool | None:
    """Whether this is MariaDB's LIST DEFAULT partition, as information_schema spells it
    (measured on 10.11): MAXVALUE for LIST COLUMNS ((MAXVALUE,MAXVALUE) for two columns),
    0 for LIST. A LIST partition of VALUES IN (0) reads the same, so 0 alone is DEFAULT
    only where another partition lists 0 or the name says default, else unknown (None)."""
    description = (partition.description or "").replace("(", "").replace(")", "")
    values = {value.strip().upper() for value in description.split(",")}
    if values == {"MAXVALUE"}:
        return True
    if values != {"0"}:
        return False
    if "default" in partition.name.lower():
        return True
    others = [p.description or "" for p in partitions if p.name != partition.name]
    return True if any("0" in {v.strip() for v in o.split(",")} for o in others) else None


def _list_plan(quoted: str, expression: str, partitions: list[PartitionState]) -> SkewPlan:
    rows = [p.rows or 0 for p in partitions]
    largest = partitions[rows.index(max(rows))]
    name = name_sql(largest.name)
    columns = expression or "<partitioning expression>"
    query = (
        f"SELECT {columns}, COUNT(*) FROM {quoted} PARTITION ({name}) GROUP BY {columns} "
        f"ORDER BY COUNT(*) DESC LIMIT {DEFAULT_VALUES_LISTED}"
    )
    value = "(<values>)" if "," in columns else "<value>"
    new = f"PARTITION `p_<value>` VALUES IN ({value}), ..."
    default = is_list_default(largest, partitions)
    if default is False:
        return SkewPlan(
            f"{name} holds most rows. See which of its values do with {query} (it reads the "
            f"partition): give the big ones lists of their own with ALTER TABLE {quoted} "
            f"REORGANIZE PARTITION {name} INTO ({new}, PARTITION {name} VALUES IN (<the "
            "other values>)). One value holding them cannot be split by LIST.",
            analyze=True,
        )
    words = (
        f"{name} is the DEFAULT partition: it holds"
        if default
        else (
            f"{name} lists 0, as information_schema lists MariaDB's DEFAULT partition. If it "
            "is the DEFAULT partition (SHOW CREATE TABLE says), it holds"
        )
    )
    advice = (
        f"{words} the rows whose values no list names, so splitting the lists will not "
        f"help. Those values need partitions of their own: find them with {query} (it "
        "reads the partition), then give each value holding many rows its own partition "
        f"(or group them into lists of similar size) with ALTER TABLE {quoted} REORGANIZE "
        f"PARTITION {name} INTO ({new}, PARTITION {name} DEFAULT). It copies the rows of "
        f"{name} and blocks writes to the table while it runs."
    )
    if default is None:
        advice += " If it lists 0 alone, that one value holds most rows: LIST cannot split it."
    return SkewPlan(advice, analyze=True)


def skew_plan(
    quoted: str, method: str, expression: str | None, partitions: list[PartitionState]
) -> SkewPlan | None:
    """The plan for a skewed HASH, KEY or LIST table (`partitions` merged, in order);
    None for the other methods."""
    names = [p.name for p in partitions]
    rows = [p.rows for p in partitions]
    try:  # KEY () (the primary key) has an empty expression
        expression = expression_sql(expression) if (expression or "").strip() else ""
    except Unsafe as reason:
        if method in ("LINEAR HASH", "LINEAR KEY"):  # their fix re-writes the expression
            return SkewPlan(
                f"{method} keeps the low bits, which spread steps of a power of two poorly: "
                f"plain {method.split()[1]} over a prime number of partitions spreads them. "
                f"partdash writes no statement for it: {reason}."
            )
        expression = ""  # only shown in queries of the advice, as a placeholder
    if method == "HASH":
        return _hash_plan(quoted, expression, names, rows)
    if method == "LINEAR HASH":
        return _linear_hash_plan(quoted, expression, names, rows)
    if method in ("KEY", "LINEAR KEY"):
        return _key_plan(quoted, method, expression, names, rows)
    if method in LIST_METHODS:
        return _list_plan(quoted, expression, partitions)
    return None

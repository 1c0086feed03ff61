"""One server's maintenance plan as a SQL script a DBA reviews, then runs with
`mariadb < plan.sql` (or `mysql`): the client's `charset utf8mb4` and `SET NAMES
utf8mb4` (whatever character set the client was started with), a header of `--`
comments saying what it is, when and from which poll it was made and what its
statements cost, then each item in urgency order (a comment block, then its statement
and `;`), then the ANALYZE of the tables the statements rewrote. Advice-only items and
stale ones are comments only.

Every comment line passes through `comment`: text that came from the monitored server
(names, messages) cannot end the comment and start a statement. The statements are the
stored fixes, which partdash built without copying the server's text into them
(`partdash.health.fix_values`), copied as is.
"""

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from partdash.health.fixes import safety_words
from partdash.lib.quoting import visible
from partdash.lib.times import iso
from partdash.metrics.plan import PlanItem, ServerPlan

SAFETY_ORDER = ("instant", "copies", "blocks", "destroys")


# The script's first lines, before any text from the server: the client's own `charset`
# command makes the client read every following byte as utf8mb4 (it also sets the
# session's), so no name can close its quotes early under a client started with
# --default-character-set=sjis, cp932, gbk... (measured with mariadb 10.11: without it,
# a partition name ending in U+5F0C ran the `CREATE TABLE` that followed it). SET NAMES
# says the same to the server for clients without that command. Both are ASCII, which
# every client character set reads alike.
CHARSET_PREFIX = ("charset utf8mb4", "SET NAMES utf8mb4;")


def comment(text: str) -> str:
    """One `-- ` line: every line break, control and format character (Unicode's Cc, Cf,
    Zl, Zp: what clients or editors may read as a line's end, and the bidi controls that
    make an editor show a line otherwise than it reads) is written as `<U+202E>`."""
    return f"-- {visible(text).rstrip()}"  # the space stays: `--` must be followed by one


def script(plan: ServerPlan, generated_at: datetime) -> str:
    """The whole script, lines ending in `\\n`."""
    items = plan["items"]
    lines = [*CHARSET_PREFIX, *_header(plan, generated_at)]
    for number, item in enumerate(items, 1):
        lines += ["", *_item_lines(number, item)]
    lines += _analyze_lines(items)
    lines += ["", comment(f"End of the plan ({_count(_runnable(items), 'statement')}).")]
    return "\n".join(lines) + "\n"


def _runnable(items: Iterable[PlanItem]) -> list[PlanItem]:
    return [item for item in items if item["sql"] and not item["stale"]]


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _shown(moment: datetime | None) -> str:
    return iso(moment) or "never"


def _header(plan: ServerPlan, generated_at: datetime) -> list[str]:
    items = plan["items"]
    runnable = _runnable(items)
    classes = Counter(item["safety"] for item in runnable)
    by_class = ", ".join(f"{classes[name]} {name}" for name in SAFETY_ORDER if classes[name])
    lines = [
        f"partdash maintenance plan for server {plan['name']} ({plan['host']}:{plan['port']})",
        f"Generated at {_shown(generated_at)} (UTC)",
        f"From poll {plan['poll'] or 'none'} taken at {_shown(plan['taken_at'])}"
        " (each item names the analysis it rests on)",
        f"{_count(runnable, 'statement')} to run" + (f" ({by_class})" if by_class else ""),
        f"{_count([i for i in items if not i['sql']], 'item')} of advice only, and "
        f"{_count([i for i in items if i['sql'] and i['stale']], 'stale item')}, "
        "as comments",
        "",
        "partdash never runs this script. Review every statement before running it:",
        "  destroys: removes data (partitions and their rows) irreversibly;",
        "  copies: rewrites the rows and bytes it names, and blocks writes to the table",
        "    while it runs: plan it off-peak;",
        "  blocks: blocks writes to the table while it runs;",
        "  instant: changes metadata or settings only.",
        "Statements are in urgency order and name their schema: run the whole file with",
        f"  mariadb -h {plan['host']} -P {plan['port']} -u USER -p < THIS_FILE",
        "which stops at the first statement that fails. A stale item's table changed after",
        "its fix was computed: poll the server again and download a new plan for it.",
    ]
    return [comment(line) for line in lines]


def _item_lines(number: int, item: PlanItem) -> list[str]:
    where = f"{item['schema']}.{item['table']}" if item["table"] is not None else "the server"
    urgency = "" if item["urgency"] == item["severity"] else f": {item['urgency']}"
    lines = [
        comment(f"{number}. {item['severity']} {item['kind']} on {where}{urgency}"),
        comment(item["message"]),
        comment(f"As of {_shown(item['as_of'])} (poll {item['poll'] or 'unknown'})"),
    ]
    if not item["sql"]:
        return [*lines, comment(f"Advice only: {item['advice']}")]
    words = safety_words(item["safety"], item["rows"], item["bytes"])
    lines.append(comment(f"Safety: {words}"))
    if item["stale"]:
        lines.append(comment("STALE: the table changed after this fix was computed; not run:"))
        return lines + [comment(line) for line in _statement(item["sql"]).splitlines()]
    return [*lines, _statement(item["sql"])]


def _statement(sql: str) -> str:
    return sql.rstrip().rstrip(";") + ";"


def _analyze_lines(items: list[PlanItem]) -> list[str]:
    """Statistics of the partitions rewritten above: the server leaves them at 0 rows
    until analysed, so partdash (and the optimizer) would see them empty."""
    statements = list(dict.fromkeys(i["analyze_after"] for i in _runnable(items)))
    statements = [s for s in statements if s]
    if not statements:
        return []
    head = [
        "",
        comment("Then: the statistics of the tables rewritten above (the server leaves"),
        comment("the partitions it rewrote at 0 rows until they are analysed). Instant."),
    ]
    return head + [_statement(statement) for statement in statements]

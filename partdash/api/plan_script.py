"""One server's maintenance plan as a SQL script a DBA reviews, then runs with
`mariadb < plan.sql` (or `mysql`): the client's `charset utf8mb4` and `SET NAMES
utf8mb4` (whatever character set the client was started with), a header of `--`
comments saying what it is, when and from which poll it was made and what its
statements cost, then the server's statements (`ServerPlan.statements`: each table's
findings composed into one sequence) in sections, instant, copies, statistics, and what
destroys data last, each a comment block saying what it clears, then its statement and
`;`. Advice-only, superseded, refused and stale items are comments only, after them.

Every comment line passes through `comment`: text that came from the monitored server
(names, messages) cannot end the comment and start a statement. The statements are the
stored fixes, which partdash built without copying the server's text into them
(`partdash.health.fix_values`), copied as is.
"""

from collections import Counter
from datetime import datetime

from partdash.health.fixes import safety_words
from partdash.lib.quoting import visible
from partdash.lib.times import iso
from partdash.metrics.plan import PlanItem, PlanStatement, ServerPlan

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
    """The whole script, lines ending in `\\n`: the statements in sections (instant,
    copies, statistics, destroys), then the findings not run, as comments."""
    statements = plan["statements"]
    lines = [*CHARSET_PREFIX, *_header(plan, generated_at)]
    for section in SECTIONS:
        chosen = [s for s in statements if s["section"] == section]
        if chosen:
            lines += ["", *_section_lines(section, chosen)]
    lines += _not_run_lines(plan["items"])
    lines += ["", comment(f"End of the plan ({_count(statements, 'statement')}).")]
    return "\n".join(lines) + "\n"


SECTIONS = ("instant", "copies", "statistics", "destroys")
_SECTION_TITLES = {
    "instant": "Instant: metadata and settings only.",
    "copies": "Copies: each rewrites the rows it names and blocks writes to its table.",
    "statistics": "Statistics of the partitions rewritten above (the server leaves them at "
    "0 rows until analysed). Instant.",
    "destroys": "DESTROYS DATA, last: each statement below removes partitions and every row "
    "in them, for good. Nothing above it failed, or the client would have stopped.",
}


def _section_lines(section: str, statements: list[PlanStatement]) -> list[str]:
    lines = [comment(f"== {_SECTION_TITLES[section]}")]
    for statement in statements:
        lines += ["", *_statement_lines(statement)]
    return lines


def _statement_lines(statement: PlanStatement) -> list[str]:
    where = (
        f"{statement['schema']}.{statement['table']}"
        if statement["table"] is not None
        else "the server"
    )
    lines = [comment(f"{statement['number']}. on {where}")]
    if statement["section"] == "destroys":
        lines.append(comment(f"Removes: {_removes(statement['sql'])} and every row in them"))
    for cleared in statement["clears"]:
        lines.append(
            comment(f"Clears {cleared['severity']} {cleared['kind']}: {cleared['message']}")
        )
    words = safety_words(statement["safety"], statement["rows"], statement["bytes"])
    lines.append(comment(f"Safety: {words}"))
    return [*lines, _statement(statement["sql"])]


def _removes(sql: str) -> str:
    """What a DROP PARTITION names (partdash's own statement, as written)."""
    head, _, names = sql.partition(" DROP PARTITION ")
    return f"partitions {names} of {head.removeprefix('ALTER TABLE ')}" if names else sql


def _not_run_lines(items: list[PlanItem]) -> list[str]:
    """Findings without a statement of their own in the sections above: advice only,
    stale, refused; a superseded one names the statement that clears it."""
    lines: list[str] = []
    for item in items:
        if item["sql"] and not item["stale"]:
            continue
        lines += ["", *_item_lines(item)]
    if not lines:
        return []
    return ["", comment("== Findings not fixed by a statement of their own (comments):"), *lines]


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _shown(moment: datetime | None) -> str:
    return iso(moment) or "never"


def _header(plan: ServerPlan, generated_at: datetime) -> list[str]:
    items, statements = plan["items"], plan["statements"]
    classes = Counter(statement["safety"] for statement in statements)
    by_class = ", ".join(f"{classes[name]} {name}" for name in SAFETY_ORDER if classes[name])
    lines = [
        f"partdash maintenance plan for server {plan['name']} ({plan['host']}:{plan['port']})",
        f"Generated at {_shown(generated_at)} (UTC)",
        f"From poll {plan['poll'] or 'none'} taken at {_shown(plan['taken_at'])}"
        " (each finding names the analysis it rests on)",
        f"{_count(statements, 'statement')} to run" + (f" ({by_class})" if by_class else ""),
        f"{_count([i for i in items if not i['sql'] and not i['superseded']], 'item')} of "
        f"advice only, and {_count([i for i in items if i['sql'] and i['stale']], 'stale item')}"
        ", as comments",
        "",
        "partdash never runs this script. Review every statement before running it:",
        "  destroys: removes data (partitions and their rows) irreversibly;",
        "  copies: rewrites the rows and bytes it names, and blocks writes to the table",
        "    while it runs: plan it off-peak;",
        "  blocks: blocks writes to the table while it runs;",
        "  instant: changes metadata or settings only.",
        "Each table's findings are fixed together: one statement per change of its layout,",
        "checked against the layout the statements before it leave. Sections: instant,",
        "then copies, then statistics, then what DESTROYS data, last. Statements name their",
        "schema: run the whole file with",
        f"  mariadb -h {plan['host']} -P {plan['port']} -u USER -p < THIS_FILE",
        "The client stops at the first statement that fails (its default; this script never",
        "turns that off, do not add --force), so nothing that destroys data runs after a",
        "failure. Once it ran, poll the server and download the plan again: the tables it",
        "fixed have nothing left due, so that plan runs again harmlessly. Do not run this",
        "same file twice: its statements are not guarded (the second run stops at its first",
        "statement, before any destroy). A stale item's table changed after its fix was",
        "computed: poll the server again and download a new plan for it.",
    ]
    return [comment(line) for line in lines]


def _item_lines(item: PlanItem) -> list[str]:
    where = f"{item['schema']}.{item['table']}" if item["table"] is not None else "the server"
    urgency = "" if item["urgency"] == item["severity"] else f": {item['urgency']}"
    lines = [
        comment(f"{item['severity']} {item['kind']} on {where}{urgency}"),
        comment(item["message"]),
        comment(f"As of {_shown(item['as_of'])} (poll {item['poll'] or 'unknown'})"),
    ]
    if item["superseded"]:
        return [*lines, comment(f"Fixed by statement {item['statement']}: {item['advice']}")]
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

// The table page's Statements section: the digests that read the table, worst first
// (GET /api/v1/tables/{id}/statements/), which read every partition and what they cost.
import { el, show } from "./dom.js";
import { age, count, number } from "./format.js";

const PRUNES = {
  all: "every partition",
  some: "some partitions",
  one: "one partition",
  unknown: "unknown",
};

// "7 of 7", "? of 61" where the digest's placeholders hide how many.
function reads(statement) {
  const read = statement.partitions_read == null ? "?" : count(statement.partitions_read);
  return `${read} of ${count(statement.partitions_total)}`;
}

function row(statement) {
  return el(
    "tr",
    { className: `prunes-${statement.prunes}`, dataset: { digest: statement.digest } },
    el("td", {}, el("code", { className: "digest-text" }, statement.text)),
    el("td", { title: statement.why }, PRUNES[statement.prunes] ?? statement.prunes),
    el("td", { className: "num" }, reads(statement)),
    el("td", {}, statement.how),
    el("td", { className: "num" }, count(statement.calls)),
    el("td", { className: "num" }, count(statement.rows_examined)),
    el("td", { className: "num" }, `${number(statement.seconds)} s`),
    el("td", {}, age(statement.last_seen)),
  );
}

function summary(statements) {
  const all = statements.filter((s) => s.prunes === "all");
  if (!all.length) return el("p", { className: "small" }, "Every statement seen prunes.");
  const seconds = all.reduce((sum, s) => sum + s.seconds, 0);
  const rows = all.reduce((sum, s) => sum + s.rows_examined, 0);
  return el(
    "p",
    { id: "unpruned-summary" },
    `${count(all.length)} statement(s) read every partition: ${number(seconds)} s and ` +
      `${count(rows)} rows examined since the server began counting them.`,
  );
}

export function showStatements(statements) {
  if (!statements.length) {
    show(
      "statements",
      el(
        "p",
        { className: "empty" },
        "No statement seen on this table yet (performance_schema's statement digests, " +
          "read every few minutes; see the server's capability panel).",
      ),
    );
    return;
  }
  const head = ["Statement (digest)", "Prunes", "Partitions", "How", "Calls", "Rows examined"];
  show(
    "statements",
    summary(statements),
    el(
      "div",
      { className: "scroll" },
      el(
        "table",
        { id: "statements-table" },
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            [...head, "Time", "Last seen"].map((h) => el("th", {}, h)),
          ),
        ),
        el("tbody", {}, statements.map(row)),
      ),
    ),
  );
}

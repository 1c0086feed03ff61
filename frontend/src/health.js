// A server's capability and pressure panels from /api/v1/servers/{id}/health/.
import { code, el } from "./dom.js";
import { bytes, count, localTime, number, percent } from "./format.js";

// The catalogue key of performance_schema's file I/O (partdash/mysql/catalogue.py).
export const FILE_IO = "file_io";

const MARKS = { ok: "✓", unused: "–", partial: "✗", missing: "✗" };

function fixes(statements) {
  if (!statements?.length) return null;
  return el(
    "div",
    { className: "fix" },
    "Fix: ",
    statements.map((statement) => el("div", {}, code(statement))),
  );
}

// A source's name may break after a dot (schema. / TABLE) and nowhere else: where no
// break was allowed, a narrow panel broke it mid-word (INNODB_SYS_TABLESPAC / ES).
const breakAtDots = (name) =>
  name.split(".").flatMap((part, i) => (i ? [".", el("wbr"), part] : [part]));

// One source of the catalogue: what it gives, whether the latest poll could read it and,
// if not, why and the statement that fixes it (the same as the poll's warning).
function capability(item) {
  const good = item.ok;
  return el(
    "li",
    {
      className: `capability state-${item.state}`,
      dataset: { source: item.source, name: item.name, state: item.state },
    },
    el("span", { className: good ? "ok-text" : "bad-text" }, MARKS[item.state] ?? "?"),
    " ",
    el("strong", {}, breakAtDots(item.name)),
    ` — ${item.gives}`,
    item.detail ? el("div", { className: "detail small" }, item.detail) : null,
    good ? null : fixes(item.fixes),
  );
}

export function capabilityPanel(capabilities) {
  if (!capabilities?.length)
    return el("p", { className: "empty" }, "Not known until a poll succeeds.");
  const off = capabilities.filter((item) => !item.ok);
  const summary = off.length
    ? el(
        "p",
        {},
        `${off.length} of ${capabilities.length} sources cannot be fully read; each fix is below.`,
      )
    : el("p", { className: "ok-text" }, "Everything partdash reads is available.");
  // What is off first: that is what needs doing.
  const ordered = [...off, ...capabilities.filter((item) => item.ok)];
  return [summary, el("ul", { className: "capabilities" }, ordered.map(capability))];
}

function tableList(tables) {
  return el(
    "ul",
    { className: "warning-tables" },
    tables.map(([schema, table]) => el("li", {}, code(`${schema}.${table}`))),
  );
}

// One warning of the latest poll: its line, every fix, and every table it concerns, folded.
function pollWarning(warning) {
  const tables = warning.tables?.length
    ? el(
        "details",
        { className: "tables" },
        el(
          "summary",
          {},
          `the ${warning.tables.length} table${warning.tables.length === 1 ? "" : "s"}`,
        ),
        tableList(warning.tables),
      )
    : null;
  return el(
    "li",
    { className: `warning cause-${warning.cause}`, dataset: { cause: warning.cause } },
    warning.message,
    fixes(warning.fixes),
    tables,
  );
}

// The latest poll's warnings, one per distinct fix; the tables behind each are folded.
export function warningsPanel(health) {
  if (!health.snapshot_at)
    return el("p", { className: "empty" }, "Not known until a poll succeeds.");
  const warnings = health.warnings;
  if (!warnings?.length)
    return el("p", { className: "ok-text" }, "The latest poll read everything.");
  return el("ul", { className: "warnings" }, warnings.map(pollWarning));
}

// A horizontal bar filled to `ratio` (capped at 100%) in the level's colour.
export function gauge(label, ratio, level, detail) {
  const width = ratio == null ? 0 : Math.min(ratio, 1) * 100;
  return el(
    "div",
    { className: `gauge level-${level || "unknown"}`, dataset: { level: level || "unknown" } },
    el("div", { className: "gauge-label" }, el("strong", {}, label), " ", detail),
    el(
      "div",
      { className: "gauge-track", title: percent(ratio) },
      el("div", { className: "gauge-fill", style: `width: ${width}%` }),
    ),
    el("div", { className: "gauge-value" }, `${percent(ratio)} · ${level || "unknown"}`),
  );
}

function limitGauge(limit) {
  return gauge(
    limit.setting,
    limit.ratio,
    limit.level,
    `${count(limit.partitions)} partitions of ${count(limit.limit)}`,
  );
}

function workingSetGauge(workingSet) {
  if (!workingSet) return el("p", { className: "empty" }, "Working set: not known yet.");
  const detail =
    `${bytes(workingSet.bytes)} of ${bytes(workingSet.buffer_pool_bytes)} buffer pool` +
    ` (${count(workingSet.partitions)} partitions)`;
  return [
    gauge("Working set", workingSet.ratio, workingSet.level, detail),
    workingSet.reason ? el("p", { className: "small" }, workingSet.reason) : null,
    workingSetForecast(workingSet),
  ];
}

// When the written working set, on its trend over the last days, outgrows the pool.
function workingSetForecast(workingSet) {
  if (!("forecast_reason" in workingSet)) return null;
  if (!workingSet.forecast_date) {
    return el(
      "p",
      { className: "small working-set-forecast" },
      `Forecast: none (${workingSet.forecast_reason}).`,
    );
  }
  const day = (text) => (text ? localTime(text).slice(0, 10) : "open-ended");
  const growth = workingSet.growth_bytes_per_day;
  return el(
    "p",
    { className: "small working-set-forecast" },
    el("strong", {}, `Outgrows the buffer pool around ${day(workingSet.forecast_date)}`),
    growth != null ? ` at ${bytes(growth)} a day` : "",
    ` (${number(workingSet.forecast_days_left)} days; between ${day(workingSet.forecast_earliest)}`,
    ` and ${day(workingSet.forecast_latest)})`,
  );
}

// Server-wide INNODB_CMP, per zip page size, since the server started: each failed
// compression splits its page, so the failures are the page splits compression caused.
function cmpTable(rows) {
  if (!rows?.length) return null;
  const head = el(
    "tr",
    {},
    ["Page size", "Compressions", "Succeeded", "Page splits", "Failure rate"].map((h, i) =>
      el("th", { className: i ? "num" : "" }, h),
    ),
  );
  const splits = (row) =>
    row.compress_ops == null || row.compress_ops_ok == null
      ? null
      : row.compress_ops - row.compress_ops_ok;
  const body = rows.map((row) =>
    el(
      "tr",
      {},
      el("td", {}, bytes(row.page_size)),
      el("td", { className: "num" }, count(row.compress_ops)),
      el("td", { className: "num" }, count(row.compress_ops_ok)),
      el("td", { className: "num" }, count(splits(row))),
      el("td", { className: "num" }, percent(row.failure_rate)),
    ),
  );
  return [
    el("h3", {}, "InnoDB compression (INNODB_CMP, server-wide since start)"),
    el(
      "div",
      { className: "scroll" },
      el(
        "table",
        { className: "grid compact", id: "innodb-cmp" },
        el("thead", {}, head),
        el("tbody", {}, body),
      ),
    ),
  ];
}

export function pressurePanel(health) {
  const pressure = health.pressure;
  if (!pressure) return el("p", { className: "empty" }, "Not known until a poll succeeds.");
  return [
    ...(pressure.limits || []).map(limitGauge),
    workingSetGauge(pressure.working_set),
    el(
      "p",
      { className: "counts" },
      `${count(pressure.fragmented_partitions)} fragmented partitions · ${count(pressure.stale_partitions)} with stale statistics`,
    ),
    cmpTable(health.innodb_cmp),
  ];
}

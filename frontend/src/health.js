// A server's capability and pressure panels from /api/v1/servers/{id}/health/.
import { code, el } from "./dom.js";
import { bytes, count, percent } from "./format.js";

export const PERFORMANCE_SCHEMA = "performance_schema";

function capability(item) {
  const mark = el("span", { className: item.ok ? "ok-text" : "bad-text" }, item.ok ? "✓" : "✗");
  const fix = item.ok || !item.fix ? null : el("div", { className: "fix" }, "Fix: ", code(item.fix));
  return el("li", { className: item.ok ? "capability on" : "capability off", dataset: { name: item.name } },
    mark, " ", el("strong", {}, item.name), item.detail ? ` — ${item.detail}` : "", fix);
}

// The latest poll's warnings, folded: the capabilities above usually say the same.
function pollWarnings(warnings) {
  if (!warnings?.length) return null;
  return el("details", { className: "warnings" }, el("summary", {}, `${warnings.length} warning${warnings.length === 1 ? "" : "s"} from the latest poll`),
    el("ul", {}, warnings.map((warning) => el("li", {}, warning))));
}

export function capabilityPanel(capabilities, warnings) {
  if (!capabilities?.length) return el("p", { className: "empty" }, "Not known until the first poll.");
  const off = capabilities.filter((item) => !item.ok);
  const summary = off.length
    ? el("p", {}, `${off.length} of ${capabilities.length} off; each fix is below.`)
    : el("p", { className: "ok-text" }, "Everything partdash reads is available.");
  // What is off first: that is what needs doing.
  const ordered = [...off, ...capabilities.filter((item) => item.ok)];
  return [summary, el("ul", { className: "capabilities" }, ordered.map(capability)), pollWarnings(warnings)];
}

// A horizontal bar filled to `ratio` (capped at 100%) in the level's colour.
export function gauge(label, ratio, level, detail) {
  const width = ratio == null ? 0 : Math.min(ratio, 1) * 100;
  return el("div", { className: `gauge level-${level || "unknown"}`, dataset: { level: level || "unknown" } },
    el("div", { className: "gauge-label" }, el("strong", {}, label), " ", detail),
    el("div", { className: "gauge-track", title: percent(ratio) },
      el("div", { className: "gauge-fill", style: `width: ${width}%` })),
    el("div", { className: "gauge-value" }, `${percent(ratio)} · ${level || "unknown"}`),
  );
}

function limitGauge(limit) {
  return gauge(limit.setting, limit.ratio, limit.level,
    `${count(limit.partitions)} partitions of ${count(limit.limit)}`);
}

function workingSetGauge(workingSet) {
  if (!workingSet) return el("p", { className: "empty" }, "Working set: not known yet.");
  const detail = `${bytes(workingSet.bytes)} of ${bytes(workingSet.buffer_pool_bytes)} buffer pool` +
    ` (${count(workingSet.partitions)} partitions)`;
  return [gauge("Working set", workingSet.ratio, workingSet.level, detail),
    workingSet.reason ? el("p", { className: "small" }, workingSet.reason) : null];
}

function cmpTable(rows) {
  if (!rows?.length) return null;
  const head = el("tr", {}, ["Page size", "Compressions", "Succeeded", "Failure rate"].map((h) => el("th", {}, h)));
  const body = rows.map((row) => el("tr", {},
    el("td", {}, bytes(row.page_size)), el("td", { className: "num" }, count(row.compress_ops)),
    el("td", { className: "num" }, count(row.compress_ops_ok)), el("td", { className: "num" }, percent(row.failure_rate))));
  return [el("h3", {}, "InnoDB compression (INNODB_CMP)"), el("table", { className: "grid compact" }, el("thead", {}, head), el("tbody", {}, body))];
}

export function pressurePanel(health) {
  const pressure = health.pressure;
  if (!pressure) return el("p", { className: "empty" }, "Not known until the first poll.");
  return [
    ...(pressure.limits || []).map(limitGauge),
    workingSetGauge(pressure.working_set),
    el("p", { className: "counts" },
      `${count(pressure.fragmented_partitions)} fragmented partitions · ${count(pressure.stale_partitions)} with stale statistics`),
    cmpTable(health.innodb_cmp),
  ];
}

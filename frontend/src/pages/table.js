// Table page: skew and compression figures, per-partition charts, activity, history, runway.
import { getJSON } from "../api.js";
import { showCompression } from "../compression.js";
import { blindSignals, coverageNotes, neverRead } from "../coverage.js";
import { el, estimate, show } from "../dom.js";
import { findingList } from "../findings.js";
import { age, bytes, count, dayCount, localTime, number, shown } from "../format.js";
import { watchPolls } from "../live.js";
import { foldBars, othersLabel, TOP_BARS } from "../fold.js";
import { hasRates, heatLegend, heatmap } from "../heatmaps.js";
import { clampPage, pageChoices, pageLabels, partitionsQuery } from "../partition-pages.js";
import { bytesChart, historyChart, rowsChart } from "../partition-charts.js";
import { showRunway } from "../runway.js";
import { showStatements } from "../statements.js";
import { readView, writeView } from "../view-state.js";

const root = document.getElementById("table-page");
const tableUrl = `tables/${root.dataset.tableId}/`;
const HOUR_MS = 3600000;
// The ranges offered, up to the retention of hourly figures (90 days).
const RANGE_HOURS = { "1h": 1, "6h": 6, "24h": 24, "7d": 168, "30d": 720, "90d": 2160 };
const RATE_METRICS = { rows_changed_per_s: true, write_bytes_per_s: true, read_bytes_per_s: true };
const VIEW_DEFAULTS = {
  range: "24h",
  from: "",
  until: "",
  metric: "rows",
  log: "",
  order: "",
  page: "",
};
// The heatmaps: the box each is drawn in, its rate, and what to say when it has none.
const HEATMAPS = [
  {
    name: "rows-changed",
    metric: "rows_changed_per_s",
    signal: "rows_changed",
    none:
      "No rows-changed figures in this window yet: each partition needs two readings of " +
      "InnoDB's modification counter (see where hot partitions come from, above).",
  },
  {
    name: "write",
    metric: "write_bytes_per_s",
    signal: "disk_io",
    none: "No disk writes measured in this window: they need performance_schema ON and two polls.",
  },
  {
    name: "read",
    metric: "read_bytes_per_s",
    signal: "disk_io",
    none: "No disk reads measured in this window: they need performance_schema ON and two polls.",
  },
];
const fact = (term, ...value) => [el("dt", {}, term), el("dd", {}, value)];

// "4 partitions, 16 subpartitions": the stored count is of subpartitions where there are any.
function partitionCount(table, partitions) {
  const subpartitions = partitions.filter((p) => p.subpartition).length;
  if (!subpartitions) return count(table.partition_count);
  const names = new Set(partitions.map((p) => p.name)).size;
  return `${count(names)} partitions, ${count(subpartitions)} subpartitions`;
}

// The retention policy matching the table and what is past it (the finding above has
// the DROP PARTITION); nothing where no policy matches.
function retentionFact(retention) {
  if (!retention) return [];
  const keep =
    retention.keep_days != null
      ? `keep ${count(retention.keep_days)} days`
      : `keep ${count(retention.keep_partitions)} partitions`;
  const policy = `${retention.pattern} (${keep})`;
  let state;
  if (retention.reason) state = `does not apply: ${retention.reason}`;
  else if (!retention.overdue_partitions) state = "nothing past it";
  else {
    const overdue =
      retention.overdue_days != null ? `, ${dayCount(retention.overdue_days)} overdue` : "";
    state =
      `${count(retention.overdue_partitions)} partition(s) past it, oldest ` +
      `${retention.oldest_partition}${overdue}: ~${count(retention.rows)} rows, ` +
      `${bytes(retention.bytes)}`;
  }
  return fact(
    "Retention",
    el(
      "span",
      { id: "retention-fact", title: (retention.partitions || []).join(", ") },
      policy,
      " · ",
      state,
    ),
  );
}

function showFacts(table, partitions) {
  const asOf = table.skew?.as_of ?? table.runway?.as_of;
  const aged = { statistics: table.statistics };
  show(
    "table-facts",
    fact(
      "Partitioning",
      `${table.method} (${table.expression || "—"})`,
      table.subpartition_method ? `, subpartitioned by ${table.subpartition_method}` : "",
    ),
    fact("Partitions", el("span", { id: "partition-count" }, partitionCount(table, partitions))),
    fact("Rows", el("span", { id: "rows-fact" }, estimate(count(table.rows), asOf, aged))),
    fact(
      "Data / index",
      estimate(`${bytes(table.data_bytes)} / ${bytes(table.index_bytes)}`, asOf, aged),
    ),
    fact("On disk", bytes(table.file_bytes)),
    fact(
      "Analysed by partdash",
      el("span", { title: age(table.analysed_at) }, localTime(table.analysed_at)),
    ),
    retentionFact(table.retention),
  );
  show(
    "table-findings",
    findingList(table.findings, noFindings(table.coverage), { withFix: true }),
    coverageNotes(table.coverage),
  );
}

// "Healthy" only where everything was measured; else what was not is said below.
function noFindings(coverage) {
  const blind = blindSignals(coverage).map((signal) => signal.label);
  if (!blind.length) return "No findings: this table looks healthy.";
  return `No findings in what is measured here; not measured: ${blind.join(", ")} (below).`;
}

function showSkew(skew) {
  const box = document.getElementById("skew");
  if (!skew)
    return show("skew", "No skew figures yet: they need partition row counts from a poll.");
  box.className = "";
  show(
    "skew",
    el(
      "dl",
      { className: "facts", id: "skew-facts" },
      fact(
        "Largest / mean",
        el("span", { id: "skew-ratio" }, number(skew.max_mean_ratio)),
        skew.threshold == null ? "" : ` (finding above ${number(skew.threshold)})`,
      ),
      fact("Coefficient of variation", number(skew.cv)),
      fact("Gini", number(skew.gini)),
      fact("Largest partition", skew.largest ?? "—"),
    ),
    el(
      "p",
      { className: skew.is_finding ? "bad-text" : "ok-text" },
      skew.reason || (skew.is_finding ? "Skewed." : "Even enough."),
    ),
  );
}

function drawSizes(partitions) {
  const log = view.log === "1";
  rowsChart(document.getElementById("rows-chart"), partitions, log);
  bytesChart(document.getElementById("bytes-chart"), partitions, log);
  const { rest } = foldBars(partitions, (p) => p.rows);
  show(
    "sizes-folded",
    rest
      ? `· ${count(partitions.length)} partitions: the ${TOP_BARS} largest (and any hotspot) ` +
          `have a bar each, the other ${count(rest.partitions.length)} one grey bar at their mean.`
      : null,
  );
}

// Each box's canvas, kept while a sentence stands in its place, so it keeps its id.
const canvases = new Map();

// A chart, or a sentence in its place when there is nothing to draw yet.
function drawOrExplain(boxId, drawable, draw, why) {
  const box = document.getElementById(boxId);
  if (!canvases.has(boxId))
    canvases.set(boxId, box.querySelector("canvas") ?? el("canvas", { id: `${boxId}-canvas` }));
  if (!drawable) {
    box.style.height = "";
    box.replaceChildren(el("p", { className: "empty" }, why));
    return null;
  }
  box.replaceChildren(canvases.get(boxId));
  return draw(canvases.get(boxId));
}

let activity = {}; // the rate histories last fetched, by metric: the order toggle redraws them
// Partitions one history answer names at most (its `series_cap`; 24 until one says).
let seriesCap = 24;

// Whether table order goes page by page: more partitions than one answer names.
const paged = () => view.order === "ordinal" && partitions.length > seriesCap;

// The labels of the page of partitions in view (table order), or null: the busiest.
function partitionsInView() {
  if (!paged()) return null;
  const page = clampPage(view.page, partitions.length, seriesCap);
  return pageLabels(partitions, page, seriesCap);
}

// The pager beside the table-order toggle: shown only while table order is paged.
function showPages() {
  const pager = document.getElementById("heat-pages");
  pager.hidden = !paged();
  if (pager.hidden) return;
  const page = clampPage(view.page, partitions.length, seriesCap);
  const choices = pageChoices(partitions, seriesCap);
  controls.page.replaceChildren(
    ...choices.map((c) => el("option", { value: String(c.page) }, c.text)),
  );
  controls.page.value = String(page);
  document.getElementById("heat-previous").disabled = page <= 1;
  document.getElementById("heat-next").disabled = page >= choices.length;
  show(
    "heat-pages-total",
    `of ${count(partitions.length)} partitions, ${seriesCap} at a time; the others share the last row`,
  );
}

let coverage = []; // the table's `coverage`: heatmaps of signals never read say so

function drawHeatmaps() {
  const ordinal = view.order === "ordinal";
  for (const { name, metric, signal, none } of HEATMAPS) {
    const rates = activity[metric];
    const chart = drawOrExplain(
      `${name}-box`,
      hasRates(rates),
      (c) => heatmap(c, rates, { ordinal }),
      neverRead(coverage, signal) ?? none,
    );
    show(`${name}-legend`, chart ? heatLegend(rates, chart.heatView, { ordinal }) : null);
  }
}

// The chosen window in epoch ms: a range ending now, or the custom one.
function chosenWindow() {
  const now = Date.now();
  if (view.range === "custom") {
    const start = Date.parse(view.from);
    const end = view.until ? Date.parse(view.until) : now;
    if (Number.isFinite(start) && Number.isFinite(end) && start < end)
      return { start, end: Math.min(end, now) };
  }
  return { start: now - (RANGE_HOURS[view.range] ?? 24) * HOUR_MS, end: now };
}

// The history axis starts at its first point (or the range's start, when a value from
// before it is carried in) and ends at the window's end: now, for a range.
function axisWindow(history, window) {
  const first = history.points.length ? Date.parse(history.points[0][0]) : window.start;
  return { start: Math.max(window.start, first), end: window.end };
}

// A level history has a point only where a value changed: carry the last values on to the
// latest poll in the window (the rates have a point per poll), so an unchanged partition's
// line runs to when it was last seen unchanged, not further.
function toLatestPoll(history, rates) {
  const last = history.points.at(-1);
  const polled = rates.points.at(-1)?.[0];
  if (
    !last ||
    !polled ||
    history.metric in RATE_METRICS ||
    Date.parse(polled) <= Date.parse(last[0])
  )
    return history;
  return { ...history, points: [...history.points, [polled, ...last.slice(1)]] };
}

// A large table's answer names its busiest partitions and sums the rest in a last series
// (`other` of them): a heatmap row is one partition's rate, so there it is their mean.
function othersAsMean(history) {
  if (!history.other) return history;
  const n = history.other;
  return {
    ...history,
    partitions: [...history.partitions.slice(0, -1), `${othersLabel(n)} (mean)`],
    points: history.points.map((p) => [...p.slice(0, -1), p.at(-1) == null ? null : p.at(-1) / n]),
  };
}

// Answers drawn only if still the latest asked for (a reader turning pages quickly).
let asked = 0;

async function drawActivity() {
  const mine = ++asked;
  const window = chosenWindow();
  const query =
    `since=${encodeURIComponent(new Date(window.start).toISOString())}` +
    (view.range === "custom"
      ? `&until=${encodeURIComponent(new Date(window.end).toISOString())}`
      : "");
  const metrics = [...new Set([...HEATMAPS.map((h) => h.metric), view.metric])];
  const inView = partitionsInView();
  const only = inView ? partitionsQuery(inView) : "";
  showPages();
  const fetched = await Promise.all(
    metrics.map((m) => getJSON(`${tableUrl}history/?metric=${m}&${query}${only}`)),
  );
  if (mine !== asked) return;
  seriesCap = fetched[0]?.series_cap ?? seriesCap;
  // Partition names label the charts' series, drawn on a canvas: escaped as any text is.
  for (const history of fetched) history.partitions = history.partitions.map((p) => shown(p));
  activity = Object.fromEntries(metrics.map((m, i) => [m, othersAsMean(fetched[i])]));
  drawHeatmaps();
  const chosen = fetched[metrics.indexOf(view.metric)];
  const levels = toLatestPoll(chosen, activity.write_bytes_per_s);
  const axis = axisWindow(levels, window);
  drawOrExplain(
    "history-box",
    levels.points.length > 0 && levels.partitions.length > 0,
    (canvas) => historyChart(canvas, levels, axis),
    "No history in this window yet.",
  );
}

// What write hotspots were judged on: rows changed (the application's writes) where the
// server gives them, else the signal standing in, with why and how late.
const SIGNALS = {
  rows_changed: "rows changed (the application's inserts, updates and deletes, as they happen)",
  disk: "disk writes (page flushes, minutes after the writes)",
  growth: "row growth (seen only when InnoDB recalculates a partition's statistics)",
};

function showActivitySource(activity) {
  if (!activity) return show("activity-source", "Activity: not known yet.");
  const window = activity.window_seconds
    ? ` over the last ${count(Math.round(activity.window_seconds / 60))} minutes`
    : "";
  const reads = activity.reads === "disk" ? "; read hotspots on disk reads" : "";
  const judged = `Write hotspots are judged on ${SIGNALS[activity.source] ?? activity.source}${window}${reads}.`;
  if (!activity.stands_in) return show("activity-source", judged);
  const late = activity.lag_seconds
    ? ` (about ${count(Math.round(activity.lag_seconds / 60))} min late)`
    : "";
  return show(
    "activity-source",
    el("strong", {}, "Rows changed are not used here: "),
    `${activity.stands_in}${late}. `,
    judged,
  );
}

// datetime-local inputs hold local wall time without a zone; the URL holds ISO (UTC).
const toLocalInput = (iso) => {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return "";
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
};
const fromLocalInput = (value) => (value ? new Date(value).toISOString() : "");

const view = readView(VIEW_DEFAULTS);
const controls = {
  range: document.getElementById("range"),
  from: document.getElementById("range-from"),
  until: document.getElementById("range-until"),
  metric: document.getElementById("history-metric"),
  log: document.getElementById("log-scale"),
  order: document.getElementById("heat-ordinal"),
  page: document.getElementById("heat-page"),
};

// Put the URL's view into the controls (unknown values fall back to the defaults).
function restoreControls() {
  if (!(view.range in RANGE_HOURS) && view.range !== "custom") view.range = VIEW_DEFAULTS.range;
  if (![...controls.metric.options].some((o) => o.value === view.metric))
    view.metric = VIEW_DEFAULTS.metric;
  controls.range.value = view.range;
  controls.metric.value = view.metric;
  controls.log.checked = view.log === "1";
  controls.order.checked = view.order === "ordinal";
  controls.from.value = toLocalInput(view.from);
  controls.until.value = toLocalInput(view.until);
  document.getElementById("custom-range").hidden = view.range !== "custom";
}

function readControls() {
  Object.assign(view, {
    range: controls.range.value,
    metric: controls.metric.value,
    log: controls.log.checked ? "1" : "",
    order: controls.order.checked ? "ordinal" : "",
    page: controls.order.checked ? view.page : "",
    from: controls.range.value === "custom" ? fromLocalInput(controls.from.value) : "",
    until: controls.range.value === "custom" ? fromLocalInput(controls.until.value) : "",
  });
  document.getElementById("custom-range").hidden = view.range !== "custom";
  writeView(view, VIEW_DEFAULTS);
}

let partitions = [];

async function loadFigures() {
  const [table, latest, statements] = await Promise.all([
    getJSON(tableUrl),
    getJSON(`${tableUrl}partitions/`),
    getJSON(`${tableUrl}statements/`),
  ]);
  partitions = latest;
  showStatements(statements);
  coverage = table.coverage ?? [];
  showFacts(table, partitions);
  showSkew(table.skew);
  showCompression(table, partitions);
  showActivitySource(table.activity);
  drawSizes(partitions);
  showRunway(table, partitions);
  await drawActivity();
  return table;
}

async function load() {
  restoreControls();
  const table = await loadFigures();
  const redraw = () => drawActivity().catch(fail);
  controls.log.addEventListener("change", () => {
    readControls();
    drawSizes(partitions);
  });
  // Table order on a large table fetches a page of partitions; else the answers at hand
  // hold every partition and are drawn again in the other order.
  controls.order.addEventListener("change", () => {
    const wasPaged = paged();
    readControls();
    if (wasPaged || paged()) redraw();
    else drawHeatmaps();
  });
  const turnTo = (page) => {
    view.page = String(clampPage(page, partitions.length, seriesCap));
    writeView(view, VIEW_DEFAULTS);
    redraw();
  };
  controls.page.addEventListener("change", () => turnTo(controls.page.value));
  document.getElementById("heat-previous").addEventListener("click", () => {
    turnTo(Number(controls.page.value) - 1);
  });
  document.getElementById("heat-next").addEventListener("click", () => {
    turnTo(Number(controls.page.value) + 1);
  });
  controls.range.addEventListener("change", () => {
    if (controls.range.value === "custom" && !controls.from.value) {
      const { start, end } = chosenWindow();
      controls.from.value = toLocalInput(new Date(start).toISOString());
      controls.until.value = toLocalInput(new Date(end).toISOString());
    }
    readControls();
    redraw();
  });
  for (const input of [controls.metric, controls.from, controls.until]) {
    input.addEventListener("change", () => {
      readControls();
      redraw();
    });
  }
  watchPolls(table.server_id, () => loadFigures().catch(fail), "live");
}

function fail(error) {
  show(
    "table-findings",
    el("p", { className: "error" }, `Cannot load this table: ${error.message}`),
  );
}

// data-ready tells the browser tests (and anyone watching) that the first load is done.
load()
  .catch(fail)
  .finally(() => {
    root.dataset.ready = "true";
  });

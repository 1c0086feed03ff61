// The table page's activity heatmaps: partition (y) by poll (x), one per rate the history
// API serves. Large tables show their busiest partitions in full and fold the rest into
// one row (fold.js); rows are ROW_PX tall whatever the count, the box grows (and scrolls,
// in ordinal order) instead of the rows shrinking to lines.
import { drawChart, HEAT_GRADIENT, heat, noDataPattern, pageColour } from "./charts.js";
import { el } from "./dom.js";
import { columnsFor, heatRows, othersLabel } from "./fold.js";
import { number, pollTime, rate } from "./format.js";

const ROW_PX = 22;
const AXIS_PX = 40; // the time axis' labels
const LABELS_PX = 130; // the partitions' names, left of the cells
const DAY_MS = 86400000;
const clock = new Intl.DateTimeFormat(undefined, { hour: "numeric", minute: "2-digit" });
const dayClock = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "numeric",
});
export const NO_DATA = "no data yet";
const NO_DATA_WHY = "no earlier reading to compare with";

// Rows a second to two decimals; a trickle below that is not written as 0.
const rowsRate = (v) => {
  if (v == null) return "—";
  return v > 0 && v < 0.005 ? "< 0.01 rows/s" : `${number(v)} rows/s`;
};

// Each rate's unit: rows the application changed, or bytes on disk.
const RATES = {
  rows_changed_per_s: { format: rowsRate, unit: "rows/s" },
  write_bytes_per_s: { format: rate, unit: "bytes/s" },
  read_bytes_per_s: { format: rate, unit: "bytes/s" },
};
export const rateFormat = (metric) => (RATES[metric] ?? RATES.write_bytes_per_s).format;

const cellsOf = (rows) =>
  rows.flatMap((row, y) =>
    row.values.map((v, x) => ({ x: String(x), y: String(y), v, busiest: row.busiest?.[x] })),
  );
// The smallest and largest rate drawn, [0, 0] with none (a loop: a year of partitions by
// 120 columns is too many arguments to spread into Math.min).
function extent(rows) {
  let [min, max] = [Infinity, -Infinity];
  for (const row of rows)
    for (const v of row.values) if (v != null) [min, max] = [Math.min(min, v), Math.max(max, v)];
  return max === -Infinity ? [0, 0] : [min, max];
}

// Whether a history has any rate to draw (a rate needs two readings of a partition).
export const hasRates = (history) =>
  history.partitions.length > 0 &&
  history.points.some(([, ...values]) => values.some((v) => v != null));

// A category axis keyed by position ("0", "1", ...) and showing `names`: two columns or
// rows may share a name but must keep their own place.
const indexAxis = (names, extra = {}) => ({
  type: "category",
  labels: names.map((_, i) => String(i)),
  offset: true,
  grid: { display: false },
  border: { display: false },
  ...extra,
  ticks: { callback: (_, i) => names[i], ...extra.ticks },
});

// A column's time on the axis: the clock within a day, else the day and hour.
function tickTimes(columns) {
  const span = Date.parse(columns.at(-1).last) - Date.parse(columns[0].first);
  const format = span < DAY_MS ? clock : dayClock;
  return columns.map((column) => format.format(new Date(column.last)));
}

const columnTime = (column) =>
  column.first === column.last
    ? pollTime(column.last)
    : `${pollTime(column.first)} – ${pollTime(column.last)}`;

function cellText(view, metric, raw) {
  const row = view.rows[+raw.y];
  const when = columnTime(view.columns[+raw.x]);
  if (raw.v == null) return `${row.label} at ${when}: ${NO_DATA} (${NO_DATA_WHY})`;
  const value = rateFormat(metric)(raw.v);
  if (row.folded && raw.v > 0) return `${row.label} at ${when}: busiest ${raw.busiest}, ${value}`;
  return `${row.label} at ${when}: ${value}`;
}

// Draw `history` on `canvas`, whose box (its parent) is sized to the rows. Returns the
// chart; `chart.heatView` holds the rows drawn (the legend reads it).
export function heatmap(canvas, history, { ordinal = false } = {}) {
  const width = canvas.parentElement.clientWidth - LABELS_PX;
  const view = heatRows(history, { ordinal, max: columnsFor(width) });
  const max = Math.max(0, extent(view.rows)[1]);
  const missing = noDataPattern();
  const cells = cellsOf(view.rows);
  canvas.parentElement.style.height = `${view.rows.length * ROW_PX + AXIS_PX}px`;
  const size =
    (axis, n) =>
    ({ chart }) =>
      (chart.chartArea?.[axis] ?? 0) / Math.max(n, 1) - 1;
  const chart = drawChart(canvas, {
    type: "matrix",
    data: {
      datasets: [
        {
          label: history.metric,
          data: cells,
          // One colour per cell, computed once: a function here is called per cell on
          // every update, a third of the time a year of partitions takes to draw.
          backgroundColor: cells.map((cell) => (cell.v == null ? missing : heat(cell.v, max))),
          // The gap between cells is the page's own surface: no grid lines to outshine
          // the cells, in dark mode least of all.
          borderColor: pageColour("--surface", "#fff"),
          borderWidth: 1,
          width: size("width", view.columns.length),
          height: size("height", view.rows.length),
        },
      ],
    },
    options: {
      scales: {
        x: indexAxis(tickTimes(view.columns), {
          position: ordinal ? "top" : "bottom",
          ticks: { maxRotation: 0, autoSkipPadding: 16 },
        }),
        // Busiest (or first) at the top, the folded rest at the bottom, every name shown
        // (`reverse: false` said outright: without it the first row was drawn at the bottom).
        y: indexAxis(
          view.rows.map((row) => row.label),
          { reverse: false, ticks: { autoSkip: false } },
        ),
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: { title: () => "", label: (c) => cellText(view, history.metric, c.raw) },
        },
      },
    },
  });
  chart.heatView = view;
  canvas.setAttribute("role", "img");
  canvas.setAttribute(
    "aria-label",
    view.busiest ? `busiest partition: ${view.busiest}` : "no partition active in this window",
  );
  return chart;
}

const BUCKET_MINUTES = { "5min": 5, hour: 60, day: 1440 };

// "5 minutes", "hour", "3 hours", "day", "2 days".
function span(minutes) {
  const [count, unit] =
    minutes % 1440 === 0
      ? [minutes / 1440, "day"]
      : minutes % 60 === 0
        ? [minutes / 60, "hour"]
        : [minutes, "minute"];
  return count === 1 ? unit : `${count} ${unit}s`;
}

// Under a heatmap: its colour scale from the smallest to the largest rate drawn, in the
// rate's unit; the hatching of "no data yet"; what the folded row shows; the busiest.
export function heatLegend(history, view, { ordinal = false } = {}) {
  const format = rateFormat(history.metric);
  const [min, max] = extent(view.rows);
  const folded = view.rows.find((row) => row.folded);
  const hasNull = view.rows.some((row) => row.values.some((v) => v == null));
  // A long range comes in buckets (the history's `resolution`): each the mean of its polls.
  const minutes = BUCKET_MINUTES[history.resolution];
  const unit = minutes
    ? `, per partition, the mean over each ${span(minutes)}`
    : ", per partition and poll";
  const columns = minutes
    ? ` (each column the mean over ${span(minutes * view.pollsPerColumn)})`
    : ` (each column the mean of ${view.pollsPerColumn} polls)`;
  return el(
    "div",
    { className: "heat-legend" },
    el("span", { className: "heat-order" }, ordinal ? "Table order." : "Busiest first."),
    el("span", { className: "heat-min" }, format(min)),
    el("span", { className: "heat-scale", style: `background:${HEAT_GRADIENT}` }),
    el("span", { className: "heat-max" }, format(max)),
    el(
      "span",
      { className: "heat-unit" },
      `${RATES[history.metric]?.unit}${unit}`,
      view.pollsPerColumn > 1 ? columns : "",
    ),
    history.complete === false &&
      el(
        "span",
        { className: "heat-incomplete" },
        "The older part of this range is still being summarised: it has no columns yet.",
      ),
    hasNull &&
      el(
        "span",
        { className: "heat-no-data" },
        el("span", { className: "swatch no-data" }),
        ` ${NO_DATA} (${NO_DATA_WHY})`,
      ),
    folded &&
      el("span", { className: "heat-folded" }, `${folded.label}: each cell the busiest of them`),
    history.other > 0 && el("span", { className: "heat-other" }, otherText(history, ordinal)),
    view.busiest &&
      el("span", { className: "heat-busiest" }, "busiest: ", el("strong", {}, view.busiest)),
  );
}

// What the answer's `other` series is: the partitions past the `series_cap` it names, one
// row at their mean per partition (a sum would outshine every partition named).
function otherText(history, ordinal) {
  const others = othersLabel(history.other);
  const cap = history.series_cap;
  if (ordinal)
    return `last row, ${others}: each cell their mean per partition (one answer names at most ${cap}; turn the pages above for the others)`;
  return `${others} past the ${cap} busiest count as one, at their mean per partition`;
}

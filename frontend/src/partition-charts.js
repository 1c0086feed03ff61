// Per-partition charts of the table page: sizes (bars), activity (heatmaps), history (lines).
import { COLOURS, drawChart, HEAT_GRADIENT, heat, seriesColour } from "./charts.js";
import { el } from "./dom.js";
import { bytes, count, localTime, partitionLabel, pollTime, rate } from "./format.js";

const MAX_LEGEND = 12;
const DAY_MS = 86400000;

// Each history metric's unit, for axes, tooltips and legends.
export const METRIC_FORMAT = {
  rows: count,
  data_bytes: bytes,
  index_bytes: bytes,
  file_bytes: bytes,
  write_bytes_per_s: rate,
  read_bytes_per_s: rate,
};

const heatCells = (history) =>
  history.points.flatMap(([, ...rates], x) =>
    rates.map((v, y) => ({ x: String(x), y: String(y), v: v ?? 0 })),
  );
const heatMax = (cells) => Math.max(0, ...cells.map((c) => c.v));

// The colour scale under a heatmap: the smallest and largest rate shown, in bytes/s.
export function heatLegend(history) {
  const values = heatCells(history).map((c) => c.v);
  const [min, max] = values.length ? [Math.min(...values), Math.max(...values)] : [0, 0];
  const nowrap = "white-space:nowrap";
  return el(
    "div",
    {
      className: "heat-legend",
      style: "display:flex;flex-wrap:wrap;align-items:center;gap:0.25rem 0.5rem;font-size:0.85em",
    },
    el("span", { className: "heat-min", style: nowrap }, rate(min)),
    el("span", {
      className: "heat-scale",
      style: `flex:1;min-width:4rem;max-width:16rem;height:0.8rem;background:${HEAT_GRADIENT}`,
    }),
    el("span", { className: "heat-max", style: nowrap }, rate(max)),
    el("span", { className: "heat-unit" }, "bytes/s, per partition and poll"),
  );
}

const hotColours = (partitions, colour, hot = COLOURS.hot) =>
  partitions.map((p) => (p.is_hotspot ? hot : colour));
// On a log scale the smallest bar needs room below it, or it has no height at all.
function logFloor(values) {
  const smallest = Math.min(...values.filter((v) => v > 0));
  return Number.isFinite(smallest) ? 10 ** Math.floor(Math.log10(smallest) - 0.0001) : 1;
}

const yScale = (log, format, values) => ({
  type: log ? "logarithmic" : "linear",
  beginAtZero: !log,
  min: log ? logFloor(values) : undefined,
  ticks: { callback: format },
});

export function rowsChart(canvas, partitions, log) {
  return drawChart(canvas, {
    type: "bar",
    data: {
      labels: partitions.map(partitionLabel),
      datasets: [
        {
          label: "rows",
          data: partitions.map((p) => p.rows),
          backgroundColor: hotColours(partitions, COLOURS.base),
        },
      ],
    },
    options: {
      scales: {
        y: yScale(
          log,
          (v) => count(v),
          partitions.map((p) => p.rows),
        ),
      },
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (c) => `${count(c.raw)} rows` } },
      },
    },
  });
}

export function bytesChart(canvas, partitions, log) {
  const dataset = (label, field, colour, hot) => ({
    label,
    data: partitions.map((p) => p[field]),
    backgroundColor: hotColours(partitions, colour, hot),
    stack: "bytes",
  });
  return drawChart(canvas, {
    type: "bar",
    data: {
      labels: partitions.map(partitionLabel),
      datasets: [
        dataset("data", "data_bytes", COLOURS.base, COLOURS.hot),
        dataset("index", "index_bytes", COLOURS.index, COLOURS.hotIndex),
      ],
    },
    options: {
      scales: {
        x: { stacked: true },
        y: {
          ...yScale(
            log,
            (v) => bytes(v),
            partitions.map((p) => p.data_bytes),
          ),
          stacked: true,
        },
      },
      // The caption says which shade is which: a legend would take the first bar's colour.
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${bytes(c.raw)}` } },
      },
    },
  });
}

// A category axis keyed by position ("0", "1", ...) and showing `names`: two polls in the
// same second share a name but must keep their own column.
const indexAxis = (names) => ({
  type: "category",
  labels: names.map((_, i) => String(i)),
  offset: true,
  grid: { display: false },
  ticks: { callback: (_, i) => names[i] },
});

// Partition (y) by poll (x), coloured by the rate over that poll's interval.
export function heatmap(canvas, history) {
  const times = history.points.map(([iso]) => pollTime(iso));
  const cells = heatCells(history);
  const max = heatMax(cells);
  const size =
    (axis, n) =>
    ({ chart }) =>
      (chart.chartArea?.[axis] ?? 0) / Math.max(n, 1) - 1;
  return drawChart(canvas, {
    type: "matrix",
    data: {
      datasets: [
        {
          label: history.metric,
          data: cells,
          backgroundColor: (c) => heat(c.raw?.v ?? 0, max),
          borderColor: "#e5e7eb",
          borderWidth: 1,
          width: size("width", times.length),
          height: size("height", history.partitions.length),
        },
      ],
    },
    options: {
      scales: { x: indexAxis(times), y: indexAxis(history.partitions) },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            title: () => "",
            label: (c) => `${history.partitions[+c.raw.y]} at ${times[+c.raw.x]}: ${rate(c.raw.v)}`,
          },
        },
      },
    },
  });
}

// Lines per partition on a time axis from `window.start` to `window.end` (epoch ms): the
// caller starts it at the first point or the chosen range and ends it at now.
export function historyChart(canvas, history, window) {
  const format = METRIC_FORMAT[history.metric] ?? count;
  // Within a day minutes repeat on the ticks: show seconds there.
  const tickTime = (v) =>
    (window.end - window.start <= DAY_MS ? pollTime : localTime)(new Date(v).toISOString());
  const datasets = history.partitions.map((label, j) => ({
    label,
    data: history.points.map(([iso, ...values]) => ({ x: new Date(iso).getTime(), y: values[j] })),
    borderColor: seriesColour(j, history.partitions.length),
    backgroundColor: seriesColour(j, history.partitions.length),
    pointRadius: 2,
    spanGaps: true,
  }));
  return drawChart(canvas, {
    type: "line",
    data: { datasets },
    options: {
      scales: {
        x: {
          type: "linear",
          min: window.start,
          max: window.end,
          ticks: { callback: (v) => tickTime(v), maxTicksLimit: 6 },
        },
        y: { beginAtZero: true, ticks: { callback: (v) => format(v) } },
      },
      plugins: {
        legend: { display: datasets.length <= MAX_LEGEND },
        tooltip: {
          callbacks: {
            title: (items) => localTime(new Date(items[0].raw.x).toISOString()),
            label: (c) => `${c.dataset.label}: ${format(c.raw.y)}`,
          },
        },
      },
    },
  });
}

// Per-partition charts of the table page: sizes (bars) and history (lines); the activity
// heatmaps are heatmaps.js. A large table's bars are its largest partitions and one bar
// for the rest (fold.js).
import { COLOURS, drawChart, seriesColour } from "./charts.js";
import { foldBars, restFigures } from "./fold.js";
import { bytes, count, localTime, partitionLabel, pollTime, rate } from "./format.js";
import { rateFormat } from "./heatmaps.js";

const MAX_LEGEND = 12;
const DAY_MS = 86400000;

// Each history metric's unit, for axes, tooltips and legends.
export const METRIC_FORMAT = {
  rows: count,
  data_bytes: bytes,
  index_bytes: bytes,
  file_bytes: bytes,
  rows_changed_per_s: rateFormat("rows_changed_per_s"),
  write_bytes_per_s: rate,
  read_bytes_per_s: rate,
};

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

// The bars of a size chart: each partition shown, then (a large table) one bar for the
// rest at their mean, so it stays on the scale of a partition; grey, as it is none of them.
function sizeBars(partitions, size) {
  const { shown, rest } = foldBars(partitions, size);
  return {
    labels: [...shown.map(partitionLabel), ...(rest ? [`${rest.label} (mean)`] : [])],
    values: (field) => [
      ...shown.map((p) => p[field]),
      ...(rest ? [restFigures(rest, field).mean] : []),
    ],
    colours: (colour, hot, folded) => [
      ...shown.map((p) => (p.is_hotspot ? hot : colour)),
      ...(rest ? [folded] : []),
    ],
    // What the folded bar stands for, in its tooltip.
    restText: (field, format) => {
      const { mean, total, largest } = restFigures(rest, field);
      return `${format(mean)} each on average, ${format(total)} in all; largest ${partitionLabel(largest)}`;
    },
    isRest: (index) => rest != null && index === shown.length,
  };
}

export function rowsChart(canvas, partitions, log) {
  const bars = sizeBars(partitions, (p) => p.rows);
  const label = (c) =>
    bars.isRest(c.dataIndex)
      ? bars.restText("rows", (v) => `${count(Math.round(v))} rows`)
      : `${count(c.raw)} rows`;
  return drawChart(canvas, {
    type: "bar",
    data: {
      labels: bars.labels,
      datasets: [
        {
          label: "rows",
          data: bars.values("rows"),
          backgroundColor: bars.colours(COLOURS.base, COLOURS.hot, COLOURS.unknown),
        },
      ],
    },
    options: {
      scales: { y: yScale(log, (v) => count(v), bars.values("rows")) },
      plugins: { legend: { display: false }, tooltip: { callbacks: { label } } },
    },
  });
}

export function bytesChart(canvas, partitions, log) {
  const bars = sizeBars(partitions, (p) => (p.data_bytes ?? 0) + (p.index_bytes ?? 0));
  const dataset = (label, field, colour, hot, folded) => ({
    label,
    field,
    data: bars.values(field),
    backgroundColor: bars.colours(colour, hot, folded),
    stack: "bytes",
  });
  const label = (c) =>
    `${c.dataset.label}: ${bars.isRest(c.dataIndex) ? bars.restText(c.dataset.field, bytes) : bytes(c.raw)}`;
  return drawChart(canvas, {
    type: "bar",
    data: {
      labels: bars.labels,
      datasets: [
        dataset("data", "data_bytes", COLOURS.base, COLOURS.hot, COLOURS.unknown),
        dataset("index", "index_bytes", COLOURS.index, COLOURS.hotIndex, COLOURS.unknownIndex),
      ],
    },
    options: {
      scales: {
        x: { stacked: true },
        y: { ...yScale(log, (v) => bytes(v), bars.values("data_bytes")), stacked: true },
      },
      // The caption says which shade is which: a legend would take the first bar's colour.
      plugins: { legend: { display: false }, tooltip: { callbacks: { label } } },
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
  // A large table's last series sums the `other` partitions: grey, dashed, on its own
  // axis (right), so the named partitions' lines are not flattened under it.
  const otherAt = history.other ? history.partitions.length - 1 : -1;
  const datasets = history.partitions.map((label, j) => ({
    label: j === otherAt ? `${history.other} other partitions (sum, right axis)` : label,
    data: history.points.map(([iso, ...values]) => ({ x: new Date(iso).getTime(), y: values[j] })),
    borderColor: j === otherAt ? "#888" : seriesColour(j, history.partitions.length),
    backgroundColor: j === otherAt ? "#888" : seriesColour(j, history.partitions.length),
    borderDash: j === otherAt ? [6, 4] : [],
    yAxisID: j === otherAt ? "other" : "y",
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
        other: {
          display: otherAt >= 0,
          position: "right",
          beginAtZero: true,
          grid: { drawOnChartArea: false },
          ticks: { callback: (v) => format(v) },
        },
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

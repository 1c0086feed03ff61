// Per-partition charts of the table page: sizes (bars), activity (heatmaps), history (lines).
import { COLOURS, drawChart, heat, seriesColour } from "./charts.js";
import { bytes, count, localTime, pollTime, rate } from "./format.js";

const MAX_LEGEND = 12;

export function partitionLabel(partition) {
  return partition.subpartition ? `${partition.name}#${partition.subpartition}` : partition.name;
}

const hotColours = (partitions, colour) => partitions.map((p) => (p.is_hotspot ? COLOURS.hot : colour));
const yScale = (log, format) => ({ type: log ? "logarithmic" : "linear", beginAtZero: !log, ticks: { callback: format } });

export function rowsChart(canvas, partitions, log) {
  return drawChart(canvas, {
    type: "bar",
    data: {
      labels: partitions.map(partitionLabel),
      datasets: [{ label: "rows", data: partitions.map((p) => p.rows), backgroundColor: hotColours(partitions, COLOURS.base) }],
    },
    options: {
      scales: { y: yScale(log, (v) => count(v)) },
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: (c) => `${count(c.raw)} rows` } } },
    },
  });
}

export function bytesChart(canvas, partitions, log) {
  const dataset = (label, field, colour) => ({
    label, data: partitions.map((p) => p[field]), backgroundColor: hotColours(partitions, colour), stack: "bytes",
  });
  return drawChart(canvas, {
    type: "bar",
    data: {
      labels: partitions.map(partitionLabel),
      datasets: [dataset("data", "data_bytes", COLOURS.base), dataset("index", "index_bytes", COLOURS.index)],
    },
    options: {
      scales: { x: { stacked: true }, y: { ...yScale(log, (v) => bytes(v)), stacked: true } },
      plugins: { tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${bytes(c.raw)}` } } },
    },
  });
}

// Partition (y) by poll (x), coloured by the rate over that poll's interval.
export function heatmap(canvas, history) {
  const times = history.points.map(([iso]) => pollTime(iso));
  const cells = history.points.flatMap(([, ...rates], i) =>
    rates.map((v, j) => ({ x: times[i], y: history.partitions[j], v: v ?? 0 })));
  const max = Math.max(0, ...cells.map((c) => c.v));
  const size = (axis, n) => ({ chart }) => ((chart.chartArea?.[axis] ?? 0) / Math.max(n, 1)) - 1;
  return drawChart(canvas, {
    type: "matrix",
    data: {
      datasets: [{
        label: history.metric,
        data: cells,
        backgroundColor: (c) => heat(c.raw?.v ?? 0, max),
        borderColor: "#e5e7eb",
        borderWidth: 1,
        width: size("width", times.length),
        height: size("height", history.partitions.length),
      }],
    },
    options: {
      scales: {
        x: { type: "category", labels: times, offset: true, grid: { display: false } },
        y: { type: "category", labels: history.partitions, offset: true, grid: { display: false } },
      },
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { title: () => "", label: (c) => `${c.raw.y} at ${c.raw.x}: ${rate(c.raw.v)}` } },
      },
    },
  });
}

export function historyChart(canvas, history) {
  const format = history.metric === "rows" ? count : bytes;
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
        x: { type: "linear", ticks: { callback: (v) => localTime(new Date(v).toISOString()), maxTicksLimit: 6 } },
        y: { beginAtZero: true, ticks: { callback: (v) => format(v) } },
      },
      plugins: {
        legend: { display: datasets.length <= MAX_LEGEND },
        tooltip: { callbacks: { title: (items) => localTime(new Date(items[0].raw.x).toISOString()), label: (c) => `${c.dataset.label}: ${format(c.raw.y)}` } },
      },
    },
  });
}

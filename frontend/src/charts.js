// Chart.js with only the parts the pages use, and the dashboard's colours.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  LogarithmicScale,
  PointElement,
  Tooltip,
} from "chart.js";
import { MatrixController, MatrixElement } from "chartjs-chart-matrix";

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  LogarithmicScale,
  PointElement,
  Tooltip,
  MatrixController,
  MatrixElement,
);
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
// Text and grid lines in the page's colours (partdash.css), so they read in dark mode too.
const page = getComputedStyle(document.documentElement);
Chart.defaults.color = page.getPropertyValue("--muted").trim() || Chart.defaults.color;
Chart.defaults.borderColor = page.getPropertyValue("--line").trim() || Chart.defaults.borderColor;

export { Chart };

export const COLOURS = {
  base: "#3b82f6",
  index: "#93c5fd",
  hot: "#b3261e",
  hotIndex: "#f2a49f",
  ok: "#1b7f3b",
  warning: "#b36b00",
  critical: "#b3261e",
  unknown: "#9ca3af",
  unknownIndex: "#d1d5db",
};

// A distinct colour per series (partition lines), spread over the hue circle but for the
// red kept for hot partitions (COLOURS.hot, hue 4°): a line in red read as a hotspot. The
// lines share the 290° from orange (40°) to pink (330°), 30° or more from that red.
const FIRST_HUE = 40;
const HUE_SPAN = 290;

export function seriesColour(index, count) {
  const hue = Math.round(FIRST_HUE + (index * HUE_SPAN) / Math.max(count, 1));
  return `hsl(${hue} 65% 45%)`;
}

// Heatmap cell colour: faint at zero through to full blue at the largest value (a darker
// blue on a light page, a lighter one on a dark page: --heat in partdash.css). Not red:
// red means a flagged hotspot and nothing else, and a busy cell is not a verdict.
const HEAT_RGB = page.getPropertyValue("--heat").trim() || "29, 78, 216";
const HEAT_FLOOR = 0.06;

export function heat(value, max) {
  const share = max > 0 ? Math.min(value / max, 1) : 0;
  return `rgba(${HEAT_RGB}, ${HEAT_FLOOR + (1 - HEAT_FLOOR) * share})`;
}

// The heatmap's scale as a CSS gradient, from the colour of zero to that of the largest.
export const HEAT_GRADIENT = `linear-gradient(to right, ${heat(0, 1)}, ${heat(1, 1)})`;

// The page's own colours, for what a chart draws between and across its cells.
export const pageColour = (name, fallback) => page.getPropertyValue(name).trim() || fallback;

// A cell with no data yet: grey hatching (the legend's .swatch.no-data), unlike any rate.
export function noDataPattern() {
  const tile = document.createElement("canvas");
  tile.width = tile.height = 6;
  const pen = tile.getContext("2d");
  pen.strokeStyle = pageColour("--muted", "#666");
  pen.globalAlpha = 0.6;
  pen.beginPath();
  pen.moveTo(0, 6);
  pen.lineTo(6, 0);
  pen.stroke();
  return pen.createPattern(tile, "repeat");
}

// Replace whatever chart already lives on `canvas` (selectors redraw in place).
export function drawChart(canvas, config) {
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, config);
}

// The chart drawn on a canvas, for the browser tests: the registry lives inside the bundle.
window.partdashChart = (canvas) => Chart.getChart(canvas);

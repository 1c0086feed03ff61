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
};

// A distinct colour per series (partition lines), cycling round the hue circle.
export function seriesColour(index, count) {
  const hue = Math.round((index * 360) / Math.max(count, 1));
  return `hsl(${hue} 65% 45%)`;
}

// Heatmap cell colour: pale at zero through to dark blue at the largest value. Not red:
// red means a flagged hotspot and nothing else, and a busy cell is not a verdict.
const HEAT_RGB = "29, 78, 216";
const HEAT_FLOOR = 0.06;

export function heat(value, max) {
  const share = max > 0 ? Math.min(value / max, 1) : 0;
  return `rgba(${HEAT_RGB}, ${HEAT_FLOOR + (1 - HEAT_FLOOR) * share})`;
}

// The heatmap's scale as a CSS gradient, from the colour of zero to that of the largest.
export const HEAT_GRADIENT = `linear-gradient(to right, ${heat(0, 1)}, ${heat(1, 1)})`;

// Replace whatever chart already lives on `canvas` (selectors redraw in place).
export function drawChart(canvas, config) {
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, config);
}

// The chart drawn on a canvas, for the browser tests: the registry lives inside the bundle.
window.partdashChart = (canvas) => Chart.getChart(canvas);

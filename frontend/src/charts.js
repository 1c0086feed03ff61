// Chart.js with only the parts the pages use, and the dashboard's colours.
import {
  BarController, BarElement, CategoryScale, Chart, Filler, Legend, LinearScale, LineController,
  LineElement, LogarithmicScale, PointElement, Tooltip,
} from "chart.js";
import { MatrixController, MatrixElement } from "chartjs-chart-matrix";

Chart.register(
  BarController, BarElement, CategoryScale, Filler, Legend, LinearScale, LineController,
  LineElement, LogarithmicScale, PointElement, Tooltip, MatrixController, MatrixElement,
);
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;

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

// Heatmap cell colour: white at zero through to dark red at the largest value.
export function heat(value, max) {
  const share = max > 0 ? Math.min(value / max, 1) : 0;
  return `rgba(179, 38, 30, ${0.06 + 0.94 * share})`;
}

// Replace whatever chart already lives on `canvas` (selectors redraw in place).
export function drawChart(canvas, config) {
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, config);
}

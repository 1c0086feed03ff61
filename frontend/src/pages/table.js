// Table page: skew and compression figures, per-partition charts, activity, history, runway.
import { getJSON } from "../api.js";
import { showCompression } from "../compression.js";
import { el, estimate, show } from "../dom.js";
import { findingList } from "../findings.js";
import { age, bytes, count, localTime, number, percent } from "../format.js";
import { bytesChart, heatmap, historyChart, rowsChart } from "../partition-charts.js";
import { showRunway } from "../runway.js";

const root = document.getElementById("table-page");
const tableUrl = `tables/${root.dataset.tableId}/`;
const HOUR_MS = 3600000;
const fact = (term, ...value) => [el("dt", {}, term), el("dd", {}, value)];

function showFacts(table) {
  show("table-facts",
    fact("Partitioning", `${table.method} (${table.expression || "—"})`),
    fact("Partitions", count(table.partition_count)),
    fact("Rows", estimate(count(table.rows), table.skew?.as_of ?? table.analysed_at)),
    fact("Data / index", `${bytes(table.data_bytes)} / ${bytes(table.index_bytes)}`),
    fact("On disk", bytes(table.file_bytes)),
    fact("Analysed", el("span", { title: age(table.analysed_at) }, localTime(table.analysed_at))),
  );
  show("table-findings", findingList(table.findings, "No findings: this table looks healthy.", { withFix: true }));
}

function showSkew(skew) {
  const box = document.getElementById("skew");
  if (!skew) return show("skew", "No skew figures yet: they need partition row counts from a poll.");
  box.className = "";
  show("skew",
    el("dl", { className: "facts", id: "skew-facts" },
      fact("Largest / mean", el("span", { id: "skew-ratio" }, number(skew.max_mean_ratio)),
        skew.threshold == null ? "" : ` (finding above ${number(skew.threshold)})`),
      fact("Coefficient of variation", number(skew.cv)),
      fact("Gini", number(skew.gini)),
      fact("Largest partition", skew.largest ?? "—"),
    ),
    el("p", { className: skew.is_finding ? "bad-text" : "ok-text" }, skew.reason || (skew.is_finding ? "Skewed." : "Even enough.")),
  );
}

function drawSizes(partitions) {
  const log = document.getElementById("log-scale").checked;
  rowsChart(document.getElementById("rows-chart"), partitions, log);
  bytesChart(document.getElementById("bytes-chart"), partitions, log);
}

// A chart, or a sentence in its place when there is nothing to draw yet.
function drawOrExplain(boxId, history, draw, why) {
  const box = document.getElementById(boxId);
  const canvas = box.querySelector("canvas") ?? el("canvas", { id: `${boxId}-canvas` });
  if (!history.points.length || !history.partitions.length) return box.replaceChildren(el("p", { className: "empty" }, why));
  box.replaceChildren(canvas);
  draw(canvas, history);
}

async function drawActivity() {
  const hours = Number(document.getElementById("since").value);
  const since = encodeURIComponent(new Date(Date.now() - hours * HOUR_MS).toISOString());
  const metric = document.getElementById("history-metric").value;
  const [writes, reads, history] = await Promise.all(
    ["write_bytes_per_s", "read_bytes_per_s", metric].map((m) => getJSON(`${tableUrl}history/?metric=${m}&since=${since}`)),
  );
  const noRates = "No rates in this window yet: a rate needs two polls.";
  drawOrExplain("write-box", writes, heatmap, noRates);
  drawOrExplain("read-box", reads, heatmap, noRates);
  drawOrExplain("history-box", history, historyChart, "No history in this window yet.");
}

function showActivitySource(activity) {
  if (!activity) return show("activity-source", "Activity source: not known yet.");
  const window = activity.window_seconds ? ` over ${count(Math.round(activity.window_seconds / 60))} minutes` : "";
  show("activity-source", `Hot partitions from ${activity.source}${window}${activity.estimated ? " (estimated)" : ""}.`);
}

async function load() {
  const [table, partitions] = await Promise.all([getJSON(tableUrl), getJSON(`${tableUrl}partitions/`)]);
  showFacts(table);
  showSkew(table.skew);
  showCompression(table, partitions);
  showActivitySource(table.activity);
  drawSizes(partitions);
  document.getElementById("log-scale").addEventListener("change", () => drawSizes(partitions));
  showRunway(table, partitions);
  const redraw = () => drawActivity().catch(fail);
  for (const id of ["since", "history-metric"]) document.getElementById(id).addEventListener("change", redraw);
  await drawActivity();
}

function fail(error) {
  show("table-findings", el("p", { className: "error" }, `Cannot load this table: ${error.message}`));
}

// data-ready tells the browser tests (and anyone watching) that the first load is done.
load().catch(fail).finally(() => { root.dataset.ready = "true"; });

// RANGE runway: bounds on a time axis, today, and the projected fill (today + days left).
import { COLOURS, drawChart } from "./charts.js";
import { el, estimate, show } from "./dom.js";
import { foldEnds } from "./fold.js";
import { boundDay, count, dayCount, localDay, number } from "./format.js";

export const RANGE_METHODS = ["RANGE", "RANGE COLUMNS"];
const DAY_MS = 86400000;

// The API reads each bound (partdash.health.bounds): an ISO date, UTC where it has a time.
const boundDate = (partition) => (partition.bound_date ? new Date(partition.bound_date) : null);

// Days left, or why they are unknown (the runway's `reason`: cyclic partitioning, an id
// range without growth yet, an expression partdash cannot read...).
function daysLeft(runway) {
  if (runway.days_left != null) return dayCount(runway.days_left);
  if (runway.cyclic) return `never runs out: ${runway.reason}`;
  return runway.reason ? `unknown: ${runway.reason}` : "unknown";
}

function catchallRows(runway) {
  if (runway.catchall_rows != null) return estimate(count(runway.catchall_rows), runway.as_of);
  if (runway.has_catchall) return "unknown";
  return "no MAXVALUE partition: inserts past the last bound fail";
}

function facts(runway, projected) {
  const fact = (term, ...value) => [el("dt", {}, term), el("dd", {}, value)];
  const left = daysLeft(runway);
  return el(
    "dl",
    { className: "facts", id: "runway-facts" },
    fact("Days left", el("span", { id: "days-left" }, left)),
    fact("Projected fill", projected ? localDay(projected) : "—"),
    fact("Rows in the catch-all", catchallRows(runway)),
    fact("Empty future partitions", count(runway.empty_future_partitions)),
    fact("Last bound", runway.last_bound ?? "—"),
    fact(
      "Fill rate",
      runway.fill_rate_per_day == null
        ? "—"
        : `${number(runway.fill_rate_per_day)} ${runway.bound_kind === "id" ? "ids" : "rows"}/day`,
    ),
    fact(
      "Oldest rows",
      runway.oldest_partition_age_days == null
        ? "—"
        : `${count(runway.oldest_partition_age_days)} days old`,
    ),
  );
}

function boundItem(partition, date) {
  const where = partition.catchall ? "catch-all (MAXVALUE)" : `less than ${partition.description}`;
  return el(
    "li",
    { dataset: { partition: partition.name } },
    el("strong", {}, partition.name),
    ` ${where}`,
    date ? ` (${boundDay(date)})` : "",
    `: ${count(partition.rows)} rows`,
  );
}

// The bounds in order: the first and last few, and on a long table the others folded
// (numbered on: each list starts where the one before stopped).
function boundList(items) {
  const { first, middle, last } = foldEnds(items);
  const list = (part, start) => el("ol", { className: "bounds", start }, part);
  if (!middle.length) return list(first, 1);
  const names = (item) => item.dataset.partition;
  return [
    list(first, 1),
    el(
      "details",
      { className: "folded-bounds" },
      el(
        "summary",
        {},
        `${count(middle.length)} more partitions, ${names(middle[0])} to ${names(middle.at(-1))}`,
      ),
      list(middle, first.length + 1),
    ),
    list(last, first.length + middle.length + 1),
  ];
}

// A vertical marker at `date`, as a two-point line from 0 to `top`.
const marker = (label, date, top, colour, dash = []) => ({
  label,
  data: [
    { x: date.getTime(), y: 0 },
    { x: date.getTime(), y: top },
  ],
  borderColor: colour,
  backgroundColor: colour,
  borderDash: dash,
  pointRadius: 0,
});

function runwayChart(canvas, bounds, projected) {
  const top = Math.max(1, ...bounds.map((b) => b.partition.rows ?? 0));
  const today = new Date();
  const datasets = [
    {
      label: "partition bound (rows)",
      data: bounds.map((b) => ({ x: b.date.getTime(), y: b.partition.rows ?? 0 })),
      showLine: false,
      pointRadius: 6,
      backgroundColor: bounds.map((b) => (b.partition.rows ? COLOURS.base : COLOURS.unknown)),
    },
    marker("today", today, top, COLOURS.ok),
    projected ? marker("projected fill", projected, top, COLOURS.critical, [6, 4]) : null,
  ].filter(Boolean);
  drawChart(canvas, {
    type: "line",
    data: { datasets },
    options: {
      scales: {
        x: { type: "linear", ticks: { callback: (v) => localDay(new Date(v)), maxTicksLimit: 8 } },
        y: { beginAtZero: true, ticks: { callback: (v) => count(v) } },
      },
      plugins: { tooltip: { callbacks: { title: (items) => localDay(new Date(items[0].raw.x)) } } },
    },
  });
}

// Subpartitions share their partition's bound: one entry per partition, rows summed.
function byPartition(partitions) {
  const merged = new Map();
  for (const p of partitions) {
    const entry = merged.get(p.name) ?? { ...p, rows: 0 };
    entry.rows += p.rows ?? 0;
    merged.set(p.name, entry);
  }
  return [...merged.values()];
}

export function showRunway(table, partitions) {
  if (!RANGE_METHODS.includes(table.method)) {
    show(
      "runway",
      `Runway does not apply: ${table.method || "this"} partitioning does not run out of partitions; only RANGE tables do.`,
    );
    return;
  }
  const runway = table.runway;
  if (!runway) {
    show("runway", "Runway is not known yet: it needs a poll with partition statistics.");
    return;
  }
  const projected =
    runway.days_left == null ? null : new Date(Date.now() + runway.days_left * DAY_MS);
  document.getElementById("runway").className = "";
  show("runway", facts(runway, projected));
  const dated = byPartition(partitions).map((partition) => ({
    partition,
    date: boundDate(partition),
  }));
  show("runway-bounds", boundList(dated.map(({ partition, date }) => boundItem(partition, date))));
  const bounds = dated.filter((b) => b.date);
  if (bounds.length) {
    document.getElementById("runway-figure").hidden = false;
    runwayChart(document.getElementById("runway-chart"), bounds, projected);
  }
}

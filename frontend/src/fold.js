// Large tables on a page: the busiest (or largest) partitions in full and the rest folded
// into one row or bar, so one hot partition of 365 is seen and named, not a 1 px line.
// Pure functions of the API's figures; partition-charts.js and heatmaps.js draw them.

// A heatmap keeps every partition as its own row up to FOLD_ABOVE of them; past that the
// TOP_ROWS busiest have rows and the others share one.
export const FOLD_ABOVE = 16;
export const TOP_ROWS = 12;
// Bars likewise: the TOP_BARS largest and one bar for the rest, past FOLD_BARS_ABOVE.
export const FOLD_BARS_ABOVE = 30;
export const TOP_BARS = 20;
// Columns of a heatmap: polls merged so that no column is narrower than COLUMN_PX (a day
// of polls a minute apart is 1,440 of them), and never more than MAX_COLUMNS.
export const MAX_COLUMNS = 120;
const COLUMN_PX = 8;
export const columnsFor = (pixels) =>
  Math.max(6, Math.min(MAX_COLUMNS, Math.floor(pixels / COLUMN_PX)));

export const othersLabel = (n) => `${n} other partition${n === 1 ? "" : "s"}`;

const known = (values) => values.filter((v) => v != null);
const mean = (values) => {
  const seen = known(values);
  return seen.length ? seen.reduce((a, b) => a + b, 0) / seen.length : null;
};

// Merge consecutive polls into at most `max` columns: each cell the mean of the rates
// known in it (null where none is), each column from its first poll to its last.
export const pollsPerColumn = (polls, max = MAX_COLUMNS) => Math.max(1, Math.ceil(polls / max));

export function binPolls(history, max = MAX_COLUMNS) {
  const size = pollsPerColumn(history.points.length, max);
  const columns = [];
  for (let at = 0; at < history.points.length; at += size) {
    const polls = history.points.slice(at, at + size);
    columns.push({
      first: polls[0][0],
      last: polls.at(-1)[0],
      values: history.partitions.map((_, j) => mean(polls.map((point) => point[1 + j]))),
    });
  }
  return columns;
}

// Each partition's activity over the whole range (the sum of its known rates), null
// where it has none yet.
function activity(history) {
  return history.partitions.map((_, j) => {
    const seen = known(history.points.map((point) => point[1 + j]));
    return seen.length ? seen.reduce((a, b) => a + b, 0) : null;
  });
}

// Indexes of the partitions busiest first; ties (and partitions with no data yet, last)
// keep the table's own order.
function byActivity(totals) {
  const rank = (v) => (v == null ? -1 : v);
  return totals.map((_, j) => j).sort((a, b) => rank(totals[b]) - rank(totals[a]) || a - b);
}

// The folded row: in each column the busiest of the other partitions (a rate per
// partition, on the same colour scale as the rows above), and which one that was.
function foldedRow(columns, names, rest, extra = 0) {
  const cells = columns.map((column) => {
    let busiest = null;
    for (const j of rest) {
      const v = column.values[j];
      if (v != null && (busiest == null || v > column.values[busiest])) busiest = j;
    }
    return busiest == null ? null : { value: column.values[busiest], name: names[busiest] };
  });
  return {
    label: othersLabel(rest.length + extra),
    folded: rest.map((j) => names[j]),
    values: cells.map((cell) => cell?.value ?? null),
    busiest: cells.map((cell) => cell?.name ?? null),
  };
}

// The rows a heatmap draws: every partition in the table's order (`ordinal`), or the
// busiest first with the rest folded past FOLD_ABOVE. Each row: {label, values (one per
// column), total}, the folded one also {folded: names, busiest: name per column}; and the
// busiest partition's name (null when none moved) and how many polls a column merges.
export function heatRows(history, { ordinal = false, max = MAX_COLUMNS } = {}) {
  const columns = binPolls(history, max);
  const totals = activity(history);
  const row = (j) => ({
    label: history.partitions[j],
    values: columns.map((column) => column.values[j]),
    total: totals[j],
  });
  const order = ordinal ? totals.map((_, j) => j) : byActivity(totals);
  const fold = !ordinal && order.length > FOLD_ABOVE;
  const rows = (fold ? order.slice(0, TOP_ROWS) : order).map(row);
  // The API's own `other` series (a large table's) stands for `other` partitions.
  const extra = history.other ? history.other - 1 : 0;
  if (fold) rows.push(foldedRow(columns, history.partitions, order.slice(TOP_ROWS), extra));
  return {
    columns,
    rows,
    busiest: totals[order[0]] ? history.partitions[order[0]] : null,
    pollsPerColumn: pollsPerColumn(history.points.length, max),
  };
}

// The bars a size chart draws: every partition in order, or past FOLD_BARS_ABOVE the
// TOP_BARS largest by `size` (and every flagged hotspot, so no red bar is ever folded),
// largest first, then `rest`: the others' count, their total and largest.
export function foldBars(partitions, size) {
  if (partitions.length <= FOLD_BARS_ABOVE) return { shown: partitions, rest: null };
  const ranked = [...partitions].sort((a, b) => (size(b) ?? 0) - (size(a) ?? 0));
  const shown = ranked.filter((p, i) => i < TOP_BARS || p.is_hotspot);
  const others = ranked.filter((p, i) => i >= TOP_BARS && !p.is_hotspot);
  if (!others.length) return { shown, rest: null };
  return { shown, rest: { partitions: others, label: `${others.length} others` } };
}

// The mean, total and largest of `field` over the folded partitions.
export function restFigures(rest, field) {
  const values = rest.partitions.map((p) => p[field] ?? 0);
  const largest = rest.partitions[values.indexOf(Math.max(...values))];
  const total = values.reduce((a, b) => a + b, 0);
  return { mean: total / values.length, total, largest };
}

// A long list (a year of daily RANGE bounds) shows its first and last LIST_ENDS items
// and folds the rest behind a disclosure past FOLD_LIST_ABOVE: 366 bounds in two columns
// made a table page about 6,600 px tall. Short lists stay whole (`middle` empty).
export const FOLD_LIST_ABOVE = 14;
export const LIST_ENDS = 5;

export function foldEnds(items, ends = LIST_ENDS, above = FOLD_LIST_ABOVE) {
  if (items.length <= above) return { first: items, middle: [], last: [] };
  return {
    first: items.slice(0, ends),
    middle: items.slice(ends, -ends),
    last: items.slice(-ends),
  };
}

// Table order on a large table: an answer of the history API names at most `series_cap`
// partitions (24) and sums the rest into `other`, so a table of 365 (or 8,192) partitions
// is shown in table order a page of that many at a time, fetched with `partitions=`.
// Pure functions of the partitions list (in ordinal order) and the page size.

// What the history API calls a partition: `p2024 / p2024sp0` for a subpartition.
export const partitionLabel = (p) => (p.subpartition ? `${p.name} / ${p.subpartition}` : p.name);

export const pageCount = (total, size) => Math.max(1, Math.ceil(total / size));

// The page (1-based) asked for, kept within the pages there are.
export const clampPage = (page, total, size) =>
  Math.min(Math.max(1, Math.trunc(Number(page)) || 1), pageCount(total, size));

// Page `page`'s partitions' labels, in table order.
export function pageLabels(partitions, page, size) {
  const first = (page - 1) * size;
  return partitions.slice(first, first + size).map(partitionLabel);
}

// One choice per page, named by its positions and its first and last partitions, so a
// reader finds the page of the partition they look for: "289–312: p20260101 … p20260124".
export function pageChoices(partitions, size) {
  return Array.from({ length: pageCount(partitions.length, size) }, (_, i) => {
    const labels = pageLabels(partitions, i + 1, size);
    const last = Math.min((i + 1) * size, partitions.length);
    const names = labels.length > 1 ? `${labels[0]} … ${labels.at(-1)}` : labels[0];
    return { page: i + 1, text: `${i * size + 1}–${last}: ${names}` };
  });
}

// `partitions=` for one page: one parameter per label (a label may hold a comma).
export const partitionsQuery = (labels) =>
  labels.map((label) => `&partitions=${encodeURIComponent(label)}`).join("");

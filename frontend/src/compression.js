// The table page's compression panel: what partdash measures (failure rate, the page
// splits failures imply, the files' bytes, the achieved ratio where it can be known),
// and the ROW_FORMAT=COMPRESSED page ratio, labelled as nominal, never as achieved.
import { el, show } from "./dom.js";
import { bytes, count, number, partitionLabel, percent } from "./format.js";

const fact = (term, ...value) => [el("dt", {}, term), el("dd", {}, value)];
const KIB = 1024;

// Health stored before the label existed says only `ratio_is_nominal`.
function isNominal(compression) {
  return compression.nominal ?? compression.ratio_is_nominal ?? false;
}

function ratioLabel(compression) {
  if (compression.ratio_label) return compression.ratio_label;
  if (!isNominal(compression)) return "file bytes / allocated bytes, measured";
  const zip = compression.zip_page_size ? `${compression.zip_page_size / KIB} KiB` : "?";
  return `nominal page ratio 16 KiB / KEY_BLOCK_SIZE ${zip}, not the achieved compression`;
}

const num = (value) => el("td", { className: "num" }, value);

function partitionTable(head, partitions, cells) {
  const rows = partitions
    .filter((p) => p.compression)
    .map((p) =>
      el(
        "tr",
        {},
        el("td", {}, partitionLabel(p)),
        cells(p.compression),
        el("td", {}, p.compression.verdict ?? ""),
      ),
    );
  if (!rows.length) return null;
  return el(
    "div",
    { className: "scroll" },
    el(
      "table",
      { className: "grid compact", id: "compression-partitions" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["Partition", ...head, "Verdict"].map((h) => el("th", {}, h)),
        ),
      ),
      el("tbody", {}, rows),
    ),
  );
}

function splitsText(compression) {
  if (compression.splits == null) return "—";
  return `${count(compression.splits)} (each failed compression splits its page)`;
}

// The measured ratio, or why it cannot be known (health stored before it existed says
// nothing: the next analysis fills it in).
function achieved(compression) {
  const label = compression.achieved_label || "unknown until the next analysis";
  if (compression.achieved_ratio == null)
    return el("span", { id: "compression-achieved", className: "muted" }, label);
  return [
    el("span", { id: "compression-achieved" }, number(compression.achieved_ratio)),
    el("span", { className: "muted" }, ` (${label})`),
  ];
}

function rowPanel(compression, partitions) {
  const ops =
    compression.compress_ops == null ? "" : ` of ${count(compression.compress_ops)} compressions`;
  return [
    el(
      "dl",
      { className: "facts", id: "compression-facts" },
      fact(
        "Compression failures",
        el("span", { id: "compression-failure-rate" }, percent(compression.failure_rate)),
        ops,
      ),
      fact("Page splits", el("span", { id: "compression-splits" }, splitsText(compression))),
      fact(
        "Files on disk",
        el("span", { id: "compression-file-bytes" }, bytes(compression.file_bytes)),
        " (measured)",
      ),
      fact("Achieved ratio", achieved(compression)),
      fact(
        "Nominal ratio",
        el(
          "span",
          { id: "compression-nominal" },
          `${number(compression.ratio)}: ${ratioLabel(compression)}`,
        ),
      ),
    ),
    partitionTable(["Failure rate", "Page splits", "File"], partitions, (c) => [
      num(percent(c.failure_rate)),
      num(c.splits == null ? "—" : count(c.splits)),
      num(bytes(c.file_bytes)),
    ]),
  ];
}

function pagePanel(compression, partitions) {
  return [
    el(
      "dl",
      { className: "facts", id: "compression-facts" },
      fact(
        "File size",
        el("span", { id: "compression-file-bytes" }, bytes(compression.file_bytes)),
      ),
      fact(
        "Allocated",
        el("span", { id: "compression-allocated-bytes" }, bytes(compression.allocated_bytes)),
      ),
      fact(
        "Saved",
        el("span", { id: "compression-saved" }, percent(compression.saved_ratio)),
        ` (ratio ${number(compression.ratio)}: ${ratioLabel(compression)})`,
      ),
    ),
    partitionTable(["File", "Allocated", "Saved"], partitions, (c) => [
      num(bytes(c.file_bytes)),
      num(bytes(c.allocated_bytes)),
      num(percent(c.saved_ratio)),
    ]),
  ];
}

export function showCompression(table, partitions) {
  const compression = table.compression;
  if (!compression || !compression.kind || compression.kind === "none")
    return show("compression", "Not compressed.");
  document.getElementById("compression").className = "";
  const row = compression.kind === "row";
  const zip = compression.zip_page_size
    ? `, KEY_BLOCK_SIZE=${compression.zip_page_size / KIB}`
    : "";
  show(
    "compression",
    el("p", {}, el("strong", {}, row ? `ROW_FORMAT=COMPRESSED${zip}` : "Page compression")),
    el(
      "p",
      { className: compression.is_finding ? "bad-text" : "ok-text", id: "compression-verdict" },
      compression.verdict ?? "",
    ),
    row ? rowPanel(compression, partitions) : pagePanel(compression, partitions),
  );
}

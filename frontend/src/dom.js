// Building DOM nodes without innerHTML, so API text is never parsed as markup.
import { age, localTime, shown } from "./format.js";

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (TEXT_PROPS.has(key)) node[key] = shown(value, { keepNewlines: true });
    else if (key in node && key !== "list") node[key] = value;
    else node.setAttribute(key, value);
  }
  node.append(...nodes(children));
  return node;
}

// Children may be nested arrays with nulls (optional parts); flatten them to nodes.
function nodes(children) {
  return children
    .flat(Infinity)
    .filter((child) => child != null && child !== false)
    .map(asNode);
}

// Every text a page draws, its own words and the server's names alike, shows control and
// bidi characters escaped (format.js `shown`); line breaks stay, for a fix's SQL.
function asNode(child) {
  return child instanceof Node
    ? child
    : document.createTextNode(shown(child, { keepNewlines: true }));
}

const TEXT_PROPS = new Set(["title", "textContent", "ariaLabel"]);

export function link(href, text, props = {}) {
  return el("a", { href, ...props }, text);
}

export function cell(content, className = "") {
  return el("td", { className }, content ?? "—");
}

export function code(text) {
  return el("code", {}, text);
}

export function show(id, ...children) {
  document.getElementById(id).replaceChildren(...nodes(children));
}

// How old InnoDB's statistics are, compactly: "3 h old".
export function statisticsAge(asOf, now = Date.now()) {
  if (!asOf) return "age unknown";
  const minutes = Math.max(0, (now - new Date(asOf).getTime()) / 60000);
  if (minutes < 1) return "under a minute old";
  if (minutes < 90) return `${Math.round(minutes)} min old`;
  const hours = minutes / 60;
  return hours < 48 ? `${Math.round(hours)} h old` : `${Math.round(hours / 24)} days old`;
}

// Whose statistics a total's age is: the oldest partition's, named where the partitions'
// ages differ by a minute or more (one ANALYZE TABLE refreshes them all at once).
const SAME_AGE_MS = 60000;
function oldestPartition(statistics) {
  if (!statistics?.partition || statistics.partitions < 2) return null;
  const spread = new Date(statistics.newest_at) - new Date(statistics.as_of);
  return spread >= SAME_AGE_MS ? statistics.partition : null;
}

// Rows and sizes come from InnoDB's statistics: say so, and how old they are, in text a
// phone shows too (the title adds the exact time). `short` for cells of a table.
// `statistics` (a table's `{as_of, partition, newest_at, partitions}`) names the partition
// whose statistics the age is: a total is as old as its oldest partition's.
export function estimate(text, asOf, { short = false, statistics = null } = {}) {
  const when = statistics?.as_of ?? asOf;
  const oldest = oldestPartition(statistics);
  const whose = oldest ? `: ${oldest}'s, the oldest` : "";
  let title = when
    ? `Estimate from InnoDB statistics as of ${localTime(when)} (${age(when)})`
    : "Estimate from InnoDB statistics";
  if (oldest)
    title +=
      `, partition ${oldest}'s, the oldest of ${statistics.partitions}; the newest are ` +
      `as of ${localTime(statistics.newest_at)} (${age(statistics.newest_at)})`;
  const note = short
    ? `est., ${statisticsAge(when)}${oldest ? ` (${oldest})` : ""}`
    : `(estimate, statistics ${statisticsAge(when)}${whose})`;
  return [
    el("span", { className: "figure" }, text),
    " ",
    el("abbr", { className: "est", title }, note),
  ];
}

// Building DOM nodes without innerHTML, so API text is never parsed as markup.
import { age, localTime } from "./format.js";

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key === "dataset") Object.assign(node.dataset, value);
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

function asNode(child) {
  return child instanceof Node ? child : document.createTextNode(String(child));
}

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

// Rows and sizes come from InnoDB's statistics: say so, and how old they are, in text a
// phone shows too (the title adds the exact time). `short` for cells of a table.
export function estimate(text, asOf, { short = false } = {}) {
  const title = asOf
    ? `Estimate from InnoDB statistics as of ${localTime(asOf)} (${age(asOf)})`
    : "Estimate from InnoDB statistics";
  const note = short
    ? `est., ${statisticsAge(asOf)}`
    : `(estimate, statistics ${statisticsAge(asOf)})`;
  return [
    el("span", { className: "figure" }, text),
    " ",
    el("abbr", { className: "est", title }, note),
  ];
}

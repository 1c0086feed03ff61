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
  return children.flat(Infinity).filter((child) => child != null && child !== false).map(asNode);
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

// Rows and sizes come from InnoDB's statistics: say so, and how old they are.
export function estimate(text, asOf) {
  const title = asOf
    ? `Estimate from InnoDB statistics as of ${localTime(asOf)} (${age(asOf)})`
    : "Estimate from InnoDB statistics";
  return [text, " ", el("abbr", { className: "est", title }, "est.")];
}

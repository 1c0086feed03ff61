// Findings (skew, hotspot, runway, ...) as short badges with their message.
import { urls } from "./api.js";
import { el, link } from "./dom.js";

export function severityBadge(severity) {
  return el("span", { className: `badge sev-${severity}` }, severity);
}

// One finding as "critical skew: message", linking to its table when it names one.
export function findingLine(finding) {
  const what = finding.table_id
    ? link(urls.tablePage(finding.table_id), `${finding.schema}.${finding.table}`)
    : null;
  return el(
    "li",
    { className: "finding", dataset: { kind: finding.kind, severity: finding.severity } },
    severityBadge(finding.severity),
    " ",
    el("strong", {}, finding.kind),
    what ? [" ", what] : null,
    ": ",
    finding.message,
  );
}

// A finding's or an alert's fix: the advice, and the statement to run where there is one.
export function fixBlock(fix) {
  if (!fix) return null;
  return el(
    "div",
    { className: "fix" },
    el("p", { className: "advice" }, fix.advice),
    fix.sql ? el("pre", { className: "sql" }, el("code", {}, fix.sql)) : null,
  );
}

// `withFix`: each finding's fix under it (the table page); elsewhere the line alone.
export function findingList(findings, emptyText = "No findings.", { withFix = false } = {}) {
  if (!findings?.length) return el("span", { className: "ok-text" }, emptyText);
  const item = (finding) => {
    const line = findingLine(finding);
    if (withFix) line.append(fixBlock(finding.fix) ?? "");
    return line;
  };
  return el("ul", { className: "findings" }, findings.map(item));
}

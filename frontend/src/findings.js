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

export function findingList(findings, emptyText = "No findings.") {
  if (!findings?.length) return el("span", { className: "ok-text" }, emptyText);
  return el("ul", { className: "findings" }, findings.map(findingLine));
}

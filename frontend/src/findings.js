// Findings (skew, hotspot, runway, ...) as short badges with their message.
import { urls } from "./api.js";
import { el, link } from "./dom.js";
import { bytes, count } from "./format.js";

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

// What running a fix's statement does, in one line (as the alert emails say it:
// partdash/health/fixes.py `safety_words`): "copies ~1,200 rows, 5.0 MiB", "instant".
export function safetyWords(fix) {
  if (!fix?.safety) return "";
  if (fix.safety === "copies" || fix.safety === "destroys") {
    const amounts = [fix.rows == null ? "its rows" : `~${count(fix.rows)} rows`];
    if (fix.bytes != null) amounts.push(bytes(fix.bytes));
    return `${fix.safety} ${amounts.join(", ")}`;
  }
  return fix.safety === "blocks" ? "blocks writes while it runs" : fix.safety;
}

// A finding's or an alert's fix: the advice, and the statement to run where there is one,
// with what running it does.
export function fixBlock(fix) {
  if (!fix) return null;
  const safety = safetyWords(fix);
  return el(
    "div",
    { className: "fix" },
    el("p", { className: "advice" }, fix.advice),
    fix.sql ? el("pre", { className: "sql" }, el("code", {}, fix.sql)) : null,
    fix.sql && safety
      ? el(
          "p",
          { className: `safety safety-${fix.safety}`, dataset: { safety: fix.safety } },
          "Safety: ",
          safety,
        )
      : null,
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

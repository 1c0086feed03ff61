// What a server's polls do not measure, why, and the one change that enables it (the
// API's `coverage`): a table with no finding is healthy only in what is measured.
import { code, el } from "./dom.js";

// The signals not measured, optionally only those named.
export function blindSignals(coverage, only = null) {
  return (coverage ?? []).filter(
    (signal) => !signal.measured && (!only || only.includes(signal.signal)),
  );
}

// One signal: "write hotspots: not measured here", why, and the statement that enables it.
export function blindNote(signal) {
  return el(
    "li",
    { className: "coverage-blind", dataset: { signal: signal.signal } },
    el("strong", {}, `${signal.label}: not measured here`),
    `. Why: ${signal.why}.`,
    signal.enable ? [" To measure: ", code(signal.enable)] : null,
  );
}

// The notes of the signals not measured (none: nothing).
export function coverageNotes(coverage, only = null) {
  const blind = blindSignals(coverage, only);
  if (!blind.length) return null;
  return el("ul", { className: "notice coverage" }, blind.map(blindNote));
}

// What a heatmap says where its figures are never read on the server: why, and what
// enables them; null where they are read (the heatmap's own "none yet" then stands).
export function neverRead(coverage, signal) {
  const [blind] = blindSignals(coverage, [signal]);
  if (!blind) return null;
  return el(
    "span",
    {},
    `Never read on this server, so none to show: ${blind.why}.`,
    blind.enable ? [" To read them: ", code(blind.enable)] : null,
  );
}

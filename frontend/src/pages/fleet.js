// Fleet page: one row per server from /api/v1/servers/, then the worst tables fleet-wide.
import { alertBadge, alertsPage } from "../alert-badges.js";
import { getJSON, urls } from "../api.js";
import { cell, code, el, link } from "../dom.js";
import { findingList, severityBadge } from "../findings.js";
import { age, count, localTime, number } from "../format.js";

const REFRESH_MS = 15000;

// One line of a (possibly multi-line) reason; the whole of it in the tooltip.
function reasonLine(className, prefix, text) {
  const lines = (text || "no reason was recorded").split("\n");
  const more = lines.length > 1 ? ` (+${lines.length - 1} more on the server page)` : "";
  return el("div", { className: `reason ${className}`, title: text }, prefix, lines[0], more);
}

function problems(server) {
  if (!server.enabled && !server.last_poll_at) return el("span", { className: "empty" }, "Disabled: never polled.");
  if (!server.last_poll_at) {
    return el(
      "span",
      { className: "empty never-polled" },
      "Not polled yet. It is polled within its interval; to poll now run ",
      code(`manage.py poll ${server.name}`),
      ".",
    );
  }
  // A server that cannot be polled has no findings to vouch for: say why, never "No findings".
  if (!server.last_success_at) {
    return reasonLine("last-error never-succeeded", `Never polled successfully; last tried ${age(server.last_poll_at)}: `, server.last_error);
  }
  if (server.status === "unreachable") {
    const failing = reasonLine("last-error unreachable", `Last poll failed ${age(server.last_poll_at)}: `, server.last_error);
    return server.findings?.length ? [failing, findingList(server.findings)] : failing;
  }
  const findings = findingList(server.findings, "No findings.");
  if (!server.last_error) return findings;
  return [reasonLine("last-error", "", server.last_error), findings];
}

function lastPollTitle(server) {
  const success = server.last_success_at ? `last success ${age(server.last_success_at)}` : "never succeeded";
  return `${age(server.last_poll_at)}; ${success}`;
}

function serverRow(server, alertCounts) {
  const name = [
    link(urls.serverPage(server.id), server.name, { className: "server-link" }),
    " ",
    alertBadge(alertCounts, alertsPage({ server: server.id })),
    " ",
    link(urls.serverAdmin(server.id), "admin", { className: "admin-link small" }),
  ];
  return el(
    "tr",
    { dataset: { server: server.name, id: server.id } },
    cell(name),
    cell(`${server.host}:${server.port}`),
    cell(server.version ? `${server.flavor} ${server.version}` : "—"),
    cell(server.status, `status status-${server.status}`),
    el("td", { title: lastPollTitle(server) }, localTime(server.last_poll_at)),
    cell(count(server.partitioned_tables), "num"),
    cell(count(server.partitions), "num"),
    el("td", {}, problems(server)),
  );
}

// A table's finding names the table; a server's own (pressure) names the server.
function worstTable(finding) {
  const where = finding.table_id == null
    ? ["server ", link(urls.serverPage(finding.server_id), finding.server, { className: "server-finding-link" })]
    : [link(urls.tablePage(finding.table_id), `${finding.schema}.${finding.table}`, { className: "table-link" }),
      " on ", link(urls.serverPage(finding.server_id), finding.server)];
  return el(
    "li",
    { dataset: { tableId: finding.table_id ?? "", serverId: finding.server_id, kind: finding.kind } },
    severityBadge(finding.severity),
    " ",
    ...where,
    " ",
    el("strong", {}, finding.kind),
    el("span", { className: "score", title: "score" }, ` (${number(finding.score)})`),
    ": ",
    finding.message,
  );
}

async function refreshServers(body) {
  // Badges are extra: the servers are listed even when the alert counts cannot be read.
  const counts = getJSON("alerts/counts/").catch(() => []);
  const [servers, alertCounts] = await Promise.all([getJSON("servers/"), counts]);
  const byServer = new Map(alertCounts.map((counts) => [counts.server_id, counts]));
  body.replaceChildren(...servers.map((server) => serverRow(server, byServer.get(server.id))));
}

async function refreshWorst(list) {
  const findings = await getJSON("findings/?limit=50");
  const empty = el("li", { className: "empty" }, "No findings: every polled table looks healthy.");
  list.replaceChildren(...(findings.length ? findings.map(worstTable) : [empty]));
}

// Load now and every REFRESH_MS; the promise settles after the first load.
function keepFresh(node, refresh, what) {
  const load = () =>
    refresh(node).catch((error) => {
      const message = el("span", { className: "error" }, `Cannot load ${what}: ${error.message}`);
      const item = node.tagName === "TBODY" ? el("tr", {}, el("td", { colSpan: 8 }, message)) : el("li", {}, message);
      node.replaceChildren(item);
    });
  setInterval(load, REFRESH_MS);
  return load();
}

const servers = document.getElementById("servers");
if (servers) {
  Promise.all([
    keepFresh(servers.querySelector("tbody"), refreshServers, "servers"),
    keepFresh(document.getElementById("worst-tables"), refreshWorst, "findings"),
  ]).then(() => { servers.dataset.ready = "true"; });
}

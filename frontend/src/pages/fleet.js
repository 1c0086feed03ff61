// Fleet page: one row per server from /api/v1/servers/, then the worst tables fleet-wide
// (one line per table however many times its server is registered).
import { alertBadge, alertsPage } from "../alert-badges.js";
import { getJSON, urls } from "../api.js";
import { cell, code, el, link } from "../dom.js";
import { findingList, severityBadge } from "../findings.js";
import { age, count, localTime, number } from "../format.js";

const REFRESH_MS = 15000;

// The first line of a (possibly multi-line) reason, in full: it wraps, never cut; the
// other lines are on the server page (all of them in the tooltip).
function reasonLine(className, prefix, text) {
  const lines = (text || "no reason was recorded").split("\n");
  const more = lines.length > 1 ? ` (+${lines.length - 1} more on the server page)` : "";
  return el("div", { className: `reason ${className}`, title: text }, prefix, lines[0], more);
}

function problems(server) {
  if (!server.enabled && !server.last_poll_at)
    return el("span", { className: "empty" }, "Disabled: never polled.");
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
    return [
      reasonLine(
        "last-error never-succeeded",
        `Never polled successfully; last tried ${age(server.last_poll_at)}: `,
        server.last_error,
      ),
      backoffLine(server),
    ];
  }
  if (server.status === "unreachable") {
    const failing = [
      reasonLine(
        "last-error unreachable",
        `Last poll failed ${age(server.last_poll_at)}: `,
        server.last_error,
      ),
      backoffLine(server),
    ];
    return server.findings?.length ? [failing, findingList(server.findings)] : failing;
  }
  const findings = findingList(server.findings, "No findings.");
  if (!server.last_error) return findings;
  return [reasonLine("last-error", "", server.last_error), findings];
}

// Polled less often while its polls keep failing: the reason, shown under the error.
function backoffLine(server) {
  return server.backoff
    ? el("div", { className: "reason backoff" }, `Backing off: ${server.backoff}.`)
    : null;
}

function lastPollTitle(server) {
  const success = server.last_success_at
    ? `last success ${age(server.last_success_at)}`
    : "never succeeded";
  return `${age(server.last_poll_at)}; ${success}`;
}

function address(server) {
  return `${server.host}:${server.port}`;
}

// The other registrations of each server's address (one MySQL server registered twice
// is polled twice and would list its tables twice): server id to their names.
function sameAddress(servers) {
  const names = new Map();
  for (const server of servers)
    names.set(address(server), [...(names.get(address(server)) ?? []), server]);
  return new Map(
    servers.map((server) => [
      server.id,
      names
        .get(address(server))
        .filter((other) => other.id !== server.id)
        .map((other) => other.name),
    ]),
  );
}

// Where the server is and what it runs, under its name: one small line, so the columns
// left to the findings are the ones a DBA sorts by eye (status, last poll, counts).
function serverMeta(server) {
  const version = server.version ? `${server.flavor} ${server.version}` : null;
  return el(
    "div",
    { className: "server-meta small" },
    el("span", { className: "address" }, address(server)),
    version ? [" · ", el("span", { className: "version" }, version)] : null,
  );
}

function serverRow(server, alertCounts, others) {
  const name = [
    link(urls.serverPage(server.id), server.name, { className: "server-link" }),
    " ",
    alertBadge(alertCounts, alertsPage({ server: server.id })),
    " ",
    link(urls.serverAdmin(server.id), "admin", { className: "admin-link small" }),
    serverMeta(server),
    others.length
      ? el(
          "div",
          {
            className: "duplicate-note",
            title: "one server registered more than once is polled once per registration",
          },
          `same address as ${others.join(", ")}`,
        )
      : null,
  ];
  // data-label names each cell where a phone shows the row as a card (no header row).
  const labelled = (label, node) => {
    node.dataset.label = label;
    return node;
  };
  return el(
    "tr",
    { dataset: { server: server.name, id: server.id, duplicate: others.length ? "true" : null } },
    cell(name, "server"),
    labelled("Status", cell(server.status, `status status-${server.status}`)),
    labelled(
      "Last poll",
      el(
        "td",
        { className: "last-poll", title: lastPollTitle(server) },
        localTime(server.last_poll_at),
      ),
    ),
    labelled("Partitioned tables", cell(count(server.partitioned_tables), "num tables")),
    labelled("Partitions", cell(count(server.partitions), "num partitions")),
    el("td", { className: "problems" }, problems(server)),
  );
}

// A table's finding names the table; a server's own (pressure) names the server.
function worstTable({ finding, also }) {
  const where =
    finding.table_id == null
      ? [
          "server ",
          link(urls.serverPage(finding.server_id), finding.server, {
            className: "server-finding-link",
          }),
        ]
      : [
          link(urls.tablePage(finding.table_id), `${finding.schema}.${finding.table}`, {
            className: "table-link",
          }),
          " on ",
          link(urls.serverPage(finding.server_id), finding.server),
        ];
  return el(
    "li",
    {
      dataset: { tableId: finding.table_id ?? "", serverId: finding.server_id, kind: finding.kind },
    },
    severityBadge(finding.severity),
    " ",
    ...where,
    " ",
    el("strong", {}, finding.kind),
    el("span", { className: "score", title: "score" }, ` (${number(finding.score)})`),
    ": ",
    finding.message,
    also.length
      ? el("span", { className: "also" }, ` (also registered as ${also.join(", ")})`)
      : null,
  );
}

// One finding per server address, table and kind, worst first: the registrations of one
// address report the same tables, so the later ones only add "also registered as".
function distinctFindings(findings, servers) {
  const addresses = new Map(servers.map((server) => [server.id, address(server)]));
  const kept = new Map();
  for (const finding of findings) {
    const where = addresses.get(finding.server_id) ?? `id ${finding.server_id}`;
    const key = [where, finding.schema, finding.table, finding.kind].join("\u0000");
    const first = kept.get(key);
    if (!first) kept.set(key, { finding, also: [] });
    else if (first.finding.server !== finding.server && !first.also.includes(finding.server))
      first.also.push(finding.server);
  }
  return [...kept.values()];
}

const WORST = 50;

async function refreshFleet({ body, list }) {
  // Badges are extra: the servers are listed even when the alert counts cannot be read.
  const counts = getJSON("alerts/counts/").catch(() => []);
  // Three times the list's length, so duplicates folded away still leave WORST findings.
  const [servers, alertCounts, findings] = await Promise.all([
    getJSON("servers/"),
    counts,
    getJSON(`findings/?limit=${3 * WORST}`),
  ]);
  const byServer = new Map(alertCounts.map((counts) => [counts.server_id, counts]));
  const others = sameAddress(servers);
  body.replaceChildren(
    ...servers.map((server) => serverRow(server, byServer.get(server.id), others.get(server.id))),
  );
  const worst = distinctFindings(findings, servers).slice(0, WORST);
  const empty = el("li", { className: "empty" }, "No findings: every polled table looks healthy.");
  list.replaceChildren(...(worst.length ? worst.map(worstTable) : [empty]));
}

// Load now and every REFRESH_MS; the promise settles after the first load.
function keepFresh(nodes) {
  const load = () =>
    refreshFleet(nodes).catch((error) => {
      const message = (what) =>
        el("span", { className: "error" }, `Cannot load ${what}: ${error.message}`);
      nodes.body.replaceChildren(el("tr", {}, el("td", { colSpan: 6 }, message("servers"))));
      nodes.list.replaceChildren(el("li", {}, message("findings")));
    });
  setInterval(load, REFRESH_MS);
  return load();
}

const servers = document.getElementById("servers");
if (servers) {
  keepFresh({
    body: servers.querySelector("tbody"),
    list: document.getElementById("worst-tables"),
  }).then(() => {
    servers.dataset.ready = "true";
  });
}

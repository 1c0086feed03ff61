// Fleet page: one row per server from /api/v1/servers/, a page at a time, filtered by
// status, group and tag and worst first (docs/pages.md), then the worst tables fleet-wide
// (one line per table however many times its server is registered).
import { alertBadge, alertsPage } from "../alert-badges.js";
import { getJSON, urls } from "../api.js";
import { cell, code, el, link } from "../dom.js";
import { findingList, severityBadge } from "../findings.js";
import { age, count, localTime, notPolledFor, number } from "../format.js";
import { readView, writeView } from "../view-state.js";

const REFRESH_MS = 15000;

// The first line of a (possibly multi-line) reason, in full: it wraps, never cut; the
// other lines are on the server page (all of them in the tooltip).
function reasonLine(className, prefix, text) {
  const lines = (text || "no reason was recorded").split("\n");
  const more = lines.length > 1 ? ` (+${lines.length - 1} more on the server page)` : "";
  return el("div", { className: `reason ${className}`, title: text }, prefix, lines[0], more);
}

// Polls stopped (a worker or beat down): said in red above whatever else is shown.
function notPolled(server) {
  if (server.not_polled_seconds == null) return null;
  return el(
    "div",
    {
      className: "reason not-polled",
      title: "No poll ran for longer than its interval allows: is partdash's worker running?",
    },
    notPolledFor(server.not_polled_seconds),
  );
}

function problems(server) {
  const stopped = notPolled(server);
  const rest = serverProblems(server);
  return stopped ? [stopped, rest] : rest;
}

function serverProblems(server) {
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
const SERVERS_PER_PAGE = 50;

// The page's view, in its URL: filters (status, group, tag), the order and the page.
const DEFAULT_VIEW = { status: "", group: "", tag: "", ordering: "worst", page: "1" };
const view = readView(DEFAULT_VIEW);

// One page of the server list, narrowed and ordered by the API (a thousand servers are
// never read at once): `{count, results}`.
function serversPage() {
  const query = new URLSearchParams({
    limit: SERVERS_PER_PAGE,
    offset: (Math.max(Number(view.page) || 1, 1) - 1) * SERVERS_PER_PAGE,
    ordering: view.ordering,
  });
  for (const key of ["status", "group", "tag"]) if (view[key]) query.set(key, view[key]);
  return getJSON(`servers/?${query}`);
}

// Previous / Next and where this page is: "servers 51-100 of 1000".
function renderPager(pager, total, onPage) {
  const pages = Math.max(Math.ceil(total / SERVERS_PER_PAGE), 1);
  const page = Math.min(Math.max(Number(view.page) || 1, 1), pages);
  const first = total ? (page - 1) * SERVERS_PER_PAGE + 1 : 0;
  const last = Math.min(page * SERVERS_PER_PAGE, total);
  const button = (label, target, disabled) =>
    el(
      "button",
      { type: "button", disabled, onclick: () => onPage(target), dataset: { page: target } },
      label,
    );
  pager.replaceChildren(
    el(
      "nav",
      { className: "pages", ariaLabel: "pages" },
      button("‹ Previous", page - 1, page <= 1),
      button("Next ›", page + 1, page >= pages),
      el(
        "span",
        { className: "count" },
        total
          ? `servers ${first}-${last} of ${total}, page ${page} of ${pages}`
          : "no server matches",
      ),
    ),
  );
}

let loads = 0; // a load answered after a later one began (filters changed) is dropped

async function refreshFleet({ body, list, pager, reload }) {
  const load = ++loads;
  // Badges are extra: the servers are listed even when the alert counts cannot be read.
  const counts = getJSON("alerts/counts/").catch(() => []);
  // Three times the list's length, so duplicates folded away still leave WORST findings.
  const [page, alertCounts, findings] = await Promise.all([
    serversPage(),
    counts,
    getJSON(`findings/?limit=${3 * WORST}`),
  ]);
  if (load !== loads) return;
  const servers = page.results;
  const lastPage = Math.ceil(page.count / SERVERS_PER_PAGE);
  if (!servers.length && lastPage && Number(view.page) > lastPage) {
    // Past the end (servers removed, or an old link): the last page instead.
    view.page = String(lastPage);
    writeView(view, DEFAULT_VIEW);
    return reload();
  }
  const byServer = new Map(alertCounts.map((counts) => [counts.server_id, counts]));
  const others = sameAddress(servers);
  const empty = el("tr", {}, el("td", { colSpan: 6, className: "empty" }, "No server matches."));
  body.replaceChildren(
    ...(servers.length
      ? servers.map((server) => serverRow(server, byServer.get(server.id), others.get(server.id)))
      : [empty]),
  );
  renderPager(pager, page.count, (target) => {
    view.page = String(target);
    writeView(view, DEFAULT_VIEW);
    reload();
  });
  const worst = distinctFindings(findings, servers).slice(0, WORST);
  const none = el("li", { className: "empty" }, "No findings: every polled table looks healthy.");
  list.replaceChildren(...(worst.length ? worst.map(worstTable) : [none]));
}

// A filter or the order changed: back to the first page.
function watchFilters(reload) {
  const controls = {
    status: "status-filter",
    group: "group-filter",
    tag: "tag-filter",
    ordering: "fleet-ordering",
  };
  for (const [key, id] of Object.entries(controls)) {
    const control = document.getElementById(id);
    if (!control) continue;
    control.value = view[key];
    control.addEventListener("change", () => {
      Object.assign(view, { [key]: control.value, page: "1" });
      writeView(view, DEFAULT_VIEW);
      reload();
    });
  }
}

// Load now and every REFRESH_MS; the promise settles after the first load.
function keepFresh(nodes) {
  const load = () =>
    refreshFleet({ ...nodes, reload: load }).catch((error) => {
      const message = (what) =>
        el("span", { className: "error" }, `Cannot load ${what}: ${error.message}`);
      nodes.body.replaceChildren(el("tr", {}, el("td", { colSpan: 6 }, message("servers"))));
      nodes.list.replaceChildren(el("li", {}, message("findings")));
    });
  watchFilters(load);
  setInterval(load, REFRESH_MS);
  return load();
}

const servers = document.getElementById("servers");
if (servers) {
  keepFresh({
    body: servers.querySelector("tbody"),
    list: document.getElementById("worst-tables"),
    pager: document.getElementById("fleet-pager"),
  }).then(() => {
    servers.dataset.ready = "true";
  });
}

// Server page: header, capability and pressure panels, and its tables (sort, filter, pages).
import { getJSON, urls } from "../api.js";
import { code, el, estimate, link, show } from "../dom.js";
import { severityBadge } from "../findings.js";
import { age, bytes, count, folded, localTime, notPolledFor, number } from "../format.js";
import { Grid } from "../grid.js";
import { coverageNotes } from "../coverage.js";
import { capabilityPanel, FILE_IO, pressurePanel, warningsPanel } from "../health.js";
import { watchPolls } from "../live.js";
import { readView, writeView } from "../view-state.js";

const root = document.getElementById("server-page");
const serverId = root.dataset.serverId;
// The list's view in the URL: filter text, method, findings only, sort and page (from 1).
const VIEW_DEFAULTS = { q: "", method: "", findings: "", sort: "score", dir: "desc", page: "1" };

// The statistics' age: the oldest InnoDB statistics the figures were read from.
const asOf = (table) => table.skew?.as_of ?? table.runway?.as_of;
// Where a table is subpartitioned its stored count is of subpartitions: say so.
const partitionCount = (t) =>
  t.subpartition_method ? `${count(t.partition_count)} subpartitions` : count(t.partition_count);

// Each finding as its severity's badge and its kind ("critical runway"), worst first; the
// message in the tooltip, the whole of it on the table page.
function findingBadges(table) {
  return (table.findings ?? []).map((finding) =>
    el(
      "span",
      { className: "finding-badge", title: finding.message, dataset: { kind: finding.kind } },
      severityBadge(finding.severity),
      " ",
      finding.kind,
    ),
  );
}

const COLUMNS = [
  {
    key: "table",
    label: "Table",
    value: (t) => `${t.schema}.${t.name}`,
    // May break after the dot, so a long schema and name take two short lines.
    render: (t) =>
      link(urls.tablePage(t.id), [t.schema, ".", el("wbr"), t.name], { className: "table-link" }),
  },
  // Second, so what is wrong is in view beside where, whatever the screen.
  {
    key: "score",
    label: "Findings",
    value: (t) => t.score ?? 0,
    render: findingBadges,
  },
  { key: "method", label: "Method", value: (t) => t.method, render: (t) => t.method },
  {
    key: "partitions",
    label: "Partitions",
    className: "num",
    value: (t) => t.partition_count,
    render: partitionCount,
  },
  {
    key: "rows",
    label: "Rows",
    className: "num",
    value: (t) => t.rows,
    render: (t) => estimate(count(t.rows), asOf(t), { short: true, statistics: t.statistics }),
  },
  {
    key: "data",
    label: "Data",
    className: "num",
    value: (t) => t.data_bytes,
    render: (t) => bytes(t.data_bytes),
  },
  {
    key: "index",
    label: "Index",
    className: "num",
    value: (t) => t.index_bytes,
    render: (t) => bytes(t.index_bytes),
  },
  {
    key: "file",
    label: "On disk",
    className: "num",
    value: (t) => t.file_bytes,
    render: (t) => bytes(t.file_bytes),
  },
  {
    key: "skew",
    label: "Skew (max/mean)",
    className: "num",
    value: (t) => t.skew?.max_mean_ratio,
    render: (t) => number(t.skew?.max_mean_ratio),
  },
  {
    key: "hotspots",
    label: "Hot partitions",
    value: (t) => t.hotspots?.length ?? 0,
    render: (t) => t.hotspots?.map((label) => label.replace("#", " / ")).join(", ") || "—",
  },
  {
    key: "runway",
    label: "Runway (days)",
    className: "num",
    value: (t) => t.runway?.days_left,
    render: (t) => number(t.runway?.days_left),
  },
];

function renderHeader(server, health) {
  const status = document.getElementById("server-status");
  status.textContent = server.status;
  status.className = `status status-${server.status}`;
  const fact = (term, value, title) => [el("dt", {}, term), el("dd", { title }, value)];
  show(
    "server-facts",
    ...fact("Address", `${server.host}:${server.port}`),
    ...fact("Flavour", server.flavor || "—"),
    ...fact("Version", server.version || "—"),
    ...fact("Last poll", localTime(server.last_poll_at), age(server.last_poll_at)),
    ...fact("Last success", localTime(server.last_success_at), age(server.last_success_at)),
    ...fact(
      "Poll interval",
      `${count(server.poll_interval)} s${server.enabled ? "" : " (disabled)"}`,
    ),
    ...fact(
      "Unpruned statements",
      health?.unpruned_tables == null
        ? "—"
        : `${count(health.unpruned_tables)} table(s) read by a statement that reads every partition`,
      "Statement digests with no predicate that prunes the table's partitions (each table " +
        "page's Statements section lists them)",
    ),
  );
}

const when = (iso) => `${localTime(iso)} (${age(iso)})`;

// Why there is nothing (or nothing new) to show: never tried, never succeeded, failing now.
function pollNotice(server) {
  const notice = lastPollNotice(server);
  if (server.not_polled_seconds == null) return notice;
  const stopped = el(
    "p",
    { className: "notice not-polled" },
    `${notPolledFor(server.not_polled_seconds)}: `,
    server.last_poll_at
      ? `no poll ran since ${when(server.last_poll_at)}. `
      : "no poll ran since it was registered. ",
    "Is partdash's Celery worker running? (The stale_polls alert says so too.)",
  );
  return notice ? [stopped, notice] : stopped;
}

function lastPollNotice(server) {
  if (!server.last_poll_at) {
    return el(
      "p",
      { className: "notice never-polled" },
      "This server has not been polled yet, so there is nothing to show. It is polled within its interval; to poll now run ",
      code(`manage.py poll ${server.name}`),
      " or use Poll now in the admin.",
    );
  }
  if (server.status !== "unreachable") return null;
  const reason = el("span", { className: "reason" }, server.last_error || "no reason was recorded");
  if (!server.last_success_at) {
    return el(
      "p",
      { className: "notice last-error never-succeeded" },
      `Never polled successfully. Last tried ${when(server.last_poll_at)}: `,
      reason,
      ".",
      backoffNote(server),
    );
  }
  return el(
    "p",
    { className: "notice last-error" },
    `The last poll failed ${when(server.last_poll_at)}: `,
    reason,
    `. What follows is as of the last successful poll, ${when(server.last_success_at)}.`,
    backoffNote(server),
  );
}

// A server whose polls keep failing is polled less often: say so, and when it is next tried.
function backoffNote(server) {
  if (!server.backoff) return null;
  const next = server.next_poll_at ? `; next poll ${when(server.next_poll_at)}` : "";
  return el("span", { className: "backoff" }, ` Backing off: ${server.backoff}${next}.`);
}

function hiddenNotice(health) {
  if (!health?.hidden_tables) return null;
  const warning = health.warnings.find((item) => item.cause === "hidden");
  return el(
    "p",
    { className: "notice hidden-tables" },
    `${count(health.hidden_tables)} of ${count(health.partitioned_tables)} partitioned tables are not visible to the account: `,
    "their partitions are counted, but they are not listed below.",
    warning?.fixes?.length
      ? [
          " To see them: ",
          code(warning.fixes[0]),
          warning.fixes.length > 1
            ? ` and ${warning.fixes.length - 1} more (under Warnings).`
            : ".",
        ]
      : null,
  );
}

// Partitioned tables of other engines: counted in the totals, listed, not monitored.
function unmonitoredNotice(health) {
  const tables = health?.unmonitored ?? [];
  if (!tables.length) return null;
  const partitions = tables.reduce((sum, table) => sum + table.partitions, 0);
  const engines = [...new Set(tables.map((table) => table.engine))].join(", ");
  return el(
    "div",
    { className: "notice unmonitored-tables" },
    `${count(tables.length)} partitioned ${engines} tables (${count(partitions)} partitions) `,
    "are not monitored: partdash reads InnoDB's own statistics, which other engines do not keep. ",
    "They are counted in the server's totals and its file and table cache pressure; ",
    `their rows and sizes are as of the last DDL (${when(tables[0].read_at)}).`,
    el(
      "ul",
      {},
      tables.map((table) =>
        el(
          "li",
          {},
          `${table.schema}.${table.name}: ${table.engine}, ${count(table.partitions)} partitions, `,
          `${count(table.rows)} rows, ${bytes((table.data_bytes ?? 0) + (table.index_bytes ?? 0))}`,
        ),
      ),
    ),
  );
}

function notices(server, health) {
  const items = [pollNotice(server), hiddenNotice(health), unmonitoredNotice(health)];
  const io = health?.capabilities?.find((item) => item.source === FILE_IO);
  // What polls do not measure here, why, and what enables it (disk I/O: just below).
  const blind = (health?.coverage ?? []).map((signal) => signal.signal);
  items.push(
    coverageNotes(health?.coverage, io && !io.ok ? blind.filter((s) => s !== "disk_io") : null),
  );
  if (io && !io.ok) {
    const why = io.causes?.includes("setting")
      ? "performance_schema is off"
      : "the account cannot read performance_schema";
    items.push(
      el(
        "div",
        { className: "notice ps-off" },
        `${why}: per-partition read and write rates are not available, so hot partitions are `,
        "found from row growth between polls instead. To measure I/O:",
        el(
          "div",
          { className: "fixes" },
          io.fixes.map((fix) => el("div", {}, code(fix))),
        ),
      ),
    );
  }
  show("notices", ...items);
}

// The list's columns as the API's `ordering` names them.
const API_ORDERING = {
  table: "schema,name",
  method: "method",
  partitions: "partition_count",
  rows: "rows",
  data: "data_bytes",
  index: "index_bytes",
  file: "file_bytes",
  skew: "skew",
  hotspots: "hot_partitions",
  runway: "runway_days",
  score: "score",
};

// "Download CSV" gives what the list shows: its filter and its order.
function csvLink(q, method, findingsOnly, sort) {
  const link = document.getElementById("tables-csv");
  if (!link) return;
  const ordering = (API_ORDERING[sort.key] || "score")
    .split(",")
    .map((key) => (sort.direction > 0 ? key : `-${key}`))
    .join(",");
  const params = new URLSearchParams({ format: "csv", ordering });
  if (q) params.set("q", q);
  if (method) params.set("method", method);
  if (findingsOnly) params.set("findings", "true");
  link.href = `/api/v1/servers/${serverId}/tables/?${params}`;
}

function setupFilters(grid, tables, view) {
  const text = document.getElementById("table-filter");
  const method = document.getElementById("method-filter");
  const findingsOnly = document.getElementById("findings-only");
  const methods = [...new Set(tables.map((t) => t.method))].sort();
  method.append(...methods.map((m) => el("option", { value: m }, m)));
  text.value = view.q;
  method.value = methods.includes(view.method) ? view.method : "";
  findingsOnly.checked = view.findings === "1";
  const apply = () => {
    const needle = folded(text.value.trim());
    grid.filter(
      (t) =>
        folded(`${t.schema}.${t.name}`).includes(needle) &&
        (!method.value || t.method === method.value) &&
        (!findingsOnly.checked || t.findings?.length > 0),
    );
  };
  for (const input of [text, method, findingsOnly]) input.addEventListener("input", apply);
  grid.onRender = () => {
    writeView(
      {
        q: text.value.trim(),
        method: method.value,
        findings: findingsOnly.checked ? "1" : "",
        sort: grid.sort.key,
        dir: grid.sort.direction > 0 ? "asc" : "desc",
        page: String(grid.page + 1),
      },
      VIEW_DEFAULTS,
    );
    csvLink(text.value.trim(), method.value, findingsOnly.checked, grid.sort);
  };
  apply();
}

function emptyTables(server, health) {
  let text = "No tables yet: the server has not been polled.";
  if (health?.hidden_tables)
    text = `None of the ${count(health.hidden_tables)} partitioned tables is visible to the account (see above).`;
  else if (server.last_success_at) text = "No partitioned tables on this server.";
  else if (server.last_poll_at) text = "No tables yet: no poll has succeeded.";
  show("tables", el("tbody", {}, el("tr", {}, el("td", { className: "empty" }, text))));
}

let grid = null;

// Show the server and its tables; on a refresh the list keeps its filter, sort and page.
async function loadFigures() {
  const [server, health, tables] = await Promise.all([
    getJSON(`servers/${serverId}/`),
    getJSON(`servers/${serverId}/health/`),
    getJSON(`servers/${serverId}/tables/`),
  ]);
  renderHeader(server, health);
  notices(server, health);
  show("capabilities", capabilityPanel(health.capabilities));
  show("warnings", warningsPanel(health));
  show("pressure", pressurePanel(health));
  if (!tables.length) {
    emptyTables(server, health);
    return server;
  }
  if (grid) {
    grid.setRows(tables);
    return server;
  }
  const view = readView(VIEW_DEFAULTS);
  const table = document.getElementById("tables");
  grid = new Grid(
    table,
    document.getElementById("pager"),
    COLUMNS,
    Number(root.dataset.pageSize) || 50,
  );
  grid.rows = tables;
  setupFilters(grid, tables, view);
  const sort = COLUMNS.some((c) => c.key === view.sort) ? view.sort : VIEW_DEFAULTS.sort;
  grid.sortBy(sort, view.dir === "asc" ? 1 : -1); // worst first by default
  grid.goTo(Math.max(0, (Number.parseInt(view.page, 10) || 1) - 1));
  return server;
}

async function load() {
  const server = await loadFigures();
  watchPolls(serverId, loadFigures, "live", server.last_poll_at);
}

// data-ready tells the browser tests (and anyone watching) that the first load is done.
load()
  .catch((error) =>
    show("notices", el("p", { className: "error" }, `Cannot load this server: ${error.message}`)),
  )
  .finally(() => {
    root.dataset.ready = "true";
  });

// Alerts page: firing, pending, silenced and recently resolved alerts from /api/v1/alerts/
// (filtered by the page's ?server=, ?rule= and ?table=), each with its fix; the silences in
// force and the alert emails that could not be sent.
import { alertsPage } from "../alert-badges.js";
import { getJSON, sendJSON, urls } from "../api.js";
import { code, el, link } from "../dom.js";
import { fixBlock, severityBadge } from "../findings.js";
import { age, bytes, count, localTime, number } from "../format.js";

const REFRESH_MS = 30000;
const HISTORY = 50; // resolved alerts shown
const FAILURES = 20; // failed emails shown

const root = document.getElementById("alerts-page");
const filters = { server: root.dataset.server, rule: root.dataset.rule, table: root.dataset.table };
const serverNames = new Map(
  [...document.querySelectorAll("#server-filter option")]
    .filter((o) => o.value)
    .map((o) => [Number(o.value), o.textContent]),
);

// Values and thresholds in the rule's own unit.
const UNITS = {
  partition_size: bytes,
  table_size: bytes,
  table_growth: (value) => (value == null ? "—" : `${bytes(value)}/day`),
  runway: (value) => (value == null ? "—" : `${number(value)} days`),
  working_set_forecast: (value) => (value == null ? "—" : `${number(value)} days`),
};
const figure = (rule, value) => (UNITS[rule] ?? number)(value);

function alertsQuery(extra) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries({ ...filters, ...extra }))
    if (value) params.set(key, value);
  return `alerts/?${params}`;
}

function where(alert) {
  const server = link(urls.serverPage(alert.server_id), alert.server, { className: "server-link" });
  if (alert.table == null) return ["server ", server];
  const name = `${alert.schema}.${alert.table}`;
  const table =
    alert.table_id == null
      ? el("span", { className: "table-name", title: "this table is no longer there" }, name)
      : link(urls.tablePage(alert.table_id), name, { className: "table-link" });
  return [table, alert.partition ? [" partition ", code(alert.partition)] : null, " on ", server];
}

function silenceLink(alert) {
  const params = new URLSearchParams({ server: alert.server_id, rule: alert.rule });
  if (alert.schema) params.set("schema", alert.schema);
  if (alert.table) params.set("table", alert.table);
  return link(`/alerts/silence/?${params}`, "Silence…", { className: "silence-link small" });
}

const mayWrite = root.dataset.mayWrite === "true";

function acknowledged(alert) {
  if (!alert.acknowledged_at) return null;
  const who = alert.acknowledged_by ?? "someone with the link in a message";
  return el(
    "div",
    { className: "acknowledged small" },
    `Acknowledged by ${who} ${localTime(alert.acknowledged_at)} (${age(alert.acknowledged_at)})`,
    alert.ack_comment ? [": ", el("em", {}, alert.ack_comment)] : null,
    "; no reminders while it is.",
  );
}

function ackForm(alert) {
  if (!mayWrite || alert.state !== "firing") return null;
  const comment = el("textarea", { name: "comment", rows: 2, maxLength: 2000 });
  const said = el("span", { className: "small ack-said" });
  const button = el("button", { type: "submit" }, "Acknowledge");
  const form = el("form", { className: "ack-form" }, comment, " ", button, " ", said);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      await sendJSON(`alerts/${alert.id}/ack/`, { comment: comment.value });
      await load();
    } catch (error) {
      said.textContent = error.message;
      button.disabled = false;
    }
  });
  const summary = alert.acknowledged_at ? "Acknowledge again…" : "Acknowledge…";
  return el("details", { className: "ack small" }, el("summary", {}, summary), form);
}

function when(alert) {
  const since = `since ${localTime(alert.started_at)} (${age(alert.started_at)})`;
  if (alert.state === "resolved")
    return `${since}, resolved ${localTime(alert.resolved_at)} (${age(alert.resolved_at)})`;
  if (alert.state === "firing" && !alert.notified_at) return `${since}; not announced yet`;
  return since;
}

function figures(alert) {
  if (alert.value == null && alert.threshold == null) return "";
  return `value ${figure(alert.rule, alert.value)}, threshold ${figure(alert.rule, alert.threshold)}; `;
}

// A resolved alert reads as resolved, not in its old severity's colour; the severity
// it had stays in words.
function resolvedBadge(severity) {
  return el(
    "span",
    { className: "badge sev-resolved", title: `was ${severity}` },
    `resolved (was ${severity})`,
  );
}

// A resolved alert's fix is history, not something still to run: folded away.
function proposedFix(fix) {
  if (!fix) return null;
  return el(
    "details",
    { className: "proposed-fix small" },
    el("summary", {}, "The fix that was proposed (nothing to run now)"),
    fixBlock(fix),
  );
}

function alertItem(alert) {
  return el(
    "li",
    {
      className: `alert state-${alert.state}`,
      dataset: {
        id: alert.id,
        rule: alert.rule,
        serverId: alert.server_id,
        tableId: alert.table_id ?? "",
      },
    },
    el(
      "div",
      { className: "alert-head" },
      alert.state === "resolved" ? resolvedBadge(alert.severity) : severityBadge(alert.severity),
      " ",
      el("strong", {}, alert.rule),
      " ",
      where(alert),
      alert.silenced ? [" ", el("span", { className: "badge silenced-badge" }, "silenced")] : null,
      alert.acknowledged_at && alert.state !== "resolved"
        ? [" ", el("span", { className: "badge acked-badge" }, "acknowledged")]
        : null,
    ),
    el("div", { className: "alert-message" }, alert.message),
    el("div", { className: "alert-figures small" }, figures(alert), when(alert)),
    alert.state === "resolved" ? proposedFix(alert.fix) : fixBlock(alert.fix),
    alert.state !== "resolved" ? acknowledged(alert) : null,
    alert.state !== "resolved" && !alert.silenced ? silenceLink(alert) : null,
    " ",
    link(`/alerts/${alert.id}/`, "History", { className: "history-link small" }),
    ackForm(alert),
  );
}

function showAlerts(sectionId, alerts, emptyText) {
  const section = document.getElementById(sectionId);
  section.querySelector(".count").textContent = alerts.length ? `(${count(alerts.length)})` : "";
  const list = section.querySelector(".alert-list");
  list.className = "alert-list";
  list.replaceChildren(
    alerts.length
      ? el("ul", { className: "alerts" }, alerts.map(alertItem))
      : el("p", { className: "empty" }, emptyText),
  );
}

function silenceScope(silence) {
  const parts = [
    silence.server != null
      ? [
          "server ",
          link(
            urls.serverPage(silence.server),
            serverNames.get(silence.server) ?? `#${silence.server}`,
          ),
        ]
      : null,
    silence.schema != null ? ["schema ", code(silence.schema)] : null,
    silence.table != null ? ["table ", code(silence.table)] : null,
    silence.rule != null ? ["rule ", el("strong", {}, silence.rule)] : null,
  ].filter(Boolean);
  if (!parts.length) return [el("strong", { className: "bad-text" }, "every alert")];
  return parts.flatMap((part, index) => (index ? [", ", part] : [part]));
}

function silenceItem(silence) {
  return el(
    "li",
    { className: "silence", dataset: { id: silence.id } },
    silenceScope(silence),
    ` until ${localTime(silence.ends_at)} (${age(silence.ends_at)})`,
    silence.created_by ? `, by ${silence.created_by}` : "",
    silence.comment ? [": ", el("em", {}, silence.comment)] : "",
  );
}

// A silence concerns this page unless it names another server.
const concernsPage = (silence) =>
  !filters.server || silence.server == null || String(silence.server) === filters.server;

function showSilences(silences) {
  const shown = silences.filter(concernsPage);
  const box = document.querySelector("#silences .silence-list");
  box.className = "silence-list";
  box.replaceChildren(
    shown.length
      ? el("ul", {}, shown.map(silenceItem))
      : el("p", { className: "empty" }, "No silence in force."),
  );
}

function failureItem(notification) {
  const outcome = notification.sent_at
    ? `sent ${localTime(notification.sent_at)} after ${count(notification.attempts)} attempts`
    : `not sent after ${count(notification.attempts)} attempt${notification.attempts === 1 ? "" : "s"}`;
  return el(
    "li",
    { className: "failure", dataset: { id: notification.id } },
    el(
      "div",
      {},
      el("strong", {}, notification.subject || "(no subject)"),
      notification.channel
        ? ` to channel ${notification.channel}`
        : ` to ${notification.recipients.join(", ") || "ALERT_EMAILS"}`,
    ),
    el(
      "div",
      { className: "small" },
      `${localTime(notification.created_at)} (${age(notification.created_at)}); ${outcome}`,
    ),
    el("div", { className: "error last-error-text" }, notification.last_error),
  );
}

function showFailures(notifications) {
  const box = document.querySelector("#delivery .failure-list");
  box.className = "failure-list";
  box.replaceChildren(
    notifications.length
      ? el("ul", {}, notifications.map(failureItem))
      : el("p", { className: "empty" }, "Every alert email and channel message was delivered."),
  );
}

async function load() {
  const failuresQuery = new URLSearchParams({ failed: "true", limit: FAILURES });
  if (filters.server) failuresQuery.set("server", filters.server);
  const [firing, pending, resolved, silences, failures] = await Promise.all([
    getJSON(alertsQuery({ state: "firing" })),
    getJSON(alertsQuery({ state: "pending" })),
    getJSON(alertsQuery({ state: "resolved", limit: HISTORY })),
    getJSON("silences/?active=true"),
    getJSON(`notifications/?${failuresQuery}`),
  ]);
  const loud = (alerts) => alerts.filter((alert) => !alert.silenced);
  showAlerts("firing", loud(firing), "Nothing is firing.");
  showAlerts("pending", loud(pending), "Nothing is pending.");
  showAlerts(
    "silenced",
    [...firing, ...pending].filter((alert) => alert.silenced),
    "No open alert is silenced.",
  );
  showAlerts("history", resolved, "Nothing resolved yet.");
  showSilences(silences);
  showFailures(failures);
}

function fail(error) {
  for (const box of root.querySelectorAll(".alert-list, .silence-list, .failure-list")) {
    box.replaceChildren(el("p", { className: "error" }, `Cannot load alerts: ${error.message}`));
  }
}

// Changing a filter reloads the page with it in the address, so the view can be linked.
for (const select of root.querySelectorAll("#alert-filters select")) {
  select.addEventListener("change", () => {
    window.location.assign(
      alertsPage({
        server: root.querySelector("#server-filter").value,
        rule: root.querySelector("#rule-filter").value,
        table: filters.table,
      }),
    );
  });
}

setInterval(() => load().catch(fail), REFRESH_MS);
// data-ready tells the browser tests (and anyone watching) that the first load is done.
load()
  .catch(fail)
  .finally(() => {
    root.dataset.ready = "true";
  });

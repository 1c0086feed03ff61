// Auto-refresh: every 15 s ask when the server was last polled; when that changes, reload
// the page's figures in place. A small indicator says how fresh they are.
import { getJSON } from "./api.js";
import { el, show } from "./dom.js";

const CHECK_MS = 15000;
const TICK_MS = 1000;

function ago(since) {
  const seconds = Math.max(0, Math.round((Date.now() - since) / 1000));
  if (seconds < 120) return `${seconds} s ago`;
  return seconds < 7200
    ? `${Math.round(seconds / 60)} min ago`
    : `${Math.round(seconds / 3600)} h ago`;
}

// `reload()` redraws the page's data; `indicatorId` is an element for "updated 12 s ago".
export function watchPolls(serverId, reload, indicatorId, lastPollAt = undefined) {
  let lastPoll = lastPollAt;
  let updated = Date.now();
  let failed = false;
  const indicator = document.getElementById(indicatorId);
  const render = () => {
    if (!indicator) return;
    indicator.dataset.state = failed ? "stale" : "live";
    show(
      indicatorId,
      el("span", { className: "live-dot", ariaHidden: "true" }, "●"),
      " ",
      failed ? `cannot reach partdash; updated ${ago(updated)}` : `live, updated ${ago(updated)}`,
    );
  };
  const check = async () => {
    if (document.hidden) return; // a tab in the background asks again when shown
    try {
      const server = await getJSON(`servers/${serverId}/`);
      failed = false;
      if (lastPoll !== undefined && server.last_poll_at !== lastPoll) {
        lastPoll = server.last_poll_at;
        await reload();
        updated = Date.now();
        if (indicator)
          indicator.dataset.refreshes = String(Number(indicator.dataset.refreshes || 0) + 1);
      }
      lastPoll = server.last_poll_at;
    } catch {
      failed = true;
    }
    render();
  };
  render();
  if (lastPoll === undefined) check();
  setInterval(check, CHECK_MS);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) check();
  });
  setInterval(render, TICK_MS);
}

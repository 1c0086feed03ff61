// A server's open alerts as a badge linking to the alerts page filtered to it; the same
// words as the server and table pages' badges (partdash/dashboard/templatetags/alert_badges.py).
import { link } from "./dom.js";

export function alertsPage(query = {}) {
  const params = new URLSearchParams(
    Object.entries(query).filter(([, value]) => value != null && value !== ""),
  );
  const search = params.toString();
  return search ? `/alerts/?${search}` : "/alerts/";
}

function summary({ firing, pending, silenced }) {
  const parts = [
    [firing, "firing"],
    [pending, "pending"],
    [silenced, "silenced"],
  ];
  return parts
    .filter(([n]) => n)
    .map(([n, what]) => `${n} ${what}`)
    .join(", ");
}

// counts: {firing, pending, silenced} from /api/v1/alerts/counts/, or undefined (none open).
export function alertBadge(counts, href) {
  if (!counts) return null;
  const kind = ["firing", "pending", "silenced"].find((what) => counts[what] > 0);
  if (!kind) return null;
  return link(href, `${counts[kind]} ${kind}`, {
    className: `alert-badge ${kind}`,
    title: summary(counts),
  });
}

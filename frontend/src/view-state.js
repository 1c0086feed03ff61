// A page's view (filter, sort, range...) in its URL's query, so a view can be shared and
// comes back on reload. Defaults are left out of the URL; other parameters are kept.

export function readView(defaults) {
  const query = new URLSearchParams(window.location.search);
  return Object.fromEntries(
    Object.entries(defaults).map(([key, value]) => [key, query.get(key) ?? value]),
  );
}

export function writeView(view, defaults) {
  const query = new URLSearchParams(window.location.search);
  for (const [key, value] of Object.entries(view)) {
    if (value == null || value === "" || String(value) === String(defaults[key])) query.delete(key);
    else query.set(key, String(value));
  }
  const search = query.toString();
  window.history.replaceState(
    null,
    "",
    `${window.location.pathname}${search ? `?${search}` : ""}${window.location.hash}`,
  );
}

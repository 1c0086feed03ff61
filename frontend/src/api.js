// Fetching the JSON API with the session cookie.

export const API = "/api/v1";

export async function getJSON(path) {
  const url = path.startsWith("/") ? path : `${API}/${path}`;
  const response = await fetch(url, {
    credentials: "same-origin",
    headers: { Accept: "application/json" },
  });
  if (!response.ok) {
    throw new Error(`${url}: HTTP ${response.status}`);
  }
  return response.json();
}

export const urls = {
  serverPage: (id) => `/servers/${id}/`,
  tablePage: (id) => `/tables/${id}/`,
  serverAdmin: (id) => `/admin/servers/server/${id}/change/`,
};

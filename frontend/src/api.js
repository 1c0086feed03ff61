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

function csrfToken() {
  const cookie = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
  return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : "";
}

// POST (or `method`) a JSON body; the answer's JSON, or an Error saying the API's detail.
export async function sendJSON(path, body, method = "POST") {
  const url = path.startsWith("/") ? path : `${API}/${path}`;
  const response = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
      "X-CSRFToken": csrfToken(),
    },
    body: body == null ? undefined : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(answer.detail || `${url}: HTTP ${response.status}`);
  }
  return answer;
}

export const urls = {
  serverPage: (id) => `/servers/${id}/`,
  tablePage: (id) => `/tables/${id}/`,
  serverAdmin: (id) => `/admin/servers/server/${id}/change/`,
};

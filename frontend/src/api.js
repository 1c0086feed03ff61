// Fetching the JSON API with the session cookie, and small formatting helpers.

export async function getJSON(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!response.ok) {
    throw new Error(`${url}: HTTP ${response.status}`);
  }
  return response.json();
}

export function localTime(iso) {
  return iso ? new Date(iso).toLocaleString() : "never";
}

export function cell(text, className = "") {
  const td = document.createElement("td");
  td.textContent = text ?? "—";
  if (className) td.className = className;
  return td;
}

// Fleet page: one row per server from /api/v1/servers/.
import { cell, getJSON, localTime } from "../api.js";

function serverRow(server) {
  const row = document.createElement("tr");
  row.dataset.server = server.name;
  const name = cell("");
  const link = document.createElement("a");
  link.href = `/admin/servers/server/${server.id}/change/`;
  link.textContent = server.name;
  name.append(link);
  row.append(
    name,
    cell(`${server.host}:${server.port}`),
    cell(server.version || "—"),
    cell(server.status, `status status-${server.status}`),
    cell(localTime(server.last_poll_at)),
    cell(server.partitioned_tables),
    cell(server.partitions),
    cell(server.last_error || ""),
  );
  return row;
}

async function refresh(table) {
  const servers = await getJSON(table.dataset.api);
  const body = table.querySelector("tbody");
  body.replaceChildren(...servers.map(serverRow));
}

const table = document.getElementById("servers");
if (table) {
  const load = () => refresh(table).catch((error) => {
    table.querySelector("tbody").replaceChildren(cell(`Cannot load servers: ${error.message}`));
  });
  load();
  setInterval(load, 15000);
}

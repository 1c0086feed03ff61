"""The REST API under /api/v1/: auth, the servers list and its figures, registering servers
with write-only encrypted passwords, queueing polls on the real broker, and the schema.
Servers and what their polls stored are built in the database (tests/builders.py); the
list's figures after a poll come from real polls of private MariaDB servers."""

import base64
import json
from datetime import datetime

import pytest
from rest_framework.test import APIClient

from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests import builders

pytestmark = pytest.mark.django_db

SERVERS = "/api/v1/servers/"
CONTRACT_FIELDS = {
    "id",
    "name",
    "host",
    "port",
    "flavor",
    "version",
    "status",
    "last_poll_at",
    "last_error",
    "partitioned_tables",
    "partitions",
}
SECRET = "api-S3cret-pa55word"
PORT = 3307  # where a registered server listens: nothing here connects to it


def raw_messages(queue) -> list[bytes]:
    return queue.lrange("celery", 0, -1)


def task_call(raw: bytes) -> tuple[str, list, dict]:
    """(task name, args, kwargs) of one kombu message in Redis."""
    message = json.loads(raw)
    args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    return message["headers"]["task"], args, kwargs


def new_server_body(**overrides) -> dict:
    return {
        "name": "api-db",
        "host": "127.0.0.1",
        "port": PORT,
        "user": "root",
        "password": SECRET,
        "poll_interval": 60,
        **overrides,
    }


def assert_no_password(response) -> None:
    body = response.content.decode()
    assert "password" not in body
    assert SECRET not in body


# --- authentication and permissions ---------------------------------------------------------


def test_anonymous_requests_are_refused():
    response = APIClient().get(SERVERS)
    assert response.status_code in (401, 403)


def test_token_authentication_lets_a_viewer_read(viewer_api):
    builders.server("db1")
    response = viewer_api.get(SERVERS)
    assert response.status_code == 200
    assert [row["name"] for row in response.json()] == ["db1"]


def test_session_authentication_lets_a_viewer_read(client, viewer):
    assert client.login(username="viewer", password="viewer-pw")
    assert client.get(SERVERS).status_code == 200


def test_a_viewer_cannot_write(viewer_api):
    server = builders.server("db1", enabled=True)
    detail = f"{SERVERS}{server.pk}/"
    assert viewer_api.post(SERVERS, new_server_body(), format="json").status_code == 403
    assert viewer_api.patch(detail, {"poll_interval": 99}, format="json").status_code == 403
    assert viewer_api.delete(detail).status_code == 403
    assert viewer_api.post(f"{detail}poll/").status_code == 403
    server.refresh_from_db()
    assert server.poll_interval != 99


def test_staff_can_create_update_delete_and_poll(staff_api, queue):
    created = staff_api.post(SERVERS, new_server_body(), format="json")
    assert created.status_code == 201
    detail = f"{SERVERS}{created.json()['id']}/"
    assert staff_api.patch(detail, {"poll_interval": 99}, format="json").status_code == 200
    assert Server.objects.get(name="api-db").poll_interval == 99
    assert staff_api.post(f"{detail}poll/").status_code == 202
    assert staff_api.delete(detail).status_code == 204
    assert not Server.objects.filter(name="api-db").exists()


# --- reading servers ------------------------------------------------------------------------


def test_list_has_the_contract_fields_and_a_never_polled_status(viewer_api):
    builders.server("db1")
    (row,) = viewer_api.get(SERVERS).json()
    assert CONTRACT_FIELDS <= row.keys()
    assert row["status"] == "never"
    assert row["last_poll_at"] is None


@pytest.fixture
def scratch_schema(mariadb):
    """An empty schema on the shared `mariadb`, dropped afterwards."""
    mariadb.execute("DROP DATABASE IF EXISTS api_figures")
    mariadb.execute("CREATE DATABASE api_figures")
    yield "api_figures"
    mariadb.execute("DROP DATABASE IF EXISTS api_figures")


def test_list_carries_the_figures_of_a_real_poll(viewer_api, make_server, mariadb, scratch_schema):
    server = make_server(mariadb)
    poll_server(server)
    before = viewer_api.get(SERVERS).json()[0]

    mariadb.execute(
        f"CREATE TABLE {scratch_schema}.t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 7"
    )
    assert poll_server(server).ok
    (row,) = viewer_api.get(SERVERS).json()

    assert row["flavor"] == "mariadb"
    assert row["version"] == mariadb.execute("SELECT VERSION()")[0][0]
    assert row["status"] == "degraded"  # performance_schema is OFF on this instance
    assert "performance_schema is OFF" in row["last_error"]
    assert row["partitions"] == before["partitions"] + 7
    assert row["partitioned_tables"] == before["partitioned_tables"] + 1
    assert datetime.fromisoformat(row["last_poll_at"]) > datetime.fromisoformat(
        before["last_poll_at"]
    )


def test_a_server_with_performance_schema_on_is_ok(viewer_api, make_server, mariadb_ps):
    assert poll_server(make_server(mariadb_ps)).ok
    (row,) = viewer_api.get(SERVERS).json()
    assert row["status"] == "ok"
    assert row["last_error"] == ""


def test_an_unreachable_server_is_listed_as_unreachable(viewer_api):
    from tests.services import free_port

    server = Server.objects.create(name="gone", host="127.0.0.1", port=free_port(), user="root")
    assert not poll_server(server).ok
    (row,) = viewer_api.get(SERVERS).json()
    assert row["status"] == "unreachable"
    assert "refused" in row["last_error"]


# --- registering servers --------------------------------------------------------------------


def test_create_returns_the_server_without_its_password(staff_api):
    response = staff_api.post(SERVERS, new_server_body(), format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "api-db"
    assert body["port"] == PORT
    assert body["status"] == "never"
    assert_no_password(response)


def test_the_password_is_stored_encrypted_and_never_read_back(staff_api):
    created = staff_api.post(SERVERS, new_server_body(), format="json").json()
    server = Server.objects.get(pk=created["id"])
    assert server.password_token
    assert SECRET not in server.password_token
    assert server.get_password() == SECRET

    detail = f"{SERVERS}{server.pk}/"
    for response in (staff_api.get(SERVERS), staff_api.get(detail)):
        assert response.status_code == 200
        assert_no_password(response)
        assert server.password_token not in response.content.decode()


def test_patch_without_a_password_keeps_the_stored_one(staff_api):
    created = staff_api.post(SERVERS, new_server_body(), format="json").json()
    response = staff_api.patch(f"{SERVERS}{created['id']}/", {"poll_interval": 300}, format="json")
    assert response.status_code == 200
    assert_no_password(response)
    server = Server.objects.get(pk=created["id"])
    assert server.poll_interval == 300
    assert server.get_password() == SECRET


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"port": 70000}, "port"),
        ({"poll_interval": 1}, "poll_interval"),
        ({"name": None}, "name"),
    ],
    ids=["port-out-of-range", "poll-interval-too-short", "missing-name"],
)
def test_bad_fields_are_rejected_with_field_errors(staff_api, overrides, field):
    body = {k: v for k, v in new_server_body(**overrides).items() if v is not None}
    response = staff_api.post(SERVERS, body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Server.objects.exists()


def test_a_duplicate_name_is_rejected(staff_api):
    builders.server("api-db")
    response = staff_api.post(SERVERS, new_server_body(), format="json")
    assert response.status_code == 400
    assert "name" in response.json()
    assert Server.objects.count() == 1


def test_a_malformed_json_body_is_a_parse_error(staff_api):
    response = staff_api.post(SERVERS, '{"name": "x",', content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


# --- queueing polls -------------------------------------------------------------------------


def test_poll_queues_a_task_carrying_only_the_server_id(staff_api, queue):
    server = builders.server("db1", password=SECRET, enabled=True)
    response = staff_api.post(f"{SERVERS}{server.pk}/poll/")
    assert response.status_code == 202
    assert response.json()["queued"] is True

    (raw,) = raw_messages(queue)
    assert task_call(raw) == ("partdash.polling.tasks.poll_server", [server.pk], {"forced": True})
    assert SECRET.encode() not in raw
    assert server.password_token.encode() not in raw


def test_polling_a_disabled_server_is_a_conflict(staff_api, queue):
    server = builders.server("db1", enabled=False)
    assert staff_api.post(f"{SERVERS}{server.pk}/poll/").status_code == 409
    assert raw_messages(queue) == []


def test_polling_an_unknown_server_is_not_found(staff_api, queue):
    assert staff_api.post(f"{SERVERS}999999/poll/").status_code == 404
    assert raw_messages(queue) == []


def test_creating_a_server_queues_exactly_one_poll(
    staff_api, queue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api.post(SERVERS, new_server_body(), format="json")
    assert response.status_code == 201
    (raw,) = raw_messages(queue)
    assert task_call(raw)[1] == [response.json()["id"]]
    assert SECRET.encode() not in raw


# --- OpenAPI schema -------------------------------------------------------------------------


def test_the_schema_is_openapi_3_with_the_servers_paths(viewer_api):
    response = viewer_api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    assert {"/api/v1/servers/", "/api/v1/servers/{id}/", "/api/v1/servers/{id}/poll/"} <= set(
        schema["paths"]
    )
    assert "post" in schema["paths"]["/api/v1/servers/{id}/poll/"]


def test_the_schema_marks_the_password_write_only(viewer_api):
    schema = json.loads(viewer_api.get("/api/schema/", {"format": "json"}).content)
    password = schema["components"]["schemas"]["Server"]["properties"]["password"]
    assert password["writeOnly"] is True


def test_tags_longer_than_the_column_are_rejected(staff_api):
    response = staff_api.post(SERVERS, new_server_body(tags="x" * 501), format="json")
    assert response.status_code == 400
    assert "tags" in response.json()


def test_the_fast_tables_list_matches_the_table_serializer(viewer_api):
    """The tables list is built from one values() query for speed; it must say exactly
    what the serializer (and so the OpenAPI schema and the table detail) says."""
    from partdash.api.serializers import TableSerializer
    from partdash.metrics.models import PartitionedTable

    server = builders.server("db1")
    # 3,000 ids hashed over 4 partitions: 750 rows in each.
    builders.poll(server, builders.hash_table("api_figures", "h", [750] * 4))
    listed = viewer_api.get(f"{SERVERS}{server.pk}/tables/").json()
    tables = PartitionedTable.objects.filter(server=server, dropped_at=None)
    assert listed == [dict(row) for row in TableSerializer(tables, many=True).data]
    (row,) = [r for r in listed if r["schema"] == "api_figures"]
    assert row["rows"] == 3000 and row["partition_count"] == 4
    assert row["skew"]["max_mean_ratio"] == pytest.approx(1.0, abs=0.01)
    assert row["findings"] == [] and row["hotspots"] == []
    detail = viewer_api.get(f"/api/v1/tables/{row['id']}/").json()
    assert {k: detail[k] for k in row} == row


def test_the_fast_partitions_list_matches_the_partition_serializer(viewer_api):
    """Built from one values() query and served once per poll; it must say exactly what
    the serializer (and so the OpenAPI schema) says, and show each new poll's figures."""
    from partdash.api.serializers import PartitionSerializer
    from partdash.metrics.models import PartitionedTable

    server = builders.server("db1")
    # ROW_FORMAT=COMPRESSED, KEY(id) over 3 partitions: 900 ids as MariaDB spreads them.
    k = builders.hash_table("api_figures", "k", [300, 304, 296], method="KEY", compressed=True)
    builders.poll(server, k)
    table = PartitionedTable.objects.get(server=server, schema="api_figures", name="k")
    url = f"/api/v1/tables/{table.pk}/partitions/"
    listed = viewer_api.get(url).json()
    context = {"table": table, "table_rows": table.total_rows, "page_size": 16384}
    partitions = table.partitions.filter(dropped_at=None)
    assert listed == [
        dict(p) for p in PartitionSerializer(partitions, many=True, context=context).data
    ]
    assert [p["name"] for p in listed] == ["p0", "p1", "p2"]
    assert sum(p["rows"] for p in listed) == 900
    assert all(p["compression"]["kind"] == "row" for p in listed)
    assert viewer_api.get(url).json() == listed  # the same poll: the same answer

    for part, more in zip(k.parts, (100, 104, 96), strict=True):  # 300 rows more
        part.rows += more
    builders.poll(server, k)
    assert sum(p["rows"] for p in viewer_api.get(url).json()) == 1200
    tables = viewer_api.get(f"{SERVERS}{server.pk}/tables/").json()
    assert [t["rows"] for t in tables if t["name"] == "k"] == [1200]

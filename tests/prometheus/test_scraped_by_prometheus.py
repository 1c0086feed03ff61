"""A real Prometheus (Debian's `prometheus`) scraping partdash as docs/metrics.md
configures it: the whole fleet in one job, and one server per target in another
(`?server=NAME` set by relabelling, as for federation). What it stores agrees with the
API: a table with a finding is there with the API's figures, one without is not (the
series budget), and the per-server job holds that server's series alone."""

import json
import urllib.parse
import urllib.request

import pytest

from partdash.accounts.models import ApiToken
from tests.conftest import token_client
from tests.prometheus import real_prometheus
from tests.prometheus.exposition_rows import hash_table, polled_server, range_table
from tests.services import log_tail, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

# A scrape may take as long as its interval; a slower one (a busy two-core machine) fails
# and its series go stale until the next, so the test waits for the figures it reads.
CONFIG = """
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: fleet
    authorization: {{type: Token, credentials: "{token}"}}
    static_configs: [{{targets: ["{address}"]}}]
  - job_name: servers
    authorization: {{type: Token, credentials: "{token}"}}
    static_configs: [{{targets: [db2]}}]
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_server
      - source_labels: [__address__]
        target_label: instance
      - target_label: __address__
        replacement: "{address}"
"""


@pytest.fixture
def prometheus(tmp_path, live_server, viewer):
    """A real Prometheus scraping the live server every second with a viewer's token."""
    _, token = ApiToken.issue(viewer, name="prometheus")
    address = urllib.parse.urlsplit(live_server.url).netloc
    with real_prometheus.running(tmp_path, CONFIG.format(token=token, address=address)) as ran:
        yield ran


def query(url: str, promql: str) -> list[dict]:
    """The instant vector Prometheus answers (empty while it cannot answer yet)."""
    try:
        with urllib.request.urlopen(
            f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}", timeout=2
        ) as answer:
            return json.load(answer)["data"]["result"]
    except OSError:
        return []


def by(results: list[dict], *labels: str) -> dict[tuple, float]:
    return {tuple(r["metric"].get(n) for n in labels): float(r["value"][1]) for r in results}


def test_prometheus_stores_the_budgeted_figures_the_api_shows(prometheus, viewer):
    db1, db2 = polled_server("db1"), polled_server("db2")
    range_table(db1)  # a finding (score 80): shown
    hash_table(db1)  # no finding: left out
    range_table(db2, name="payments", total_rows=777)
    url, log = prometheus

    assert wait_for(lambda: len(query(url, 'up{job=~"fleet|servers"} == 1')) == 2, timeout=60), (
        log_tail(log)
    )
    api = token_client(viewer)
    rows = {
        (server.name, table["name"]): table["rows"]
        for server in (db1, db2)
        for table in api.get(f"/api/v1/servers/{server.pk}/tables/").json()
    }
    assert rows[("db1", "events")] == 800  # the API lists the table without a finding

    def table_rows(job: str, *labels: str) -> dict[tuple, float]:
        return by(query(url, f'partdash_table_rows{{job="{job}"}}'), *labels)

    expected = {("db1", "orders"): rows["db1", "orders"], ("db2", "payments"): 777}
    wait_for(lambda: table_rows("fleet", "server", "table") == expected, timeout=30)
    assert table_rows("fleet", "server", "table") == expected
    assert wait_for(lambda: table_rows("servers", "table"), timeout=30), log_tail(log)
    one = query(url, '{job="servers", __name__=~"partdash_.+"}')
    assert one and {r["metric"]["server"] for r in one if "server" in r["metric"]} == {"db2"}
    assert table_rows("servers", "table") == {("payments",): 777}
    assert not query(url, 'partdash_fleet_partitions{job="servers"}')
    assert by(query(url, 'partdash_fleet_servers{job="fleet"}'), "status")[("ok",)] == 2

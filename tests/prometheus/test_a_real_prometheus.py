"""A real Prometheus (Debian's `prometheus`) scrapes partdash's /metrics with the scrape
config of docs/metrics.md (a token in a file), loads docker/prometheus/partdash-rules.yml
and answers every query of docker/grafana/partdash-dashboard.json: the rules evaluate
without an error on partdash's real series, and the conditions that hold go pending."""

import pytest

from partdash.accounts.models import ApiToken
from tests import builders
from tests.prometheus import real_prometheus
from tests.prometheus.exposition_rows import polled_server, range_table
from tests.prometheus.real_prometheus import api
from tests.prometheus.test_rules_and_dashboard import RULES, alerting_rules, dashboard_panels
from tests.services import answers_ready, log_tail, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

# Often, so a test sees a scrape and an evaluation within a few seconds. A scrape may take
# as long as its interval: a slower one (a busy two-core machine) fails, and its series
# go stale until the next one, so the test waits for answers rather than reading once.
CONFIG = """
global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 1s
rule_files:
  - {rules}
scrape_configs:
  - job_name: partdash
    metrics_path: /metrics
    authorization:
      type: Token
      credentials_file: {token}
    static_configs:
      - targets: ["{target}"]
"""


@pytest.fixture
def prometheus(tmp_path, live_server, viewer):
    """A real Prometheus scraping the live server every second, with partdash's rules."""
    _, key = ApiToken.issue(viewer, name="prometheus")
    (tmp_path / "token").write_text(key)
    target = live_server.url.removeprefix("http://")
    config = CONFIG.format(rules=RULES, token=tmp_path / "token", target=target)
    with real_prometheus.running(tmp_path, config) as (url, log):
        assert wait_for(lambda: answers_ready(url), timeout=30), log_tail(log)
        yield url


def pending(url: str) -> set[tuple[str, str, str]]:
    """The alerts of partdash's groups (another group may share the file) that are on."""
    own = {rule["alert"] for rule in alerting_rules()}
    return {
        (a["labels"]["alertname"], a["labels"]["server"], a["labels"]["severity"])
        for a in api(url, "alerts")["alerts"]
        if a["labels"]["alertname"] in own
    }


def scraped(url: str) -> bool:
    """partdash's target is up, its last scrape without an error."""
    (target,) = api(url, "targets")["activeTargets"]
    return (target["health"], target["lastError"]) == ("up", "")


def dashboard_answers(url: str) -> dict[tuple[str, str], dict]:
    """Each dashboard query's answer, with the variables at All, by panel and query."""
    answers = {}
    for panel in dashboard_panels():
        for query in panel["targets"]:
            expr = query["expr"]
            for variable in ("$server", "$schema", "$table"):
                expr = expr.replace(variable, ".*")
            answers[(panel["title"], query["refId"])] = api(url, "query", query=expr)
    return answers


def test_prometheus_scrapes_partdash_evaluates_its_rules_and_answers_the_dashboard(
    db, viewer, prometheus
):
    db1 = polled_server("db1")
    finding = {"kind": "runway", "severity": "critical", "score": 90.0, "message": ""}
    range_table(db1, export_partitions=True, findings=[finding])
    builders.alert(db1, rule="runway", severity="critical")
    builders.server("db2", status="unreachable", last_poll_at=db1.last_poll_at)
    builders.server("db3")  # never polled: not unreachable

    # The conditions that hold are pending (firing takes the minute of `for: 1m`), and
    # nothing else is. Prometheus 2.42 applies its targets 5 s after it starts (no flag
    # shortens it): the first scrape, and so this, comes about 7 s in.
    expected = {("PartdashRunway", "db1", "critical"), ("PartdashUnreachable", "db2", "critical")}
    assert wait_for(lambda: pending(prometheus) == expected, timeout=30), pending(prometheus)
    assert wait_for(lambda: scraped(prometheus), timeout=30), api(prometheus, "targets")
    # Every rule evaluated without an error on the real series.
    groups = api(prometheus, "rules")["groups"]
    assert {g["name"] for g in groups} >= {"partdash-tables", "partdash-servers"}
    rules = [(r["name"], r["health"], r.get("lastError", "")) for g in groups for r in g["rules"]]
    assert len(rules) >= 17 and [rule for rule in rules if rule[1:] != ("ok", "")] == []

    def recorded() -> list[float]:
        answer = api(prometheus, "query", query="partdash:table_size_bytes")["result"]
        return [float(r["value"][1]) for r in answer]

    assert wait_for(lambda: recorded() == [(4 << 20) + (1 << 20)], timeout=30), recorded()

    # Every dashboard query answers, with the variables at All; the ones this store has
    # figures for answer with them.
    answers = {}

    def every_query_answers() -> bool:
        answers.update(dashboard_answers(prometheus))
        return scraped(prometheus) and all(answer["result"] for answer in answers.values())

    wait_for(every_query_answers, timeout=30)
    assert all(answer["resultType"] == "vector" for answer in answers.values())
    assert float(answers[("Servers failing", "A")]["result"][0]["value"][1]) == 1
    assert float(answers[("Firing alerts", "A")]["result"][0]["value"][1]) == 1
    (held,) = answers[("Findings", "A")]["result"]
    assert (held["metric"]["table"], held["metric"]["kind"]) == ("orders", "runway")
    assert len(answers[("Rows per partition (tables opted in)", "A")]["result"]) == 4
    runway = answers[("Runway: days left (RANGE tables under 30 days)", "A")]["result"]
    assert [float(r["value"][1]) for r in runway] == [0.0]
    empty = [key for key, answer in answers.items() if not answer["result"]]
    assert empty == [], empty

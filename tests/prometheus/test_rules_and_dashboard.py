"""The Prometheus rules (docker/prometheus/partdash-rules.yml) and the Grafana dashboard
(docker/grafana/partdash-dashboard.json) partdash ships: Prometheus's own `promtool`
checks the rules and runs their unit tests (each rule fires and resolves), the dashboard
type-checks against Grafana's published schema (`@grafana/schema`), and every series
either names is one a real scrape of /metrics exports. A real Prometheus runs both:
test_a_real_prometheus.py."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from partdash.alerts.rules import catalogue
from tests import builders
from tests.prometheus.exposition_rows import polled_server, range_table
from tests.prometheus.test_metrics_endpoint import labels, scrape

DOCKER = Path(settings.BASE_DIR) / "docker"
RULES = DOCKER / "prometheus" / "partdash-rules.yml"
# Every minute, as scraped; and every 4 minutes for the rule that looks a day back.
RULE_TESTS = [
    DOCKER / "prometheus" / name
    for name in ("partdash-rules.test.yml", "partdash-rules-daily.test.yml")
]
DASHBOARD = DOCKER / "grafana" / "partdash-dashboard.json"
FRONTEND = Path(settings.BASE_DIR) / "frontend" / "node_modules"
SCHEMA = FRONTEND / "@grafana" / "schema" / "dist" / "types"
# The issue-45 group shares the file; its rules are its own.
OWN_GROUPS = {"partdash-tables", "partdash-servers"}
# A Prometheus series name, or a recording rule's (level:metric:operations).
SERIES = re.compile(r"\b(partdash[a-z0-9_:]*)\b")


def promtool(*args: str, cwd: Path = DOCKER / "prometheus") -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("promtool") or "/usr/bin/promtool", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
    )


def minutes(duration: str) -> int:
    """A unit test's `eval_time` (`90m`, `1d`) in minutes."""
    number, unit = re.fullmatch(r"(\d+)([mhd])", duration).groups()
    return int(number) * {"m": 1, "h": 60, "d": 1440}[unit]


def rule_tests() -> list[dict]:
    return [test for path in RULE_TESTS for test in yaml.safe_load(path.read_text())["tests"]]


def alerting_rules() -> list[dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [
        rule for g in groups if g["name"] in OWN_GROUPS for rule in g["rules"] if "alert" in rule
    ]


def dashboard_panels(dashboard: dict | None = None) -> list[dict]:
    """The panels, those in collapsed rows included, without the rows."""
    panels = (dashboard or json.loads(DASHBOARD.read_text()))["panels"]
    return [inner for p in panels for inner in (p.get("panels") or [p]) if inner["type"] != "row"]


def dashboard_queries() -> list[str]:
    """Every PromQL the dashboard runs: its panels' targets and its variables' queries
    (`label_values(SELECTOR, label)` is Grafana's; its selector is PromQL)."""
    variables = json.loads(DASHBOARD.read_text())["templating"]["list"]
    queries = [target["expr"] for panel in dashboard_panels() for target in panel["targets"]]
    for variable in variables:
        if variable["type"] == "query":
            found = re.fullmatch(r"label_values\((.*), *\w+\)", variable["query"]["query"])
            assert found, variable
            queries.append(found.group(1))
    return queries


def test_promtool_checks_the_rules_and_each_fires_and_resolves_in_its_unit_tests():
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", *(path.name for path in RULE_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.decode().split().count("SUCCESS") == len(RULE_TESTS)
    # Each of the file's alerts is proved firing, and resolved, in the unit tests.
    cases = [case for test in rule_tests() for case in test["alert_rule_test"]]
    firing = {case["alertname"] for case in cases if case["exp_alerts"]}
    resolved = {
        case["alertname"]
        for case in cases
        if not case["exp_alerts"]
        and any(
            fired["alertname"] == case["alertname"]
            and minutes(fired["eval_time"]) < minutes(case["eval_time"])
            for fired in cases
            if fired["exp_alerts"]
        )
    }
    # (Other groups' tests may share the files.)
    own = {rule["alert"] for rule in alerting_rules()}
    assert firing & own == resolved & own == own


def test_each_partdash_rule_has_one_alert_with_its_defaults():
    """One alert per built-in rule (`partdash.alerts.rules.catalogue`, finding kinds
    included), and the figure rules' thresholds are partdash's defaults."""
    by_rule: dict[str, list[dict]] = {}
    for rule in alerting_rules():
        by_rule.setdefault(rule["labels"]["rule"], []).append(rule)
    rules = catalogue()
    assert sorted(by_rule) == sorted(rules)
    assert all(len(alerts) == 1 for alerts in by_rule.values()), by_rule
    for name, rule in rules.items():
        alert = by_rule[name][0]
        if rule.finding:
            assert f'kind="{name}"' in alert["expr"], name
        # unreachable's value is 1 when the poll failed: partdash_up == 0.
        if rule.defaults.threshold is not None and name != "unreachable":
            threshold = rule.defaults.threshold
            threshold = int(threshold) if threshold == int(threshold) else threshold
            if rule.unit == "days":
                assert f"{threshold} * 86400" in alert["expr"], name
            else:
                assert re.search(rf"(?<![\d.]){threshold}(?![\d.])", alert["expr"]), name
        if rule.defaults.for_polls == settings.PARTDASH_ALERT_FOR_POLLS == 2:
            assert (alert.get("for"), alert.get("keep_firing_for")) == ("1m", "1m"), name
        else:
            assert "for" not in alert and "keep_firing_for" not in alert, name
        severity = alert["labels"].get("severity")
        assert severity in (None, rule.defaults.severity or "warning"), name


@pytest.fixture
def scraped(db, viewer_api) -> set[str]:
    """The families a real scrape of /metrics declares (each is, sample or not), on a
    server with a table opted in, a finding and a firing alert."""
    db1 = polled_server("db1")
    finding = {"kind": "runway", "severity": "critical", "score": 90.0, "message": ""}
    range_table(db1, export_partitions=True, findings=[finding])
    builders.alert(db1, rule="runway", severity="critical")
    series = scrape(viewer_api)
    held = labels(server="db1", schema="shop", table="orders", kind="runway", severity="critical")
    assert series["partdash_table_finding"] == {held: 1.0}
    return set(series)


def test_every_series_the_rules_and_the_dashboard_name_is_exported(scraped):
    rules = yaml.safe_load(RULES.read_text())["groups"]
    own = [rule for group in rules if group["name"] in OWN_GROUPS for rule in group["rules"]]
    recorded = {rule["record"] for rule in own if "record" in rule}
    tested = rule_tests()
    named = {
        "rules": {n for rule in own for n in SERIES.findall(rule["expr"])},
        "rule tests": {
            n for test in tested for s in test["input_series"] for n in SERIES.findall(s["series"])
        },
        "dashboard": {n for query in dashboard_queries() for n in SERIES.findall(query)},
    }
    assert named["rules"] and named["rule tests"] and len(named["dashboard"]) > 15
    for where, names in named.items():
        assert names - recorded <= scraped, (where, sorted(names - recorded - scraped))


# -- the dashboard against Grafana's schema --------------------------------------------

# Panel types and the names their options and custom field config have in
# @grafana/schema (raw/composable/<type>/panelcfg).
PANEL_OPTIONS = {
    "stat": ("Options", None),
    "table": ("Options", "FieldConfig"),
    "timeseries": ("Options", "FieldConfig"),
}


def typescript_check(dashboard: dict) -> str:
    """A TypeScript module that type-checks the dashboard as Grafana's `Dashboard` (excess
    properties are errors in a literal), and each panel's options and custom field config
    as its panel type's."""
    lines = [f'import type {{ Dashboard }} from "{SCHEMA}/index";']
    for kind, (options, custom) in PANEL_OPTIONS.items():
        names = f"{options} as {kind}Options" + (f", {custom} as {kind}Custom" if custom else "")
        lines.append(
            f'import type {{ {names} }} from "{SCHEMA}/raw/composable/{kind}/panelcfg/x/types.gen";'
        )
    # A string enum's member takes its value as JSON spells it ("list", not
    # LegendDisplayMode.List); everything else is the type as published.
    lines.append(
        "type Json<T> = T extends string ? `${T}`"
        " : T extends object ? { [K in keyof T]: Json<T[K]> } : T;"
    )
    lines.append(f"export const dashboard = {json.dumps(dashboard)} satisfies Json<Dashboard>;")
    for panel in dashboard_panels(dashboard):
        kind = panel["type"]
        options = json.dumps(panel["options"])
        lines.append(
            f"export const options{panel['id']} = {options} satisfies Json<Partial<{kind}Options>>;"
        )
        custom = panel["fieldConfig"]["defaults"].get("custom")
        if custom is not None:
            custom, typed = json.dumps(custom), f"Json<Partial<{kind}Custom>>"
            lines.append(f"export const custom{panel['id']} = {custom} satisfies {typed};")
    return "\n".join(lines) + "\n"


def tsc(directory: Path, files: list[str]) -> subprocess.CompletedProcess:
    (directory / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "strict": True,
                    "noEmit": True,
                    "target": "es2022",
                    "module": "esnext",
                    "moduleResolution": "node10",
                    "types": [],
                    "skipLibCheck": True,
                },
                "files": files,
            }
        )
    )
    return subprocess.run(
        ["node", str(FRONTEND / "typescript" / "bin" / "tsc"), "-p", "."],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_dashboard_is_a_grafana_dashboard_by_its_schema(tmp_path):
    dashboard = json.loads(DASHBOARD.read_text())
    assert {p["type"] for p in dashboard_panels()} <= set(PANEL_OPTIONS)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert names == ["datasource", "server", "schema", "table"]
    (tmp_path / "dashboard.ts").write_text(typescript_check(dashboard))
    # The check can fail (one compiler run for both): a misspelt panel option and an
    # unknown dashboard field are errors.
    dashboard["panels"][1]["options"]["colourMode"] = "background"
    dashboard["refreshEvery"] = "1m"
    (tmp_path / "broken.ts").write_text(typescript_check(dashboard))
    checked = tsc(tmp_path, ["dashboard.ts", "broken.ts"])
    errors = [line for line in checked.stdout.splitlines() if "error TS" in line]
    assert checked.returncode != 0 and len(errors) == 2, checked.stdout + checked.stderr
    assert all(line.startswith("broken.ts(") for line in errors), errors
    assert "refreshEvery" in errors[0] + errors[1] and "colourMode" in errors[0] + errors[1]

"""The shipped Prometheus rules' `partdash-liveness` group (docker/prometheus/
partdash-rules.yml), run by Prometheus's own rule tester (`promtool test rules`) on
series as /metrics exports them: polls that stop, and workers that stop finishing tasks,
fire; a fleet that polls fires nothing."""

import shutil
import subprocess

from tests.conftest import ROOT

RULES = ROOT / "docker" / "prometheus" / "partdash-rules.yml"

# Series every minute for 30 minutes: db1 polled on time, db2's polls stop at minute 5;
# worker w1 stops finishing tasks at minute 10 (its timestamp stays), so no worker
# finishes any.
TESTS = f"""
rule_files: [{RULES}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'partdash_last_poll_success_timestamp_seconds{{server="db1"}}'
        values: '0+60x30'
      - series: 'partdash_last_poll_success_timestamp_seconds{{server="db2"}}'
        values: '0+60x5 300x25'
      - series: 'partdash_worker_last_task_timestamp_seconds{{worker="w1@h"}}'
        values: '0+60x10 600x20'
    alert_rule_test:
      - eval_time: 10m
        alertname: PartdashPollsStopped
        exp_alerts: []
      - eval_time: 25m
        alertname: PartdashPollsStopped
        exp_alerts:
          - exp_labels: {{severity: critical, server: db2}}
            exp_annotations:
              summary: "partdash has not polled db2 successfully for 20m 0s"
              description: "Check partdash's Celery worker and beat (make up's log, or the
                partdash-worker and partdash-beat units), and the server itself."
      - eval_time: 20m
        alertname: PartdashWorkersIdle
        exp_alerts: []
      - eval_time: 26m
        alertname: PartdashWorkersIdle
        exp_alerts:
          - exp_labels: {{severity: critical}}
            exp_annotations:
              summary: "No partdash worker has finished a task for 10 minutes"
              description: "Polls and alert emails wait in the queue: restart the worker
                (make up restarts a stalled one itself) and look at its log."
"""


def test_the_liveness_rules_fire_when_polls_or_workers_stop(tmp_path):
    tests = tmp_path / "liveness-tests.yml"
    tests.write_text(TESTS)
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    result = subprocess.run(
        [promtool, "test", "rules", str(tests)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""`make bench`'s /metrics figures, on a small store built here (the benchmark itself
runs on 500 tables x 128 partitions and takes long): the same code path, quickly."""

import sys
from pathlib import Path

import pytest

from tests.prometheus.exposition_rows import polled_server, range_table

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench_modules(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import api_bench
    import run

    yield api_bench, run
    for name in ("api_bench", "run", "fleet"):
        sys.modules.pop(name, None)


@pytest.mark.django_db
def test_the_benchmark_prints_the_exposition_s_size_series_and_render_time(bench_modules, capsys):
    api_bench, run = bench_modules
    server = polled_server("bench")
    for number in range(20):
        range_table(server, name=f"t{number}")
    figures = api_bench.exposition_figures(repeats=3)
    # One series per table per figure: 11 figures of a table, all known here; besides,
    # the server's (a dozen), its alerts' (64) and the fleet's (8).
    assert figures["series"] >= 20 * 11 and figures["series"] < 20 * 11 + 100
    assert figures["bytes"] > 0 and figures["queries"] <= 6
    assert figures["median_ms"] > 0 and figures["requests"] == 3
    run.report_exposition(figures)
    printed = capsys.readouterr().out
    assert f"{figures['bytes']:,} bytes" in printed and f"{figures['series']:,} series" in printed

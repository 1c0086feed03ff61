"""The table and server pages' data views in a real browser (Debian's Chromium through
Playwright), on what polls of a MariaDB store, built in the database (tests/builders.py):
the history's ranges and axis, the heatmaps' colour scale, subpartition labels, the
statistics' age, red only for hotspots, the view kept in the URL, and the figures
refreshed after a new poll."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from partdash.metrics.models import PartitionedTable
from tests import builders
from tests.conftest import log_in
from tests.dashboard.test_pages_browser import (
    SCHEMA,
    Fleet,
    api,
    assert_every_chart_draws,
    digits,
    held_tables,
    open_page,
    screenshot,
    shown_ids,
    spread,
    write_more,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RANGES = ["1h", "6h", "24h", "7d", "30d", "90d", "custom"]
METRICS = [
    "rows",
    "data_bytes",
    "index_bytes",
    "file_bytes",
    "rows_changed_per_s",
    "write_bytes_per_s",
    "read_bytes_per_s",
]
HOT = "#b3261e"  # COLOURS.hot in frontend/src/charts.js


@pytest.fixture
def fleet():
    """The pages' HASH and RANGE tables plus `yearly`, RANGE by year subpartitioned by HASH
    into 4 x 4 (300 rows, 100 in each of 2023-2025); polled three times with writes
    between, and one diagnostic COUNT(*) of the RANGE table's MAXVALUE partition before
    the last poll (reads performance_schema would count, were it ON)."""
    held = held_tables(SCHEMA)
    years = [("p2023", "2024", 100), ("p2024", "2025", 100), ("p2025", "2026", 100)]
    yearly = builders.subpartitioned(SCHEMA, "yearly", [*years, ("pmax", "MAXVALUE", 0)], 4)
    held["yearly"] = yearly
    server = builders.server("views-db", enabled=True)
    for round_ in range(3):
        if round_:
            write_more(held)
        if round_ == 2:
            held["orders"].part("p_max").read_bytes += builders.PAGE
        builders.poll(server, *held.values())
    tables = PartitionedTable.objects.filter(server=server, schema=SCHEMA)
    fleet = Fleet(server, SCHEMA, tables.get(name="hashy"), tables.get(name="orders"), held)
    fleet.yearly = tables.get(name="yearly")
    return fleet


def chart(page, canvas_id: str, expression: str):
    """`expression` over the Chart.js instance drawn on `#canvas_id` (as `c`)."""
    return page.evaluate(
        f"(id) => {{ const c = window.partdashChart(document.getElementById(id)); "
        f"return c ? {expression} : null; }}",
        canvas_id,
    )


HISTORY_CANVAS = "history-box-canvas"


def history_canvas(page) -> str:
    return page.locator("#history-box canvas").get_attribute("id")


def now_ms(page) -> float:
    return page.evaluate("Date.now()")


def iso(moment: datetime) -> str:
    """A time for a URL's query: UTC with `Z`, no `+` to escape, to the millisecond."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def iso_ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def open_table(page, live_server, table, query: str = ""):
    open_page(page, live_server, f"/tables/{table.pk}/{query}", "#table-page")


# --- history ------------------------------------------------------------------------------


def test_the_history_offers_ranges_up_to_the_retention_and_every_metric(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_table(page, live_server, fleet.hash_table)

    ranges = page.locator("#range option").evaluate_all("(os) => os.map((o) => o.value)")
    assert ranges == RANGES
    assert page.locator("#range").input_value() == "24h"
    assert page.locator("#custom-range").is_hidden()
    metrics = page.locator("#history-metric option").evaluate_all("(os) => os.map((o) => o.value)")
    assert metrics == METRICS
    for metric in ("index_bytes", "write_bytes_per_s", "read_bytes_per_s"):
        page.select_option("#history-metric", metric)
        page.wait_for_function(
            "(m) => window.partdashChart(document.querySelector('#history-box canvas'))"
            "?.data.datasets.length > 0 && location.search.includes(m)",
            arg=metric,
        )
    page.select_option("#range", "custom")
    assert page.locator("#range-from").is_visible() and page.locator("#range-until").is_visible()
    assert page.console_errors == []


def test_the_history_axis_starts_at_the_first_point_and_ends_at_now(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_table(page, live_server, fleet.hash_table)
    since = iso(datetime.now(UTC) - timedelta(hours=24))
    history = api(page, f"tables/{fleet.hash_table.pk}/history/?metric=rows&since={since}")
    first = iso_ms(history["points"][0][0])

    canvas = history_canvas(page)
    low, high = chart(page, canvas, "[c.scales.x.min, c.scales.x.max]")
    # Ten seconds of polls in a 24-hour range: the axis starts at them, not 24 hours back.
    assert low == pytest.approx(first, abs=1)
    assert abs(high - now_ms(page)) < 30_000
    assert high >= iso_ms(history["points"][-1][0])

    # A custom range ends where it says: here between the second poll and the third.
    second, third = (datetime.fromisoformat(p[0]) for p in history["points"][1:3])
    start = datetime.fromisoformat(history["points"][0][0]) - timedelta(minutes=1)
    end = second + (third - second) / 2
    query = f"?range=custom&from={iso(start)}&until={iso(end)}"
    open_table(page, live_server, fleet.hash_table, query)
    assert page.locator("#range").input_value() == "custom"
    assert page.locator("#range-from").input_value() != ""
    low, high = chart(page, history_canvas(page), "[c.scales.x.min, c.scales.x.max]")
    assert low == pytest.approx(first, abs=1)
    assert high == pytest.approx(end.timestamp() * 1000, abs=1)
    assert chart(page, history_canvas(page), "c.data.datasets[0].data.length") == 2
    assert page.console_errors == []


def test_the_history_api_takes_until_and_rejects_a_malformed_window(admin_client, fleet):
    url = f"/api/v1/tables/{fleet.hash_table.pk}/history/"
    now = datetime.now(UTC)
    whole = admin_client.get(url, {"metric": "rows", "since": (now - timedelta(hours=1))})
    assert whole.status_code == 200 and len(whole.json()["points"]) == 3
    stamps = [p[0] for p in whole.json()["points"]]

    until_second = admin_client.get(
        url, {"metric": "rows", "since": (now - timedelta(hours=1)), "until": stamps[1]}
    ).json()
    assert [p[0] for p in until_second["points"]] == stamps[:2]
    # A window starting between polls starts at its `since`, with the level carried in.
    first, second = (datetime.fromisoformat(stamp) for stamp in stamps[:2])
    middle = first + (second - first) / 2
    carried = admin_client.get(url, {"metric": "rows", "since": middle.isoformat()}).json()
    assert datetime.fromisoformat(carried["points"][0][0]) == middle
    assert carried["points"][0][1:] == whole.json()["points"][0][1:]
    assert carried["points"][1:] == whole.json()["points"][1:]

    for bad in (
        {"metric": "rows", "until": "tomorrow"},
        {"metric": "rows", "since": now.isoformat(), "until": (now - timedelta(1)).isoformat()},
        {"metric": "rows", "since": (now - timedelta(days=5000)).isoformat()},
    ):
        response = admin_client.get(url, bad)
        assert response.status_code == 400, bad
        assert response["Content-Type"].startswith("application/json")


# --- heatmaps, labels, estimates, colours ----------------------------------------------------


def test_each_heatmap_has_a_colour_scale_with_its_range_and_units(
    page, live_server, admin_user, measured
):
    log_in(page, live_server)
    open_table(page, live_server, measured)
    since = iso(datetime.now(UTC) - timedelta(hours=24))
    for name in ("write", "read"):
        metric = f"{name}_bytes_per_s"
        history = api(page, f"tables/{measured.pk}/history/?metric={metric}&since={since}")
        legend = page.locator(f"#{name}-legend .heat-legend")
        assert legend.count() == 1
        values = [v for point in history["points"] for v in point[1:] if v is not None]
        assert legend.locator(".heat-min").inner_text() == rate_text(min(values))
        assert legend.locator(".heat-max").inner_text() == rate_text(max(values))
        assert "bytes/s" in legend.locator(".heat-unit").inner_text()
        assert "gradient" in legend.locator(".heat-scale").evaluate(
            "(e) => getComputedStyle(e).backgroundImage"
        )
    # No modification counters were read: the rows-changed heatmap says so, not 0 rows/s.
    assert "No rows-changed figures" in page.locator("#rows-changed-box").inner_text()
    assert page.locator("#rows-changed-legend").inner_text() == ""
    assert page.console_errors == []


BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]


def rate_text(value: float) -> str:
    """A rate as the pages write it (`rate` in frontend/src/format.js)."""
    unit = 0
    while abs(value) >= 1024 and unit < len(BYTE_UNITS) - 1:
        value /= 1024
        unit += 1
    digits = 0 if unit == 0 or value >= 100 else 1
    return f"{value:.{digits}f} {BYTE_UNITS[unit]}/s"


@pytest.fixture
def measured():
    """What two polls of a MariaDB with performance_schema on store of a HASH table
    written and flushed between them (FLUSH TABLES FOR EXPORT, no ANALYZE), so the write
    heatmap has measured rates: 7 pages written to each partition's file, as measured
    on the private MariaDB."""
    t = builders.hash_table("measured", "t", [100] * 4)
    server = builders.server("measured-db", enabled=True)
    instrumented = {"performance_schema": "ON", "innodb_cmp_per_index_enabled": "ON"}
    builders.poll(server, t, **instrumented)
    for part in t.parts:
        part.write_bytes += 7 * builders.PAGE
    builders.poll(server, t, **instrumented)
    return PartitionedTable.objects.get(server=server, schema="measured", name="t")


def test_the_write_heatmaps_scale_runs_from_the_least_to_the_most_measured(
    page, live_server, admin_user, measured
):
    log_in(page, live_server)
    open_table(page, live_server, measured)
    history = api(page, f"tables/{measured.pk}/history/?metric=write_bytes_per_s")
    values = [v for point in history["points"] for v in point[1:] if v is not None]
    assert max(values) > 0

    legend = page.locator("#write-legend .heat-legend")
    assert legend.locator(".heat-min").inner_text() == rate_text(min(values))
    assert legend.locator(".heat-max").inner_text() == rate_text(max(values))
    # The busiest cell has the scale's darkest colour, the idlest its palest.
    colours = chart(
        page,
        "write-heatmap",
        "c.getDatasetMeta(0).data.map((e) => e.options.backgroundColor)",
    )
    shades = [float(colour.rsplit(",", 1)[1].rstrip(")")) for colour in colours]
    assert max(shades) == pytest.approx(1.0) and min(shades) >= 0.06
    # In blue: red means a flagged hotspot, and a busy cell is not a verdict.
    assert not any(colour.startswith("rgba(179") for colour in colours)
    assert page.console_errors == []


def test_subpartitions_are_labelled_partition_slash_subpartition_and_counted_as_such(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_table(page, live_server, fleet.yearly)

    assert page.locator("#partition-count").inner_text() == "4 partitions, 16 subpartitions"
    labels = chart(page, "rows-chart", "c.data.labels")
    assert "p2024 / p2024sp0" in labels and len(labels) == 16
    assert not any("#" in label for label in labels)
    # performance_schema is OFF: no disk figures ever, said in place of the heatmap.
    written = page.locator("#write-box").inner_text()
    assert "Never read on this server" in written and "performance_schema=ON" in written
    history = api(page, f"tables/{fleet.yearly.pk}/history/?metric=rows")
    assert "pmax / pmaxsp3" in history["partitions"]
    # Its rows never changed, so the API has one point; the line runs on to the last poll.
    assert len(history["points"]) == 1
    polls = api(page, f"tables/{fleet.yearly.pk}/history/?metric=write_bytes_per_s")["points"]
    end = chart(page, history_canvas(page), "c.data.datasets[0].data.at(-1).x")
    assert end == pytest.approx(iso_ms(polls[-1][0]), abs=1)
    assert_every_chart_draws(page)
    screenshot(page, "table-subpartitioned")

    open_page(page, live_server, f"/servers/{fleet.server.pk}/", "#server-page")
    row = page.locator(f"#tables tbody tr[data-id='{fleet.yearly.pk}']")
    assert row.locator("td[data-key='partitions']").inner_text() == "16 subpartitions"
    assert page.console_errors == []


STATISTICS_AGE = re.compile(r"statistics (under a minute|\d+ (min|h)) old")


def test_the_statistics_age_is_written_beside_the_estimates(page, live_server, admin_user, fleet):
    log_in(page, live_server)
    open_table(page, live_server, fleet.hash_table)
    table = api(page, f"tables/{fleet.hash_table.pk}/")
    assert digits(page.locator("#rows-fact .figure").inner_text()) == table["rows"]
    rows = page.locator("#rows-fact").inner_text()
    assert "(estimate, " in rows and STATISTICS_AGE.search(rows), rows

    open_page(page, live_server, f"/servers/{fleet.server.pk}/", "#server-page")
    cell = page.locator(f"#tables tbody tr[data-id='{fleet.hash_table.pk}'] td[data-key='rows']")
    assert re.search(r"est\., (under a minute|\d+ (min|h)) old", cell.inner_text()), cell
    assert page.console_errors == []


def test_bars_are_red_only_for_flagged_hotspots(page, live_server, admin_user, fleet):
    log_in(page, live_server)
    for table in (fleet.range_table, fleet.hash_table, fleet.yearly):
        open_table(page, live_server, table)
        partitions = api(page, f"tables/{table.pk}/partitions/")
        hot = [p["is_hotspot"] for p in partitions]
        for canvas in ("rows-chart", "bytes-chart"):
            colours = chart(page, canvas, "c.data.datasets[0].backgroundColor")
            assert [colour == HOT for colour in colours] == hot, (table.name, canvas)
    assert page.console_errors == []


def test_a_flagged_hotspot_is_the_one_red_bar(page, live_server, admin_user, fleet):
    health = fleet.hash_table.health
    fleet.hash_table.health = {**health, "hotspots": ["p1"]}
    fleet.hash_table.save(update_fields=["health"])
    log_in(page, live_server)
    open_table(page, live_server, fleet.hash_table)

    colours = chart(page, "rows-chart", "c.data.datasets[0].backgroundColor")
    assert [colour == HOT for colour in colours] == [False, True, False, False]
    assert page.console_errors == []


# --- the view in the URL ----------------------------------------------------------------------


def test_the_server_pages_filter_sort_and_page_come_back_after_a_reload(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_page(page, live_server, f"/servers/{fleet.server.pk}/?page_size=2", "#server-page")
    page.fill("#table-filter", f"{fleet.schema}.")
    page.locator("#tables thead th[data-key='rows']").click()
    page.locator("#pager button", has_text="Next").click()
    before = shown_ids(page)
    assert "sort=rows" in page.url and "dir=asc" in page.url and "page=2" in page.url

    page.reload()
    page.wait_for_selector("#server-page[data-ready]", state="attached")
    assert page.locator("#table-filter").input_value() == f"{fleet.schema}."
    assert page.locator("#tables thead th[data-key='rows']").get_attribute("aria-sort") == (
        "ascending"
    )
    assert shown_ids(page) == before
    assert "page 2 of" in page.locator("#pager").inner_text()

    query = f"?q={fleet.schema}&method=HASH&findings=1"
    open_page(page, live_server, f"/servers/{fleet.server.pk}/{query}", "#server-page")
    assert page.locator("#method-filter").input_value() == "HASH"
    assert page.locator("#findings-only").is_checked()
    assert shown_ids(page) == [fleet.hash_table.pk]
    assert page.console_errors == []


def test_the_table_pages_range_metric_and_scale_come_back_after_a_reload(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_table(page, live_server, fleet.hash_table)
    page.select_option("#range", "7d")
    page.select_option("#history-metric", "index_bytes")
    page.check("#log-scale")
    assert all(part in page.url for part in ("range=7d", "metric=index_bytes", "log=1"))

    page.reload()
    page.wait_for_selector("#table-page[data-ready]", state="attached")
    assert page.locator("#range").input_value() == "7d"
    assert page.locator("#history-metric").input_value() == "index_bytes"
    assert page.locator("#log-scale").is_checked()
    assert chart(page, "rows-chart", "c.scales.y.type") == "logarithmic"
    assert chart(page, history_canvas(page), "c.data.datasets.length") == 4
    assert page.console_errors == []


# --- auto-refresh -----------------------------------------------------------------------------


def test_the_pages_reload_their_figures_after_a_new_poll_without_reloading(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    page.clock.install()
    open_table(page, live_server, fleet.hash_table)
    page.evaluate("window.notReloaded = true")
    points = chart(page, history_canvas(page), "c.data.datasets[0].data.length")
    assert page.locator("#live").inner_text().startswith("●")
    assert "updated" in page.locator("#live").inner_text()

    page.clock.fast_forward(16_000)  # a check with no new poll changes nothing
    page.wait_for_timeout(500)
    assert page.locator("#live").get_attribute("data-refreshes") is None

    write_more(fleet.held)
    builders.poll(fleet.server, *fleet.held.values())
    page.clock.fast_forward(16_000)
    page.wait_for_selector("#live[data-refreshes='1']", timeout=10_000)
    assert page.evaluate("window.notReloaded") is True
    assert chart(page, history_canvas(page), "c.data.datasets[0].data.length") == points + 1
    assert re.search(r"updated \d+ s ago", page.locator("#live").inner_text())

    query = f"?q={fleet.schema}.small_1"
    open_page(page, live_server, f"/servers/{fleet.server.pk}/{query}", "#server-page")
    page.evaluate("window.notReloaded = true")
    rows = page.locator("#tables tbody tr td[data-key='rows'] .figure")
    assert rows.inner_text() == "5"
    for part, now_held in zip(fleet.held["small_1"].parts, spread(40, 2), strict=True):
        part.rows = now_held  # 35 rows more
    builders.poll(fleet.server, *fleet.held.values())
    page.clock.fast_forward(16_000)
    page.wait_for_selector("#live[data-refreshes='1']", timeout=10_000)
    assert page.evaluate("window.notReloaded") is True
    assert rows.inner_text() == "40"  # the new figure, the filter kept
    assert page.locator("#table-filter").input_value() == f"{fleet.schema}.small_1"
    assert page.console_errors == []


def test_the_views_controls_and_legends_fit_a_phone(page, live_server, admin_user, fleet):
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server)
    open_table(page, live_server, fleet.yearly, "?range=custom")
    assert page.locator("#range-from").is_visible()
    assert page.locator("#write-box .empty").is_visible()  # no disk figures, and why
    assert page.locator("#live").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "table-views-phone")
    open_page(page, live_server, f"/servers/{fleet.server.pk}/?sort=rows", "#server-page")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.console_errors == []


@pytest.mark.parametrize(
    ("read_tablestats", "performance_schema", "says"),
    [
        (True, "ON", "Write hotspots are judged on rows changed (the application's"),
        (False, "ON", "Rows changed are not used here: rows changed are not read (PARTDASH"),
        (False, "OFF", "row growth stands in"),
    ],
)
def test_the_page_says_what_write_hotspots_were_judged_on(
    page, live_server, admin_user, settings, read_tablestats, performance_schema, says
):
    """Rows changed where the server gives them; where not, which signal stands in, why,
    and how late (the table's stored `activity`, as its analysis judged)."""
    settings.PARTDASH_READ_TABLESTATS = "on" if read_tablestats else "off"
    server = builders.server("signals-db", enabled=True)
    held = builders.hash_table("shop", "sessions", [1000] * 4)
    for round_ in range(2):
        held.part("p1").write_bytes += 64 * builders.PAGE * round_
        builders.poll(server, held, performance_schema=performance_schema)
    table = PartitionedTable.objects.get(server=server, name="sessions")
    log_in(page, live_server)
    open_table(page, live_server, table)
    text = page.locator("#activity-source").inner_text()
    assert says in text, text
    source = {True: "rows_changed", False: "disk" if performance_schema == "ON" else "growth"}
    assert api(page, f"tables/{table.pk}/")["activity_source"] == source[read_tablestats]
    if not read_tablestats:
        assert "min late" in text or performance_schema == "OFF", text
    assert page.console_errors == []

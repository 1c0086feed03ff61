"""The table page's heatmaps and size charts on a year of daily partitions, in a real
browser (Debian's Chromium through Playwright): the one hot partition is seen and named
at 1440 and at 390 px, in light and dark mode; the rest is one folded row; a toggle
gives every partition in table order; a partition not read before says "no data yet".

Stored polls built in the database (tests/builders.py): 365 daily RANGE partitions
polled every minute for 12 minutes, InnoDB's modification counter and the file's
disk bytes rising in today's partition only, and tomorrow's partition first read
halfway (added by a maintenance job then)."""

from datetime import date, timedelta

import pytest

from partdash.metrics.models import PartitionSample
from tests import builders
from tests.conftest import ARTIFACTS, log_in
from tests.dashboard.test_pages_browser import api, open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DAYS = 365
PAST_DAYS = 300  # partitions up to today; the others are the days to come
POLLS = 12
ADDED_AT_POLL = 6  # tomorrow's partition is first read then
HOT_ROWS_PER_POLL = 600  # 10 rows/s changed in today's partition
ROWS_PER_DAY = 2000
TOP_ROWS, TOP_BARS = 12, 20  # frontend/src/fold.js
SERIES_CAP = 24  # partitions one history answer names (partdash/metrics/folded_history.py)
OTHERS = f"{DAYS - SERIES_CAP} other partitions (mean)"
MIN_ROW_PX = 18  # readable: a name's height, not a 4 px line
LOOKS = [(1440, 900, "light"), (1440, 900, "dark"), (390, 844, "light"), (390, 844, "dark")]


def day_name(day: date) -> str:
    return f"p{day:%Y%m%d}"


@pytest.fixture
def year():
    """The table, its partitions' names in order, today's (hot) and tomorrow's (late)."""
    today = date.today()
    days = [today + timedelta(days=n) for n in range(-PAST_DAYS + 1, DAYS - PAST_DAYS + 1)]
    server = builders.server("year-db", enabled=True)
    table = builders.table(
        server, schema="shop", name="events", partition_count=DAYS, expression="to_days(`d`)"
    )
    partitions = [
        builders.partition(
            table,
            day_name(day),
            n + 1,
            description=builders.day_bound(day + timedelta(days=1)),
            rows=ROWS_PER_DAY if day < today else (ROWS_PER_DAY // 2 if day == today else 0),
        )
        for n, day in enumerate(days)
    ]
    hot, late = partitions[PAST_DAYS - 1], partitions[PAST_DAYS]
    polls = [builders.snapshot(server, ago=timedelta(minutes=POLLS - n)) for n in range(POLLS)]
    quiet = {"modified_counter": 0, "write_bytes": 0, "read_bytes": 0}
    samples = [builders.sample(p, polls[0], **quiet) for p in partitions if p is not late]
    samples.append(builders.sample(late, polls[ADDED_AT_POLL], **quiet))
    for n, poll in enumerate(polls[1:], start=1):
        samples.append(
            builders.sample(
                hot,
                poll,
                modified_counter=n * HOT_ROWS_PER_POLL,
                write_bytes=n * 40 * builders.PAGE,
                read_bytes=n * 4 * builders.PAGE,
            )
        )
    PartitionSample.objects.bulk_create(samples)
    return table, [p.name for p in partitions], hot.name, late.name


def chart(page, canvas_id: str, expression: str):
    return page.evaluate(
        "(id) => { const c = window.partdashChart(document.getElementById(id)); "
        f"return {expression}; }}",
        canvas_id,
    )


def shown_labels(page, canvas_id: str) -> list[str]:
    """The y axis' labels as drawn (after any skipping for want of room)."""
    return chart(page, canvas_id, "c.scales.y.ticks.map((t) => t.label)")


def row_height(page, canvas_id: str) -> float:
    area = "c.chartArea.bottom - c.chartArea.top"
    return chart(page, canvas_id, f"({area}) / c.scales.y.ticks.length")


def tooltip(page, canvas_id: str, row: int, column: int) -> str:
    """The tooltip of the cell at (`row`, `column`; -1 the last), as the chart writes it
    on hover."""
    return page.evaluate(
        """([id, row, column]) => {
          const c = window.partdashChart(document.getElementById(id));
          const cells = c.data.datasets[0].data;
          const x = String(column < 0 ? c.heatView.columns.length + column : column);
          const index = cells.findIndex((d) => d.y === String(row) && d.x === x);
          const cell = c.getDatasetMeta(0).data[index];
          c.tooltip.setActiveElements([{ datasetIndex: 0, index }], { x: cell.x, y: cell.y });
          return c.tooltip.body.flatMap((b) => b.lines).join(" ");
        }""",
        [canvas_id, row, column],
    )


LUMINANCE = """(colour) => {
  const probe = document.createElement("span");
  probe.style.color = colour;
  document.body.append(probe);
  const [r, g, b] = getComputedStyle(probe).color.match(/[\\d.]+/g).map(Number);
  probe.remove();
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}"""


def test_the_hot_partition_of_a_year_is_named_at_1440_and_390_px_in_light_and_dark(
    page, live_server, admin_user, year
):
    table, names, hot, _late = year
    log_in(page, live_server)
    others = f"{DAYS - TOP_ROWS} other partitions"
    for width, height, scheme in LOOKS:
        page.set_viewport_size({"width": width, "height": height})
        page.emulate_media(color_scheme=scheme)
        open_page(page, live_server, f"/tables/{table.pk}/", "#table-page")

        for canvas in ("rows-changed-heatmap", "write-heatmap", "read-heatmap"):
            labels = shown_labels(page, canvas)
            assert labels[0] == hot, (canvas, width, scheme)  # busiest first, by name
            assert labels[-1] == others and len(labels) == TOP_ROWS + 1
            assert row_height(page, canvas) >= MIN_ROW_PX
            # The busiest row is drawn at the top, its name beside it; the folded at the foot.
            label_y, cell_y = chart(
                page,
                canvas,
                "[c.scales.y.ticks.map((_, i) => c.scales.y.getPixelForTick(i)),"
                " c.getDatasetMeta(0).data.map((e) => e.y + e.height / 2)]",
            )
            columns = len(cell_y) // len(labels)
            assert label_y == sorted(label_y)
            assert cell_y[0] == pytest.approx(label_y[0], abs=2)
            assert cell_y[-1] == pytest.approx(label_y[-1], abs=2) and columns > 0
        legend = page.locator("#rows-changed-legend .heat-legend")
        assert legend.locator(".heat-busiest").inner_text() == f"busiest: {hot}"
        assert legend.locator(".heat-max").inner_text() == "10 rows/s"
        assert "rows/s" in legend.locator(".heat-unit").inner_text()
        assert others in legend.locator(".heat-folded").inner_text()
        assert "B/s" in page.locator("#write-legend .heat-max").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        figure = page.locator(".heat-figure").first
        box = figure.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width

        # The scale reads on the page's own background: in light mode the busiest cell is
        # darker than the surface, in dark mode brighter; the gaps between cells are the
        # surface itself, no grid lines.
        surface = page.evaluate(
            "getComputedStyle(document.documentElement).getPropertyValue('--surface').trim()"
        )
        assert chart(page, "rows-changed-heatmap", "c.data.datasets[0].borderColor") == surface
        hottest = chart(
            page,
            "rows-changed-heatmap",
            "c.getDatasetMeta(0).data.find((e) => c.data.datasets[0].data[e.$context.index].v > 0)"
            ".options.backgroundColor",
        )
        cell, ground = page.evaluate(LUMINANCE, hottest), page.evaluate(LUMINANCE, surface)
        assert (cell < ground - 60) if scheme == "light" else (cell > ground + 60), scheme
        # Sizes: the 20 largest partitions and one grey bar for the rest.
        bars = chart(page, "rows-chart", "c.data.labels")
        assert len(bars) == TOP_BARS + 1
        assert bars[-1] == f"{DAYS - TOP_BARS} others (mean)"
        assert f"other {DAYS - TOP_BARS} one grey bar" in page.locator("#sizes-folded").inner_text()

        ARTIFACTS.mkdir(exist_ok=True)
        name = f"heatmaps-{width}-{scheme}"
        page.locator("#rows-changed-box").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / f"{name}.png")
        page.locator("#rows-chart").locator("xpath=../../..").screenshot(
            path=ARTIFACTS / f"{name}-sizes.png"
        )
        # The folded row: its partitions idle, each cell says so (and names the busiest of
        # them where one moved).
        folded = tooltip(page, "rows-changed-heatmap", TOP_ROWS, -1)
        assert folded.startswith(f"{others} at ") and folded.endswith(": 0 rows/s")
    assert page.console_errors == []


def test_the_toggle_pages_through_every_partition_in_table_order_and_no_data_yet_before_a_reading(
    page, live_server, admin_user, year
):
    """One answer names at most SERIES_CAP partitions: table order shows the year a page
    of them at a time, asked for by name (`partitions=`), the other 341 one row at their
    mean, said so under each heatmap; the pager's choices reach every partition."""
    table, names, hot, late = year
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{table.pk}/", "#table-page")
    assert shown_labels(page, "rows-changed-heatmap")[0] == hot
    assert page.locator("#heat-pages").is_hidden()

    with page.expect_response(lambda r: "partitions=" in r.url and "history" in r.url):
        page.check("#heat-ordinal")
    wait_for_rows(page, names[:SERIES_CAP])
    assert "order=ordinal" in page.url
    assert page.locator("#heat-pages").is_visible()
    choices = page.locator("#heat-page option").all_inner_texts()
    assert len(choices) == -(-DAYS // SERIES_CAP)  # 16 pages, the last of 5 partitions
    assert choices[-1] == f"361–365: {names[360]} … {names[-1]}"
    for canvas in ("rows-changed-heatmap", "write-heatmap", "read-heatmap"):
        assert shown_labels(page, canvas) == [*names[:SERIES_CAP], OTHERS]
        assert row_height(page, canvas) >= MIN_ROW_PX
        legend = page.locator(f"#{canvas.removesuffix('-heatmap')}-legend .heat-other")
        assert "341 other partitions: each cell their mean per partition" in legend.inner_text()
    # Today's partition is among the others here: the last row is its rate over 341.
    assert tooltip(page, "rows-changed-heatmap", SERIES_CAP, -1).endswith(
        f": {HOT_ROWS_PER_POLL / 60 / (DAYS - SERIES_CAP):.2f} rows/s"
    )

    late_page = names.index(late) // SERIES_CAP  # 0-based: the 13th page, 289-312
    page.select_option("#heat-page", str(late_page + 1))
    shown = names[late_page * SERIES_CAP : (late_page + 1) * SERIES_CAP]
    wait_for_rows(page, shown)
    assert f"page={late_page + 1}" in page.url
    assert hot in shown and tooltip(page, "rows-changed-heatmap", SERIES_CAP, -1).endswith(
        ": 0 rows/s"
    )  # the hot partition has its own row now, the others were quiet
    page.locator(".heat-figure").first.screenshot(path=ARTIFACTS / "heatmaps-ordinal.png")

    row = shown.index(late)
    history = api(page, f"tables/{table.pk}/history/?metric=rows_changed_per_s&partitions={late}")
    first_rates = [point[1] for point in history["points"]]
    assert first_rates[:ADDED_AT_POLL] == [None] * ADDED_AT_POLL  # its first reading included
    assert first_rates[ADDED_AT_POLL] == 0  # read twice, unchanged
    assert "no data yet" in tooltip(page, "rows-changed-heatmap", row, 0)
    assert "no data yet" not in tooltip(page, "rows-changed-heatmap", row, -1)
    assert tooltip(page, "rows-changed-heatmap", row, -1).endswith(": 0 rows/s")
    pattern = chart(
        page,
        "rows-changed-heatmap",
        f"c.getDatasetMeta(0).data[{row} * c.heatView.columns.length].options.backgroundColor"
        ".constructor.name",
    )
    assert pattern == "CanvasPattern"  # hatched, unlike the colour of any rate
    assert "no data yet" in page.locator("#rows-changed-legend .heat-no-data").inner_text()

    page.click("#heat-next")
    wait_for_rows(page, names[(late_page + 1) * SERIES_CAP : (late_page + 2) * SERIES_CAP])
    page.select_option("#heat-page", str(len(choices)))
    wait_for_rows(page, names[-(DAYS % SERIES_CAP) :])
    assert page.locator("#heat-next").is_disabled()

    page.reload()  # the page in view is in the URL
    page.wait_for_selector("#table-page[data-ready='true']")
    wait_for_rows(page, names[-(DAYS % SERIES_CAP) :])

    page.uncheck("#heat-ordinal")
    page.wait_for_function(
        "(hot) => window.partdashChart(document.getElementById('rows-changed-heatmap'))"
        "?.heatView.rows[0].label === hot",
        arg=hot,
    )
    assert "order=ordinal" not in page.url and "page=" not in page.url
    assert page.locator("#heat-pages").is_hidden()
    assert page.console_errors == []


def wait_for_rows(page, names: list[str]) -> None:
    """Until the rows-changed heatmap shows `names` in order, then the others' row (a page
    is fetched, then drawn)."""
    page.wait_for_function(
        """(names) => {
          const c = window.partdashChart(document.getElementById("rows-changed-heatmap"));
          const rows = c?.heatView.rows.map((r) => r.label) ?? [];
          return JSON.stringify(rows.slice(0, -1)) === JSON.stringify(names);
        }""",
        arg=names,
    )


def test_a_day_of_polls_is_drawn_from_five_minute_buckets_and_says_so(
    page, live_server, admin_user
):
    """26 hours of polls a minute apart (1,560, over the 500 read one by one): the last
    24 hours come in 5-minute buckets (issue 24), and the legend says what a cell is."""
    from django.utils import timezone

    from partdash.metrics.models import ServerSnapshot

    server = builders.server("busy-db", enabled=True)
    table = builders.table(server, schema="shop", name="orders", partition_count=2, method="HASH")
    hot, cold = (builders.partition(table, f"p{n}", n) for n in range(2))
    now, count = timezone.now(), 26 * 60
    ServerSnapshot.objects.bulk_create(
        builders.snapshot_row(server, taken_at=now - timedelta(minutes=count - 1 - n))
        for n in range(count)
    )
    polls = ServerSnapshot.objects.filter(server=server).order_by("taken_at")
    PartitionSample.objects.bulk_create(
        [builders.sample(cold, polls[0], modified_counter=0)]
        + [builders.sample(hot, poll, modified_counter=60 * n) for n, poll in enumerate(polls)],
        batch_size=2000,
    )
    log_in(page, live_server)
    page.set_viewport_size({"width": 1440, "height": 900})
    open_page(page, live_server, f"/tables/{table.pk}/?range=24h", "#table-page")
    assert api(page, f"tables/{table.pk}/history/?metric=rows_changed_per_s")["resolution"] == (
        "5min"
    )
    unit = page.locator("#rows-changed-legend .heat-unit").inner_text()
    assert unit.startswith("rows/s, per partition, the mean over each 5 minutes"), unit
    assert page.locator("#rows-changed-legend .heat-max").inner_text() == "1 rows/s"
    assert shown_labels(page, "rows-changed-heatmap")[0] == "p0"

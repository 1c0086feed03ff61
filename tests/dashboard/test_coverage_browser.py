"""The table page of a hot-UPDATE table on a real MariaDB whose table_definition_cache
holds fewer tables than its partitions (performance_schema OFF, as shipped) says its
write hotspots are not measured there, why, and the SET GLOBAL that enables them, never
that the table looks healthy; the heatmap says rows changed are never read there. The
statement run as given and a poll later, the notes are gone."""

import pytest

from tests.api.test_coverage_ground_truth import (
    blind_server,
    cache_statement,
    hot_polls,
    small_cache,  # noqa: F401 (a fixture)
)
from tests.conftest import log_in
from tests.dashboard.test_pages_browser import api, open_page, screenshot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]


def test_the_table_page_says_write_hotspots_are_not_measured_and_how_to_measure_them(
    page,
    live_server,
    admin_user,
    small_cache,  # noqa: F811 (the fixture imported above)
    new_schema,
    make_server,
):
    schema = new_schema(small_cache)
    server, table = blind_server(small_cache, schema, make_server, "small-cache-page")
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{table.pk}/", "#table-page")

    findings = page.locator("#table-findings").inner_text()
    assert "looks healthy" not in findings
    assert "write hotspots: not measured here" in findings
    writes = page.locator('#table-findings .coverage-blind[data-signal="write_hotspots"]')
    enable = cache_statement(small_cache, {"enable": writes.locator("code").inner_text()})
    assert "table_definition_cache holds 400" in writes.inner_text()
    heatmap = page.locator("#rows-changed-box").inner_text()
    assert "Never read on this server" in heatmap and enable in heatmap
    assert "No rows-changed figures in this window yet" not in heatmap
    screenshot(page, "table-coverage")

    open_page(page, live_server, f"/servers/{server.pk}/", "#server-page")
    notes = page.locator('#notices .coverage-blind[data-signal="write_hotspots"]')
    assert enable in notes.inner_text()

    small_cache.execute(enable)
    hot_polls(small_cache, schema, server)
    open_page(page, live_server, f"/tables/{table.pk}/", "#table-page")
    assert page.locator('.coverage-blind[data-signal="write_hotspots"]').count() == 0
    assert page.locator('.coverage-blind[data-signal="rows_changed"]').count() == 0
    assert "Never read" not in page.locator("#rows-changed-box").inner_text()
    assert api(page, f"tables/{table.pk}/")["activity_source"] == "rows_changed"
    assert page.console_errors == []

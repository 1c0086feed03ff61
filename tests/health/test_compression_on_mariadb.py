"""Compression, honestly, on a real MariaDB: random and text rows in KEY_BLOCK_SIZE=4
tables share the nominal page ratio (16 KiB / 4 KiB = 4), which the API and the table
page label as nominal, while what partdash measures tells them apart: the files on disk,
the failure rate and the page splits its failures imply (INNODB_CMP_PER_INDEX deltas)."""

import os

import pytest

from partdash.polling.service import poll_server
from tests.api.test_health_ground_truth import (
    COMPRESSED,
    INCOMPRESSIBLE,
    api_partitions,
    api_tables,
    cmp_per_partition,
    flush_to_disk,
    partition_names,
    polled,
)
from tests.conftest import ARTIFACTS, PAGE_READY_MS, log_in
from tests.sql import run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]

NOMINAL = "nominal page ratio 16 KiB / KEY_BLOCK_SIZE 4 KiB, not the achieved compression"
ROW_BYTES = 3000
ROWS = 1500
TEXT = f"REPEAT('a', {ROW_BYTES})"


def file_sizes(instance, schema: str, table: str) -> dict[str, int]:
    """Each partition's .ibd size, read from the file system."""
    return {
        name: os.stat(instance.datadir / schema / f"{table}#P#{name}.ibd").st_size
        for name in partition_names(instance, schema, table)
    }


def splits_between(before: dict, after: dict, partition: str | None = None) -> int:
    """Failed compressions (ops - ops_ok) between two INNODB_CMP_PER_INDEX readings."""
    names = [partition] if partition else list(after)
    return sum(
        (after[p][0] - before.get(p, (0, 0))[0]) - (after[p][1] - before.get(p, (0, 0))[1])
        for p in names
    )


def test_random_and_text_rows_share_the_nominal_ratio_but_not_the_measured_figures(
    mariadb_ps, make_server, new_schema, admin_client, admin_user, live_server, page
):
    schema = new_schema(mariadb_ps)
    contents = {"text": TEXT, "random": INCOMPRESSIBLE}
    run(
        mariadb_ps,
        schema,
        *(COMPRESSED.format(name=name) for name in contents),
        *(f"INSERT INTO {t} SELECT seq, {v} FROM seq_1_to_500" for t, v in contents.items()),
    )
    before = {name: cmp_per_partition(mariadb_ps, schema, name) for name in contents}
    server = polled(make_server, mariadb_ps)
    run(
        mariadb_ps,
        schema,
        *(
            f"INSERT INTO {t} SELECT seq + 500, {v} FROM seq_1_to_{ROWS - 500}"
            for t, v in contents.items()
        ),
        "ANALYZE TABLE text, random",
    )
    flush_to_disk(mariadb_ps, schema, *contents)
    assert poll_server(server).ok
    after = {name: cmp_per_partition(mariadb_ps, schema, name) for name in contents}
    tables = api_tables(admin_client, server)

    measured = {}
    for name in contents:
        compression = tables[(schema, name)]["compression"]
        assert compression["ratio"] == 4.0 and compression["nominal"] is True, name
        assert compression["ratio_label"] == NOMINAL, name
        assert compression["splits"] == splits_between(before[name], after[name]), name
        files = file_sizes(mariadb_ps, schema, name)
        assert compression["file_bytes"] == sum(files.values()), name
        assert compression["saved_ratio"] is None  # the uncompressed size is known nowhere
        for partition, figures in api_partitions(admin_client, tables[(schema, name)]).items():
            own = figures["compression"]
            assert own["nominal"] is True and own["ratio_label"] == NOMINAL
            assert own["splits"] == splits_between(before[name], after[name], partition)
            assert own["file_bytes"] == files[partition]
        measured[name] = compression

    random, text = measured["random"], measured["text"]
    # What was built (measured: 10 MiB against 6 MiB): random rows do not compress, so
    # their files outgrow twice the raw data, as the issue saw; text rows compress.
    assert random["file_bytes"] > 2 * ROWS * ROW_BYTES
    assert random["file_bytes"] > 1.5 * text["file_bytes"]
    assert random["splits"] > 10 * max(text["splits"], 1)
    assert random["failure_rate"] > text["failure_rate"]

    log_in(page, live_server)
    shown = {}
    for name in contents:
        page.goto(f"{live_server.url}/tables/{tables[(schema, name)]['id']}/")
        page.wait_for_selector("#compression-nominal", timeout=PAGE_READY_MS)
        assert NOMINAL in page.inner_text("#compression-nominal")
        # 4 is never called achieved: the achieved figure is the measured one, or why not.
        achieved = measured[name]["achieved_ratio"]
        shown_achieved = page.inner_text("#compression-achieved")
        if achieved is None:
            assert shown_achieved == measured[name]["achieved_label"]
        else:
            assert float(shown_achieved) == pytest.approx(achieved, abs=0.01) != 4.0
        shown[name] = page.inner_text("#compression-file-bytes")
        assert page.inner_text("#compression-splits").startswith(f"{measured[name]['splits']:,}")
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#compression").screenshot(path=ARTIFACTS / f"compression-{name}.png")
    assert shown["random"] != shown["text"]
    assert page.console_errors == []


def test_page_compression_shows_the_bytes_saved_and_the_server_page_the_splits(
    mariadb_ps, make_server, new_schema, admin_client, admin_user, live_server, page
):
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE paged (id INT PRIMARY KEY, v VARCHAR(200)) PAGE_COMPRESSED=1 "
        "PARTITION BY HASH(id) PARTITIONS 2",
        "INSERT INTO paged SELECT seq, REPEAT('a', 200) FROM seq_1_to_20000",
        COMPRESSED.format(name="random"),
        f"INSERT INTO random SELECT seq, {INCOMPRESSIBLE} FROM seq_1_to_200",
        "ANALYZE TABLE paged, random",
    )
    flush_to_disk(mariadb_ps, schema, "paged")
    server = polled(make_server, mariadb_ps)
    paged = api_tables(admin_client, server)[(schema, "paged")]["compression"]
    stats = [
        os.stat(mariadb_ps.datadir / schema / f"paged#P#{name}.ibd")
        for name in partition_names(mariadb_ps, schema, "paged")
    ]
    file_bytes = sum(s.st_size for s in stats)
    allocated = sum(s.st_blocks * 512 for s in stats)
    assert allocated < file_bytes  # holes were punched
    assert (paged["file_bytes"], paged["allocated_bytes"]) == (file_bytes, allocated)
    assert paged["saved_ratio"] == pytest.approx(1 - allocated / file_bytes, rel=1e-5)
    assert paged["nominal"] is False and paged["splits"] is None

    log_in(page, live_server)
    tables = api_tables(admin_client, server)
    page.goto(f"{live_server.url}/tables/{tables[(schema, 'paged')]['id']}/")
    page.wait_for_selector("#compression-saved", timeout=PAGE_READY_MS)
    saved = float(page.inner_text("#compression-saved").rstrip(" %").replace(",", ""))
    assert saved == pytest.approx(100 * paged["saved_ratio"], abs=0.01)
    assert "nominal" not in page.inner_text("#compression")

    cmp_rows = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()["innodb_cmp"]
    failing = next(r for r in cmp_rows if r["compress_ops"] > r["compress_ops_ok"])
    page.goto(f"{live_server.url}/servers/{server.pk}/")
    page.wait_for_selector("#innodb-cmp", timeout=PAGE_READY_MS)
    headers = page.locator("#innodb-cmp th").all_inner_texts()
    row = page.locator("#innodb-cmp tbody tr").nth(cmp_rows.index(failing))
    cells = dict(zip(headers, row.locator("td").all_inner_texts(), strict=True))
    splits = failing["compress_ops"] - failing["compress_ops_ok"]
    assert cells["Page splits"].replace(",", "") == str(splits)
    assert page.console_errors == []

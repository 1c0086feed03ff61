"""Opting a table in to per-partition series: a PATCH by an operator, nobody else."""

import pytest
from rest_framework.test import APIClient

from tests.conftest import token_client, user_in
from tests.prometheus.exposition_rows import polled_server, range_table

pytestmark = pytest.mark.django_db


@pytest.fixture
def orders():
    return range_table(polled_server("db1"))


def test_an_operator_opts_a_table_in_and_its_partitions_appear(orders, staff_api):
    response = staff_api.patch(
        f"/api/v1/tables/{orders.pk}/", {"export_partitions": True, "name": "renamed"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["export_partitions"] is True
    orders.refresh_from_db()
    assert orders.export_partitions and orders.name == "orders"  # nothing else changes
    text = staff_api.get("/metrics").content.decode()
    assert 'partdash_partition_rows{partition="p0",schema="shop"' in text
    staff_api.patch(f"/api/v1/tables/{orders.pk}/", {"export_partitions": False})
    assert "partdash_partition_rows{" not in staff_api.get("/metrics").content.decode()


def test_an_operator_opts_a_table_in(orders, operator):
    client = token_client(operator)
    response = client.patch(f"/api/v1/tables/{orders.pk}/", {"export_partitions": True})
    assert response.status_code == 200, response.content
    orders.refresh_from_db()
    assert orders.export_partitions


def test_a_viewer_in_the_viewers_group_reads_metrics_but_cannot_opt_a_table_in(
    orders, django_user_model
):
    client = token_client(user_in(django_user_model, "reader", "viewers"))
    assert client.get("/metrics").status_code == 200
    response = client.patch(f"/api/v1/tables/{orders.pk}/", {"export_partitions": True})
    assert response.status_code == 403


def test_a_viewer_cannot_opt_a_table_in(orders, viewer_api):
    response = viewer_api.patch(f"/api/v1/tables/{orders.pk}/", {"export_partitions": True})
    assert response.status_code == 403
    assert viewer_api.get(f"/api/v1/tables/{orders.pk}/").json()["export_partitions"] is False


def test_nobody_anonymous_opts_a_table_in(orders):
    response = APIClient().patch(f"/api/v1/tables/{orders.pk}/", {"export_partitions": True})
    assert response.status_code in (401, 403)
    orders.refresh_from_db()
    assert not orders.export_partitions


def test_a_value_that_is_not_a_boolean_is_a_400(orders, staff_api):
    response = staff_api.patch(
        f"/api/v1/tables/{orders.pk}/", {"export_partitions": [1]}, format="json"
    )
    assert response.status_code == 400
    assert "export_partitions" in response.json()


def test_a_table_is_not_replaced_whole(orders, staff_api):
    response = staff_api.put(f"/api/v1/tables/{orders.pk}/", {"export_partitions": True})
    assert response.status_code == 405

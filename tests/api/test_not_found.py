"""A missing object's 404 says "Not found.", in the reader's words: never the model class
Django's own message names ("No PartitionedTable matches the given query.")."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/servers/999999/",
        "/api/v1/servers/999999/tables/",
        "/api/v1/tables/999999/",
        "/api/v1/tables/999999/partitions/",
        "/api/v1/tables/999999/history/?metric=rows",
        "/api/v1/alert-rules/999999/",
        "/api/v1/silences/999999/",
    ],
)
def test_a_missing_object_is_not_found_without_a_class_name(viewer_api, path):
    response = viewer_api.get(path)

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}

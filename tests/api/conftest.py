"""API clients for each role: staff writes, a viewer only reads, anonymous is refused."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", password="staff-pw", is_staff=True)


@pytest.fixture
def viewer(django_user_model):
    return django_user_model.objects.create_user("viewer", password="viewer-pw")


@pytest.fixture
def staff_api(staff) -> APIClient:
    return token_client(staff)


@pytest.fixture
def viewer_api(viewer) -> APIClient:
    return token_client(viewer)

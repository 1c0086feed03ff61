"""partdash's own login page, for every user, and the lockout after repeated failures."""

import time

import pytest
from django.test import Client

from tests.conftest import user_in


@pytest.fixture
def operator(django_user_model):
    return user_in(django_user_model, "operator", "operators")


def log_in(client: Client, username: str, password: str, path: str = "/login/", **extra):
    return client.post(path, {"username": username, "password": password}, **extra)


def test_a_user_in_no_group_logs_in_on_the_login_page_and_reads_the_pages(viewer):
    client = Client()
    response = log_in(client, "viewer", "viewer-pw")
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_the_login_page_sends_you_back_where_you_were_going(viewer):
    client = Client()
    page = client.get("/login/?next=/alerts/")
    assert page.status_code == 200 and b'id="login-form"' in page.content
    response = client.post(
        "/login/", {"username": "viewer", "password": "viewer-pw", "next": "/alerts/"}
    )
    assert response["Location"] == "/alerts/"


def test_a_wrong_password_shows_the_form_again_with_an_error(viewer):
    response = log_in(Client(), "viewer", "nope")
    assert response.status_code == 200 and b'id="login-error"' in response.content


def test_log_out_ends_the_session(viewer):
    client = Client()
    log_in(client, "viewer", "viewer-pw")
    assert client.post("/logout/")["Location"] == "/login/"
    assert client.get("/")["Location"].startswith("/login/")


def test_thirty_wrong_passwords_are_cut_off_at_the_fifth(viewer):
    client = Client()
    started = time.monotonic()
    statuses = [log_in(client, "viewer", f"guess{n}").status_code for n in range(30)]
    elapsed = time.monotonic() - started

    assert statuses[:4] == [200] * 4  # the form again, with an error
    assert set(statuses[4:]) == {429}  # the fifth failure locks
    assert elapsed < 15
    # Locked out means the right password is refused too, with the reason and the wait.
    locked = log_in(client, "viewer", "viewer-pw")
    assert locked.status_code == 429
    assert b"Too many failed attempts" in locked.content
    assert b"Try again in 15 minutes" in locked.content


def test_five_failures_for_a_stranger_do_not_lock_another_user_out_of_the_address(operator):
    client = Client()
    for n in range(5):
        log_in(client, "dba", f"guess{n}")  # no such user

    assert log_in(client, "operator", "operator-pw").status_code == 302
    client.post("/logout/")
    refused = log_in(client, "dba", "guess5")
    assert refused.status_code == 429
    # The page names the user who failed, never the one asking next.
    assert b'<strong id="locked-user">dba</strong>' in refused.content
    assert b"operator" not in refused.content


def test_the_lockout_page_names_the_user_locked_out_not_another(operator):
    client = Client()
    for n in range(5):
        log_in(client, "dba", f"guess{n}")
    for n in range(5):
        log_in(client, "operator", f"guess{n}")

    locked = log_in(client, "operator", "operator-pw")
    assert locked.status_code == 429
    assert b'<strong id="locked-user">operator</strong>' in locked.content
    assert b"dba" not in locked.content


def test_an_address_failing_for_many_names_is_refused_for_every_name(operator, settings):
    settings.PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT = 12
    client = Client()
    for name in ("dba", "root", "oracle"):
        for n in range(4):  # under the per-name limit of 5 each
            assert log_in(client, name, f"guess{n}").status_code == 200

    sprayed = log_in(client, "operator", "operator-pw")
    assert sprayed.status_code == 429
    assert b"whatever the user name" in sprayed.content
    assert b"operator" not in sprayed.content
    other_address = log_in(Client(), "operator", "operator-pw", REMOTE_ADDR="10.0.0.9")
    assert other_address.status_code == 302


def test_the_admin_login_is_locked_out_too(staff):
    client = Client()
    for n in range(5):
        log_in(client, "staff", f"guess{n}", path="/admin/login/")
    assert log_in(client, "staff", "staff-pw", path="/admin/login/").status_code == 429


def test_a_success_before_the_limit_starts_the_count_again(viewer):
    client = Client()
    for n in range(3):
        log_in(client, "viewer", f"guess{n}")
    assert log_in(client, "viewer", "viewer-pw").status_code == 302
    client.post("/logout/")
    for n in range(3):
        log_in(client, "viewer", f"again{n}")
    assert log_in(client, "viewer", "viewer-pw").status_code == 302


def test_axes_reset_lifts_a_lockout(viewer):
    from django.core.management import call_command

    client = Client()
    for n in range(5):
        log_in(client, "viewer", f"guess{n}")
    assert log_in(client, "viewer", "viewer-pw").status_code == 429
    call_command("axes_reset", verbosity=0)
    assert log_in(client, "viewer", "viewer-pw").status_code == 302


def test_behind_a_trusted_proxy_the_address_it_appended_is_the_one_locked_out(viewer, settings):
    settings.PARTDASH_TRUSTED_PROXY = True
    client = Client()
    for n in range(5):
        log_in(client, "viewer", f"guess{n}", HTTP_X_FORWARDED_FOR=f"6.6.6.{n}, 10.9.9.9")
    # The client-chosen first entry changed every time; the proxy's did not.
    assert log_in(client, "viewer", "viewer-pw", HTTP_X_FORWARDED_FOR="10.9.9.9").status_code == 429
    elsewhere = log_in(client, "viewer", "viewer-pw", HTTP_X_FORWARDED_FOR="10.7.7.7")
    assert elsewhere.status_code == 302


def test_without_a_trusted_proxy_x_forwarded_for_is_ignored(viewer):
    client = Client()
    for n in range(5):
        log_in(client, "viewer", f"guess{n}", HTTP_X_FORWARDED_FOR=f"6.6.6.{n}")
    assert log_in(client, "viewer", "viewer-pw", HTTP_X_FORWARDED_FOR="7.7.7.7").status_code == 429

"""The email settings as a user sets them: `manage.py sendtestemail` sends through the
SMTP server the environment names, the same settings the worker's alert emails use."""

from tests.operations.test_settings import run


def test_sendtestemail_sends_through_the_smtp_server_of_the_environment(tmp_path, mailbox):
    result = run(
        tmp_path,
        "manage.py",
        "sendtestemail",
        "dba@example.com",
        DEBUG="1",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(mailbox.port),
        EMAIL_TIMEOUT="5",
        DEFAULT_FROM_EMAIL="partdash@example.com",
    )

    assert result.returncode == 0, result.stderr
    (sent,) = mailbox.emails()
    assert sent.recipients == ["dba@example.com"]
    assert sent.sender == "partdash@example.com"
    assert sent.subject.startswith("Test email from")


def test_starttls_and_implicit_tls_together_are_refused(tmp_path):
    result = run(tmp_path, "manage.py", "check", DEBUG="1", EMAIL_USE_TLS="1", EMAIL_USE_SSL="1")

    assert result.returncode != 0
    assert "EMAIL_USE_TLS (STARTTLS) and EMAIL_USE_SSL (implicit TLS) are both set" in result.stderr

"""Secrets never reach a log line or an error page.

- With ``DEBUG=False`` a server error answers the static ``500.html``: no
  ``SECRET_KEY``, no password that was posted, no settings, no traceback.
- Every log record (all loggers at DEBUG, ``django.request``, ``django.db.backends``
  with the SQL, ``axes``) produced by logging in with a good and a bad password,
  signing up, changing a password and a view that fails mid-login holds neither
  the password nor the ``SECRET_KEY``.
- Views that take passwords mark them with ``sensitive_post_parameters``, so
  even the debug page and error e-mails show stars (checked on the debug page).
- The password inside ``DATABASE_URL`` is never printed: settings load, the
  health check and a failing connection run in a subprocess, at ``LOG_LEVEL=DEBUG``.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils.log import AdminEmailHandler

from accounts.views import SignUpView
from tests.paths import REPO_ROOT

pytestmark = pytest.mark.django_db

ROOT = REPO_ROOT
NEW_PASSWORD = "Zebra-Quartz-Orbit-7741"
WRONG_PASSWORD = "Wrong-Horse-Battery-0000"
SIGNUP_PASSWORD = "Falcon-Ledger-Mosaic-5512"
STANDARD_ATTRS = set(vars(logging.LogRecord("x", 0, "x", 0, "", (), None))) | {"message", "asctime"}


@pytest.fixture
def all_logs(caplog):
    """Capture every record at DEBUG: the root, Django (requests, SQL), axes."""
    for name in (None, "django", "django.request", "django.db.backends", "django.security", "axes"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def log_text(caplog) -> str:
    """Every captured record as a handler would write it, plus any extra attributes it carries."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    parts = []
    for record in caplog.records:
        parts.append(formatter.format(record))
        parts.extend(repr(value) for key, value in vars(record).items() if key not in STANDARD_ATTRS)
    return "\n".join(parts)


def assert_clean(text: str, secrets: list[str]) -> None:
    for secret in secrets:
        assert secret not in text, f"{secret[:6]}… leaked"


@pytest.fixture
def debug_sql(settings):
    """DEBUG on: ``django.db.backends`` then logs every query with its parameters."""
    settings.DEBUG = True


def test_login_logout_and_bad_password_log_no_password(all_logs, candidate, password, settings, debug_sql):
    client = Client()
    bad = client.post(reverse("login"), {"username": candidate.username, "password": WRONG_PASSWORD})
    assert bad.status_code == 200 and b"correct username and password" in bad.content
    good = client.post(reverse("login"), {"username": candidate.username, "password": password})
    assert good.status_code == 302
    client.post(reverse("logout"))
    assert any(r.name.startswith("axes") for r in all_logs.records), "axes logged nothing: capture is broken"
    assert any(r.name == "django.db.backends" for r in all_logs.records), "no SQL captured: capture is broken"
    assert_clean(log_text(all_logs), [password, WRONG_PASSWORD, settings.SECRET_KEY])


def test_signup_logs_no_password(all_logs, settings, debug_sql):
    response = Client().post(reverse("signup"), {"username": "newbie", "email": "newbie@example.com",
                                                 "password1": SIGNUP_PASSWORD, "password2": SIGNUP_PASSWORD})
    assert response.status_code == 302
    assert get_user_model().objects.get(username="newbie").check_password(SIGNUP_PASSWORD)
    mismatch = Client().post(reverse("signup"), {"username": "other", "email": "other@example.com",
                                                 "password1": SIGNUP_PASSWORD, "password2": SIGNUP_PASSWORD + "x"})
    assert mismatch.status_code == 200
    assert SIGNUP_PASSWORD.encode() not in mismatch.content, "the sign-up form echoed a password"
    assert_clean(log_text(all_logs), [SIGNUP_PASSWORD, settings.SECRET_KEY])


def test_password_change_logs_no_password(all_logs, candidate_client, candidate, password, settings, debug_sql):
    response = candidate_client.post(reverse("password_change"), {
        "old_password": password, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302
    candidate.refresh_from_db()
    assert candidate.check_password(NEW_PASSWORD)
    wrong = candidate_client.post(reverse("password_change"), {
        "old_password": WRONG_PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert wrong.status_code == 200
    assert_clean(log_text(all_logs), [password, NEW_PASSWORD, WRONG_PASSWORD, settings.SECRET_KEY])


@pytest.fixture
def failing_backend(monkeypatch):
    """Authentication blows up (a database or backend fault) while the password is in hand."""
    def explode(self, request, username=None, password=None, **kwargs):
        raise RuntimeError("the user store is unreachable")

    monkeypatch.setattr("django.contrib.auth.backends.ModelBackend.authenticate", explode)


def test_a_failing_view_logs_no_password(all_logs, candidate, password, settings, failing_backend, debug_sql):
    settings.DEBUG = False
    response = Client(raise_request_exception=False).post(
        reverse("login"), {"username": candidate.username, "password": password})
    assert response.status_code == 500
    errors = [r for r in all_logs.records if r.name == "django.request" and r.levelno == logging.ERROR]
    assert errors and errors[0].exc_info, "the 500 was not logged with its traceback"
    assert_clean(log_text(all_logs), [password, settings.SECRET_KEY])


def test_the_500_page_shows_no_secret_no_password_no_settings(candidate, password, settings, failing_backend):
    settings.DEBUG = False
    response = Client(raise_request_exception=False).post(
        reverse("login"), {"username": candidate.username, "password": password})
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong on our side" in body  # templates/500.html
    assert_clean(body, [settings.SECRET_KEY, password, settings.DATABASES["default"]["NAME"] or "\x00"])
    for word in ("SECRET_KEY", "Traceback", "DATABASES", "settings", "RuntimeError", "unreachable"):
        assert word not in body


@pytest.mark.parametrize("url_name, secret_fields", [
    ("login", ["password"]),
    ("signup", ["password1", "password2"]),
])
def test_error_reports_star_out_posted_passwords(candidate, settings, monkeypatch, mailoutbox, url_name,
                                                 secret_fields):
    """The error e-mail Django sends admins on a 500 shows the posted passwords as stars (sensitive_post_parameters).

    The failure comes after the password was checked (logging the user in fails),
    as a broken session store would make it.
    """
    candidate.set_password(NEW_PASSWORD)
    candidate.save()
    settings.DEBUG = False
    settings.ADMINS = [("Ops", "ops@example.com")]
    handler = AdminEmailHandler(include_html=False)
    handler.setLevel(logging.ERROR)
    logging.getLogger("django.request").addHandler(handler)

    def explode(request, user, backend=None):
        raise RuntimeError("the session store is unreachable")

    monkeypatch.setattr("django.contrib.auth.views.auth_login", explode)
    monkeypatch.setattr("accounts.views.login", explode)
    try:
        response = Client(raise_request_exception=False).post(reverse(url_name), _credentials(url_name))
    finally:
        logging.getLogger("django.request").removeHandler(handler)
    assert response.status_code == 500
    assert len(mailoutbox) == 1, "no error report was sent"
    report = mailoutbox[0].body
    assert "RuntimeError" in report and "the session store is unreachable" in report
    assert_clean(report, [NEW_PASSWORD, settings.SECRET_KEY])
    for field in secret_fields:
        assert re.search(rf"{field} = '\*+'", report), f"{field} is not starred out in the report"


def _credentials(url_name: str) -> dict:
    # Built here, not in the test: the report shows the locals of the frames it walks.
    if url_name == "login":
        return {"username": "alice", "password": NEW_PASSWORD}
    return {"username": "zed", "email": "zed@example.com", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}


def test_the_signup_view_marks_its_passwords_sensitive(rf):
    """Django's auth views do it; ours must too (error reports filter these fields)."""
    request = rf.post(reverse("signup"), {"password1": "x", "password2": "x"})
    request.user = get_user_model()()
    request.session = {}
    from django.contrib.messages.storage.fallback import FallbackStorage

    request._messages = FallbackStorage(request)
    SignUpView.as_view()(request)
    assert request.sensitive_post_parameters == ("password1", "password2")


def test_the_database_url_password_is_never_printed(tmp_path):
    """Settings load, the health check and a refused connection, at LOG_LEVEL=DEBUG: no DATABASE_URL password."""
    secret = "Db-Pa55word-Never-Shown-9931"
    env = {**os.environ, "DATABASE_URL": f"postgres://prep:{secret}@127.0.0.1:1/prep", "LOG_LEVEL": "DEBUG",
           "DEBUG": "false", "SECRET_KEY": "k" * 60, "DJANGO_SETTINGS_MODULE": "config.settings",
           "SECURE_SSL_REDIRECT": "false"}
    script = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "from django.conf import settings\n"
        "r = Client().get('/healthz')\n"
        "print('healthz', r.status_code, r.content.decode())\n"
        "from django.db import connection\n"
        "try:\n"
        "    connection.ensure_connection()\n"
        "except Exception as e:\n"
        "    print('error:', type(e).__name__, e)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    output = done.stdout + done.stderr
    assert "healthz 503" in output, output  # the check really ran against the unreachable database
    assert "error: OperationalError" in output, output
    assert secret not in output
    # A management command that needs the database fails with Django's full traceback on stderr.
    checked = subprocess.run([sys.executable, "manage.py", "showmigrations"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode != 0 and "OperationalError" in checked.stderr, checked.stderr[-500:]
    assert secret not in checked.stdout + checked.stderr

"""Writes only where they belong, and log-ins (issue 21, finding 6).

A database that takes no writes (SQLite's ``query_only``; on PostgreSQL a trigger raising ``disk_full``, the
SQLSTATE of a full disk) gives the "cannot save right now" page with a 503 and ``/healthz`` a 503, while
reading pages still works; a cohort is never created without its invitation; 50 failed log-ins from one
address lock that address out whatever the usernames; a username that looks like a taken one is refused.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from accounts.confusables import skeleton

pytestmark = pytest.mark.django_db


@contextmanager
def unwritable(*tables: str):
    """Make the database refuse writes (every table on SQLite; ``tables`` on PostgreSQL) for the block."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA query_only = ON")
        else:
            cursor.execute("CREATE OR REPLACE FUNCTION test_disk_full() RETURNS trigger AS $$ BEGIN "
                           "RAISE EXCEPTION 'could not extend file: No space left on device' "
                           "USING ERRCODE = 'disk_full'; "
                           "END; $$ LANGUAGE plpgsql")
            for table in tables:
                cursor.execute(f"CREATE TRIGGER test_disk_full BEFORE INSERT OR UPDATE ON {table} "
                               "FOR EACH ROW EXECUTE FUNCTION test_disk_full()")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("PRAGMA query_only = OFF")
            else:
                for table in tables:
                    cursor.execute(f"DROP TRIGGER IF EXISTS test_disk_full ON {table}")


@contextmanager
def invitation_insert_fails():
    """The invitation's INSERT fails as on a full disk; the cohort's would succeed."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("CREATE TRIGGER test_full BEFORE INSERT ON coaching_invitation "
                           "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        else:
            cursor.execute("CREATE OR REPLACE FUNCTION test_disk_full() RETURNS trigger AS $$ BEGIN "
                           "RAISE EXCEPTION 'No space left on device' USING ERRCODE = 'disk_full'; "
                           "END; $$ LANGUAGE plpgsql")
            cursor.execute("CREATE TRIGGER test_full BEFORE INSERT ON coaching_invitation "
                           "FOR EACH ROW EXECUTE FUNCTION test_disk_full()")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS test_full" + ("" if connection.vendor == "sqlite"
                                                                 else " ON coaching_invitation"))


def test_a_read_only_database_gives_the_cannot_save_page_and_healthz_503(coach_client):
    assert coach_client.get("/healthz").status_code == 200
    with unwritable("coaching_cohort", "django_session"):
        response = coach_client.post("/coach/cohorts/new/", {"name": "Spring"})
        assert response.status_code == 503
        assert response["Retry-After"] == "60"
        page = response.content.decode()
        assert "We cannot save right now" in page and "Traceback" not in page
        health = Client().get("/healthz")
        assert health.status_code == 503 and health.json() == {"status": "error", "database": "read-only"}
        assert coach_client.get("/runbook/").status_code == 200  # reading still works
    from coaching.models import Cohort
    assert not Cohort.objects.exists()


def test_a_cohort_is_never_created_without_its_invitation(coach_client, coach):
    from coaching.models import Cohort, Invitation

    with invitation_insert_fails():
        response = coach_client.post("/coach/cohorts/new/", {"name": "Spring"})
    assert response.status_code == 503
    assert not Cohort.objects.filter(coach=coach).exists() and not Invitation.objects.exists()
    response = coach_client.post("/coach/cohorts/new/", {"name": "Spring"})
    cohort = Cohort.objects.get(coach=coach)
    assert response.status_code == 302 and cohort.invitations.count() == 1


def _fail_login(client: Client, username: str, address: str):
    return client.post("/accounts/login/", {"username": username, "password": "not-the-password"},
                       REMOTE_ADDR=address)


def test_fifty_failures_from_one_address_lock_the_address_out(candidate, password, settings):
    assert settings.AXES_ADDRESS_FAILURE_LIMIT == 50
    client = Client()
    for number in range(50):  # fifty usernames, one failure each: the per-username limit (10) never trips
        assert _fail_login(client, f"guess{number}", "203.0.113.9").status_code == 200
    refused = client.post("/accounts/login/", {"username": "alice", "password": password}, REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 429
    elsewhere = Client().post("/accounts/login/", {"username": "alice", "password": password},
                              REMOTE_ADDR="198.51.100.7")
    assert elsewhere.status_code == 302


def test_forty_nine_failures_from_one_address_still_let_a_right_password_in(candidate, password):
    client = Client()
    for number in range(49):
        _fail_login(client, f"guess{number}", "203.0.113.10")
    response = client.post("/accounts/login/", {"username": "alice", "password": password}, REMOTE_ADDR="203.0.113.10")
    assert response.status_code == 302


@pytest.mark.parametrize("taken, new", [("alice", "\u0430lice"),   # Cyrillic а
                                        ("admin", "\u0430dm\u0456n"),  # Cyrillic а and і
                                        ("paypal", "p\u0430yp\u0430l"), ("carol", "CAROL"),
                                        ("bob", "\uff42\uff4f\uff42")])  # fullwidth
def test_a_look_alike_username_is_refused(client, taken, new):
    get_user_model().objects.create_user(taken, f"{taken}@example.com", "pw-12345-abc")
    assert skeleton(taken) == skeleton(new)
    response = client.post("/accounts/signup/", {"username": new, "email": "new@example.com",
                                                 "password1": "correct-horse-battery-staple-9",
                                                 "password2": "correct-horse-battery-staple-9"})
    assert response.status_code == 200
    assert "looks like one already taken" in response.content.decode()
    assert get_user_model().objects.count() == 1


def test_a_different_username_is_accepted(client):
    get_user_model().objects.create_user("alice", "alice@example.com", "pw-12345-abc")
    response = client.post("/accounts/signup/", {"username": "alicia", "email": "new@example.com",
                                                 "password1": "correct-horse-battery-staple-9",
                                                 "password2": "correct-horse-battery-staple-9"})
    assert response.status_code == 302

"""Writes only where they belong, and log-ins (issue 21, finding 6).

A database that takes no writes (SQLite's ``query_only``; on PostgreSQL a trigger raising ``disk_full``, the
SQLSTATE of a full disk) gives the "cannot save right now" page with a 503 and ``/healthz`` a 503, while
reading pages still works; a cohort is never created without its invitation; 50 failed log-ins from one
address slow that address down (it locks nobody out), ten lock one username at one address; a username that
looks like a taken one is refused.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from accounts.confusables import skeleton
from tests.factories import UserFactory

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


def _age(address: str, seconds: float) -> None:
    """Move every failure recorded for ``address`` ``seconds`` into the past (as if the client had waited)."""
    from datetime import timedelta

    from axes.models import AccessAttempt
    from django.db.models import F

    AccessAttempt.objects.filter(ip_address=address).update(attempt_time=F("attempt_time") - timedelta(seconds=seconds))


def test_fifty_failures_over_many_usernames_slow_the_address_down_but_lock_nobody_out(candidate, password):
    from accounts.address_limit import address_wait, failures_from

    assert [address_wait(n) for n in (19, 20, 29, 30, 50, 69, 70, 500)] == [0, 1, 1, 2, 8, 16, 30, 30]
    client, nat = Client(), "203.0.113.9"
    for number in range(20):  # twenty usernames, one failure each: no wait yet
        assert _fail_login(client, f"guess{number}", nat).status_code == 200
    refused = _fail_login(client, "guess20", nat)  # at once: 1 s to wait, and the try is not counted
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    assert "Try again in 1 second" in refused.content.decode()
    assert failures_from(nat)[0] == 20
    for number in range(20, 50):  # a guesser who waits each time gets on, one try per wait
        _age(nat, address_wait(failures_from(nat)[0]))
        assert _fail_login(client, f"guess{number}", nat).status_code == 200
    assert failures_from(nat)[0] == 50
    too_soon = client.post("/accounts/login/", {"username": "alice", "password": password}, REMOTE_ADDR=nat)
    assert too_soon.status_code == 429 and too_soon["Retry-After"] == "8"
    _age(nat, 8)  # eight seconds later, alice behind the same NAT logs in: nobody is locked out
    assert client.post("/accounts/login/", {"username": "alice", "password": password},
                       REMOTE_ADDR=nat).status_code == 302
    elsewhere = Client().post("/accounts/login/", {"username": "alice", "password": password},
                              REMOTE_ADDR="198.51.100.7")
    assert elsewhere.status_code == 302


def test_ten_failures_lock_one_username_at_one_address_only(candidate, coach, password):
    client, address = Client(), "203.0.113.10"
    for _ in range(10):
        _fail_login(client, "alice", address)
    locked = client.post("/accounts/login/", {"username": "alice", "password": password}, REMOTE_ADDR=address)
    assert locked.status_code == 429 and "Log-in is locked for this account" in locked.content.decode()
    assert int(locked["Retry-After"]) == 15 * 60
    # carol at the same address, and alice from another one, log in.
    assert Client().post("/accounts/login/", {"username": "carol", "password": password},
                         REMOTE_ADDR=address).status_code == 302
    assert Client().post("/accounts/login/", {"username": "alice", "password": password},
                         REMOTE_ADDR="198.51.100.8").status_code == 302


@pytest.mark.parametrize("taken, new", [("alice", "\u0430lice"),   # Cyrillic а
                                        ("admin", "\u0430dm\u0456n"),  # Cyrillic а and і
                                        ("paypal", "p\u0430yp\u0430l"), ("carol", "CAROL"),
                                        ("bob", "\uff42\uff4f\uff42")])  # fullwidth
def test_a_look_alike_username_is_refused(client, taken, new):
    UserFactory(username=taken)
    assert skeleton(taken) == skeleton(new)
    response = client.post("/accounts/signup/", {"username": new, "email": "new@example.com",
                                                 "password1": "correct-horse-battery-staple-9",
                                                 "password2": "correct-horse-battery-staple-9"})
    assert response.status_code == 200
    assert "looks like one already taken" in response.content.decode()
    assert get_user_model().objects.count() == 1


def test_a_different_username_is_accepted(client):
    UserFactory(username="alice")
    response = client.post("/accounts/signup/", {"username": "alicia", "email": "new@example.com",
                                                 "password1": "correct-horse-battery-staple-9",
                                                 "password2": "correct-horse-battery-staple-9"})
    assert response.status_code == 302

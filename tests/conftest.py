"""Fixtures shared by every test.

Users (made by ``tests.factories.UserFactory``): ``candidate`` (alice, in group
``candidate``) and ``coach`` (carol, in group ``coach``), both with the password
``PASSWORD``; ``candidate_client`` and ``coach_client`` are Django test clients
logged in as them; ``bob`` is a second user, in no group. ``htmx_client`` is a client that sends ``HX-Request: true`` on
every request (log it in with ``htmx_client.force_login(user)``).

Hypothesis profiles: ``ci`` (derandomized, more examples, no deadline) and
``dev`` (the default number of examples, no deadline). ``HYPOTHESIS_PROFILE``
picks one; otherwise ``ci`` when ``CI=true`` and ``dev`` elsewhere.
"""

import os

import pytest
from django.test import Client
from hypothesis import settings as hypothesis_settings

from tests.factories import PASSWORD, UserFactory

hypothesis_settings.register_profile(
    "ci", derandomize=True, max_examples=300, deadline=None, print_blob=True
)
hypothesis_settings.register_profile("dev", max_examples=100, deadline=None)
hypothesis_settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE")
    or ("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev")
)


def _flush_lifts_review_log_triggers() -> None:
    """Let the database flush between transactional tests empty ``drills_reviewlog``.

    The review log refuses DELETE in the database (drills/reviews/append_only.py); SQLite's flush is a
    DELETE per table, so the flush's SQL drops the triggers first and creates them again at its end
    (PostgreSQL's TRUNCATE fires no row trigger, the same wrapping is harmless there).
    """
    from django.core.management.commands import flush

    original = flush.sql_flush
    if getattr(original, "lifts_triggers", False):
        return

    def sql_flush(style, connection, *args, **kwargs):
        from drills.reviews.append_only import create_statements, drop_statements

        statements = original(style, connection, *args, **kwargs)
        if not statements:
            return statements
        return [*drop_statements(connection.vendor), *statements, *create_statements(connection.vendor)]

    sql_flush.lifts_triggers = True
    flush.sql_flush = sql_flush


def pytest_configure(config):
    """Install the flush wrapper above before any test database is made."""
    _flush_lifts_review_log_triggers()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Send every integration test to one pytest-xdist worker (CI runs ``-n auto --dist loadgroup``).

    They share the real Redis server's databases (the Celery broker on 15, caches on 14) and start Celery
    workers that would take each other's tasks if two ran at once; tryfirst, so the group is set before
    xdist's own hook reads it.
    """
    for item in items:
        if item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.xdist_group("redis"))


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Hash passwords with a fast algorithm: tests check behaviour, not hashing cost."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def candidate(db):
    """A candidate: alice, in group ``candidate``."""
    return UserFactory(username="alice", role="candidate")


@pytest.fixture
def coach(db):
    """A coach: carol, in group ``coach``."""
    return UserFactory(username="carol", role="coach")


@pytest.fixture
def bob(db):
    """A second user, in no group: bob."""
    return UserFactory(username="bob")


@pytest.fixture
def candidate_client(client, candidate):
    """A test client logged in as the candidate."""
    client.force_login(candidate)
    return client


@pytest.fixture
def coach_client(coach):
    """A test client logged in as the coach."""
    coach_client = Client()
    coach_client.force_login(coach)
    return coach_client


@pytest.fixture
def htmx_client():
    """A test client whose every request carries ``HX-Request: true``, as htmx sends."""
    return Client(headers={"HX-Request": "true"})


@pytest.fixture
def password():
    """The password of the ``candidate`` and ``coach`` fixtures."""
    return PASSWORD

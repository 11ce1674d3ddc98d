"""drills 0011: the time zone leaves the review settings for accounts.TimeZonePreference, rows and all, both ways."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import TimeZonePreference

BEFORE = [("drills", "0010_attempt_user_problem_index")]
AFTER = [("drills", "0011_time_zone_to_accounts")]


def _migrate(targets):
    """Migrate to ``targets`` and return the historical apps of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def _latest():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_zones_move_to_accounts_and_back():
    users = get_user_model().objects
    paris, plain, none = (users.create_user(name, f"{name}@example.com", "pw-12345-x") for name in ("paris", "plain",
                                                                                                   "none"))
    try:
        old = _migrate(BEFORE)
        settings = old.get_model("drills", "ReviewSettings")
        settings.objects.create(user_id=paris.pk, time_zone="Europe/Paris", digest=True)
        settings.objects.create(user_id=plain.pk)  # never chose one: UTC, the column's default

        new = _migrate(AFTER)
        zones = dict(new.get_model("accounts", "TimeZonePreference").objects.values_list("user__username",
                                                                                          "time_zone"))
        assert zones == {"paris": "Europe/Paris", "plain": "UTC"}  # "none" had no settings: no row, UTC
        kept = new.get_model("drills", "ReviewSettings").objects.get(user_id=paris.pk)
        assert kept.digest is True and not hasattr(kept, "time_zone")

        new.get_model("accounts", "TimeZonePreference").objects.create(user_id=none.pk, time_zone="Asia/Tokyo")
        back = _migrate(BEFORE)
        assert dict(back.get_model("drills", "ReviewSettings").objects.values_list("user__username", "time_zone")) \
            == {"paris": "Europe/Paris", "plain": "UTC", "none": "Asia/Tokyo"}
        assert not TimeZonePreference.objects.exists()  # moved back, not copied (accounts 0001 stays applied)
    finally:
        _latest()

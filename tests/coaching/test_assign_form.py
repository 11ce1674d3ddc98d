"""The assign form's due time is read in the coach's own time zone, and the form says which zone that is."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import TimeZonePreference

pytestmark = pytest.mark.django_db


def test_the_due_time_names_the_coachs_time_zone(client, world):
    TimeZonePreference.objects.create(user=world.coach, time_zone="Europe/Berlin")
    client.force_login(world.coach)
    page = client.get(reverse("coaching:set_assign", args=[world.set.pk])).content.decode()
    assert "In your time zone, Europe/Berlin:" in page
    assert f'<a href="{reverse("reviews:settings")}">change it</a>' in page

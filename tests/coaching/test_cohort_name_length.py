"""A cohort name over its 120 characters is refused with a sentence and put back in the box, never cut
silently; a long unbroken name wraps on a phone instead of widening the dashboard (issue 28's new-user pass)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from coaching.models import Cohort

pytestmark = pytest.mark.django_db


def test_a_long_name_is_refused_and_kept(coach_client):
    name = "ü" * 500
    response = coach_client.post(reverse("coaching:cohort_new"), {"name": name})
    page = response.content.decode()

    assert response.status_code == 400 and "Location" not in response  # not put into an address
    assert not Cohort.objects.filter(name__startswith="üüü").exists()
    assert "A cohort name is at most 120 characters; the one sent has 500." in page
    box = re.search(r'<input[^>]*id="cohort-name"[^>]*>', page).group(0)
    assert f'value="{name}"' in box
    assert "maxlength" not in box  # a browser would cut a paste at 120 without a word


def test_a_name_of_120_is_kept_whole(coach_client):
    name = "a" * 120
    response = coach_client.post(reverse("coaching:cohort_new"), {"name": name})

    assert response.status_code == 302
    assert Cohort.objects.filter(name=name).count() == 1

"""accounts.backends.CoachFlagBackend: the session's user arrives with its coach flag, read anew every request."""

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.backends import PATH, CoachFlagBackend
from coaching.access import is_coach

pytestmark = pytest.mark.django_db


def test_the_user_comes_with_the_coach_flag(coach, candidate):
    backend = CoachFlagBackend()
    with CaptureQueriesContext(connection) as captured:
        read_coach, read_candidate = backend.get_user(coach.pk), backend.get_user(candidate.pk)
        flags = (is_coach(read_coach), is_coach(read_candidate))
    assert flags == (True, False)
    assert len(captured.captured_queries) == 2  # one per user: the flag needed no query of its own
    assert backend.get_user(10**9) is None


def test_leaving_the_coach_group_takes_effect_at_the_next_request(coach, coach_client):
    assert coach_client.get(reverse("coaching:dashboard")).status_code == 200
    Group.objects.get(name="coach").user_set.remove(coach)
    assert coach_client.get(reverse("coaching:dashboard")).status_code == 403
    coach.is_active = False
    coach.save()
    assert coach_client.get(reverse("coaching:dashboard")).status_code == 302  # signed out: to the login page


def test_logging_in_records_this_backend_and_a_wrong_password_is_checked_once(candidate, password, monkeypatch):
    checked = []
    original = ModelBackend.authenticate

    def counting(self, request, username=None, password=None, **kwargs):
        checked.append(type(self).__name__)
        return original(self, request, username=username, password=password, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", counting)
    client = Client()
    wrong = client.post(reverse("login"), {"username": candidate.username, "password": password + "x"})
    assert wrong.status_code == 200 and checked == ["CoachFlagBackend"]  # the plain ModelBackend was not tried
    assert client.post(reverse("login"), {"username": candidate.username, "password": password}).status_code == 302
    assert client.session[BACKEND_SESSION_KEY] == PATH


def test_a_session_of_the_plain_model_backend_still_works(coach):
    older = Client()
    older.force_login(coach, backend="django.contrib.auth.backends.ModelBackend")  # logged in before this backend
    assert older.get(reverse("coaching:dashboard")).status_code == 200

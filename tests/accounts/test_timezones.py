"""Dates and times show in the candidate's own time zone."""

from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import ValidationError
from django.db import connection
from django.http import HttpResponse
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import TimeZonePreference, validate_time_zone
from accounts.timezones import SESSION_ZONE_KEY, UserTimezoneMiddleware, set_time_zone, zone_name_of, zone_of, zones_of


def _zone_seen_by_a_view(user):
    request = RequestFactory().get("/")
    request.user = user
    middleware = UserTimezoneMiddleware(lambda request: HttpResponse(timezone.get_current_timezone_name()))
    return middleware(request).content.decode()


def test_a_candidate_with_a_time_zone_sees_it(candidate):
    TimeZonePreference.objects.create(user=candidate, time_zone="Asia/Tokyo")
    assert _zone_seen_by_a_view(candidate) == "Asia/Tokyo"


def test_a_candidate_without_settings_and_an_anonymous_visitor_see_utc(candidate):
    assert _zone_seen_by_a_view(candidate) == "UTC"
    assert _zone_seen_by_a_view(AnonymousUser()) == "UTC"


def test_the_zone_does_not_leak_into_the_next_request(candidate):
    TimeZonePreference.objects.create(user=candidate, time_zone="America/New_York")
    _zone_seen_by_a_view(candidate)
    assert timezone.get_current_timezone_name() == "UTC"


# --- the zone kept in the session ----------------------------------------------------------------------------


def _zone_and_queries(user, session):
    """The zone a view sees for ``user`` with ``session``, and the queries the middleware issued for it."""
    request = RequestFactory().get("/")
    request.user, request.session = user, session
    middleware = UserTimezoneMiddleware(lambda request: HttpResponse(timezone.get_current_timezone_name()))
    with CaptureQueriesContext(connection) as queries:
        zone = middleware(request).content.decode()
    return zone, [query["sql"] for query in queries.captured_queries]


def test_the_zone_is_read_at_login_and_no_request_after_queries_it(client, candidate):
    TimeZonePreference.objects.create(user=candidate, time_zone="Asia/Tokyo")
    client.force_login(candidate)  # sends user_logged_in, as the login form does

    session = client.session  # loaded here, as SessionMiddleware's would be before the middleware runs
    assert session[SESSION_ZONE_KEY] == [candidate.pk, "Asia/Tokyo"]
    assert _zone_and_queries(candidate, session) == ("Asia/Tokyo", [])


def test_a_new_zone_saved_on_the_settings_page_shows_from_the_next_request(client, candidate):
    TimeZonePreference.objects.create(user=candidate, time_zone="Asia/Tokyo")
    client.force_login(candidate)

    saved = client.post("/review/settings/", {"time_zone": "America/New_York", "desired_retention": "0.9"})

    assert saved.status_code == 302
    session = client.session
    assert session[SESSION_ZONE_KEY] == [candidate.pk, "America/New_York"]
    assert _zone_and_queries(candidate, session) == ("America/New_York", [])


def test_a_session_without_the_zone_reads_it_once_and_keeps_it(candidate):
    TimeZonePreference.objects.create(user=candidate, time_zone="Europe/Paris")
    candidate = type(candidate).objects.get(pk=candidate.pk)  # as the session's user is: loaded on its own
    session = SessionStore()  # a session opened before the zone was kept in it

    zone, queries = _zone_and_queries(candidate, session)

    assert zone == "Europe/Paris" and len(queries) == 1 and "accounts_timezonepreference" in queries[0]
    assert session[SESSION_ZONE_KEY] == (candidate.pk, "Europe/Paris")
    assert _zone_and_queries(candidate, session) == ("Europe/Paris", [])


def test_a_zone_kept_for_another_user_is_not_shown(candidate, coach):
    TimeZonePreference.objects.create(user=coach, time_zone="Asia/Tokyo")
    session = SessionStore()
    session[SESSION_ZONE_KEY] = [coach.pk, "Asia/Tokyo"]

    assert _zone_and_queries(candidate, session)[0] == "UTC"  # the candidate chose no zone
    assert session[SESSION_ZONE_KEY] == (candidate.pk, "")


def test_a_zone_reads_the_same_on_every_page(client, candidate):
    """Issue 20: the settings list said "America/New York", the home page "America/New_York"."""
    TimeZonePreference.objects.create(user=candidate, time_zone="America/New_York")
    client.force_login(candidate)
    pages = {path: client.get(path).content.decode() for path in ("/", "/review/", "/progress/")}
    for path, page in pages.items():
        assert "America/New York" in page and "America/New_York" not in page.replace(
            'value="America/New_York"', ""), path
    settings_page = client.get("/review/settings/").content.decode()
    assert '<option value="America/New_York" selected>America/New York</option>' in settings_page


def test_the_zone_is_read_once_per_user_object_and_utc_without_a_choice(candidate, django_assert_num_queries):
    user = type(candidate).objects.get(pk=candidate.pk)
    with django_assert_num_queries(1):
        assert (zone_name_of(user), zone_name_of(user), zone_of(user)) == ("UTC", "UTC", ZoneInfo("UTC"))
    set_time_zone(user, "Asia/Kolkata")  # UTC+05:30
    assert zone_of(user) == ZoneInfo("Asia/Kolkata")
    assert zones_of([candidate.pk, 0]) == {candidate.pk: ZoneInfo("Asia/Kolkata")}



@pytest.mark.parametrize("text", ["Mars/Olympus", "abé " * 300, "../etc/passwd", "America"])
def test_a_zone_name_that_is_no_zone_is_refused_in_a_sentence(text):
    validate_time_zone("Europe/Paris")
    with pytest.raises(ValidationError, match="is not a time zone name such as Europe/Paris"):
        validate_time_zone(text)

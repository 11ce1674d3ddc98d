"""Dates and times show in the candidate's own time zone."""

from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from drills.middleware import UserTimezoneMiddleware
from drills.models import ReviewSettings


def _zone_seen_by_a_view(user):
    request = RequestFactory().get("/")
    request.user = user
    middleware = UserTimezoneMiddleware(lambda request: HttpResponse(timezone.get_current_timezone_name()))
    return middleware(request).content.decode()


def test_a_candidate_with_a_time_zone_sees_it(candidate):
    ReviewSettings.objects.create(user=candidate, time_zone="Asia/Tokyo")
    assert _zone_seen_by_a_view(candidate) == "Asia/Tokyo"


def test_a_candidate_without_settings_and_an_anonymous_visitor_see_utc(candidate):
    assert _zone_seen_by_a_view(candidate) == "UTC"
    assert _zone_seen_by_a_view(AnonymousUser()) == "UTC"


def test_the_zone_does_not_leak_into_the_next_request(candidate):
    ReviewSettings.objects.create(user=candidate, time_zone="America/New_York")
    _zone_seen_by_a_view(candidate)
    assert timezone.get_current_timezone_name() == "UTC"

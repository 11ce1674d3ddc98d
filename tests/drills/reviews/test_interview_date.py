"""The interview date: a day already past is refused on /review/settings/, and /progress/ shows its year.

Regression: a past date was saved silently, and /progress/ then read "interview 1 Jan" with no year.
"""

from __future__ import annotations

from datetime import date, datetime
from datetime import timezone as dt_timezone

import pytest

from accounts.models import TimeZonePreference
from drills.models import ReviewSettings
from drills.reviews.scheduling import add_to_deck

pytestmark = pytest.mark.django_db

# 20:00 UTC on 29 Nov 2026: already 30 Nov in Kiritimati (UTC+14), still 29 Nov in Los Angeles.
NOW = datetime(2026, 11, 29, 20, 0, tzinfo=dt_timezone.utc)


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    return NOW


def post(client, interview: str, zone: str = "UTC"):
    return client.post("/review/settings/", {"interview_date": interview, "time_zone": zone,
                                             "desired_retention": "0.9"})


def test_a_past_interview_date_is_refused_and_kept_in_the_box(candidate_client, candidate, clock):
    ReviewSettings.objects.create(user=candidate, interview_date=date(2026, 12, 20))
    response = post(candidate_client, "2026-01-01", "Europe/Paris")
    page = response.content.decode()
    assert response.status_code == 200
    assert ("That day has passed: choose today (Sun 29 Nov 2026) or a later day, or leave it empty if the "
            "interview is over.") in page
    assert 'value="2026-01-01"' in page and 'aria-invalid="true"' in page
    assert 'value="Europe/Paris" selected' in page  # the rest of what was chosen is kept too
    row = ReviewSettings.objects.get(user=candidate)
    assert row.interview_date == date(2026, 12, 20)  # nothing saved
    assert not TimeZonePreference.objects.filter(user=candidate).exists()  # the zone neither


def test_a_date_more_than_two_years_ahead_is_refused_and_kept_in_the_box(candidate_client, candidate, clock):
    """Regression (a new user's try): 9999-12-31 was saved, then /, /review/ and /progress/ answered 500
    (OverflowError in the forecast's date arithmetic). Today is Sun 29 Nov 2026; 730 days later (2028 is a leap
    year) is Tue 28 Nov 2028."""
    response = post(candidate_client, "9999-12-31")
    page = response.content.decode()
    assert response.status_code == 200
    assert ("That day is more than two years away: choose a day up to Tue 28 Nov 2028, or leave it empty until the "
            "interview is booked.") in page
    assert 'value="9999-12-31"' in page
    assert not ReviewSettings.objects.filter(user=candidate, interview_date__isnull=False).exists()  # nothing saved
    assert post(candidate_client, "2028-11-29").status_code == 200  # one day past the limit: refused
    assert post(candidate_client, "2028-11-28").status_code == 302  # the last day taken
    assert ReviewSettings.objects.get(user=candidate).interview_date == date(2028, 11, 28)
    for page in ("/", "/review/", "/progress/"):
        assert candidate_client.get(page).status_code == 200


def test_today_is_judged_in_the_time_zone_chosen_on_the_form(candidate_client, candidate, clock):
    refused = post(candidate_client, "2026-11-29", "Pacific/Kiritimati")
    assert refused.status_code == 200 and "choose today (Mon 30 Nov 2026)" in refused.content.decode()
    assert post(candidate_client, "2026-11-29", "America/Los_Angeles").status_code == 302
    assert ReviewSettings.objects.get(user=candidate).interview_date == date(2026, 11, 29)  # today there: allowed
    assert post(candidate_client, "", "UTC").status_code == 302  # and it may be cleared
    assert ReviewSettings.objects.get(user=candidate).interview_date is None


def test_progress_shows_the_year_only_when_it_is_not_this_year(candidate_client, candidate, bank, clock):
    row = ReviewSettings.objects.create(user=candidate, interview_date=date(2027, 1, 1))
    add_to_deck(candidate, [bank["ridge"]])  # a card, so the expected-recall section shows
    page = candidate_client.get("/progress/").content.decode()
    assert "interview 1 Jan 2027</p>" in page and "up to your interview on Fri 1 Jan 2027." in page
    assert "recall on Fri 1 Jan 2027, per chapter" in page

    row.interview_date = date(2026, 12, 20)
    row.save()
    page = candidate_client.get("/progress/").content.decode()
    assert "interview 20 Dec</p>" in page and "up to your interview on Sun 20 Dec." in page

    # A date saved before the rule, or one that has since passed, says so and keeps its year when needed.
    ReviewSettings.objects.filter(pk=row.pk).update(interview_date=date(2025, 6, 1))
    assert "interview was 1 Jun 2025</p>" in candidate_client.get("/progress/").content.decode()

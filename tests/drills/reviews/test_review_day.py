"""The review day before its 04:00 turn: every page names the same day and says why it is not the calendar's.

The clock is Tuesday 8 December 2026, 01:23 UTC; the candidate is in UTC, so the review day is still Monday 7
December until 04:00. Three new cards are rated Good at 01:20, 01:21 and 01:22: FSRS's first learning step after
Good is 10 minutes, so they come back at 01:30, 01:31 and 01:32, all before the day turns.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo

import pytest

from drills.models import Card
from drills.reviews.scheduling import GOOD, add_to_deck, review_day
from drills.reviews.services import record_open_review
from tests.page_text import visible

NOW = datetime(2026, 12, 8, 1, 23, tzinfo=dt_timezone.utc)
NOTE = "Your review day turns at 04:00, so until then it is still Monday's reviews"


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    return NOW


@pytest.fixture
def three_cards(candidate, bank):
    add_to_deck(candidate, [bank["kv-paged"], bank["ridge"], bank["kv-formula"]], now=NOW - timedelta(minutes=5))
    return list(Card.objects.filter(user=candidate).order_by("pk"))


def test_the_review_day_is_mondays_until_four_and_the_calendar_says_tuesday():
    before = review_day(ZoneInfo("UTC"), NOW)
    assert (before.day, before.calendar, before.turns_at, before.before_turn) == (
        date(2026, 12, 7), date(2026, 12, 8), time(4), True)
    after = review_day(ZoneInfo("UTC"), datetime(2026, 12, 8, 4, 0, tzinfo=dt_timezone.utc))
    assert (after.day, after.before_turn) == (date(2026, 12, 8), False)
    # 01:23 UTC is 15:23 in Kiritimati (UTC+14): the review day there is the calendar's, Tuesday.
    assert review_day(ZoneInfo("Pacific/Kiritimati"), NOW).before_turn is False


def test_every_page_names_monday_and_says_why(candidate_client, three_cards, clock):
    home = visible(candidate_client.get("/"))
    assert "Monday 7 December" in home
    assert f"{NOTE} (the calendar says Tuesday 8 December)." in home
    review = visible(candidate_client.get("/review/"))
    assert "Monday 7 December" in review and f"{NOTE} (the calendar says Tuesday 8 December)." in review
    progress = visible(candidate_client.get("/progress/"))
    assert "up to Mon 7 Dec 2026" in progress and NOTE in progress
    settings_page = visible(candidate_client.get("/review/settings/"))
    assert f"{NOTE}. An interview is on a calendar date: today is Tuesday 8 December." in settings_page


def test_after_four_no_page_explains_anything(candidate_client, three_cards, monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: datetime(2026, 12, 8, 9, 0, tzinfo=dt_timezone.utc))
    for url in ("/", "/review/", "/progress/", "/review/settings/"):
        assert "Your review day turns" not in candidate_client.get(url).content.decode(), url


def test_the_home_page_says_the_zone_and_the_time_there(client, candidate, clock):
    client.force_login(candidate)
    assert "Your time zone is UTC; it is 01:23 there." in visible(client.get("/"))


def test_cards_in_learning_steps_are_counted_as_coming_back_not_as_left(candidate_client, candidate, three_cards,
                                                                       clock):
    page = visible(candidate_client.get("/review/"))
    assert "3 cards due now (none relearning)" in page
    for minute, card in zip((20, 21, 22), three_cards):
        record_open_review(candidate, card.pk, card.version, GOOD, now=datetime(2026, 12, 8, 1, minute,
                                                                                 tzinfo=dt_timezone.utc))
    assert sorted(Card.objects.filter(user=candidate).values_list("due", flat=True)) == [
        datetime(2026, 12, 8, 1, minute, tzinfo=dt_timezone.utc) for minute in (30, 31, 32)]
    page = visible(candidate_client.get("/review/"))
    assert "Nothing due now: 3 cards come back later today in their learning steps, the next at 01:30" in page
    assert "left to finish today" not in page

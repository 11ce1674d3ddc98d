"""Scheduling: the deck, local days across time zones, the interview date, the rating rules."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo

import pytest
from fsrs import Scheduler

from drills.models import Card, ReviewLog
from drills.reviews.recall import recall_at
from drills.reviews.scheduling import (
    AGAIN,
    EASY,
    GOOD,
    HARD,
    add_to_deck,
    chapter_items,
    day_bounds,
    due_forecast,
    due_queue,
    forecast_and_deck,
    horizon,
    interview_start,
    local_today,
    next_due,
    rating_for_problem,
    rating_for_rubric,
    remove_from_deck,
    retention_on_day,
    schedule,
    track_items,
)
from tests.factories import BankItemFactory

UTC = dt_timezone.utc


class TestRatingRule:
    @pytest.mark.parametrize("score, seconds, box, expected", [
        (0.0, 60, 360, AGAIN),
        (0.49, 60, 360, AGAIN),      # under 50 % is Again, however fast
        (0.5, 60, 360, HARD),
        (0.79, 60, 360, HARD),
        (0.8, 400, 360, GOOD),       # a good score, a little over the box
        (0.875, 60, 360, GOOD),      # 7 of 8 steps, fast: still not Easy
        (0.95, 360, 360, EASY),      # at the box exactly counts as inside it
        (1.0, 100, 360, EASY),
        (1.0, 361, 360, GOOD),       # perfect but over the box
        (1.0, None, 360, GOOD),      # time not measured: never Easy
        (1.0, 721, 360, HARD),       # over twice the box
        (0.9, 720, 360, GOOD),       # exactly twice the box is not "more than"
    ])
    def test_problem_rating_follows_score_and_time(self, score, seconds, box, expected):
        assert rating_for_problem(score, seconds, box) == expected

    @pytest.mark.parametrize("ticked, total, expected", [
        (0, 4, AGAIN), (1, 4, AGAIN), (2, 4, HARD), (3, 4, HARD), (4, 5, GOOD), (4, 4, EASY), (0, 0, None),
    ])
    def test_rubric_suggestion(self, ticked, total, expected):
        assert rating_for_rubric(ticked, total) == expected


class TestDeck:
    def test_cards_are_added_by_item_chapter_and_track_once(self, bank, candidate, h):
        kv = bank["kv-formula"].chapter

        assert add_to_deck(candidate, [bank["kv-formula"]], Card.VIA_ITEM, h.T0) == 1
        # Chapter 06: kv-formula (already in), kv-paged, kv-fp8 and the two templates it teaches (ladder, kv).
        assert add_to_deck(candidate, chapter_items(kv), Card.VIA_CHAPTER, h.T0) == 4
        assert add_to_deck(candidate, chapter_items(kv), Card.VIA_CHAPTER, h.T0) == 0
        added_by_track = add_to_deck(candidate, track_items("B"), Card.VIA_TRACK, h.T0)

        cards = Card.objects.filter(user=candidate)
        assert set(cards.values_list("item__slug", flat=True)) >= {"kv-formula", "kv-paged", "kv-fp8", "ridge"}
        assert cards.get(item__slug="kv-formula").added_via == Card.VIA_ITEM
        assert cards.get(item__slug="kv-paged").added_via == Card.VIA_CHAPTER
        assert cards.get(item__slug="ridge").added_via == Card.VIA_TRACK
        assert added_by_track == cards.filter(added_via=Card.VIA_TRACK).count()
        assert all(card.due == h.T0 and card.is_new for card in cards)

    def test_templates_of_a_chapter_come_with_it(self, bank, candidate, h):
        add_to_deck(candidate, chapter_items(bank["kv-formula"].chapter), Card.VIA_CHAPTER, h.T0)
        slugs = set(Card.objects.filter(user=candidate).values_list("item__slug", flat=True))
        # 06-kv-cache teaches the capacity ladder and the KV-cache family.
        assert slugs == {"kv-formula", "kv-paged", "kv-fp8", "ladder", "kv"}

    def test_removing_keeps_the_history_and_adding_back_revives_it(self, bank, candidate, h):
        add_to_deck(candidate, [bank["ridge"]], now=h.T0)
        assert remove_from_deck(candidate, bank["ridge"])
        assert not Card.objects.of(candidate).exists()
        assert add_to_deck(candidate, [bank["ridge"]], now=h.T0) == 1
        assert Card.objects.of(candidate).count() == 1


class TestLocalDays:
    def test_due_today_means_the_candidates_own_day(self, bank, candidate, bob, h):
        # A card due at 22:30 UTC on Monday 2 March; it is 12:00 UTC.
        due = datetime(2026, 3, 2, 22, 30, tzinfo=UTC)
        now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
        for user, zone in ((candidate, "Asia/Tokyo"), (bob, "America/Los_Angeles")):
            h.settings(user, time_zone=zone)
            add_to_deck(user, [bank["kv-fp8"]], now=h.T0)
            Card.objects.filter(user=user).update(due=due)

        # Tokyo (UTC+9): 21:00 on Monday; the card falls due at 07:30 on Tuesday, tomorrow.
        assert due_queue(candidate, now) == []
        assert due_forecast(candidate, 3, now)[:2] == [(date(2026, 3, 2), 0), (date(2026, 3, 3), 1)]
        # Los Angeles (UTC-8): 04:00 on Monday; the card falls due at 14:30 the same Monday.
        assert [card.item.slug for card in due_queue(bob, now)] == ["kv-fp8"]
        assert due_forecast(bob, 3, now)[0] == (date(2026, 3, 2), 1)

    def test_the_review_day_turns_at_four_in_the_morning_local_time(self):
        paris = ZoneInfo("Europe/Paris")  # UTC+1 in March
        assert local_today(paris, datetime(2026, 3, 2, 23, 0, tzinfo=UTC)) == date(2026, 3, 2)  # 00:00 Tuesday
        assert local_today(paris, datetime(2026, 3, 3, 2, 59, tzinfo=UTC)) == date(2026, 3, 2)  # 03:59 Tuesday
        assert local_today(paris, datetime(2026, 3, 3, 3, 0, tzinfo=UTC)) == date(2026, 3, 3)  # 04:00 Tuesday

    def test_the_hour_is_a_setting(self, settings):
        settings.REVIEW_DAY_STARTS_HOUR = 0
        paris = ZoneInfo("Europe/Paris")
        assert local_today(paris, datetime(2026, 3, 2, 23, 0, tzinfo=UTC)) == date(2026, 3, 3)
        assert day_bounds(paris, date(2026, 3, 3))[0] == datetime(2026, 3, 2, 23, 0, tzinfo=UTC)

    def test_a_day_with_a_clock_change_is_23_or_25_hours(self):
        paris = ZoneInfo("Europe/Paris")
        # Clocks go forward at 02:00 on Sunday 29 March: the review day of Saturday 28 (04:00 CET to 04:00 CEST)
        # is 23 hours; Sunday's starts at 04:00 CEST = 02:00 UTC.
        start, end = day_bounds(paris, date(2026, 3, 28))
        assert (start, end) == (datetime(2026, 3, 28, 3, 0, tzinfo=UTC), datetime(2026, 3, 29, 2, 0, tzinfo=UTC))
        start, end = day_bounds(paris, date(2026, 10, 24))  # back at 03:00 on Sunday 25 October
        assert end - start == timedelta(hours=25)

    def test_a_card_due_later_today_comes_after_those_due_now(self, bank, candidate, h):
        add_to_deck(candidate, [bank["kv-fp8"], bank["ridge"]], now=h.T0)
        Card.objects.filter(user=candidate, item__slug="kv-fp8").update(due=h.T0 + timedelta(minutes=10))
        Card.objects.filter(user=candidate, item__slug="ridge").update(due=h.T0 + timedelta(minutes=5))
        now = h.T0 + timedelta(minutes=6)
        assert [card.item.slug for card in due_queue(candidate, now)] == ["ridge", "kv-fp8"]


def _reviewed(user, item, *, stability: float, last_review: datetime, due: datetime) -> Card:
    add_to_deck(user, [item], now=last_review)
    Card.objects.filter(user=user, item=item).update(state=Card.REVIEW, step=None, stability=stability,
                                                     difficulty=5.0, last_review=last_review, due=due, reps=3)
    return Card.objects.get(user=user, item=item)


class TestInterviewDate:
    def test_the_queue_puts_first_what_would_be_forgotten_by_the_interview(self, bank, candidate, h):
        now = h.T0
        # Sturdy: 50-day stability, due yesterday. Fragile: 3-day stability, due an hour ago.
        _reviewed(candidate, bank["kv-formula"], stability=50.0, last_review=now - timedelta(days=45),
                  due=now - timedelta(days=1))
        _reviewed(candidate, bank["kv-paged"], stability=3.0, last_review=now - timedelta(days=4),
                  due=now - timedelta(hours=1))

        assert [c.item.slug for c in due_queue(candidate, now)] == ["kv-formula", "kv-paged"]  # by due date

        h.settings(candidate, interview_date=date(2026, 3, 22))
        queue = due_queue(candidate, now)
        assert [c.item.slug for c in queue] == ["kv-paged", "kv-formula"]
        scheduler = Scheduler(enable_fuzzing=False)
        day = interview_start(h.settings(candidate), now)
        assert day == datetime(2026, 3, 22, 4, 0, tzinfo=UTC)  # the review day turns at 04:00
        # FSRS-6 with the default decay w20 = 0.1542: R = (1 + f·t/S)^-0.1542 with f = 0.9^(-1/0.1542) − 1
        # = 0.98035, t in days to the second. Fragile: last reviewed 26 Feb 08:00, 23 days 20 hours = 23.8333 days
        # at S=3 → (1 + 0.98035 · 7.9444)^-0.1542 = 0.7152; sturdy: 16 Jan 08:00, 64.8333 days at S=50
        # → (1 + 0.98035 · 1.29667)^-0.1542 = 0.8812.
        assert recall_at(scheduler, queue[0].to_fsrs(), day) == pytest.approx(0.7152, abs=1e-4)
        assert recall_at(scheduler, queue[1].to_fsrs(), day) == pytest.approx(0.8812, abs=1e-4)

    def test_cards_reviewed_under_a_day_before_the_interview_are_ordered_by_recall_not_tied(self, bank, candidate,
                                                                                           h):
        """Whole days (fsrs's ``get_card_retrievability``) read both cards as 0 days old, R = 1, a tie left to the
        due dates; to the second the fragile one is weaker and comes first."""
        now = h.T0  # Monday 2 March 08:00; the interview day begins Tuesday 3 March 04:00
        h.settings(candidate, interview_date=date(2026, 3, 3))
        # Sturdy: S = 5 days, reviewed at 05:00, due first. Fragile: S = 0.5 days, reviewed at 06:00, due later.
        _reviewed(candidate, bank["kv-formula"], stability=5.0, last_review=now - timedelta(hours=3),
                  due=now - timedelta(minutes=30))
        _reviewed(candidate, bank["kv-paged"], stability=0.5, last_review=now - timedelta(hours=2),
                  due=now - timedelta(minutes=10))
        queue = due_queue(candidate, now)
        assert [c.item.slug for c in queue] == ["kv-paged", "kv-formula"]
        scheduler, day = Scheduler(enable_fuzzing=False), datetime(2026, 3, 3, 4, 0, tzinfo=UTC)
        # Fragile: 22 hours = 0.91667 days at S = 0.5 → (1 + 0.98035 · 1.83333)^-0.1542 = 0.8533.
        # Sturdy: 23 hours = 0.95833 days at S = 5 → (1 + 0.98035 · 0.19167)^-0.1542 = 0.9738.
        assert recall_at(scheduler, queue[0].to_fsrs(), day) == pytest.approx(0.8533, abs=1e-4)
        assert recall_at(scheduler, queue[1].to_fsrs(), day) == pytest.approx(0.9738, abs=1e-4)

    def test_the_forecast_stops_at_the_interview_date(self, bank, candidate, h):
        h.settings(candidate, interview_date=date(2026, 3, 5))
        add_to_deck(candidate, [bank["kv-fp8"]], now=h.T0)
        forecast = due_forecast(candidate, 7, h.T0)
        assert [day for day, _ in forecast] == [date(2026, 3, d) for d in (2, 3, 4, 5)]
        assert horizon(h.settings(candidate, interview_date=date(2026, 4, 30)), 7, h.T0)[-1] == date(2026, 3, 8)
        assert interview_start(h.settings(candidate, interview_date=date(2026, 3, 1)), h.T0) is None  # past

    def test_expected_retention_on_the_day_per_chapter(self, bank, candidate, h):
        h.settings(candidate, interview_date=date(2026, 3, 30))
        _reviewed(candidate, bank["kv-formula"], stability=10.0, last_review=h.T0 - timedelta(days=2),
                  due=h.T0 + timedelta(days=8))
        _reviewed(candidate, bank["ridge"], stability=40.0, last_review=h.T0 - timedelta(days=1),
                  due=h.T0 + timedelta(days=39))
        rows = {row.label: row for row in retention_on_day(candidate, h.T0)}
        assert list(rows) == ["04 · The GPU and the roofline", "06 · The KV cache"]
        kv, ridge = rows["06 · The KV cache"], rows["04 · The GPU and the roofline"]
        # Stopped: the day begins 30 Mar 04:00, 29 days 20 hours after the last review (28 Feb 08:00) at S=10
        # → (1 + 0.98035 · 2.98333)^-0.1542 = 0.8099 (0.8125 at 29 whole days, as fsrs's retrievability counts).
        assert kv.if_stopped == pytest.approx(0.8099, abs=1e-4)
        assert kv.if_kept_up > kv.if_stopped   # the reviews due before the day lift it
        # The roofline card is not due before the day: keeping up changes nothing.
        assert ridge.if_kept_up == pytest.approx(ridge.if_stopped)
        assert ridge.cards == kv.cards == 1

    def test_a_review_that_would_leave_the_card_weak_on_the_day_comes_back_before_it(self, bank, candidate, h,
                                                                                      monkeypatch):
        row = h.settings(candidate, interview_date=date(2026, 3, 20), desired_retention=0.95)
        card = _reviewed(candidate, bank["ridge"], stability=2.0, last_review=h.T0 - timedelta(days=2), due=h.T0)
        # A scheduler aiming lower (0.70) gives S = 7.76 days and a due date in May, well past the day, where
        # recall would be (1 + 0.98035 · 17/7.76)^-0.1542 = 0.84, under the 0.95 the candidate asked for.
        monkeypatch.setattr("drills.reviews.scheduling.scheduler_for",
                            lambda settings, fuzz=None: Scheduler(desired_retention=0.7, enable_fuzzing=False))
        scheduled = schedule(card, GOOD, row, h.T0)
        # The interview's review day starts at 04:00 UTC on the 20th (the candidate's zone), the day before it at
        # 04:00 on the 19th: whole days from Monday 08:00 into that day, ceil(16.83) = 17, give the 19th, 08:00.
        assert scheduled.due == card.due == datetime(2026, 3, 19, 8, 0, tzinfo=UTC)

    def test_without_an_interview_the_interval_is_fsrs_own(self, bank, candidate, h):
        row = h.settings(candidate)
        card = _reviewed(candidate, bank["ridge"], stability=20.0, last_review=h.T0 - timedelta(days=20), due=h.T0)
        expected, _ = Scheduler(enable_fuzzing=False).review_card(card.to_fsrs(), 3, review_datetime=h.T0)
        assert schedule(card, GOOD, row, h.T0).due == expected.due


def test_a_lapse_is_counted_when_a_learned_card_is_failed(bank, candidate, h):
    row = h.settings(candidate)
    card = _reviewed(candidate, bank["ridge"], stability=20.0, last_review=h.T0 - timedelta(days=20), due=h.T0)
    scheduled = schedule(card, AGAIN, row, h.T0)
    assert (card.lapses, card.reps, card.state, scheduled.state_before) == (1, 4, Card.RELEARNING, Card.REVIEW)
    assert card.due == h.T0 + timedelta(minutes=10)
    assert scheduled.retrievability == pytest.approx(0.9, abs=1e-3)  # reviewed on the day it fell due
    assert ReviewLog.objects.count() == 0  # scheduling alone writes nothing


class TestWhatTheReviewPageReads:
    """The review page reads the queue's first card and length, and the forecast with the deck's size, in fewer
    queries than :func:`due_queue`, :func:`due_forecast` and a count: the same answers, whatever the order rule."""

    def test_the_first_card_and_the_length_are_the_queues(self, bank, candidate, bob, h):
        now = h.T0
        _reviewed(candidate, bank["kv-formula"], stability=50.0, last_review=now - timedelta(days=45),
                  due=now - timedelta(days=1))
        _reviewed(candidate, bank["kv-paged"], stability=3.0, last_review=now - timedelta(days=4),
                  due=now - timedelta(hours=1))
        add_to_deck(candidate, [bank["kv-fp8"], bank["ridge"]], now=now)
        Card.objects.filter(user=candidate, item=bank["kv-fp8"]).update(due=now + timedelta(minutes=10))
        Card.objects.filter(user=candidate, item=bank["ridge"]).update(due=now + timedelta(days=2))
        hidden = BankItemFactory(slug="bobs-draft", author=bob, published=False)  # not shared with the candidate
        add_to_deck(candidate, [hidden], now=now - timedelta(days=3))
        assert next_due(bob, now) == (None, 0, 0, 0, None)
        for interview in (None, date(2026, 3, 22)):
            h.settings(candidate, interview_date=interview)
            queue = due_queue(candidate, now)
            first, length, _relearning, later, next_later = next_due(candidate, now)
            assert (first, length) == (queue[0], len(queue)) and len(queue) == 3
            assert (later, next_later) == (1, now + timedelta(minutes=10))  # kv-fp8, due later today
            assert first.item.chapter == queue[0].item.chapter
        assert [card.item.slug for card in due_queue(candidate, now)] == ["kv-paged", "kv-formula", "kv-fp8"]

    def test_the_forecast_and_the_deck_are_due_forecast_and_the_count(self, bank, candidate, h):
        paris = h.settings(candidate, time_zone="Europe/Paris")
        now = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)  # the review day of Saturday 28 March is 23 hours long
        assert forecast_and_deck(candidate, 7, now) == (due_forecast(candidate, 7, now), 0)
        items = [bank["kv-formula"], bank["kv-paged"], bank["kv-fp8"], bank["ridge"]]
        add_to_deck(candidate, items, now=now)
        start, end = day_bounds(paris.tz, date(2026, 3, 28))
        for item, due in zip(items, (now - timedelta(days=5), start, end - timedelta(microseconds=1), end)):
            Card.objects.filter(user=candidate, item=item).update(due=due)
        forecast, deck = forecast_and_deck(candidate, 7, now)
        assert (forecast, deck) == (due_forecast(candidate, 7, now), 4)
        assert [count for _, count in forecast[:3]] == [1, 2, 1]
        Card.objects.filter(user=candidate).update(due=now + timedelta(days=30))  # nothing in the forecast
        Card.objects.filter(user=candidate, item=bank["ridge"]).update(suspended=True)
        assert forecast_and_deck(candidate, 7, now) == (due_forecast(candidate, 7, now), 3)

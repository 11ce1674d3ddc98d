"""The review flow with a moving clock: a week of reviews, one review per version, problem variants."""

from __future__ import annotations

import threading
from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.db import connection

from drills.models import Attempt, Card, ProblemInstance, ReviewLog, StepAnswer
from drills.reviews.progress import progress_for
from drills.reviews.scheduling import EASY, GOOD, add_to_deck, chapter_items, due_forecast, due_queue
from drills.reviews.services import problem_for, problem_seed, record_open_review, record_problem_review

UTC = dt_timezone.utc


def review_everything_due(user, now: datetime, h, *, fail: set[str] = frozenset(), slips: set[str] = frozenset()):
    """Work the queue at ``now`` as a steady candidate: open questions rated Good with every rubric point
    ticked, except the first time a slug in ``fail`` comes up: none ticked, rated from the ticks (Again);
    problems answered in the item's time box and 30 s more (Good at best), every step right except ``per_user_gib``
    for slugs in ``slips``. Cards that come back later the same day (learning steps) are done when they fall due.
    Returns the reviews made."""
    made = []
    failed_once = set()
    clock = now
    for _ in range(50):
        queue = [card for card in due_queue(user, clock) if card.due <= clock]
        if not queue:
            later = due_queue(user, clock)
            if not later:
                break
            clock = later[0].due + timedelta(seconds=1)
            continue
        card = queue[0]
        if card.item.kind == "problem":
            problem = problem_for(card)
            answers = h.answers(problem)
            if card.item.slug in slips and "per_user_gib" in answers:
                answers["per_user_gib"] = "3"
            taken = timedelta(seconds=card.item.details["time_box_s"] + 30)
            outcome = record_problem_review(user, card.pk, card.version, answers, started_at=clock - taken,
                                            now=clock)
        else:
            failed = card.item.slug in fail and card.item.slug not in failed_once
            if failed:
                failed_once.add(card.item.slug)
            ticked = [] if failed else list(range(len(card.item.rubric)))
            outcome = record_open_review(user, card.pk, card.version, None if failed else GOOD, answer="Mine.",
                                         ticked=ticked, started_at=clock - timedelta(seconds=40), now=clock)
        assert outcome.created
        made.append(outcome.log)
        clock += timedelta(seconds=30)
    return made


class TestAWeekOfReviews:
    def test_a_new_candidate_builds_a_deck_reviews_a_week_and_sees_the_forecast_and_plots_fill(self, bank, candidate,
                                                                                                h):
        h.settings(candidate, time_zone="Europe/Paris")
        empty = progress_for(candidate, h.T0)
        assert not empty.has_history and empty.cards == 0 and empty.streak == 0

        added = add_to_deck(candidate, chapter_items(bank["kv-formula"].chapter), Card.VIA_CHAPTER, h.T0)
        assert added == 5  # three questions of chapter 06, the ladder and KV templates
        assert due_forecast(candidate, 7, h.T0)[0] == (date(2026, 3, 2), 5)
        assert sum(count for _, count in due_forecast(candidate, 7, h.T0)[1:]) == 0

        day_one = review_everything_due(candidate, h.T0, h, fail={"kv-fp8"}, slips={"ladder"})
        # A new card rated Good takes two learning steps (1 and 10 minutes) before its first interval in days;
        # kv-fp8 is failed once (back to the first step) and then passed.
        assert [log.rating for log in day_one if log.item_slug == "kv-fp8"] == [1, 3, 3]
        assert len(day_one) == 11
        after = due_forecast(candidate, 7, h.T0 + timedelta(hours=3))
        assert after[0] == (date(2026, 3, 2), 0)  # nothing left today
        assert sum(count for _, count in after) == 5  # all five now fall due later in the week

        reviews_per_day = {}
        for offset in range(1, 7):
            morning = datetime(2026, 3, 2 + offset, 8, 0, tzinfo=UTC)  # 09:00 in Paris
            reviews_per_day[offset] = len(review_everything_due(candidate, morning, h))
        total = len(day_one) + sum(reviews_per_day.values())
        assert ReviewLog.objects.filter(user=candidate).count() == total

        end = datetime(2026, 3, 8, 20, 0, tzinfo=UTC)
        progress = progress_for(candidate, end)
        assert progress.total_reviews == total
        active = {row.day: row for row in progress.active_days}
        assert active[date(2026, 3, 2)].reviews == len(day_one)
        assert set(active) == {date(2026, 3, 2)} | {date(2026, 3, 2 + o) for o, n in reviews_per_day.items() if n}
        assert 0 < active[date(2026, 3, 2)].recall < 1  # kv-fp8 was failed
        assert active[date(2026, 3, 2)].accuracy is not None
        # Per chapter: chapter 06 holds the questions and both templates.
        assert [share.label for share in progress.chapters] == ["06 · The KV cache"]
        # Per ladder step: eight steps, all right except the slipped per-user step.
        steps = {share.key: share for share in progress.ladder_steps}
        assert list(steps) == ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token",
                               "per_user_gib", "users_worst_case", "users_paged"]
        assert steps["card_gib"].mean == 1.0
        assert steps["per_user_gib"].mean < 1.0
        assert progress.learned >= 4
        assert progress.longest_streak >= 2
        data = progress.chart_data()
        assert sum(data["reviews"]) == total
        assert data["days"] == [f"2026-03-0{d}" for d in range(2, 9)]  # from the first review to today
        assert any(value is not None for value in data["recall"])


class TestOneReviewPerVersion:
    def test_a_second_submission_of_the_same_version_returns_the_first(self, bank, candidate, h):
        add_to_deck(candidate, [bank["kv-paged"]], now=h.T0)
        card = Card.objects.get(user=candidate)

        first = record_open_review(candidate, card.pk, 0, GOOD, answer="A", now=h.T0)
        second = record_open_review(candidate, card.pk, 0, EASY, answer="B", now=h.T0 + timedelta(seconds=1))

        assert first.created and not second.created and second.duplicate
        assert second.log.pk == first.log.pk and second.log.rating == GOOD
        assert ReviewLog.objects.count() == 1
        card.refresh_from_db()
        assert card.version == 1 and card.reps == 1

    def test_a_page_older_than_the_last_review_records_nothing(self, bank, candidate, h):
        add_to_deck(candidate, [bank["kv-paged"]], now=h.T0)
        card = Card.objects.get(user=candidate)
        outcome = record_open_review(candidate, card.pk, 7, GOOD, now=h.T0)
        assert outcome.log is None and not outcome.created
        assert ReviewLog.objects.count() == 0

    def test_a_problem_submitted_twice_is_graded_and_stored_once(self, bank, candidate, h):
        add_to_deck(candidate, [bank["ladder"]], now=h.T0)
        card = Card.objects.get(user=candidate)
        answers = h.answers(problem_for(card))

        first = record_problem_review(candidate, card.pk, 0, answers, now=h.T0)
        second = record_problem_review(candidate, card.pk, 0, answers, now=h.T0)

        assert first.created and second.duplicate and second.log.pk == first.log.pk
        assert Attempt.objects.count() == 1 and ReviewLog.objects.count() == 1

    @pytest.mark.django_db(transaction=True)
    def test_two_concurrent_submissions_record_one_review(self, bank, candidate, h):
        """Two threads post the same card version at once (on PostgreSQL: row lock; SQLite, a file in WAL mode:
        ``BEGIN IMMEDIATE`` serialises the writers, the second waits instead of failing "database is locked")."""
        add_to_deck(candidate, [bank["kv-paged"]], now=h.T0)
        card = Card.objects.get(user=candidate)
        barrier = threading.Barrier(2)
        outcomes, errors = [], []

        def submit(rating):
            try:
                barrier.wait(timeout=10)
                outcomes.append(record_open_review(candidate, card.pk, 0, rating, answer="x", now=h.T0))
            except Exception as exc:
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=submit, args=(rating,)) for rating in (GOOD, EASY)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        assert not errors
        assert sorted(outcome.created for outcome in outcomes) == [False, True]
        assert ReviewLog.objects.count() == 1
        assert {outcome.log.pk for outcome in outcomes} == {ReviewLog.objects.get().pk}
        assert Card.objects.get(pk=card.pk).version == 1


class TestProblemVariants:
    def test_each_review_draws_a_fresh_seeded_variant_and_a_refresh_shows_the_same(self, bank, candidate, h):
        add_to_deck(candidate, [bank["ladder"]], now=h.T0)
        card = Card.objects.get(user=candidate)
        first = problem_for(card)
        again = problem_for(Card.objects.get(pk=card.pk))
        assert again.pk == first.pk and first.seed == problem_seed(card)

        record_problem_review(candidate, card.pk, 0, h.answers(first), now=h.T0)
        card.refresh_from_db()
        assert card.version == 1 and card.pending_problem_id is None
        second = problem_for(card)
        assert second.pk != first.pk and second.seed != first.seed

    def test_fixed_inputs_hold_and_the_grade_sets_the_rating(self, bank, candidate, h):
        item = bank["ladder"]
        item.fixed_inputs = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb"}
        item.save()
        add_to_deck(candidate, [item], now=h.T0)
        card = Card.objects.get(user=candidate)
        problem = problem_for(card)
        assert problem.inputs["model"] == "llama-3.1-8b" and problem.inputs["gpu"] == "h100-sxm5-80gb"
        assert problem.snapshot["models"][0]["id"] == "llama-3.1-8b"

        # All eight steps right in 90 s (inside the 6-minute box): Easy.
        outcome = record_problem_review(candidate, card.pk, 0, h.answers(problem),
                                        started_at=h.T0 - timedelta(seconds=90), now=h.T0)
        log = outcome.log
        assert (log.grade, log.rating, log.duration_ms) == (1.0, EASY, 90_000)
        assert log.problem == problem and log.attempt.time_taken_s == 90
        assert StepAnswer.objects.filter(attempt=log.attempt, verdict="correct").count() == 8

    def test_a_slip_on_two_steps_rates_hard(self, bank, candidate, h):
        add_to_deck(candidate, [bank["kv"]], now=h.T0)
        card = Card.objects.get(user=candidate)
        problem = problem_for(card)
        # Every step wrong whatever variant the card's pk draws: "1" is right where a step's value is 1, and
        # consistent wrong answers earn carried_forward credit; one huge number for every step is neither.
        answers = {key: "7777777" for key in h.answers(problem)}
        outcome = record_problem_review(candidate, card.pk, 0, answers, now=h.T0)
        assert outcome.log.grade == 0 and outcome.log.rating == 1  # Again
        assert ProblemInstance.objects.filter(pk=problem.pk).exists()


def test_review_logs_are_append_only(bank, candidate, h):
    add_to_deck(candidate, [bank["ridge"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    log = record_open_review(candidate, card.pk, 0, GOOD, now=h.T0).log
    log.rating = EASY
    with pytest.raises(ValueError, match="append-only"):
        log.save()
    with pytest.raises(ValueError, match="append-only"):
        log.delete()
    assert ReviewLog.objects.get().rating == GOOD


@pytest.mark.parametrize("days, today, expected", [
    (set(), date(2026, 3, 8), (0, 0)),
    ({date(2026, 3, d) for d in (2, 3, 4, 6, 7, 8)}, date(2026, 3, 8), (3, 3)),
    ({date(2026, 3, d) for d in (2, 3, 4, 5, 7)}, date(2026, 3, 8), (1, 4)),   # yesterday still counts
    ({date(2026, 3, d) for d in (2, 3, 4, 5)}, date(2026, 3, 8), (0, 4)),      # broken two days ago
])
def test_streaks(days, today, expected):
    from drills.reviews.progress import streaks

    assert streaks(days, today) == expected


def test_a_review_after_midnight_keeps_the_evening_streak(bank, candidate, h):
    """Reviews at 21:00 on Monday and 01:30 on Wednesday (Paris) are one streak of two days, Monday and Tuesday:
    the review day turns at 04:00. At 03:00 on Wednesday it is still Tuesday, and the streak is current."""
    h.settings(candidate, time_zone="Europe/Paris")  # UTC+1 in March
    add_to_deck(candidate, [bank["kv-fp8"], bank["ridge"]], now=h.T0)
    first, second = Card.objects.filter(user=candidate).order_by("pk")
    record_open_review(candidate, first.pk, 0, GOOD, now=datetime(2026, 3, 2, 20, 0, tzinfo=dt_timezone.utc))
    record_open_review(candidate, second.pk, 0, GOOD, now=datetime(2026, 3, 4, 0, 30, tzinfo=dt_timezone.utc))

    progress = progress_for(candidate, now=datetime(2026, 3, 4, 2, 0, tzinfo=dt_timezone.utc))

    assert progress.today == date(2026, 3, 3)
    assert (progress.streak, progress.longest_streak) == (2, 2)
    assert [(row.day, row.reviews) for row in progress.days if row.reviews] == [(date(2026, 3, 2), 1),
                                                                                 (date(2026, 3, 3), 1)]

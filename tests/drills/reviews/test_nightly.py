"""The nightly job: refitting FSRS parameters and the due-today digest; eagerly, then on a real Celery worker."""

from __future__ import annotations

import sqlite3
import time
from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from fsrs.scheduler import DEFAULT_PARAMETERS

from config.celery import app as celery_app
from drills import tasks
from drills.models import Card, ReviewLog, ReviewSettings
from drills.reviews import nightly
from drills.reviews.scheduling import GOOD, add_to_deck, scheduler_for
from drills.reviews.services import record_open_review
from tests.celery_worker import new_queue, real_worker, require_redis, worker_database_url, worker_environment

UTC = dt_timezone.utc
# Tuesday 3 March 2026, 05:30 UTC: 06:30 in Paris, 00:30 in New York, 14:30 in Tokyo.
MORNING = datetime(2026, 3, 3, 5, 30, tzinfo=UTC)


def bulk_logs(user, card: Card, count: int, start: datetime) -> None:
    """``count`` reviews of ``card`` spread a day apart before ``start`` (for the refit's threshold)."""
    ReviewLog.objects.bulk_create([
        ReviewLog(card=card, user=user, item=card.item, item_slug=card.item.slug, card_version=1000 + n,
                  rating=GOOD if n % 5 else 1, reviewed_at=start - timedelta(days=count - n), state_before=2,
                  due_after=start)
        for n in range(count)])


@pytest.fixture
def reviewers(bank, candidate, bob, h):
    """alice in Paris with the digest on and two cards due; bob in New York with the digest on; both reviewed
    yesterday."""
    for user, zone in ((candidate, "Europe/Paris"), (bob, "America/New_York")):
        h.settings(user, time_zone=zone, digest=True)
        add_to_deck(user, [bank["kv-paged"], bank["ridge"]], now=MORNING - timedelta(days=1))
        card = Card.objects.get(user=user, item__slug="kv-paged")
        record_open_review(user, card.pk, 0, GOOD, now=MORNING - timedelta(days=1))
    return candidate, bob


class TestSelection:
    def test_each_candidate_in_their_own_morning(self, reviewers):
        alice, bob = reviewers
        assert nightly.users_to_digest(MORNING) == [(alice.pk, date(2026, 3, 3))]
        assert nightly.users_to_refit(MORNING) == [(alice.pk, date(2026, 3, 3))]
        # Eleven hours later it is 06:30 in New York too (and still the 3rd in Paris, already sent there).
        later = MORNING + timedelta(hours=6)
        assert nightly.users_to_digest(later) == [(alice.pk, date(2026, 3, 3)), (bob.pk, date(2026, 3, 3))]

    def test_the_selection_reads_every_zone_in_one_query(self, reviewers, django_assert_num_queries):
        # Each row's zone comes with it (select_related): one query however many candidates, as before the zone
        # moved from the review settings to accounts.TimeZonePreference.
        with django_assert_num_queries(1):
            assert len(nightly.users_to_digest(MORNING + timedelta(hours=6))) == 2
        with django_assert_num_queries(1):
            assert len(nightly.users_to_refit(MORNING + timedelta(hours=6))) == 2

    def test_nobody_without_the_digest_or_a_deck(self, reviewers):
        alice, bob = reviewers
        ReviewSettings.objects.filter(user=bob).update(digest=False)
        Card.objects.filter(user=alice).update(suspended=True)
        assert nightly.users_to_digest(MORNING + timedelta(hours=6)) == []

    def test_inactive_candidates_are_not_refit(self, reviewers):
        assert nightly.users_to_refit(MORNING + timedelta(days=40)) == []


class TestDigest:
    def test_it_lists_what_is_due_today_once_a_day(self, reviewers, mailoutbox):
        alice, _ = reviewers
        assert nightly.send_digest(alice.pk, now=MORNING)
        assert not nightly.send_digest(alice.pk, now=MORNING + timedelta(hours=1))
        assert len(mailoutbox) == 1
        mail = mailoutbox[0]
        assert mail.to == ["alice@example.com"]
        assert mail.subject == "2 cards due today · LLM Serving Prep"
        assert "due today (Tuesday 3 March)" in mail.body
        assert "- Explain kv-paged." in mail.body and "- Explain ridge." in mail.body
        assert f"{django_settings.SITE_URL}/review/" in mail.body
        assert ReviewSettings.objects.get(user=alice).last_digest_on == date(2026, 3, 3)

    def test_nothing_due_sends_nothing(self, reviewers, mailoutbox):
        alice, _ = reviewers
        Card.objects.filter(user=alice).update(due=MORNING + timedelta(days=3))
        assert not nightly.send_digest(alice.pk, now=MORNING)
        assert mailoutbox == []

    def test_it_mentions_the_interview(self, reviewers, mailoutbox):
        alice, _ = reviewers
        ReviewSettings.objects.filter(user=alice).update(interview_date=date(2026, 3, 13))
        nightly.send_digest(alice.pk, now=MORNING)
        assert "10 days to your interview" in mailoutbox[0].body


class TestRefit:
    def test_too_few_reviews_keep_the_parameters(self, reviewers):
        alice, _ = reviewers
        note = nightly.refit(alice.pk, now=MORNING)
        assert note == "1 reviews so far; a refit needs 200: the parameters stay as they are."
        row = ReviewSettings.objects.get(user=alice)
        assert row.parameters == [] and row.refit_checked_on == date(2026, 3, 3)

    def test_without_the_optimiser_the_defaults_stay(self, reviewers):
        alice, _ = reviewers
        card = Card.objects.get(user=alice, item__slug="ridge")
        bulk_logs(alice, card, 250, MORNING)
        assert nightly.load_optimizer() is None  # the fsrs[optimizer] extra is not installed here
        note = nightly.refit(alice.pk, now=MORNING)
        assert "251 reviews, but fsrs's optimiser is not installed" in note
        assert ReviewSettings.objects.get(user=alice).parameters == []

    def test_with_an_optimiser_the_fitted_parameters_schedule_the_next_reviews(self, reviewers, monkeypatch):
        alice, _ = reviewers
        card = Card.objects.get(user=alice, item__slug="ridge")
        bulk_logs(alice, card, 250, MORNING)
        fitted = list(DEFAULT_PARAMETERS)
        fitted[2] = 3.5  # a longer first interval after Good
        seen = {}

        class FakeOptimizer:
            def __init__(self, logs):
                seen["logs"] = len(logs)
                seen["card_ids"] = {log.card_id for log in logs}

            def compute_optimal_parameters(self):
                return fitted

        monkeypatch.setattr(nightly, "load_optimizer", lambda: FakeOptimizer)
        assert nightly.refit(alice.pk, now=MORNING) == "Fitted on 251 reviews."
        row = ReviewSettings.objects.get(user=alice)
        assert row.parameters == fitted and row.fitted_reviews == 251 and row.fitted_at == MORNING
        assert seen == {"logs": 251, "card_ids": {card.pk, Card.objects.get(user=alice, item__slug="kv-paged").pk}}
        assert scheduler_for(row).parameters == tuple(fitted)
        # Once a day: a second run the same local day leaves everything as it is.
        monkeypatch.setattr(nightly, "load_optimizer", lambda: None)
        assert nightly.refit(alice.pk, now=MORNING + timedelta(hours=2)) == "Fitted on 251 reviews."


class TestTasks:
    def test_the_beat_schedule_names_a_registered_task(self):
        entry = django_settings.CELERY_BEAT_SCHEDULE["reviews-nightly"]
        assert entry["task"] == "drills.tasks.nightly_reviews" and entry["task"] in celery_app.tasks
        assert django_settings.CELERY_BEAT_SCHEDULER == "django_celery_beat.schedulers:DatabaseScheduler"
        assert "django_celery_beat" in django_settings.INSTALLED_APPS

    def test_the_nightly_task_fans_out_after_commit_and_is_idempotent(self, reviewers, mailoutbox,
                                                                       django_capture_on_commit_callbacks):
        alice, _ = reviewers
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            picked = tasks.nightly_reviews.delay(MORNING.isoformat()).get()
        assert picked == {"refit": [alice.pk], "digest": [alice.pk]}
        assert len(callbacks) == 2
        assert len(mailoutbox) == 1
        row = ReviewSettings.objects.get(user=alice)
        assert row.refit_checked_on == row.last_digest_on == date(2026, 3, 3)
        with django_capture_on_commit_callbacks(execute=True):
            assert tasks.nightly_reviews.delay(MORNING.isoformat()).get() == {"refit": [], "digest": []}
        assert len(mailoutbox) == 1

    def test_tasks_retry_with_back_off(self):
        for task in (tasks.nightly_reviews, tasks.refit_parameters, tasks.send_due_digest):
            assert task.retry_backoff is True and task.max_retries == 5
            assert OSError in task.autoretry_for


# --- a real worker --------------------------------------------------------------------------------------------


def _read(path: Path | None, user_id: int) -> tuple:
    """(last_digest_on, refit_checked_on, refit_note) of a user's settings, as the worker left them."""
    if path is None:
        row = ReviewSettings.objects.get(user_id=user_id)
        return (row.last_digest_on.isoformat() if row.last_digest_on else None,
                row.refit_checked_on.isoformat() if row.refit_checked_on else None, row.refit_note)
    with sqlite3.connect(path) as db:
        return db.execute("select last_digest_on, refit_checked_on, refit_note from drills_reviewsettings "
                          "where user_id = ?", (user_id,)).fetchone()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_nightly_task_runs_on_a_real_worker_through_redis(reviewers, tmp_path):
    """The beat task goes through Redis to a real worker, which fans out to the refit and the digest on the same
    queue; the digest is written by the console mail backend to the worker's output."""
    require_redis()
    alice, bob = reviewers
    bulk_logs(alice, Card.objects.get(user=alice, item__slug="ridge"), 210, MORNING)
    database_url, sqlite_path = worker_database_url(tmp_path)

    # Every broker and result key of this run under one prefix, deleted at the end: the shared Redis keeps
    # nothing of this test (issue 21, finding 8).
    environment = worker_environment("CELERY_", "DATABASE_", "EMAIL_", DATABASE_URL=database_url,
                                     EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
    with real_worker(new_queue("nightly"), environment, prefixed=True) as worker:
        result = worker.send_task("drills.tasks.nightly_reviews", args=[MORNING.isoformat()])
        assert result.get(timeout=90) == {"refit": [alice.pk], "digest": [alice.pk]}
        deadline = time.monotonic() + 60
        state = _read(sqlite_path, alice.pk)
        while time.monotonic() < deadline and (state[0] is None or state[1] is None):
            time.sleep(0.5)
            state = _read(sqlite_path, alice.pk)
    assert not worker.left, f"keys left in the shared Redis: {worker.left[:5]}"
    output = worker.output

    assert state[0] == state[1] == "2026-03-03", output
    assert "211 reviews, but fsrs's optimiser is not installed" in state[2]
    assert "drills.tasks.send_due_digest" in output and "drills.tasks.refit_parameters" in output
    assert "To: alice@example.com" in output and "2 cards are due today (Tuesday 3 March)" in output
    assert "- Explain kv-paged." in output and "To: bob@example.com" not in output
    assert _read(sqlite_path, bob.pk)[:2] == (None, None)  # still night in New York

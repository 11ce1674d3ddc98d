"""Celery tasks of the drills app.

``nightly_reviews`` is the beat job (``CELERY_BEAT_SCHEDULE`` in settings,
hourly): it selects the candidates whose night or morning it is
(:mod:`drills.reviews.nightly`) and enqueues one task per candidate and job, after
commit, through the outbox (:func:`outbox.services.enqueue`: kept if the broker
is down), on the queue it was itself taken from. The per-candidate tasks take
ids, are idempotent for a local day, and retry with exponential back-off on
database and mail-server errors.

``close_due_rounds`` (beat, every minute) selects the timed rounds whose
deadline and its few seconds' grace (``LATE_GRACE``) have passed and enqueues one ``close_round`` per round; closing is
idempotent (a round already closed is left as it is). A round's own requests
also close it once its deadline has passed, so without a beat (the embedded
default, ``./bin/serve``) a round closes when its candidate next opens it.
"""

from __future__ import annotations

from datetime import date, datetime

from celery import shared_task
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from config.celery import RETRY
from drills.reviews import nightly
from drills.rounds import services as rounds
from drills.rounds.models import Round
from outbox.services import enqueue


def _moment(now: str | None) -> datetime | None:
    return parse_datetime(now) if now else None


def _day(day: str | None) -> date | None:
    return date.fromisoformat(day) if day else None


def _queue_of(request) -> str | None:
    """The queue a task came from (``None`` when run eagerly), so the jobs it fans out go to the same workers."""
    if getattr(request, "is_eager", False):
        return None
    return (getattr(request, "delivery_info", None) or {}).get("routing_key") or None


@shared_task(bind=True, name="drills.tasks.nightly_reviews", **RETRY)
def nightly_reviews(self, now: str | None = None) -> dict:
    """Enqueue today's refits and digests; returns the user ids picked for each."""
    moment = _moment(now)
    queue = _queue_of(self.request)
    refits = nightly.users_to_refit(moment)
    digests = nightly.users_to_digest(moment)
    for user_id, day in refits:
        enqueue(refit_parameters, [user_id, day.isoformat(), now], queue=queue)
    for user_id, day in digests:
        enqueue(send_due_digest, [user_id, day.isoformat(), now], queue=queue)
    return {"refit": [user_id for user_id, _ in refits], "digest": [user_id for user_id, _ in digests]}


@shared_task(bind=True, name="drills.tasks.refit_parameters", **RETRY)
def refit_parameters(self, user_id: int, day: str | None = None, now: str | None = None) -> str:
    """Refit one candidate's FSRS parameters (once per local day); returns the note stored."""
    return nightly.refit(user_id, _day(day), _moment(now))


@shared_task(bind=True, name="drills.tasks.send_due_digest", **RETRY)
def send_due_digest(self, user_id: int, day: str | None = None, now: str | None = None) -> bool:
    """Send one candidate's due-today digest (once per local day); whether a mail went out."""
    return nightly.send_digest(user_id, _day(day), _moment(now))


@shared_task(bind=True, name="drills.tasks.close_due_rounds", **RETRY)
def close_due_rounds(self, now: str | None = None) -> list[int]:
    """Enqueue the closing of every active round past its deadline; returns their ids."""
    moment = _moment(now) or timezone.now()
    due = list(Round.objects.active().filter(deadline__lte=moment - rounds.LATE_GRACE)
               .order_by("pk").values_list("pk", flat=True))
    queue = _queue_of(self.request)
    for round_id in due:
        enqueue(close_round, [round_id, now], queue=queue)
    return due


@shared_task(bind=True, name="drills.tasks.close_round", **RETRY)
def close_round(self, round_id: int, now: str | None = None) -> str:
    """Close one round if its deadline has passed (grading what was saved, then the FSRS reviews); its status."""
    round_ = Round.objects.filter(pk=round_id).first()
    if round_ is None:
        return "gone"
    return rounds.close_if_due(round_, _moment(now), grace=True).status

"""Celery tasks of coaching: the "assigned" e-mail, the daily due reminders, and a cohort's change of coach.

Tasks take ids, are idempotent (a :class:`~coaching.models.Notice` row per
mail sent) and retry with exponential back-off on database and mail errors.
``send_due_reminders`` is the beat job (``CELERY_BEAT_SCHEDULE``, daily): it
selects the (assignment, candidate) pairs due tomorrow and enqueues one task
each after commit, through the outbox (:func:`outbox.services.enqueue`).
"""

from __future__ import annotations

from celery import shared_task
from django.utils.dateparse import parse_datetime

from config.celery import RETRY
from outbox.services import enqueue

from . import notices
from .models import Notice


@shared_task(bind=True, name="coaching.tasks.send_assignment_notice", **RETRY)
def send_assignment_notice(self, assignment_id: int, candidate_id: int, kind: str = Notice.ASSIGNED,
                           now: str | None = None) -> bool:
    """E-mail one candidate about one assignment (once per kind); whether a mail went out."""
    return notices.send_notice(assignment_id, candidate_id, kind, parse_datetime(now) if now else None)


@shared_task(bind=True, name="coaching.tasks.send_due_reminders", **RETRY)
def send_due_reminders(self, now: str | None = None) -> list[list[int]]:
    """Enqueue a reminder for every assignment due tomorrow and not done; returns the pairs."""
    pairs = notices.reminders_due(parse_datetime(now) if now else None)
    for assignment_id, candidate_id in pairs:
        enqueue(send_assignment_notice, [assignment_id, candidate_id, Notice.REMINDER, now])
    return [list(pair) for pair in pairs]


@shared_task(bind=True, name="coaching.tasks.send_cohort_notice", **RETRY)
def send_cohort_notice(self, candidate_id: int, cohort_name: str, old_coach: str, successor_id: int | None,
                       cohort_id: int | None) -> bool:
    """E-mail one candidate that their cohort's coach left, and who coaches it now (or that it closed).

    Published once per candidate by the deletion's outbox row; a mail repeated by an at-least-once
    redelivery says the same thing again, and there is no row left (the cohort may be gone) to dedupe on.
    """
    return notices.send_cohort_notice(candidate_id, cohort_name, old_coach, successor_id, cohort_id)

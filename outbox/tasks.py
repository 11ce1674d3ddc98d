"""The outbox's beat task: publish what could not be queued (``CELERY_BEAT_SCHEDULE``, every minute)."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from . import services


@shared_task(name="outbox.tasks.drain_outbox", ignore_result=True)
def drain_outbox(everything: bool = False) -> dict:
    """Publish the pending outbox rows whose back-off has passed; returns the counts of :class:`Drained`."""
    return asdict(services.drain(everything=everything))

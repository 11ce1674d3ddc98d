"""The outbox's beat task (publish what could not be queued, every minute) and the worker's acknowledgement.

:func:`acknowledge_outbox_row` runs in the worker after every task: a task
published from an outbox row (task id ``outbox-<pk>-…``) that finished, well or
for good, marks its row delivered, so the drain stops re-publishing it. A task
that will retry (state ``RETRY``) does not: its retry could be lost with Redis.
"""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task, states
from celery.signals import task_postrun

from . import services


@shared_task(name="outbox.tasks.drain_outbox", ignore_result=True)
def drain_outbox(everything: bool = False) -> dict:
    """Publish the pending outbox rows whose back-off has passed; returns the counts of :class:`Drained`."""
    return asdict(services.drain(everything=everything))


@task_postrun.connect(dispatch_uid="outbox.acknowledge")
def acknowledge_outbox_row(sender=None, task_id: str | None = None, state: str | None = None, **kwargs) -> None:
    """Celery's ``task_postrun`` receiver: mark the outbox row of a task that ran to the end delivered."""
    if state in (states.SUCCESS, states.FAILURE):
        services.acknowledge(task_id)

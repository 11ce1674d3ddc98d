"""Queue Celery tasks through the outbox, and drain it.

:func:`enqueue` is the one way the project queues a task:

* **No broker** (``CELERY_TASK_ALWAYS_EAGER``, the local default and the unit
  tests): the task runs in-process once the transaction commits, exactly as
  ``transaction.on_commit(lambda: task.apply_async(...))`` did; no row is written.
* **A broker**: an :class:`~outbox.models.OutboxMessage` row is written in the
  caller's transaction (so the message exists if and only if the data it is
  about was committed), and published once the transaction commits, with the
  short publish retry policy of the settings (``CELERY_TASK_PUBLISH_RETRY_POLICY``).
  A broker error leaves the row pending, logs one warning and the request
  carries on; for :data:`PAUSE_AFTER_ERROR` seconds after such an error this
  process does not try again on commit, so every request stays fast during an
  outage. A process that dies between the commit and the publication loses
  nothing either: the row is still pending.

:func:`drain` publishes pending rows: the beat task ``outbox.tasks.drain_outbox``
runs it every minute and ``manage.py drain_outbox`` on demand. A failed try
counts in ``attempts`` and pushes the row back exponentially (:func:`backoff`).
Rows are taken with ``SELECT ... FOR UPDATE SKIP LOCKED`` (PostgreSQL), so two
drainers, or a drainer and a committing request, never publish the same row.
Publication is at least once (a crash after the broker took a message but
before its row was marked repeats it): the tasks are idempotent by their own
rows (a ``Notice`` per mail, a day per digest or refit).

A row is done only when its task has run: each message carries the task id
``outbox-<row id>-<random>`` and the worker marks the row ``delivered_at`` when
that task finishes (:func:`acknowledge`, on Celery's ``task_postrun``). A row
published more than ``settings.OUTBOX_REPUBLISH_AFTER_S`` seconds ago and never
acknowledged (the message died with a Redis restarted without persistence, or
evicted) goes back to pending and the drain publishes it again.
"""

from __future__ import annotations

import functools
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.celery import app as celery_app

from .models import OutboxMessage

logger = logging.getLogger(__name__)

#: A new row is its committing process's to publish: the drain leaves it alone this long.
GRACE = timedelta(seconds=30)
#: After the n-th failed try a row waits ``BACKOFF_BASE * 2**(n - 1)``, at most ``BACKOFF_MAX``.
BACKOFF_BASE = timedelta(seconds=30)
BACKOFF_MAX = timedelta(minutes=10)
#: Seconds during which, after a broker error, this process leaves new rows to the drain.
PAUSE_AFTER_ERROR = 15.0
#: Published rows are kept this long (to be seen in the admin), then deleted by the drain.
KEEP_SENT = timedelta(days=3)
#: Rows locked and published per transaction by the drain.
BATCH = 100

#: The prefix of the Celery task id of every message published from a row: ``outbox-<pk>-<random hex>``.
TASK_ID_PREFIX = "outbox-"

_paused_until = 0.0
_CREDENTIALS = re.compile(r"(\w+://)[^@/\s]+@")


def enqueue(task, args=(), kwargs: dict | None = None, *, queue: str | None = None) -> None:
    """Queue ``task(*args, **kwargs)`` (on ``queue``, else the task's default) once the transaction commits.

    ``task`` is a task or its name; it is always sent through the project's
    Celery app (:mod:`config.celery`), whatever other app is current. Arguments
    must be JSON values (ids, ISO dates): with a broker they are stored in the outbox row.
    """
    name = task if isinstance(task, str) else task.name
    args, kwargs = list(args), dict(kwargs or {})
    if celery_app.conf.task_always_eager:
        options = {"queue": queue} if queue else {}
        transaction.on_commit(lambda: _task(name).apply_async(args=args, kwargs=kwargs, **options))
        return
    message = OutboxMessage.objects.create(task=name, args=args, kwargs=kwargs, queue=queue or "",
                                           available_at=timezone.now() + GRACE)
    transaction.on_commit(functools.partial(_publish_committed, message.pk), robust=True)


def _publish_committed(pk: int) -> None:
    """Publish one new row after its transaction committed, unless the broker failed moments ago."""
    if time.monotonic() < _paused_until:
        return
    with transaction.atomic():
        message = OutboxMessage.objects.select_for_update(skip_locked=True).pending().filter(pk=pk).first()
        if message is not None:  # None: a drainer holds it, or already published it
            _publish(message)


def _task(name: str):
    tasks = celery_app.tasks
    if name not in tasks:
        celery_app.loader.import_default_modules()  # a management command has not imported the tasks modules
    return tasks[name]


def backoff(attempts: int) -> timedelta:
    """How long a row waits after its ``attempts``-th failed try."""
    return min(BACKOFF_MAX, BACKOFF_BASE * 2 ** max(0, attempts - 1))


def describe(error: BaseException) -> str:
    """The error's type and message, credentials in URLs masked, at most 500 characters."""
    return _CREDENTIALS.sub(r"\1***@", f"{type(error).__name__}: {error}")[:500]


def _publish(message: OutboxMessage) -> bool:
    """Hand one row (locked by the caller) to the broker and record the outcome on it; whether it went."""
    global _paused_until
    message.attempts += 1
    options = {"queue": message.queue} if message.queue else {}
    try:
        # A savepoint: a task run eagerly that fails must not spoil the caller's transaction.
        with transaction.atomic():
            _task(message.task).apply_async(args=message.args, kwargs=message.kwargs, ignore_result=True,
                                            retry=True, task_id=f"{TASK_ID_PREFIX}{message.pk}-{uuid.uuid4().hex}",
                                            **options)
    except Exception as error:
        _paused_until = time.monotonic() + PAUSE_AFTER_ERROR
        message.last_error = describe(error)
        message.available_at = timezone.now() + backoff(message.attempts)
        message.save(update_fields=["attempts", "last_error", "available_at"])
        logger.warning("Could not queue %s (outbox message %s, try %s): %s. It stays in the outbox for the drain.",
                       message.task, message.pk, message.attempts, message.last_error)
        return False
    _paused_until = 0.0
    message.sent_at = timezone.now()
    message.save(update_fields=["attempts", "sent_at"])
    return True


def acknowledge(task_id: str | None, now: datetime | None = None) -> bool:
    """Mark the row a finished task came from delivered (idempotent); whether ``task_id`` named a row.

    ``task_id`` is the Celery task id; ids not of the form ``outbox-<pk>-…`` (tasks
    not queued through the outbox) are ignored. A row already delivered keeps its first time.
    """
    if not task_id or not task_id.startswith(TASK_ID_PREFIX):
        return False
    pk = task_id[len(TASK_ID_PREFIX):].split("-", 1)[0]
    if not pk.isdigit():
        return False
    OutboxMessage.objects.filter(pk=int(pk), delivered_at__isnull=True).update(delivered_at=now or timezone.now())
    return True


def republish_after() -> timedelta:
    """How long a published row may wait for its task's acknowledgement (``settings.OUTBOX_REPUBLISH_AFTER_S``)."""
    return timedelta(seconds=getattr(settings, "OUTBOX_REPUBLISH_AFTER_S", 900))


@dataclass(frozen=True)
class Drained:
    """What one drain did: rows published, rows that failed (0 or 1: it stops at the first) and why, rows pending,
    and rows put back to pending because their task never acknowledged them."""

    sent: int
    failed: int
    pending: int
    error: str = ""
    republished: int = 0


def drain(*, everything: bool = False, limit: int = 1000, now: datetime | None = None) -> Drained:
    """Publish pending rows whose back-off has passed (``everything``: all pending rows), oldest first.

    First puts back to pending (due at once) the rows published more than
    :func:`republish_after` ago and never acknowledged. Stops at the first
    failure (the broker is down again: the next run retries) or after ``limit``
    rows; deletes rows delivered more than :data:`KEEP_SENT` ago.
    """
    now = now or timezone.now()
    OutboxMessage.objects.filter(delivered_at__lt=now - KEEP_SENT).delete()
    republished = OutboxMessage.objects.unacknowledged(now - republish_after()).update(sent_at=None, available_at=now)
    if republished:
        logger.warning("Outbox: %s published messages were never acknowledged by a worker; publishing them again.",
                       republished)
    sent = failed = 0
    error = ""
    while not failed and sent < limit:
        with transaction.atomic():
            rows = OutboxMessage.objects.pending() if everything else OutboxMessage.objects.due(now)
            batch = list(rows.select_for_update(skip_locked=True).order_by("pk")[:min(BATCH, limit - sent)])
            if not batch:
                break
            for message in batch:
                if not _publish(message):
                    failed, error = 1, message.last_error
                    break
                sent += 1
    result = Drained(sent, failed, OutboxMessage.objects.pending().count(), error, republished)
    if sent or failed:
        logger.info("Outbox drained: %s published, %s failed, %s pending.", result.sent, result.failed, result.pending)
    return result

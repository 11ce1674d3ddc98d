"""One task to publish to the broker, kept until it has been published (and a while after)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class OutboxMessageQuerySet(models.QuerySet):
    """Outbox rows by delivery state: pending, and due for another try."""

    def pending(self):
        """Messages not yet published."""
        return self.filter(sent_at__isnull=True)

    def due(self, now=None):
        """Pending messages whose back-off has passed."""
        return self.pending().filter(available_at__lte=now or timezone.now())

    def unacknowledged(self, published_before):
        """Messages published before ``published_before`` (a datetime) whose task has not acknowledged them."""
        return self.filter(sent_at__lt=published_before, delivered_at__isnull=True)


class OutboxMessage(models.Model):
    """A Celery task call (name, arguments, queue) written in the same transaction as the data it is about.

    ``sent_at`` is set once the broker has taken it; until then the drain
    retries it no earlier than ``available_at`` (pushed back after each failed
    ``attempt``). ``delivered_at`` is set by the worker once the task has run
    (:mod:`outbox.tasks` acknowledges on Celery's ``task_postrun``); a row
    published long ago and never acknowledged (its message lost with a Redis
    restarted without persistence) is published again by the drain. Delivered
    rows are deleted by the drain after a few days.
    """

    task = models.CharField(max_length=200, help_text="The Celery task's name.")
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    queue = models.CharField(max_length=200, blank=True, help_text="Blank: the task's default queue.")
    created_at = models.DateTimeField(default=timezone.now)
    available_at = models.DateTimeField(default=timezone.now, help_text="The drain publishes it from then on.")
    attempts = models.PositiveIntegerField(default=0, help_text="Publications tried.")
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When the broker took it; blank: pending.")
    delivered_at = models.DateTimeField(null=True, blank=True,
                                        help_text="When a worker finished the task; blank: not acknowledged yet.")

    objects = OutboxMessageQuerySet.as_manager()

    class Meta:
        ordering = ["pk"]
        indexes = [
            models.Index(fields=["available_at"], condition=Q(sent_at__isnull=True), name="outbox_pending"),
            models.Index(fields=["sent_at"], name="outbox_sent"),
            models.Index(fields=["sent_at"], condition=Q(delivered_at__isnull=True), name="outbox_unacknowledged"),
        ]

    def __str__(self) -> str:
        if self.delivered_at:
            state = f"delivered {self.delivered_at:%Y-%m-%d %H:%M:%S}"
        elif self.sent_at:
            state = f"sent {self.sent_at:%Y-%m-%d %H:%M:%S}, not acknowledged"
        else:
            state = f"pending, {self.attempts} tries"
        return f"{self.task}{tuple(self.args)!r} ({state})"

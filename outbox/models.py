"""One task to publish to the broker, kept until it has been published (and a while after)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class OutboxMessageQuerySet(models.QuerySet):
    def pending(self):
        """Messages not yet published."""
        return self.filter(sent_at__isnull=True)

    def due(self, now=None):
        """Pending messages whose back-off has passed."""
        return self.pending().filter(available_at__lte=now or timezone.now())


class OutboxMessage(models.Model):
    """A Celery task call (name, arguments, queue) written in the same transaction as the data it is about.

    ``sent_at`` is set once the broker has taken it; until then the drain
    retries it no earlier than ``available_at`` (pushed back after each failed
    ``attempt``). Published rows are deleted by the drain after a few days.
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

    objects = OutboxMessageQuerySet.as_manager()

    class Meta:
        ordering = ["pk"]
        indexes = [
            models.Index(fields=["available_at"], condition=Q(sent_at__isnull=True), name="outbox_pending"),
            models.Index(fields=["sent_at"], name="outbox_sent"),
        ]

    def __str__(self) -> str:
        state = f"sent {self.sent_at:%Y-%m-%d %H:%M:%S}" if self.sent_at else f"pending, {self.attempts} tries"
        return f"{self.task}{tuple(self.args)!r} ({state})"

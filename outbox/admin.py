"""Staff see the outbox in the admin: what waits for the broker, how often it was tried, and why it failed.

A row can be deleted (to give up on it) or added by hand (to queue a task once more); the drain publishes it.
"""

from django.contrib import admin

from .models import OutboxMessage


@admin.register(OutboxMessage)
class OutboxMessageAdmin(admin.ModelAdmin):
    list_display = ("task", "args", "queue", "created_at", "attempts", "available_at", "sent_at", "delivered_at")
    list_filter = ("task", ("sent_at", admin.EmptyFieldListFilter), ("delivered_at", admin.EmptyFieldListFilter))
    readonly_fields = ("created_at", "attempts", "last_error", "sent_at", "delivered_at")

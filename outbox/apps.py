"""App configuration for ``outbox``."""

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    """Tasks waiting to be published to the broker (a transactional outbox)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "outbox"

"""App configuration for ``coaching``."""

from django.apps import AppConfig


class CoachingConfig(AppConfig):
    """Coaches: cohorts, invitations, authored questions, question sets, assignments and dashboards."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "coaching"

    def ready(self) -> None:
        """Connect the dashboard cache's receivers (:mod:`coaching.signals`)."""
        from . import signals

        signals.connect()

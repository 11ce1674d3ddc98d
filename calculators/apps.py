"""App configuration for ``calculators``."""

from django.apps import AppConfig


class CalculatorsConfig(AppConfig):
    """Calculator pages and the ``calc`` command; the engine itself is Django-free."""

    name = "calculators"
    default_auto_field = "django.db.models.BigAutoField"

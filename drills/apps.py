"""App configuration for ``drills``."""

from django.apps import AppConfig


class DrillsConfig(AppConfig):
    """Question bank, randomized problems, grading, reviews, rounds and coaching."""

    name = "drills"
    default_auto_field = "django.db.models.BigAutoField"

"""App configuration for ``drills``."""

from django.apps import AppConfig


class DrillsConfig(AppConfig):
    """Question bank, randomized problems, grading, reviews, rounds and coaching."""

    name = "drills"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runbook.signals import content_loaded

        from .bank_templates import on_content_loaded

        content_loaded.connect(on_content_loaded, dispatch_uid="drills.problem_templates")

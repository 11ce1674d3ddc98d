"""App configuration for ``llm_grading``."""

from django.apps import AppConfig


class LlmGradingConfig(AppConfig):
    """Open answers graded against their rubric by an OpenAI-compatible endpoint the user brings."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "llm_grading"
    verbose_name = "Grading by the user's model"

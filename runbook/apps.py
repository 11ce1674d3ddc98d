"""App configuration for ``runbook``."""

from django.apps import AppConfig


class RunbookConfig(AppConfig):
    """Chapters, glossary, errata and reading list."""

    name = "runbook"
    default_auto_field = "django.db.models.BigAutoField"

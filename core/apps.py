"""App configuration for ``core``."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The ground floor every app may use: site-wide views, the navigation, the cache backend, the CSV writer.

    It imports no app of the project (a contract in ``pyproject.toml``, docs/architecture.md).
    """

    name = "core"
    default_auto_field = "django.db.models.BigAutoField"

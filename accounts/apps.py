"""App configuration for ``accounts``."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Sign-up, the auth pages' templates, and the demo accounts command."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"


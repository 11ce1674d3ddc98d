"""App configuration for ``accounts``."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Sign-up, the auth pages' templates, and the demo accounts command."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from accounts.middleware import remember_time_zone_at_login  # imports models: only once apps are ready

        user_logged_in.connect(remember_time_zone_at_login, dispatch_uid="drills.time_zone_at_login")

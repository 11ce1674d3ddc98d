"""App configuration for ``accounts``."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Sign-up, the auth pages' templates, the coach role and the time zone a user reads the site in."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: the module imports the models, which the registry is still loading.
        from django.contrib.auth.signals import user_logged_in

        from accounts.timezones import remember_time_zone_at_login

        user_logged_in.connect(remember_time_zone_at_login, dispatch_uid="accounts.time_zone_at_login")

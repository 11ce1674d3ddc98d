"""App configuration for ``calculators``."""

from django.apps import AppConfig


class CalculatorsConfig(AppConfig):
    """Calculator pages and the ``calc`` command; the engine itself is Django-free."""

    name = "calculators"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here: the module imports the models, which the registry is still loading.
        from django.contrib.auth.signals import user_logged_in

        from calculators.calibration_in_use import remember_at_login

        user_logged_in.connect(remember_at_login, dispatch_uid="calculators.calibration_at_login")

"""App configuration for ``home``."""

from django.apps import AppConfig


class HomeConfig(AppConfig):
    """The top floor: the home page (a visitor's landing page, a signed-in candidate's day)."""

    name = "home"
    default_auto_field = "django.db.models.BigAutoField"

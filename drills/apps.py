"""App configuration for ``drills``."""

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DrillsConfig(AppConfig):
    """Question bank, randomized problems, grading, reviews, rounds and coaching."""

    name = "drills"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_reinstall_review_log_triggers, sender=self, dispatch_uid="drills.reviewlog_triggers")


def _reinstall_review_log_triggers(sender, using="default", **kwargs) -> None:
    """Put the review log's append-only triggers back after every ``migrate`` (idempotent).

    A later migration that alters ``ReviewLog`` rebuilds the table on SQLite, which drops its triggers.
    """
    from django.db import connections

    from drills.reviews.append_only import install

    connection = connections[using]
    if "drills_reviewlog" in connection.introspection.table_names():
        install(connection)

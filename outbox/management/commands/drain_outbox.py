"""``manage.py drain_outbox [--all] [--limit N]``: publish the tasks waiting in the outbox.

The beat task ``outbox.tasks.drain_outbox`` does the same every minute; run
this once the broker is back after an outage (``--all`` ignores the back-off
of rows that already failed). Exit 1, with the broker's error, when a row
could not be published.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from outbox import services


class Command(BaseCommand):
    help = "Publish the Celery tasks waiting in the outbox (they could not be queued when they were made)."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", dest="everything",
                            help="every pending message, also those still backing off after a failed try")
        parser.add_argument("--limit", type=int, default=1000, help="publish at most this many (default 1000)")

    def handle(self, *args, everything: bool, limit: int, **options):
        if limit < 1:
            raise CommandError("--limit must be at least 1.")
        drained = services.drain(everything=everything, limit=limit)
        if drained.failed:
            raise CommandError(f"Could not publish a message ({drained.error}); "
                               f"{drained.sent} published, {drained.pending} still pending.")
        self.stdout.write(f"{drained.sent} published, {drained.pending} pending.")

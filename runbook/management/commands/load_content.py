"""``manage.py load_content [--path fixtures]``: load the runbook's content files (fixtures/CONTENT.md)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from runbook.loading import ContentError, load_content


class Command(BaseCommand):
    help = ("Load chapters, tracks, glossary, errata, reading list and question bank from the content files: "
            "create or update by slug, remove what the files no longer hold (never what a coach wrote), "
            "and fail with path:line for any problem before writing anything.")

    def add_arguments(self, parser):
        parser.add_argument("--path", default=str(Path(settings.BASE_DIR) / "fixtures"),
                            help="The folder of content files (default: the repository's fixtures/).")

    def handle(self, *args, **options):
        try:
            report = load_content(options["path"])
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        except ContentError as exc:
            count = len(exc.errors)
            raise CommandError(f"{count} problem{'s' if count != 1 else ''} in the content files; nothing was "
                               "loaded:\n" + "\n".join(exc.errors)) from exc
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        width = max((len(kind) for kind in report.tallies), default=0)
        for kind, tally in report.tallies.items():
            self.stdout.write(f"{kind.ljust(width)}  {tally}")
        for kind in report.skipped:
            self.stdout.write(f"{kind.ljust(width)}  skipped: no file")
        for note in report.notes:  # the readers with no files: problem templates, round presets
            self.stdout.write(note)
        if not report.changed:
            self.stdout.write(self.style.SUCCESS("Everything unchanged."))
        else:
            self.stdout.write(self.style.SUCCESS("Content loaded."))

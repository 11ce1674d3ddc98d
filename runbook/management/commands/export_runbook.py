"""``manage.py export_runbook OUT_DIR [--site-url URL]``: the runbook as self-contained HTML files.

Writes one file per chapter and ``index.html`` (see :mod:`runbook.export.pages`); the chapters
come from the database, so run ``load_content`` first. Exit 1 with one sentence if a calculator's
offline program disagrees with the engine.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from runbook.export.calculators import ExportError
from runbook.export.pages import export_runbook
from runbook.models import Chapter


class Command(BaseCommand):
    help = "Write each runbook chapter as one self-contained HTML file (calculators work offline), plus index.html."

    def add_arguments(self, parser):
        parser.add_argument("out_dir", help="directory to write into (created if missing)")
        parser.add_argument("--site-url", default=None, help="address for links to the rest of the site "
                                                             "(default: the SITE_URL setting, itself "
                                                             "http://127.0.0.1:$PORT when unset)")

    def handle(self, *args, **options):
        try:
            has_chapters = Chapter.objects.exists()
        except DatabaseError as exc:  # a fresh database: no tables yet
            raise CommandError("The database has no runbook tables: run `manage.py migrate`, then "
                               "`manage.py load_content`, first.") from exc
        if not has_chapters:
            raise CommandError("No chapters in the database: run `manage.py load_content` first.")
        try:
            written = export_runbook(Path(options["out_dir"]), options["site_url"])
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        total = sum(item.size for item in written)
        for item in written:
            self.stdout.write(f"{item.path}  {item.size / 1024:,.0f} KiB")
        self.stdout.write(f"{len(written)} files, {total / 1024 / 1024:,.1f} MiB")

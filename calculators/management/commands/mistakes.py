"""``manage.py mistakes [--check]``: write docs/mistakes.md, the matrix of mistakes × families
(:mod:`calculators.mistake_matrix`); with ``--check``, exit 1 when the file is not current."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from calculators.engine.catalog import default_catalog
from calculators.families import FAMILIES
from calculators.mistake_matrix import markdown, matrix

DOC = Path(settings.BASE_DIR) / "docs" / "mistakes.md"


class Command(BaseCommand):
    help = "Write docs/mistakes.md: where each mistake is named in each family, or why not."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="exit 1 when docs/mistakes.md is not current")

    def handle(self, *args, check: bool = False, **options):
        text = markdown(matrix(FAMILIES, default_catalog()))
        if check:
            if not DOC.is_file() or DOC.read_text() != text:
                raise CommandError("docs/mistakes.md is not current: run manage.py mistakes.")
            return
        DOC.write_text(text)
        self.stdout.write(f"Wrote {DOC}.")

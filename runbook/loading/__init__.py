"""Loading the content files of ``fixtures/`` (their formats: ``fixtures/CONTENT.md``) into the database.

:func:`load_content` asks every registered :class:`Reader` to read and check
its files — front matter and required fields, types, and every shortcode of
every Markdown field — and raises :class:`ContentError` listing each problem as
``path:line: what`` before anything is written. Then, in one transaction, each
reader creates or updates its rows by slug, removes the fixture-loaded rows
whose file or entry is gone, and reports per kind how many rows were created,
updated, unchanged and removed. A second run over the same files changes
nothing. A kind whose file (or folder) is absent is skipped, not emptied:
content is written a file at a time, and a mistyped ``--path`` must not wipe
the runbook.

Each app lists its readers in its own ``content_readers`` module
(:mod:`runbook.content_readers`, :mod:`drills.content_readers`); the file
machinery they share is :mod:`runbook.loading.files` and
:func:`runbook.loading.writing.sync` (docs/architecture.md §3).
"""

from runbook.loading.files import (
    Entry,
    Marked,
    Source,
    check_markdown_tree,
    entries,
    load_yaml,
    parse_yaml,
    plain,
    split_front_matter,
    unique,
)
from runbook.loading.load import load_content
from runbook.loading.registry import ContentTree, Reader, ReaderRegistry
from runbook.loading.report import ContentError, LoadReport, Tally
from runbook.loading.writing import search_text, sync

__all__ = [
    "ContentError", "ContentTree", "Entry", "LoadReport", "Marked", "Reader", "ReaderRegistry", "Source", "Tally",
    "check_markdown_tree", "entries", "load_content", "load_yaml", "parse_yaml", "plain", "search_text",
    "split_front_matter", "sync", "unique",
]

"""``load_content``: every registered reader reads and checks its files, then all write in one transaction."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from runbook.loading.registry import ContentTree, ReaderRegistry
from runbook.loading.report import ContentError, LoadReport


def load_content(root: Path | str, registry: ReaderRegistry | None = None) -> LoadReport:
    """Check every content file under ``root``, then load them all in one transaction.

    ``registry`` defaults to the readers of the installed apps
    (:meth:`ReaderRegistry.installed`). Every reader reads before any writes:
    raises :class:`ContentError` (nothing written, by any reader) when any file
    has a problem, and ``FileNotFoundError`` when ``root`` is not a folder. The
    report's tallies follow the readers' order and each reader's ``kinds``.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder of content files.")
    readers = (registry if registry is not None else ReaderRegistry.installed()).ordered()
    tree = ContentTree(root)
    for reader in readers:
        reader.read(tree)
    if tree.errors:
        raise ContentError(tree.errors)
    report = LoadReport(skipped=list(tree.skipped), warnings=list(tree.warnings))
    with transaction.atomic():
        for reader in readers:
            reader.write(tree, report)
    order = [kind for reader in readers for kind in reader.kinds]
    report.tallies = {kind: report.tallies[kind] for kind in order if kind in report.tallies}
    return report

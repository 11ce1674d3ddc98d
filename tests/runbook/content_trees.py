"""Content trees for the tests that load content (``runbook.loading.load_content``): a tree written from
strings, or a copy of the repository's design prompts, reading list and critique drills."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

from runbook.loading import ContentError, LoadReport, load_content

FIXTURES = Path(settings.BASE_DIR) / "fixtures"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path relative to ``root`` → UTF-8 text) under ``root``, making folders; return ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def load_design_content(tmp_path: Path, failure: str) -> LoadReport:
    """Load a copy (under ``tmp_path/fixtures``) of the repository's reading list, design prompts and critique
    drills, with an empty cache; the load's result. A content error fails the test with ``failure`` and the
    loader's errors."""
    cache.clear()
    root = tmp_path / "fixtures"
    (root / "questions").mkdir(parents=True)
    shutil.copy(FIXTURES / "reading.yaml", root / "reading.yaml")
    shutil.copy(FIXTURES / "questions" / "design.yaml", root / "questions" / "design.yaml")
    shutil.copytree(FIXTURES / "critiques", root / "critiques")
    try:
        return load_content(root)
    except ContentError as exc:  # pragma: no cover - shown when a content file is broken
        pytest.fail(f"{failure}:\n" + "\n".join(exc.errors))

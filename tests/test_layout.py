"""The code's layout: ``drills/`` is packages by concept, not files named by kind.

Before the split, ``drills/`` held ``models_rounds.py``, ``views_reviews.py``,
``urls_lab.py``, ``admin_reviews.py`` and ``forms_lab.py`` side by side; each
concept (problems, bank, reviews, rounds, critique, lab) is now a package with
its own ``models.py``, ``views.py``, ``urls.py`` ... This test keeps it so.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONCEPT_SUFFIX = re.compile(r"^(models|views|urls|admin|forms)_\w+\.py$")


def concept_suffixed(package: Path) -> list[str]:
    """Python files under ``package`` named ``<kind>_<concept>.py``, as paths relative to the repository."""
    return sorted(str(path.relative_to(ROOT)) for path in package.rglob("*.py") if CONCEPT_SUFFIX.match(path.name))


def test_no_file_in_drills_is_named_with_a_concept_suffix():
    assert concept_suffixed(ROOT / "drills") == []


def test_the_check_finds_a_suffixed_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    for name in ("models_rounds.py", "views.py", "urls_lab.py", "rounds.py", "admin_reviews.py", "forms.py"):
        (tmp_path / "pkg" / name).write_text("")
    found = sorted(path.name for path in (tmp_path / "pkg").rglob("*.py") if CONCEPT_SUFFIX.match(path.name))
    assert found == ["admin_reviews.py", "models_rounds.py", "urls_lab.py"]


def test_every_concept_is_a_package():
    for concept in ("problems", "bank", "reviews", "rounds", "critique", "lab"):
        package = ROOT / "drills" / concept
        assert (package / "__init__.py").is_file(), concept
        assert (package / "models.py").is_file() and (package / "views.py").is_file(), concept


def test_docstrings_cite_the_architecture_document_in_the_repository():
    """Sections are cited as ``docs/architecture.md §N``; a design file outside the repository is never cited."""
    cited = sorted(str(path.relative_to(ROOT)) for package in ("accounts", "api", "calculators", "coaching", "config",
                                                               "drills", "outbox", "runbook", "tests", "fixtures")
                   for path in (ROOT / package).rglob("*") if path.suffix in (".py", ".md", ".yaml", ".html")
                   and "DESIGN" + ".md" in path.read_text(errors="ignore"))
    assert cited == []
    assert (ROOT / "docs" / "architecture.md").is_file()

"""The code's layout: packages and files by concept, not files named by kind or by job type.

Before the split, ``drills/`` held ``models_rounds.py``, ``views_reviews.py``,
``urls_lab.py``, ``admin_reviews.py`` and ``forms_lab.py`` side by side; each
concept (problems, bank, reviews, rounds, critique, lab) is now a package with
its own ``models.py``, ``views.py``, ``urls.py`` ... This test keeps it so.

The engine likewise: a family is one module, never split into ``x.py``, ``x_formulas.py``, ``x_notes.py``,
``x_variants.py``, ``x_inputs.py``, ``x_step.py`` (docs/architecture.md §11); a concept such as
``hf_config.py`` stays. Module size is no test (a line count is a hint): docs/architecture.md lists the
modules over :data:`SPLIT_HINT` lines as candidates to split by concept, and a test keeps that list current.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
CONCEPT_SUFFIX = re.compile(r"^(models|views|urls|admin|forms)_\w+\.py$")
JOB_TYPE_SUFFIX = re.compile(r"^\w+_(formulas|notes|variants|inputs|step)\.py$")
# Engine files still named by job type, each to be merged into its concept; the set only shrinks (the *_variants
# ones go with the registry of mistakes, the *_formulas ones into engine/formulas/ by topic).
STILL_NAMED_BY_JOB: set[str] = set()  # the *_variants files went into the registry of mistakes
SPLIT_HINT = 600
PACKAGES = ("accounts", "api", "calculators", "coaching", "config", "core", "drills", "home", "outbox", "runbook")


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
        assert (package / "models.py").is_file(), concept
        # The bank has no pages of its own since 6aa21ad: its pages (browse, one item, deck add/remove, Anki
        # export) are the reviews' (drills/reviews/bank_views.py), so the bank never imports the reviews.
        if concept == "bank":
            assert not (package / "views.py").exists() and (ROOT / "drills" / "reviews" / "bank_views.py").is_file()
        else:
            assert (package / "views.py").is_file(), concept


def test_docstrings_cite_the_architecture_document_in_the_repository():
    """Sections are cited as ``docs/architecture.md §N``; a design file outside the repository is never cited."""
    cited = sorted(str(path.relative_to(ROOT)) for package in ("accounts", "api", "calculators", "coaching", "config",
                                                               "drills", "outbox", "runbook", "tests", "fixtures")
                   for path in (ROOT / package).rglob("*") if path.suffix in (".py", ".md", ".yaml", ".html")
                   and "DESIGN" + ".md" in path.read_text(errors="ignore"))
    assert cited == []
    assert (ROOT / "docs" / "architecture.md").is_file()


def job_type_named(package: Path) -> set[str]:
    """Python files under ``package`` named ``<concept>_<job>.py`` (:data:`JOB_TYPE_SUFFIX`), relative paths."""
    return {str(path.relative_to(ROOT)) for path in package.rglob("*.py") if JOB_TYPE_SUFFIX.match(path.name)}


def test_no_engine_file_is_named_by_job_type():
    found = job_type_named(ROOT / "calculators" / "engine")
    assert found - STILL_NAMED_BY_JOB == set(), "a family is one module: merge it into its concept"
    assert STILL_NAMED_BY_JOB - found == set(), "merged: take it off STILL_NAMED_BY_JOB"


def test_the_job_type_check_finds_a_split_family(tmp_path):
    for name in ("slo.py", "slo_formulas.py", "slo_notes.py", "slo_variants.py", "slo_inputs.py", "slo_step.py",
                 "hf_config.py", "step.py", "formulas.py"):
        (tmp_path / name).write_text("")
    found = sorted(path.name for path in tmp_path.rglob("*.py") if JOB_TYPE_SUFFIX.match(path.name))
    assert found == ["slo_formulas.py", "slo_inputs.py", "slo_notes.py", "slo_step.py", "slo_variants.py"]


def modules_over(lines: int) -> dict[str, int]:
    """Module path → line count, for the project's modules (migrations left out) longer than ``lines``."""
    return {str(path.relative_to(ROOT)): n for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            if "migrations" not in path.parts and (n := len(path.read_text().splitlines())) > lines}


def test_the_architecture_lists_the_modules_over_the_split_hint():
    """docs/architecture.md names every module over SPLIT_HINT lines (and no other) as a candidate to split."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    listed = set(re.findall(r"^  - `([\w/]+\.py)` \(\d[\d,]* lines\)", text, re.M))
    assert listed == set(modules_over(SPLIT_HINT))


# Test folders that mirror no package of their own: the engine's and the simulator's (calculators/engine,
# calculators/sim, below every app), the browser tests, and the app the content-reader tests install.
TEST_FOLDERS_OF_THEIR_OWN = {"engine", "sim", "e2e", "content_app"}


def misplaced_tests(tests: Path, repo: Path) -> list[str]:
    """Test files of ``tests`` that do not mirror a package folder of ``repo``, relative to ``tests``.

    A test lives at ``tests/<app>/<module>/test_*.py`` where ``<app>/<module>`` is a folder of the code, or in
    one of :data:`TEST_FOLDERS_OF_THEIR_OWN`; never flat in ``tests/``.
    """
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests)
        if folder.parts and folder.parts[0] in TEST_FOLDERS_OF_THEIR_OWN:
            continue
        if not folder.parts or not (repo / folder).is_dir():
            wrong.append(str(path.relative_to(tests)))
    return wrong


def test_the_tests_mirror_the_packages():
    assert misplaced_tests(ROOT / "tests", ROOT) == []


def test_the_mirror_check_finds_a_flat_and_a_stray_test(tmp_path):
    (tmp_path / "drills" / "reviews").mkdir(parents=True)
    for name in ("test_flat.py", "drills/reviews/test_ok.py", "drills/nowhere/test_stray.py", "e2e/test_page.py"):
        (tmp_path / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / name).write_text("")
    assert misplaced_tests(tmp_path / "tests", tmp_path) == ["drills/nowhere/test_stray.py", "test_flat.py"]

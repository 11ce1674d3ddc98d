"""The content readers' registry: an app's reader is found and called, names are unique, and a problem
anywhere (in any reader's files, or in a write) leaves every table as it was.

The test app ``tests.content_app`` reads ``notes.yaml`` and writes each note as an auth group ``note:<slug>``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError

from drills.models import BankItem, RoundTemplate
from drills.problems.generation import drill_families
from runbook.loading import Reader, ReaderRegistry, load_content
from runbook.models import Chapter, GlossaryTerm
from tests.content_app import content_readers as test_app

pytestmark = pytest.mark.django_db

MAP = """\
---
number: 0
slug: 00-map
track: ""
title: The map
summary: Where everything is.
reading_minutes: 5
prerequisites: []
---
Start here.

## The ladder {#ladder}

Weights, then the cache.
"""

GLOSSARY = """\
- slug: kv-cache
  term: KV cache
  answer: The keys and values of past tokens.
  chapter: 00-map
  section: ladder
"""

NOTES = """\
- slug: first
  text: One.
- slug: second
  text: Two.
"""


@pytest.fixture
def with_test_app(settings):
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "tests.content_app"]
    test_app.CALLS.clear()
    yield
    test_app.CALLS.clear()


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "fixtures"
    for name, text in {"runbook/00-map.md": MAP, "glossary.yaml": GLOSSARY, "notes.yaml": NOTES}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _notes() -> list[str]:
    return sorted(Group.objects.filter(name__startswith="note:").values_list("name", flat=True))


def _nothing_written() -> bool:
    return not (Chapter.objects.exists() or GlossaryTerm.objects.exists() or BankItem.objects.exists()
                or RoundTemplate.objects.exists() or _notes())


def test_a_reader_registered_by_an_app_is_called_in_its_place(with_test_app, tree):
    assert ReaderRegistry.installed().names() == [
        "documents", "glossary", "errata", "reading list",  # the runbook's, first
        "questions", "critiques", "problem templates", "round presets",  # drills'
        "test notes"]  # the test app's, last in INSTALLED_APPS
    out = io.StringIO()

    call_command("load_content", "--path", str(tree), stdout=out, stderr=io.StringIO())

    assert test_app.CALLS == ["read", "write"]
    assert _notes() == ["note:first", "note:second"]
    lines = out.getvalue().splitlines()
    # Three kinds loaded: the width is that of "chapters"; the notes report after the runbook's kinds.
    assert lines[:3] == ["chapters  1 created, 0 updated, 0 unchanged, 0 removed",
                         "glossary  1 created, 0 updated, 0 unchanged, 0 removed",
                         "notes     2 created, 0 updated, 0 unchanged, 0 removed"]
    assert lines[3:12] == [f"{kind}  skipped: no file" for kind in (
        "tracks  ", "documents", "paths   ", "errata  ", "stages  ", "bar topics", "resources", "questions",
        "critiques")]
    families = len(drill_families())
    assert lines[12:] == [f"problem templates  {families} created, 0 updated, 0 unchanged", "round presets      7",
                          "Content loaded."]
    assert BankItem.objects.filter(kind=BankItem.PROBLEM).count() == families

    test_app.CALLS.clear()
    assert not load_content(tree).changed and test_app.CALLS == ["read", "write"]
    assert _notes() == ["note:first", "note:second"]


def test_a_problem_in_the_test_apps_file_stops_every_reader(with_test_app, tree):
    (tree / "notes.yaml").write_text(NOTES.replace("  text: Two.\n", ""))

    with pytest.raises(CommandError) as caught:
        call_command("load_content", "--path", str(tree), stdout=io.StringIO(), stderr=io.StringIO())

    assert str(caught.value) == ("1 problem in the content files; nothing was loaded:\n"
                                 f"{tree / 'notes.yaml'}:3: note 'second' is missing the field 'text'.")
    assert test_app.CALLS == ["read"]
    assert _nothing_written()


def test_a_problem_in_a_runbook_file_stops_the_test_apps_reader(with_test_app, tree):
    (tree / "glossary.yaml").write_text(GLOSSARY.replace("past tokens.", "past tokens, {{value ladder.nope}}."))

    with pytest.raises(CommandError, match=r"glossary\.yaml:3: \{\{value ladder\.nope\}\}: "):
        call_command("load_content", "--path", str(tree), stdout=io.StringIO(), stderr=io.StringIO())

    assert test_app.CALLS == ["read"]
    assert _nothing_written()


def test_a_write_that_fails_takes_every_readers_rows_back(with_test_app, tree):
    (tree / "notes.yaml").write_text(NOTES + "- slug: boom\n  text: Three.\n")

    with pytest.raises(RuntimeError, match="the write step failed after writing"):
        load_content(tree)

    assert test_app.CALLS == ["read", "write"]
    assert _nothing_written()


def test_a_duplicate_reader_name_is_rejected_with_both_origins():
    registry = ReaderRegistry.installed()

    with pytest.raises(ImproperlyConfigured) as caught:
        registry.register(test_app.CLASH, origin="tests.content_app.content_readers")

    assert str(caught.value) == ("Two content readers are named 'glossary': runbook.content_readers and "
                                 "tests.content_app.content_readers.")


def _reader(name: str, *needs: str) -> Reader:
    return Reader(name, write=lambda tree, report: None, needs=needs)


def test_readers_run_in_registration_order_each_after_what_it_needs():
    registry = ReaderRegistry()
    for reader in (_reader("questions", "chapters"), _reader("presets"), _reader("chapters")):
        registry.register(reader)

    assert [reader.name for reader in registry.ordered()] == ["presets", "chapters", "questions"]


@pytest.mark.parametrize("readers, message", [
    ((_reader("questions", "chapters"),), "The content reader 'questions' needs 'chapters', which no app registers."),
    ((_reader("a", "b"), _reader("b", "a"), _reader("c")), "The content readers need one another in a circle: a, b."),
])
def test_a_need_no_reader_meets_is_a_configuration_error(readers, message):
    registry = ReaderRegistry()
    for reader in readers:
        registry.register(reader)

    with pytest.raises(ImproperlyConfigured) as caught:
        registry.ordered()

    assert str(caught.value) == message

"""The runbook's reading shape (issue 19, items 4 and 5), checked on the content files themselves.

Every chapter opens with its one-screen summary (what to say, what to derive, the traps) and holds at least one
figure (issue 37 item 1: a step-through or a live chart, on its own line); every chapter's bank holds at least
ten questions, no interview prompt is asked twice across chapters, and the critique
drills number at least six, each planting errors of at least four kinds.
"""

from __future__ import annotations

import difflib
import itertools
import re

import yaml
from django.conf import settings

FIXTURES = settings.BASE_DIR / "fixtures"
CHAPTERS = sorted((FIXTURES / "runbook").glob("[0-9][0-9]-*.md"))


def _body(path) -> str:
    return path.read_text().split("---\n", 2)[2]


def _prompt(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def test_every_chapter_opens_with_its_one_screen_summary():
    assert len(CHAPTERS) == 16
    for path in CHAPTERS:
        body = _body(path)
        first = body.lstrip().splitlines()[0]
        assert first == "## On one screen {#on-one-screen}", path.name
        summary = body.lstrip().split("\n## ", 1)[0]
        for label in (r"\*\*Say in the interview\.\*\*", r"\*\*Derive\b", r"\*\*Traps\.\*\*"):
            assert re.search(label, summary), (path.name, label)
        assert "{{value " in summary or "{{worked " in summary, path.name  # numbers derived, not typed


def test_every_chapter_has_a_figure_that_renders():
    from runbook.shortcodes import find_errors

    for path in CHAPTERS:
        body = _body(path)
        figures = re.findall(r"^\{\{figure [^}]+\}\}$", body, re.M)
        assert figures, path.name
        assert find_errors("\n\n".join(figures)) == [], path.name


def test_every_chapter_has_at_least_ten_questions():
    for path in CHAPTERS:
        bank = yaml.safe_load((FIXTURES / "questions" / path.name.replace(".md", ".yaml")).read_text())
        assert len(bank) >= 10, path.name


def test_no_prompt_is_asked_twice_across_chapters():
    prompts = []
    for path in sorted((FIXTURES / "questions").glob("[0-9][0-9]-*.yaml")):
        prompts += [(path.name[:2], item["slug"], _prompt(item["prompt"])) for item in yaml.safe_load(path.read_text())]
    repeated = []
    for (ch_a, slug_a, a), (ch_b, slug_b, b) in itertools.combinations(prompts, 2):
        if ch_a == ch_b:
            continue
        matcher = difflib.SequenceMatcher(None, a, b)
        if matcher.quick_ratio() > 0.8 and matcher.ratio() > 0.8:
            repeated.append((slug_a, slug_b))
    assert repeated == []


def test_at_least_six_critique_drills_each_with_four_kinds_of_error():
    drills = [yaml.safe_load(path.read_text()) for path in (FIXTURES / "critiques").glob("*.yaml")]
    assert len(drills) >= 6
    for drill in drills:
        assert len({planted["category"] for planted in drill["planted"]}) >= 4, drill["slug"]

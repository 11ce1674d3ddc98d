"""The render lint over the real content: every chapter, question, answer, rubric point, design and
critique detail and errata entry, loaded into the test database and rendered with the real shortcodes."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache

from drills.models import BankItem
from runbook.content import plain_text
from runbook.lint import seams
from runbook.loading import ContentError, load_content
from runbook.models import Chapter, ErratumEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def rendered_texts():
    """(where, plain text) of every text a reader sees, after loading ``fixtures/``."""
    cache.clear()
    try:
        load_content(settings.BASE_DIR / "fixtures")
    except ContentError as exc:  # pragma: no cover - shown when a content file is broken
        pytest.fail("fixtures/ does not load:\n" + "\n".join(exc.errors))
    texts = [(chapter.slug, plain_text(chapter.body)) for chapter in Chapter.objects.all()]
    for item in BankItem.objects.all():
        texts += [(f"{item.slug}:{where}", plain_text(text)) for where, text in _strings(item)]
    for entry in ErratumEntry.objects.all():
        texts += [(f"errata {entry.slug}:{field}", plain_text(getattr(entry, field)))
                  for field in ("title", "claimed", "truth", "why", "proof")]
    return texts


def _strings(item: BankItem):
    yield "prompt", item.prompt
    yield "model_answer", item.model_answer
    yield from _walk(item.rubric, "rubric")
    yield from _walk(item.details, "details")


def _walk(value, where: str):
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _walk(inner, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _walk(inner, f"{where}.{key}")


def test_the_lint_catches_each_kind_of_seam():
    assert seams("a card holds 191 users typical conversations today")[0].startswith("doubled unit")
    assert seams("which is 10 GPUs GPUs at one per replica")[0].startswith("doubled unit")
    assert seams("it runs 595 users sequences at 29 ms")[0].startswith("doubled unit")
    assert seams("needs 14.96 GiB GiB of weights")[0].startswith("doubled unit")
    assert seams("A hit skips the prefix's own prefill: A hit skips the prefix's own prefill: its tokens")[0] \
        .startswith("repeated clause")
    assert seams("the B200 (HGX B200, per GPU): B200 (HGX B200, per GPU) is")[0].startswith("repeated clause")
    for text in ("left {{value x}} here", "a TODO remains", "value None here", "one of seed 004's prompts",
                 "a rate (in 1) of"):
        assert seams(text) and seams(text)[0].startswith("placeholder"), text


def test_clean_prose_passes_the_lint():
    clean = ("A paged card holds 191 typical conversations rather than 53 users per card. None of the steps "
             "is hard. 8,192 tokens per request; 10 GPUs at one GPU per replica.")
    assert seams(clean) == []


def test_every_rendered_text_is_free_of_seams(rendered_texts):
    assert len([where for where, _ in rendered_texts if ":" not in where]) >= 16  # all sixteen chapters
    found = [f"{where}: {seam}" for where, text in rendered_texts for seam in seams(text)]

    assert not found, "\n".join(found)

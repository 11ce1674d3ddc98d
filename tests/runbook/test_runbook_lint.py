"""The render lint over the real content: every chapter, question, answer, rubric point, design and
critique detail and errata entry, loaded into the test database and rendered with the real shortcodes."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache

from drills.models import BankItem
from runbook.content import plain_text
from runbook.lint import ALLOWED_LITERALS, hand_typed, seams
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
    assert seams("costs $0.42/Mtok per million at full occupancy")[0].startswith("doubled unit")
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


def test_the_number_lint_catches_a_derived_number_typed_by_hand():
    # 191 users is the reference stack's paged users per card (ladder.users_paged); 75 % is the
    # bandwidth efficiency's default; 448 is fp8 E4M3's largest normal, computed only because a
    # shortcode in the same text runs the formats family with format=fp8_e4m3.
    found = hand_typed("A card holds 191 users.\nKernels reach 75 % of peak.\n"
                       "E4M3 tops out at 448, see {{value formats.max_normal format=fp8_e4m3}}.", "99-test.md")
    assert found[0].startswith("99-test.md:1: '191' = 191 users (ladder.users_paged of ladder())")
    assert "99-test.md:2: '75 %' = 0.75" in found[1] and "bandwidth_efficiency" in found[1]
    assert found[2].startswith("99-test.md:3: '448' = 448") and "formats(format=fp8_e4m3)" in found[2]
    assert len(found) == 3
    # Without the shortcode, 448 is not a value the chapter's runs compute.
    assert hand_typed("E4M3 tops out at 448.", "99-test.md") == []


def test_the_number_lint_leaves_out_years_versions_small_counts_shortcodes_and_quotes():
    text = ("In 2024 vLLM 0.6.3 ran 8 cards on Llama-3.1-8B for 2,048 tokens; "
            "{{value ladder.users_paged}} users; a colleague said “191 users”.")
    assert hand_typed(text, "99-test.md") == []


def test_every_allowed_literal_gives_a_reason():
    assert all(len(reason.split()) >= 4 for reason in ALLOWED_LITERALS.values())


def test_no_chapter_or_question_file_types_a_derived_number():
    files = sorted((settings.BASE_DIR / "fixtures" / "runbook").glob("*.md"))
    files += sorted((settings.BASE_DIR / "fixtures" / "questions").glob("*.yaml"))
    assert len(files) >= 32
    found = [hit for path in files for hit in hand_typed(path.read_text(), path.name)]

    assert not found, "\n".join(found)

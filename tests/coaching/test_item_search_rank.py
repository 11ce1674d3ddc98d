"""The coach's bank item box ranks what it finds: title matches first, then the slug, then the rest of the text.

Regression: the suggestions came in slug order within the first field that matched at all, so typing a word a
question's title starts with listed it behind every item whose slug merely held the word.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from coaching.forms import (
    EXACT,
    SLUG_CONTAINS,
    SUGGESTIONS,
    TEXT_CONTAINS,
    TITLE_CONTAINS,
    TITLE_PREFIX,
    match_rank,
    search_items,
)
from coaching.models import SetEntry
from drills.models import BankItem
from tests.factories import BankItemFactory

pytestmark = pytest.mark.django_db

# slug → prompt (its first line is the title); "Zorbling" is a word no other bank text holds.
ITEMS = {
    "aa-zorbling": "Explain continuous scheduling.",             # the slug holds it
    "ab-zorbling-2": "Explain chunked prefill.",                 # the slug holds it
    "bb-one": "Zorbling: why does it raise throughput?",         # the title starts with it
    "cc-two": "Why does continuous zorbling help decode?",       # the title holds it
    "ca-three": "How does zorbling change TTFT?",                # the title holds it (slug first among ties)
    "dd-four": "What limits decode speed?",                      # only its model answer holds it
    "zorbling": "Explain queues.",                               # the exact slug
}
EXPECTED = ["zorbling", "bb-one", "ca-three", "cc-two", "aa-zorbling", "ab-zorbling-2", "dd-four"]


@pytest.fixture
def items(world):
    made = {slug: BankItemFactory(slug=slug, prompt=prompt,
                                  model_answer="Memory bandwidth, not zorbling." if slug == "dd-four" else "Yes.")
            for slug, prompt in ITEMS.items()}
    # Saved again so that search_text (prompt, answer, rubric) is the factory's values, as the bank stores them.
    for item in made.values():
        item.save()
    return made


def _queryset():
    return BankItem.objects.filter(slug__in=ITEMS).order_by("kind", "slug")


def test_each_field_gets_its_rank(items):
    assert {slug: match_rank(item, "zorbling") for slug, item in items.items()} == {
        "zorbling": EXACT, "bb-one": TITLE_PREFIX, "cc-two": TITLE_CONTAINS, "ca-three": TITLE_CONTAINS,
        "aa-zorbling": SLUG_CONTAINS, "ab-zorbling-2": SLUG_CONTAINS, "dd-four": TEXT_CONTAINS}
    assert match_rank(items["bb-one"], "ZORBLING: WHY does it raise throughput?") == EXACT  # the whole title, any case
    assert match_rank(items["dd-four"], "frobnicate") is None


def test_title_matches_come_first_then_slugs_then_text_ties_in_slug_order(items):
    ranked = search_items(_queryset(), "  Zorbling ")
    assert [item.slug for _, item in ranked] == EXPECTED
    assert [rank for rank, _ in ranked] == [EXACT, TITLE_PREFIX, TITLE_CONTAINS, TITLE_CONTAINS, SLUG_CONTAINS,
                                            SLUG_CONTAINS, TEXT_CONTAINS]
    # Stable: the same order again, and whatever order the rows were created in (the queryset's order breaks ties).
    assert [item.slug for _, item in search_items(_queryset(), "zorbling")] == EXPECTED
    assert [item.slug for _, item in search_items(_queryset().order_by("-slug"), "zorbling")] == [
        "zorbling", "bb-one", "cc-two", "ca-three", "ab-zorbling-2", "aa-zorbling", "dd-four"]


def test_a_family_title_finds_its_template_first(world):
    ranked = search_items(BankItem.objects.order_by("kind", "slug"), "ROOFL")
    rank, first = ranked[0]
    assert (rank, first.kind, first.family) == (TITLE_PREFIX, BankItem.PROBLEM, "roofline")


def test_at_most_one_more_than_the_suggestions(world):
    for n in range(SUGGESTIONS + 5):
        BankItemFactory(slug=f"zz-quuxly-{n:02d}")
    ranked = search_items(BankItem.objects.order_by("kind", "slug"), "quuxly")
    assert len(ranked) == SUGGESTIONS + 1
    assert [item.slug for _, item in ranked][:2] == ["zz-quuxly-00", "zz-quuxly-01"]


def test_the_box_suggests_in_rank_order_and_an_exact_slug_adds_it(client, world, items):
    client.force_login(world.coach)
    response = client.get(reverse("coaching:item_search"), {"item": "zorbling"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert [html.index(f'value="{slug}"') for slug in EXPECTED] == sorted(html.index(f'value="{slug}"')
                                                                          for slug in EXPECTED)
    # Seven items hold the word, one is its exact slug: that one is added.
    response = client.post(reverse("coaching:set_add", args=[world.set.pk]), {"item": "Zorbling"})
    assert response.status_code == 302
    assert SetEntry.objects.filter(question_set=world.set).order_by("-position").first().item == items["zorbling"]
    # A part of the word names seven items and none exactly: an error naming the first three by rank.
    response = client.post(reverse("coaching:set_add", args=[world.set.pk]), {"item": "zorbl"})
    assert response.status_code == 200
    assert "“zorbl” matches 7 bank items (bb-one; ca-three; cc-two…)" in response.content.decode()

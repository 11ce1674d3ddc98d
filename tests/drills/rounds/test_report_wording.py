"""The report and the round page name items by their title and the "sit again" button reads as English.

Regression: the button said "Sit another the five-minute capacity question" (the title lower-cased after
"another"), and items were named by slug: "problem ladder" in the report, "ladder" in the round's item list.
"""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from calculators.engine.catalog import default_catalog
from drills.models import Round
from drills.problems.generation import snapshot_for

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _section(page: str, start: str, end: str) -> str:
    return page.split(start, 1)[1].split(end, 1)[0]


def test_capacity_report_names_the_ladder_and_offers_to_sit_the_round_again(candidate_client, candidate, bank,
                                                                           clock, h):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1])).content.decode()
    nav = _text(_section(page, 'aria-label="Items of this round">', "</nav>"))
    assert nav.startswith("problem Capacity ladder box 5 min")
    assert " ladder " not in f" {nav.split('Capacity ladder', 1)[1]} "

    wrong = {key: "1" for key in h.answers(item.problem)}
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes", "version": 0, **wrong})
    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()

    row = _section(page, '<tbody>', '</tbody>')
    assert f'<a href="{reverse("reviews:bank_item", args=["ladder"])}">Capacity ladder</a>' in row
    review_next = _text(_section(page, 'id="review-next">', "</form>"))
    assert review_next.startswith("Capacity ladder Problem template")
    buttons = [_text(b) for b in re.findall(r"<button[^>]*>(.*?)</button>", page, re.S)]
    assert "Sit this round again: The five-minute capacity question" in buttons
    assert "Sit another the" not in page


def test_open_items_are_named_by_their_question(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["manager"]))
    round_ = Round.objects.get(user=candidate)
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1])).content.decode()
    names = re.findall(r'aria-label="Items of this round".*?</nav>', page, re.S)[0]
    links = [_text(a) for a in re.findall(r"<a [^>]*>(.*?)</a>", names, re.S)]
    assert links == ["Cost per million tokens", "Fleet sizing", "Explain cost-per-token."]


def test_an_impossible_step_gives_its_reason_and_the_item_is_to_review_at_87_percent(candidate_client, candidate,
                                                                                     bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    answers = h.answers(item.problem)
    card = float(answers["card_gib"])
    answers["usable_gib"] = repr(card * 2)  # more usable memory than the card holds: impossible
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes", "version": 0, **answers})
    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()

    item.refresh_from_db()
    assert item.grade == 7 / 8  # the seven other steps are right, and none is taken from the impossible one
    steps = _text(_section(page, 'id="steps-1"', "</table>"))
    assert "Verdict Why" in steps
    assert "Impossible Impossible: it cannot exceed the card memory" in steps
    assert "Nothing below 80 %: well done." not in page
    assert _text(_section(page, 'id="review-next">', "</form>")).startswith("Capacity ladder Problem template")


def test_one_cards_memory_for_the_replica_is_named_in_the_why_column(candidate_client, candidate, bank, clock, h):
    # The round's ladder item on Qwen3-235B-A22B over 2 × B200 at fp8: a B200 reports 183,359 MiB = 179.06 GiB, the
    # replica 358.12 GiB. "179.06 GiB" for the replica is one card's memory: named, not "—".
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    problem = item.problem
    problem.inputs = {**problem.inputs, "model": "qwen3-235b-a22b", "gpu": "b200", "gpus": 2, "weights_dtype": "fp8"}
    problem.snapshot = snapshot_for(problem.inputs, default_catalog())
    problem.save()
    answers = h.answers(problem)
    answers["card_gib"] = "179.06 GiB"
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes", "version": 0, **answers})
    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()

    steps = html.unescape(_text(_section(page, 'id="steps-1"', "</table>")))
    assert "Card memory 179.06 GiB 358.12 GiB Misconception One card's memory for the replica" in steps

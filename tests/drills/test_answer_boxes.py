"""The drill page's answer boxes (issue 33 item 2): each step's tolerance beside its box, a verdict step's choice,
and the interviewer's notations graded on the page (significant figures, words, lower-case byte units).

The reference roofline (Llama-3.1-8B, bf16, one H100 SXM, batch 1, a 2,048-token prompt): ridge 989.4 TFLOP/s ÷
3,350 GB/s = 295.3 FLOP/byte; decode 1 FLOP/byte (memory-bound, 0); prefill 2,048 FLOP/byte (compute-bound, 1);
⌊295.3⌋ = 295 users reach the ridge (yes, 1). The reference ladder's KV budget is 71.68 − 14.96 − 3 = 53.73 GiB.
"""

from __future__ import annotations

import html
import re

import pytest

from tests.drills.problems.test_drills import make_problem, step_items, verdict_classes

pytestmark = pytest.mark.django_db

ROOFLINE = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "precision": "bf16", "weights_dtype": "bf16",
            "batch": 1, "prompt_tokens": 2048, "context": 0, "kv_dtype": "bf16"}


def hint(item: str) -> str:
    """The text beside a step's box: its unit (or "choose one") and its tolerance."""
    return " ".join(re.sub(r"<[^>]+>", " ", re.search(r'<span class="[^"]*step-hint">(.*?)</span>\s*</label>',
                                                         item, re.S).group(1)).split())


def options(item: str) -> list[tuple[str, bool]]:
    return [(value, bool(selected)) for value, selected in
            re.findall(r'<option value="([^"]*)"( selected)?>', item)]


@pytest.fixture
def client(candidate_client):
    return candidate_client  # alice, who owns the problems make_problem stores


def test_each_step_shows_its_tolerance_beside_its_box(client):
    items = step_items(client.get(make_problem("ladder", seed=0).get_absolute_url()))

    assert hint(items["card_gib"]) == "in GiB ±0.1 %"           # the card's own tighter tolerance
    assert hint(items["kv_budget_gib"]) == "in GiB ±0.5 %"
    assert hint(items["users_paged"]) == "in users whole number, round down"


def test_a_verdict_step_is_a_choice_of_its_words(client):
    items = step_items(client.get(make_problem("roofline", ROOFLINE).get_absolute_url()))

    assert hint(items["decode_bound"]) == "choose one"
    assert options(items["decode_bound"]) == [("", False), ("compute-bound", False), ("memory-bound", False)]
    assert options(items["ridge_reachable"]) == [("", False), ("yes", False), ("no", False)]
    assert '<select name="decode_bound" id="id_decode_bound"' in items["decode_bound"]
    assert 'for="id_decode_bound"' in items["decode_bound"]
    assert hint(items["ridge_flop_per_byte"]) == "in FLOP/byte ±0.5 %"


def test_words_chosen_or_typed_grade_and_stay_chosen(client):
    problem = make_problem("roofline", ROOFLINE)

    response = client.post(problem.get_absolute_url(), {"decode_bound": "memory-bound", "prefill_bound": "1",
                                                        "ridge_reachable": "Yes", "blanks": "count"})

    classes = verdict_classes(response)
    assert (classes["decode_bound"], classes["prefill_bound"], classes["ridge_reachable"]) == ("correct",) * 3
    items = step_items(response)
    assert options(items["decode_bound"])[2] == ("memory-bound", True)
    assert options(items["prefill_bound"])[1] == ("compute-bound", True)  # "1" typed elsewhere reads as its word
    assert options(items["ridge_reachable"])[1] == ("yes", True)
    stored = {step.key: (step.raw_input, step.parsed_value) for step in problem.attempts.get().steps.all()}
    assert stored["decode_bound"] == ("memory-bound", 0) and stored["ridge_reachable"] == ("Yes", 1)


def test_a_wrong_choice_says_the_expected_verdict_in_words(client):
    response = client.post(make_problem("roofline", ROOFLINE).get_absolute_url(),
                           {"decode_bound": "compute-bound", "blanks": "count"})

    assert "Expected memory-bound (0)." in step_items(response)["decode_bound"]


def test_significant_figures_and_lower_case_units_on_the_page(client):
    response = client.post(make_problem("ladder", seed=0).get_absolute_url(),
                           {"kv_budget_gib": "54", "weights_gib": "16.06 gb", "blanks": "count"})

    items = step_items(response)
    assert verdict_classes(response)["kv_budget_gib"] == "correct"
    assert "Correct to 2 significant figures: 53.73 GiB rounds to '54'." in items["kv_budget_gib"]
    assert verdict_classes(response)["weights_gib"] == "correct"
    assert "Read 'gb' as GB (unit symbols are case-sensitive)." in html.unescape(items["weights_gib"])

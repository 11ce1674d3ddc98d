"""A worked round item's boxes (issue 33 item 2): each step's tolerance beside its box, a verdict step's choice,
and a verdict chosen in words graded as 1 or 0."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from drills.models import Round

pytestmark = pytest.mark.django_db


@pytest.fixture
def roofline(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["phone"]))  # a ladder, a roofline, two open questions
    round_ = Round.objects.get(user=candidate)
    return round_, round_.items.get(item__slug="roofline")


def test_the_boxes_show_their_tolerance_and_a_verdict_is_a_choice(candidate_client, roofline):
    round_, item = roofline
    page = candidate_client.get(item.get_absolute_url()).content.decode()

    ridge = page.split('for="step-ridge_flop_per_byte"', 1)[1].split("</label>", 1)[0]
    assert '<span class="step-tolerance text-nowrap"' in ridge and "±0.5 %</span>" in ridge
    decode = page.split('for="step-decode_bound"', 1)[1].split("</select>", 1)[0]
    assert "choose one" in decode
    assert re.findall(r'<option value="([^"]*)"', decode) == ["", "compute-bound", "memory-bound"]
    assert '<select name="decode_bound" id="step-decode_bound"' in decode


def test_a_verdict_chosen_in_words_is_graded_as_1_or_0(candidate_client, candidate, roofline, h):
    round_, item = roofline
    right = {step.key: step.value for step in item.problem.solve().steps}
    words = {key: "compute-bound" if right[key] == 1 else "memory-bound" for key in ("decode_bound", "prefill_bound")}

    response = candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                                     {"version": item.version, **h.answers(item.problem), **words})

    assert response.status_code == 302
    item.refresh_from_db()
    steps = {step.key: step for step in item.attempt.steps.all()}
    for key, word in words.items():
        assert (steps[key].verdict, steps[key].raw_input, steps[key].parsed_value) == ("correct", word, right[key])
    page = candidate_client.get(item.get_absolute_url()).content.decode()
    decode = page.split('for="step-decode_bound"', 1)[1].split("</select>", 1)[0]
    assert f'<option value="{words["decode_bound"]}" selected>' in decode
    assert " disabled>" in decode  # submitted: no longer changed


def test_the_report_gives_a_verdicts_expected_value_in_its_word(candidate_client, candidate, roofline, h):
    round_, item = roofline
    right = {step.key: step.value for step in item.problem.solve().steps}
    wrong = "memory-bound" if right["prefill_bound"] == 1 else "compute-bound"
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                          {"version": item.version, **h.answers(item.problem), "prefill_bound": wrong})
    candidate_client.post(reverse("rounds:finish", args=[round_.pk]), {"confirm": "yes"})

    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()

    row = page.split(f"<code>{wrong}</code>", 1)[1].split("</tr>", 1)[0]
    expected = "compute-bound" if right["prefill_bound"] == 1 else "memory-bound"
    assert f'<td class="num">{expected}</td>' in row

"""The drill page records nothing and shows no expected value for a blank or unreadable step (issue 20, item 4).

Grading shows every step's expected value, so a submission with a step left blank or typed unreadably is sent
back with what was typed and a message beside each such box, like the review page does with a typo. Blank
steps count as unanswered (0, their expected value shown) only when the candidate asks; a typo never does.

Problem: the ladder at seed 7 (Qwen2.5-7B, one B300, FP8 KV cache, 16384-token context): KV cache per token
2 × 28 layers × 4 KV heads × 128 dims × 1 byte = 28672 B; per user 28672 × 16384 / 2³⁰ = 0.4375 GiB.
"""

from __future__ import annotations

import html

import pytest

from drills.models import Attempt
from drills.problems.generation import create_problem
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db


def _answers_form(response) -> str:
    body = html.unescape(response.content.decode())
    return body.split('<form id="answers"', 1)[1].split("</form>", 1)[0]


def test_a_blank_step_records_nothing_and_shows_no_expected_value(candidate_client, candidate):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    response = candidate_client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "28672"})
    form = _answers_form(response)
    assert response.status_code == 200 and Attempt.objects.count() == 0
    assert "Nothing was recorded and no expected value shown: 7 steps blank." in " ".join(form.split())
    assert "0.4375" not in form and "0.438" not in form and "Score" not in form and "xpected 28,672" not in form
    assert 'value="28672"' in form  # what was typed stays in its box
    assert form.count("Blank: type or choose a value, or grade with the blank steps counted as unanswered.") == 7
    assert 'name="blanks" value="count"' in form


def test_blanks_counted_as_unanswered_when_asked(candidate_client, candidate):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    response = candidate_client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "28672", "blanks": "count"})
    attempt = Attempt.objects.get()
    assert attempt.score == pytest.approx(1 / 8)  # one step of eight right, the blanks 0
    assert attempt.steps.get(key="per_user_gib").verdict == "unreadable"
    assert "No answer given; expected 0.438 GiB." in _answers_form(response)


def test_a_typo_is_refused_even_when_blanks_count(candidate_client, candidate, htmx_client):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    htmx_client.force_login(candidate)
    response = htmx_client.post(problem.get_absolute_url(),
                                {"kv_bytes_per_token": "28,67", "per_user_gib": "0.4375", "blanks": "count"})
    form = _answers_form(response)
    assert Attempt.objects.count() == 0 and "<html" not in response.content.decode()
    assert "Could not read '28,67'" in form and "1 could not be read" in " ".join(form.split())
    assert 'name="blanks" value="count"' not in form  # a typo is fixed, not counted
    assert "28,672" not in form and "Score" not in form


@pytest.mark.parametrize("blanks", ["", "count"])
def test_a_text_longer_than_the_box_allows_is_refused_as_unreadable_not_called_blank(candidate_client, candidate,
                                                                                     blanks):
    # A browser stops at the box's maxlength (10,000); a hand-made POST does not, and the parser says what it
    # expects instead of the page calling the step blank (and, with blanks counted, recording it as unanswered).
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    answers = {step.key: repr(step.value) for step in problem.solve().steps}
    answers["card_gib"] = "1" * 10_001
    response = candidate_client.post(problem.get_absolute_url(), {**answers, "blanks": blanks})
    form = " ".join(_answers_form(response).split())
    assert response.status_code == 200 and Attempt.objects.count() == 0
    assert "1 could not be read" in form and "blank" not in form.split("Nothing was recorded", 1)[1][:80]
    assert "at most 200 characters" in form or "limited to 200 characters" in form
    assert "Ensure this value has at most" not in form

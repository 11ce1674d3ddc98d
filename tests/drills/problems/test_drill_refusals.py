"""The drill page grades a blank step as no answer and refuses a step it cannot read (issue 20 item 4, made one rule
with the review card and the timed round).

A step typed unreadably is sent back with what was typed and the parser's message beside its box, nothing recorded
and no expected value shown: the typo is the candidate's to fix. A step left blank is graded, as DESIGN §10 scores
every step (nothing read: ``unreadable``, 0) and as the review card and a round do: it reads "No answer", scores 0
and shows its expected value.

Problem: the ladder at seed 7 (Qwen2.5-7B, one B300, FP8 KV cache, 16384-token context): KV cache per token
2 × 28 layers × 4 KV heads × 128 dims × 1 byte = 28672 B; per user 28672 × 16384 / 2³⁰ = 0.4375 GiB.
"""

from __future__ import annotations

import html
import re

import pytest

from drills.models import Attempt
from drills.problems.generation import create_problem
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db


def _answers_form(response) -> str:
    body = html.unescape(response.content.decode())
    return body.split('<form id="answers"', 1)[1].split("</form>", 1)[0]


def _verdicts(form: str) -> list[str]:
    return re.findall(r'class="input-group-text[^"]*verdict-badge">([^<]+)<', form)


def test_blank_steps_are_graded_no_answer_scoring_zero(candidate_client, candidate):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    response = candidate_client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "28672"})
    form = _answers_form(response)
    attempt = Attempt.objects.get()
    assert attempt.score == pytest.approx(1 / 8)  # one step of eight right, the seven blanks 0
    assert attempt.steps.get(key="per_user_gib").verdict == "unreadable"
    assert attempt.steps.get(key="per_user_gib").raw_input == ""
    assert "No answer given; expected 0.438 GiB." in form
    assert "Score 12 %" in " ".join(form.split())  # 1/8 = 12.5 %, shown to the whole (even) percent
    # The kv step (the fifth of eight) reads its verdict, the seven blank ones the one wording rounds use too.
    assert _verdicts(form) == ["No answer"] * 4 + ["Correct"] + ["No answer"] * 3
    assert "Nothing was recorded" not in form and 'name="blanks"' not in form


def test_a_typo_is_refused_and_nothing_recorded(candidate_client, candidate, htmx_client):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    htmx_client.force_login(candidate)
    response = htmx_client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "28,67", "per_user_gib": "0.4375"})
    form = _answers_form(response)
    assert Attempt.objects.count() == 0 and "<html" not in response.content.decode()
    assert "Could not read '28,67'" in form
    assert ("Nothing was recorded and no expected value shown: 1 could not be read. Fix the marked step and grade "
            "again.") in " ".join(form.split())
    assert "28,672" not in form and "Score" not in form and "No answer" not in form
    assert 'value="28,67"' in form  # what was typed stays in its box


def test_a_text_longer_than_the_box_allows_is_refused_as_unreadable_not_called_blank(candidate_client, candidate):
    # A browser stops at the box's maxlength (10,000); a hand-made POST does not, and the parser says what it
    # expects instead of the page calling the step blank and grading it as no answer.
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    answers = {step.key: repr(step.value) for step in problem.solve().steps}
    answers["card_gib"] = "1" * 10_001
    response = candidate_client.post(problem.get_absolute_url(), answers)
    form = " ".join(_answers_form(response).split())
    assert response.status_code == 200 and Attempt.objects.count() == 0
    assert "1 could not be read" in form and "No answer" not in form
    assert "at most 200 characters" in form or "limited to 200 characters" in form
    assert "Ensure this value has at most" not in form

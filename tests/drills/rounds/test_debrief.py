"""The round debrief (issue 20, item 3): every step of every item, "work it again", "Finish now" confirmed.

The ladder problem is pinned by its inputs (tests/pinned.py: Qwen2.5-7B on one B300, FP8 KV cache, 16384-token
context): its KV cache per token is 2 (K and V) × 28 layers × 4 KV heads × 128 dims × 1 byte = 28672 B, and a user
at the context limit holds 28672 B × 16384 / 2³⁰ = 0.4375 GiB.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from drills.models import ProblemInstance, Round
from drills.problems.generation import create_problem
from tests.paths import REPO_ROOT
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _pinned_capacity_round(candidate_client, candidate):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    item.problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    item.save(update_fields=["problem"])
    return round_, item


def test_report_lists_every_step_with_typed_expected_verdict_and_misconception(candidate_client, candidate,
                                                                               bank, clock):
    round_, item = _pinned_capacity_round(candidate_client, candidate)
    typed = {"kv_bytes_per_token": "200704", "per_user_gib": "0.4375"}  # 28 query heads for 4 KV heads
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes", "version": 0, **typed})
    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    steps = page.split('id="steps-1"', 1)[1].split("</table>", 1)[0]
    rows = [_text(row) for row in re.findall(r"<tr>(.*?)</tr>", steps.split("<tbody>", 1)[1], re.S)]
    assert len(rows) == 8  # every ladder step, answered or not
    per_token = next(row for row in rows if row.startswith("KV cache per token"))
    assert per_token == "KV cache per token 200704 28,672 B Misconception Query heads used for K/V heads"
    assert rows[5] == "KV cache per user at the context limit 0.4375 0.438 GiB Correct —"
    assert rows[0] == "Card memory blank 268.59 GiB No answer —"  # blank, as the drill page words it
    assert "finished early" in _text(page)  # the last item in before the deadline ends the round early


def test_work_it_again_opens_a_fresh_variant_of_the_same_template(candidate_client, candidate, bank, clock):
    round_, item = _pinned_capacity_round(candidate_client, candidate)
    assert candidate_client.post(reverse("rounds:again", args=[round_.pk, 1])).status_code == 404  # still on
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]),
                          {"confirm": "yes", "version": 0, "blanks": "count"})  # all blank: counted as unanswered
    response = candidate_client.post(reverse("rounds:again", args=[round_.pk, 1]))
    fresh = ProblemInstance.objects.exclude(pk=item.problem_id).latest("pk")
    assert response["Location"] == fresh.get_absolute_url()
    assert fresh.family == "ladder" and fresh.seed != 7
    assert candidate_client.get(fresh.get_absolute_url()).status_code == 200


def test_finish_now_asks_first_and_the_report_says_finished_early(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1])).content.decode()
    confirm = reverse("rounds:confirm_finish", args=[round_.pk])
    assert f'href="{confirm}"' in page
    clock.advance(minutes=2)
    # A post without the confirmation (an old page's button) only leads to the question.
    response = candidate_client.post(reverse("rounds:finish", args=[round_.pk]))
    assert response["Location"] == confirm
    round_.refresh_from_db()
    assert round_.is_active
    question = _text(candidate_client.get(confirm).content.decode())
    assert "Finish the round now?" in question and "Yes, finish now" in question
    assert "Item 1:" in question  # what is still unsubmitted
    response = candidate_client.post(reverse("rounds:finish", args=[round_.pk]), {"confirm": "yes"})
    assert response["Location"] == reverse("rounds:report", args=[round_.pk])
    round_.refresh_from_db()
    assert round_.status == Round.FINISHED and (round_.deadline - round_.finished_at).total_seconds() > 0
    report = _text(candidate_client.get(response["Location"]).content.decode())
    assert "finished early" in report and "at the deadline" not in report.replace("closed at the deadline", "")
    assert "Late answers: an answer that reaches the server up to 5 seconds after the deadline" in report


def test_the_countdown_bar_is_sticky_by_a_class_at_every_width():
    css = REPO_ROOT.joinpath("static/css/rounds.css").read_text()
    rule = css.split(".round-bar {", 1)[1].split("}", 1)[0]
    assert "position: sticky" in rule and "top: 0" in rule
    assert "@media" not in css.split(".round-bar {", 1)[0].rsplit("}", 1)[-1]

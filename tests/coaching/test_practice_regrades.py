"""The coach sees which of a candidate's attempts count and which are practice re-grades.

demo grades a ladder pinned by its inputs (tests/pinned.py: Qwen2.5-7B, KV cache per token 2 × 28 layers × 4 KV
heads × 128 × 1 B = 28,672 B) twice: first typing 200,704 B (the 28 query heads in place of the 4 KV heads), then,
after grading showed the expected value, 28,672 B. Only the first attempt is in the coach's scores and misconception
tables (``Attempt.first_graded``); the candidate page marks the second as practice and its attempt page links the
first.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse

from coaching.candidate_report import PRACTICE, counted_attempt
from coaching.visibility import HiddenWork, hidden_work
from drills.models import BankItem, Round, RoundItem
from drills.problems.generation import create_problem
from drills.problems.grading import submit
from tests.factories import ProblemTemplateFactory
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db


@pytest.fixture
def regraded(world):
    problem = create_problem("ladder", seed=7, user=world.demo, fixed_inputs=QWEN25_7B_LADDER)
    first = submit(problem, world.demo, {"kv_bytes_per_token": "200704", "per_user_gib": "0.4375"}).attempt
    second = submit(problem, world.demo, {"kv_bytes_per_token": "28672", "per_user_gib": "0.4375"}).attempt
    return first, second


def test_the_candidate_page_marks_the_regrade_as_practice(client, world, regraded):
    first, second = regraded
    client.force_login(world.coach)
    url = reverse("coaching:candidate", args=[world.demo.pk])
    export = client.get(url, {"export": "attempts"})
    assert export["Content-Disposition"] == 'attachment; filename="demo-attempts.csv"'  # one file per candidate
    rows = list(csv.reader(io.StringIO(export.content.decode())))
    assert rows[0] == ["When", "Family", "Score", "Time", "Misconceptions", "Counts"]
    # Newest first: the re-grade (all right, no misconception) is practice; the first try (one misconception) counts.
    assert [(row[2], row[4], row[5]) for row in rows[1:]] == [
        (f"{second.score:.0%}", "0", PRACTICE), (f"{first.score:.0%}", "1", "yes")]
    assert first.score < second.score

    page = client.get(url).content.decode()
    assert PRACTICE in page and "a re-grade is practice" in page


def test_the_attempt_page_of_a_regrade_links_the_attempt_that_counts(client, world, regraded):
    first, second = regraded
    client.force_login(world.coach)
    page = client.get(reverse("coaching:attempt", args=[second.pk])).content.decode()
    note = page.split("Practice re-grade.", 1)[1].split("</p>", 1)[0]
    assert f'href="{reverse("coaching:attempt", args=[first.pk])}"' in note
    assert f"{first.score:.0%}".replace("%", " %") in note

    page = client.get(reverse("coaching:attempt", args=[first.pk])).content.decode()
    assert "Practice re-grade." not in page


def test_a_hidden_first_attempt_is_neither_linked_nor_mentioned(world, regraded):
    first, second = regraded
    assert counted_attempt(second, HiddenWork()) == first
    assert counted_attempt(first, HiddenWork()) is None
    assert counted_attempt(second, HiddenWork(attempt_ids=frozenset({first.pk}))) is None


def test_the_attempt_page_words_blank_steps_and_credit_as_the_candidate_saw_them(client, world, regraded):
    _first, second = regraded
    client.force_login(world.coach)
    page = client.get(reverse("coaching:attempt", args=[second.pk])).content.decode()
    rows = {row.split("<code>", 1)[1].split("</code>", 1)[0]: row for row in page.split('<th scope="row"')[1:]}
    # Typed and right: 28,672 B read, full credit. Left blank: "No answer" (stored as unreadable), no credit.
    assert 'data-label="Read as">28,672 B</td>' in rows["kv_bytes_per_token"]
    assert ">Correct<" in rows["kv_bytes_per_token"] and 'data-label="Credit">100 %</td>' in rows["kv_bytes_per_token"]
    assert second.steps.get(key="card_gib").verdict == "unreadable"
    assert ">No answer<" in rows["card_gib"] and 'data-label="Credit">0 %</td>' in rows["card_gib"]
    assert "Unreadable" not in page


def test_a_regrade_of_hidden_work_is_hidden_with_it(client, world):
    """demo works a ladder in a round on dave's unpublished problem template (hidden from carol), then re-grades
    the same problem on the drill page: carol sees neither, not even as a practice row on the candidate page."""
    dave_template = ProblemTemplateFactory(slug="dave-private-ladder", published=False, author=world.dave,
                                           prompt="Dave's ladder.")
    problem = create_problem("ladder", seed=7, user=world.demo, fixed_inputs=QWEN25_7B_LADDER)
    in_round = submit(problem, world.demo, {"kv_bytes_per_token": "200704"}).attempt
    round_ = Round.objects.create(user=world.demo, kind="custom", title="Dave's round", started_at=world.T0,
                                  deadline=world.T0 + timedelta(minutes=30))
    RoundItem.objects.create(round=round_, position=1, item=dave_template, item_slug=dave_template.slug,
                             kind=BankItem.PROBLEM, problem=problem, attempt=in_round)
    regrade = submit(problem, world.demo, {"kv_bytes_per_token": "28672"}).attempt

    assert hidden_work(world.coach, [world.demo.pk]).attempt_ids == {in_round.pk, regrade.pk}
    client.force_login(world.coach)
    assert client.get(reverse("coaching:attempt", args=[regrade.pk])).status_code == 404
    rows = list(csv.reader(io.StringIO(client.get(reverse("coaching:candidate", args=[world.demo.pk]),
                                                  {"export": "attempts"}).content.decode())))
    assert rows[1:] == []
    client.force_login(world.dave)  # dave is not demo's coach: he sees nothing of demo at all
    assert client.get(reverse("coaching:attempt", args=[regrade.pk])).status_code == 404
    client.force_login(world.sam)  # staff see both, the re-grade marked as practice
    rows = list(csv.reader(io.StringIO(client.get(reverse("coaching:candidate", args=[world.demo.pk]),
                                                  {"export": "attempts"}).content.decode())))
    assert [row[5] for row in rows[1:]] == [PRACTICE, "yes"]

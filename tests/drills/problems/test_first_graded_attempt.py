"""Re-submissions after grading revealed the expected values are practice, not evidence (issue 20, item 4).

Problem: a ladder pinned by its inputs (tests/pinned.py: Qwen2.5-7B, one B300, FP8 KV cache, 16384-token context).
Its KV cache per token is 2 × 28 layers × 4 KV heads × 128 dims × 1 byte = 28672 B. The candidate first types 200704
B (the 28 query heads used for the 4 KV heads: 7 × 28672), is shown 28672 B, then submits again with it right.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timezone as dt_timezone

import pytest
from django.test import Client

from coaching.candidate_report import candidate_tables
from coaching.dashboard import misconception_counts
from coaching.visibility import hidden_work
from drills.models import Attempt, ProblemInstance, StepAnswer
from drills.problems.generation import create_problem
from drills.problems.grading import submit
from drills.reviews.progress import progress_for
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db


@pytest.fixture
def resubmitted(candidate):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    first = submit(problem, candidate, {"kv_bytes_per_token": "200704", "per_user_gib": "0.4375"}).attempt
    second = submit(problem, candidate, {"kv_bytes_per_token": "28672", "per_user_gib": "0.4375"}).attempt
    return problem, first, second


def test_only_the_first_graded_attempt_is_evidence(candidate, resubmitted):
    _problem, first, second = resubmitted
    assert list(Attempt.objects.filter(user=candidate).first_graded()) == [first]
    steps = StepAnswer.objects.filter(attempt__user=candidate, key="kv_bytes_per_token").first_graded()
    assert [(s.raw_input, s.verdict) for s in steps] == [("200704", "misconception")]
    assert second.steps.get(key="kv_bytes_per_token").verdict == "correct"  # kept, as practice


def test_progress_counts_the_first_attempt_and_lists_every_ladder_step(candidate, resubmitted):
    progress = progress_for(candidate, datetime(2100, 1, 1, tzinfo=dt_timezone.utc))
    steps = {share.key: share for share in progress.ladder_steps}
    assert list(steps) == ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token",
                           "per_user_gib", "users_worst_case", "users_paged"]
    # One answer each (not two), and the wrong first try is what counts: 0 % not 50 %.
    assert (steps["kv_bytes_per_token"].count, steps["kv_bytes_per_token"].mean) == (1, 0.0)
    assert (steps["per_user_gib"].count, steps["per_user_gib"].mean) == (1, 1.0)
    assert [(m.id, m.count) for m in progress.misconceptions] == [("query-heads-for-kv-heads", 1)]


def test_coach_tables_count_the_first_attempt(candidate, coach, resubmitted):
    now = datetime(2100, 1, 1, tzinfo=dt_timezone.utc)
    counts = misconception_counts([candidate.pk], now, hidden_work(coach, [candidate.pk]))[candidate.pk]
    assert [(m["id"], m["total"]) for m in counts] == [("query-heads-for-kv-heads", 1)]
    ladder = next(table for table in candidate_tables(coach, candidate, now) if table.name == "ladder")
    rows = {row[0].text: [cell.text for cell in row[1:]] for row in ladder.rows}
    assert rows["KV cache per token (kv_bytes_per_token)"] == ["1", "0%", "1"]
    assert rows["KV cache per user at the context limit (per_user_gib)"] == ["1", "100%", "0"]


def test_the_drill_page_says_a_resubmission_is_practice(candidate_client, candidate):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    first = candidate_client.post(problem.get_absolute_url(),
                                  {"kv_bytes_per_token": "200704", "blanks": "count"}).content.decode()
    assert 'id="practice-note"' not in first
    again = candidate_client.post(problem.get_absolute_url(),
                                  {"kv_bytes_per_token": "28672", "blanks": "count"}).content.decode()
    note = again.split('id="practice-note">', 1)[1].split("</div>", 1)[0]
    assert "count your first graded attempt (0 %)" in note  # 0 of 8 steps right the first time


def test_the_drill_page_opened_again_names_the_attempt_that_counts(candidate_client, candidate):
    problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    assert 'id="seen-note"' not in candidate_client.get(problem.get_absolute_url()).content.decode()
    candidate_client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "200704", "blanks": "count"})
    first = Attempt.objects.get(user=candidate)
    page = candidate_client.get(problem.get_absolute_url()).content.decode()
    note = page.split('id="seen-note">', 1)[1].split("</div>", 1)[0]
    assert "(0 %): that first attempt is the one your progress and your coach count" in note
    assert f"{first.submitted_at:%Y}" in note and "Grading it again is practice" in note
    assert 'id="seen-note"' not in Client().get(problem.get_absolute_url()).content.decode()  # a visitor


def test_the_same_draw_opened_again_from_its_seed_is_the_stored_problem(candidate_client, candidate):
    """Regression (a new user's try): grading /drills/ladder/new/?seed=N, opening that address again and grading
    again stored a second problem, so both first attempts counted (the coach saw every step answered twice and a
    misconception "rising"). The second grading is now practice on the first problem."""
    address = "/drills/ladder/new/?seed=7"
    candidate_client.post(address, {"kv_bytes_per_token": "200704", "blanks": "count"})
    problem = ProblemInstance.objects.get(created_by=candidate)
    again = candidate_client.get(address)
    assert again.status_code == 302 and again["Location"] == problem.get_absolute_url()  # a read: nothing stored
    candidate_client.post(address, {"kv_bytes_per_token": "28672", "blanks": "count"})
    assert ProblemInstance.objects.filter(created_by=candidate).count() == 1
    first, second = Attempt.objects.filter(user=candidate).order_by("pk")
    assert first.problem_id == second.problem_id == problem.pk
    assert list(Attempt.objects.filter(user=candidate).first_graded()) == [first]
    assert candidate_client.post(address, {"save": "1"})["Location"] == problem.get_absolute_url()
    assert ProblemInstance.objects.filter(created_by=candidate).count() == 1
    # Another candidate's draw of the same seed is theirs alone.
    assert Client().get(address).status_code == 200

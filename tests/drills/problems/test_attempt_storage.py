"""``drills.problems.storage.store_attempt``: an attempt and its steps, stored in one transaction.

Each stored row is compared with the grade it came from, field by field.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.db import IntegrityError
from django.utils import timezone

from calculators.engine.grader import grade
from drills.models import Attempt, StepAnswer
from drills.problems.generation import create_problem
from drills.problems.storage import STEP_COLUMNS, step_values, store_attempt

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=dt_timezone.utc)


def _graded(problem, wrong: str = "1"):
    """``problem`` graded with every step right but the first, typed as ``wrong``."""
    answers = {step.key: repr(step.value) for step in problem.solve().steps}
    first = next(iter(answers))
    answers[first] = wrong
    return grade(problem.solve(), answers), first


def test_every_step_is_stored_as_graded_with_the_callers_clock(candidate):
    problem = create_problem("ladder", seed=7)
    graded, first = _graded(problem)
    attempt = store_attempt(problem, candidate, graded, NOW - timedelta(seconds=90), now=NOW, time_taken_s=90.0)
    stored = Attempt.objects.get()
    assert attempt.pk == stored.pk and not attempt._state.adding
    assert (stored.problem_id, stored.user_id, stored.submitted_at, stored.time_taken_s) == (
        problem.pk, candidate.pk, NOW, 90.0)
    assert stored.started_at == NOW - timedelta(seconds=90) and stored.score == pytest.approx(graded.score)
    rows = list(StepAnswer.objects.filter(attempt=stored).order_by("position").values(*STEP_COLUMNS))
    assert rows == step_values(graded) and len(rows) == len(problem.solve().steps) == 8
    wrong = rows[0]
    assert (wrong["key"], wrong["raw_input"], wrong["parsed_value"]) == (first, "1", 1.0)
    assert wrong["credit"] == 0 and wrong["verdict"] != "correct"
    assert all(row["verdict"] == "correct" and row["credit"] == 1.0 and row["carried_expected"] is None
               for row in rows[2:])


def test_without_a_clock_the_attempt_is_stamped_now_and_timed_from_its_start(candidate):
    problem = create_problem("ladder", seed=7)
    graded, _ = _graded(problem, "7O GiB")  # unreadable: stored with its message and no value
    before = timezone.now()
    store_attempt(problem, candidate, graded, before - timedelta(seconds=30))
    stored = Attempt.objects.get()
    assert before <= stored.submitted_at <= timezone.now()
    assert 30 <= stored.time_taken_s < 40
    step = StepAnswer.objects.get(attempt=stored, position=0)
    assert step.verdict == "unreadable" and step.parsed_value is None and "7O GiB" in step.message
    # A start in the future (a tampered or skewed stamp) times nothing.
    store_attempt(problem, candidate, graded, timezone.now() + timedelta(hours=1))
    assert Attempt.objects.order_by("-pk").first().time_taken_s is None


@pytest.mark.django_db(transaction=True)  # autocommit, as a request runs: no test transaction to roll back to
def test_a_step_that_cannot_be_stored_leaves_no_attempt_behind(candidate):
    problem = create_problem("ladder", seed=7)
    graded, _ = _graded(problem)
    twice = dataclasses.replace(graded, steps=[graded.steps[0], graded.steps[0]])  # one answer per step, violated
    with pytest.raises(IntegrityError):
        store_attempt(problem, candidate, twice, None, now=NOW)
    assert not Attempt.objects.exists() and not StepAnswer.objects.exists()


def test_the_earliest_earlier_attempt_comes_back_with_each_new_one(candidate, coach):
    problem = create_problem("ladder", seed=7)
    graded, _ = _graded(problem)
    first = store_attempt(problem, candidate, graded, None, now=NOW)
    assert first.earliest_before is None  # the first attempt is the one that counts
    second = store_attempt(problem, candidate, graded, None, now=NOW + timedelta(minutes=1))
    third = store_attempt(problem, candidate, graded, None, now=NOW + timedelta(minutes=2))
    assert (second.earliest_before.pk, third.earliest_before.pk) == (first.pk, first.pk)
    assert third.earliest_before.score == pytest.approx(graded.score) == pytest.approx(7 / 8)
    # Another candidate's attempts, and the candidate's attempts of another problem, are not theirs to count.
    assert store_attempt(problem, coach, graded, None, now=NOW).earliest_before is None
    other = create_problem("ladder", seed=8)
    assert store_attempt(other, candidate, _graded(other)[0], None, now=NOW).earliest_before is None

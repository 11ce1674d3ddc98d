"""``drills.problems.grading.submit``: grade → attempt → review, the one path of a worked problem's answers.

The drill page, a review card, a timed round and the coach's sample data all
go through it; these tests pin what it writes for each kind of caller.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.contrib.auth.models import AnonymousUser

from drills.models import Attempt, StepAnswer
from drills.problems.generation import create_problem
from drills.problems.grading import UnreadableAnswers, submit

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=dt_timezone.utc)


def right(problem) -> dict[str, str]:
    return {step.key: repr(step.value) for step in problem.solve().steps}


def test_a_visitor_gets_the_grade_and_nothing_is_stored():
    problem = create_problem("ladder", seed=7)
    done = submit(problem, AnonymousUser(), right(problem))
    assert done.grade.score == pytest.approx(1.0) and done.attempt is None and done.review is None
    assert not Attempt.objects.exists()


def test_a_candidate_gets_an_attempt_stamped_with_the_callers_clock_and_the_review_sees_it(candidate):
    problem = create_problem("ladder", seed=7)
    answers = right(problem)
    first = next(iter(answers))
    answers[first] = "1"  # one step wrong
    seen = []
    done = submit(problem, candidate, answers, started_at=NOW - timedelta(seconds=90), now=NOW, time_taken_s=90.0,
                  review=lambda graded, attempt: seen.append((graded.score, attempt.pk)) or "reviewed")
    steps = len(problem.solve().steps)
    assert done.review == "reviewed" and seen == [(done.grade.score, done.attempt.pk)]
    stored = Attempt.objects.get()
    assert stored.submitted_at == NOW and stored.time_taken_s == 90.0 and stored.user == candidate
    assert StepAnswer.objects.filter(attempt=stored).count() == steps
    assert StepAnswer.objects.get(attempt=stored, key=first).credit < 1
    assert stored.score == pytest.approx(done.grade.score) and done.grade.score < 1


def test_strict_refuses_an_unreadable_step_before_writing_anything(candidate):
    problem = create_problem("ladder", seed=7)
    answers = right(problem)
    first = next(iter(answers))
    answers[first] = "7O GiB"
    reviewed = []
    with pytest.raises(UnreadableAnswers) as raised:
        submit(problem, candidate, answers, strict=True, review=lambda graded, attempt: reviewed.append(attempt))
    assert list(raised.value.messages) == [first] and reviewed == [] and not Attempt.objects.exists()
    # Not strict (the drill page), the same text is graded "unreadable" and stored.
    done = submit(problem, candidate, answers)
    assert done.attempt.steps.get(key=first).verdict == "unreadable"

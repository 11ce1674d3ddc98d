"""Grade a submission to a problem instance and store it for a logged-in candidate."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from calculators.engine.grader import Grade, grade

from drills.models import Attempt, ProblemInstance, StepAnswer


def grade_problem(problem: ProblemInstance, answers: dict[str, str]) -> Grade:
    """Grade ``answers`` (step key → typed text) against the problem's right answers."""
    return grade(problem.solve(), answers)


@transaction.atomic
def save_attempt(problem: ProblemInstance, user, result: Grade, started_at: datetime | None) -> Attempt:
    """Store a graded attempt with one :class:`StepAnswer` per step."""
    now = timezone.now()
    time_taken = (now - started_at).total_seconds() if started_at and started_at <= now else None
    attempt = Attempt.objects.create(problem=problem, user=user, score=result.score,
                                     started_at=started_at, time_taken_s=time_taken)
    StepAnswer.objects.bulk_create([
        StepAnswer(attempt=attempt, position=index, key=step.key, unit=step.unit, raw_input=step.given,
                   parsed_value=step.value, verdict=step.verdict, credit=step.credit,
                   misconception=step.misconception or "", expected=step.expected,
                   carried_expected=step.carried_expected, message=step.message)
        for index, step in enumerate(result.steps)
    ])
    return attempt

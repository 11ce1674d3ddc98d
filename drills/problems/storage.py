"""Store a graded attempt and its steps: the attempt's INSERT and the steps' ``bulk_create`` in one transaction.

A graded submission is the site's one frequent write; it takes the same path on every database. The same
transaction reads the candidate's earliest earlier attempt of the problem (the one that counts,
``Attempt.first_graded``; the drill page's practice note names it), unless the problem was read
:func:`with_first_attempt`, with it in the same query (the drill page's POST: one round trip less).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.utils import timezone

from calculators.engine.grader import Grade
from drills.problems.models import Attempt, ProblemInstance, StepAnswer

STEP_COLUMNS = ("position", "key", "unit", "raw_input", "parsed_value", "verdict", "credit", "misconception",
                "expected", "carried_expected", "message")


def step_values(result: Grade) -> list[dict]:
    """One dict of :class:`StepAnswer` field values (``STEP_COLUMNS``) per step of ``result``, in order."""
    return [{"position": index, "key": step.key, "unit": step.unit, "raw_input": step.given,
             "parsed_value": step.value, "verdict": step.verdict, "credit": step.credit,
             "misconception": step.misconception or "", "expected": step.expected,
             "carried_expected": step.carried_expected, "message": step.message}
            for index, step in enumerate(result.steps)]


def with_first_attempt(problems: QuerySet, user) -> QuerySet:
    """``problems`` (a :class:`ProblemInstance` queryset) each read with ``user``'s earliest attempt of it, in the
    same query: ``first_attempt_pk`` and ``first_attempt_score`` (``None`` for none), which the next
    :func:`store_attempt` of that ``user`` takes instead of reading them again (once)."""
    first = Attempt.objects.filter(problem=OuterRef("pk"), user=user).order_by("pk")
    return problems.annotate(first_attempt_pk=Subquery(first.values("pk")[:1]),
                             first_attempt_score=Subquery(first.values("score")[:1]), first_attempt_of=Value(user.pk))


def _earliest(problem: ProblemInstance, user) -> tuple[int, float] | None:
    """``user``'s earliest attempt of ``problem`` as (pk, score), as :func:`with_first_attempt` read it, else read."""
    if getattr(problem, "first_attempt_of", None) == user.pk:
        problem.first_attempt_of = None  # used once: a second attempt stored with it reads the table
        return None if problem.first_attempt_pk is None else (problem.first_attempt_pk, problem.first_attempt_score)
    return Attempt.objects.filter(user=user, problem=problem).order_by("pk").values_list("pk", "score").first()


def store_attempt(problem: ProblemInstance, user, result: Grade, started_at: datetime | None, *,
                  now: datetime | None = None, time_taken_s: float | None = None) -> Attempt:
    """Store ``result`` as ``user``'s :class:`Attempt` of ``problem`` with one :class:`StepAnswer` per step.

    ``started_at`` is an aware datetime or ``None``. Without ``now`` the attempt is stamped with the wall
    clock and takes the seconds since ``started_at`` (``None`` without one, or one in the future); with
    ``now`` (a review's or a round's clock) it is stamped ``now`` and takes ``time_taken_s`` as given.

    Returns the saved attempt (its steps are in the database, not attached to it). Its ``earliest_before`` is
    ``user``'s earliest attempt of ``problem`` saved before it (an :class:`Attempt` with only ``pk`` and
    ``score``), or ``None`` when this is the first. A database error (the problem or the user deleted
    meanwhile) propagates, and then nothing is stored.
    """
    stamp = now or timezone.now()
    if now is None:
        time_taken_s = (stamp - started_at).total_seconds() if started_at and started_at <= stamp else None
    attempt = Attempt(problem=problem, user=user, score=result.score, started_at=started_at,
                      submitted_at=stamp, time_taken_s=time_taken_s)
    steps = step_values(result)
    with transaction.atomic():
        earliest = _earliest(problem, user)
        attempt.save()  # submitted_at is auto_now_add: the save stamps the wall clock
        if now is not None:
            Attempt.objects.filter(pk=attempt.pk).update(submitted_at=now)
            attempt.submitted_at = now
        StepAnswer.objects.bulk_create([StepAnswer(attempt=attempt, **step) for step in steps])
    attempt.earliest_before = Attempt(pk=earliest[0], score=earliest[1]) if earliest else None
    return attempt

"""Store a graded attempt and its steps: one statement on PostgreSQL, the ORM in a transaction elsewhere.

A graded submission is the site's one frequent write. Through the ORM it costs
four round trips to the database (BEGIN, the attempt's INSERT, the steps' INSERT,
COMMIT; inside a review's or a round's transaction, a SAVEPOINT and its RELEASE
instead of BEGIN and COMMIT). On
PostgreSQL a data-modifying ``WITH`` puts both INSERTs in one statement, which is
atomic on its own (PostgreSQL manual, "WITH Queries", §7.8.4: all the statements of
a ``WITH`` run in one snapshot and succeed or fail together), so it needs no
transaction of its own: one round trip. The same statement reads the candidate's
earliest earlier attempt of the problem (the one that counts, ``Attempt.first_graded``;
the drill page's practice note names it): every part of a ``WITH`` sees the database
as it was before the statement, so the new row is not among those it finds. The
statement is built from the models' ``_meta`` (table and column names, each
column's database type), so it follows the models; ``tests/test_attempt_storage.py``
checks that both paths store the same rows and find the same earlier attempt.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache

from django.db import connections, transaction
from django.utils import timezone

from calculators.engine.grader import Grade
from drills.problems.models import Attempt, ProblemInstance, StepAnswer

ATTEMPT_COLUMNS = ("problem", "user", "score", "started_at", "submitted_at", "time_taken_s")
STEP_COLUMNS = ("position", "key", "unit", "raw_input", "parsed_value", "verdict", "credit", "misconception",
                "expected", "carried_expected", "message")


def step_values(result: Grade) -> list[dict]:
    """One dict of :class:`StepAnswer` field values (``STEP_COLUMNS``) per step of ``result``, in order."""
    return [{"position": index, "key": step.key, "unit": step.unit, "raw_input": step.given,
             "parsed_value": step.value, "verdict": step.verdict, "credit": step.credit,
             "misconception": step.misconception or "", "expected": step.expected,
             "carried_expected": step.carried_expected, "message": step.message}
            for index, step in enumerate(result.steps)]


@cache
def _insert_sql(alias: str) -> str:
    """The one-statement INSERT of an attempt and its steps on the PostgreSQL connection ``alias``, answering
    the new attempt's id and the id and score of the user's earliest earlier attempt of the problem (or nulls)."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    table = quote(Attempt._meta.db_table)
    attempt_fields = [Attempt._meta.get_field(name) for name in ATTEMPT_COLUMNS]
    step_fields = [StepAnswer._meta.get_field(name) for name in STEP_COLUMNS]
    attempt_fk = StepAnswer._meta.get_field("attempt")
    pk, score, user, problem = (quote(Attempt._meta.get_field(name).column)
                                for name in ("id", "score", "user", "problem"))
    # Each step column arrives as one array parameter, typed with the column's own type, and UNNEST turns the
    # arrays into rows (Django's bulk_create does the same on PostgreSQL).
    arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in step_fields)
    return (
        f"WITH attempt AS (INSERT INTO {table} ({', '.join(quote(field.column) for field in attempt_fields)}) "
        f"VALUES ({', '.join(['%s'] * len(attempt_fields))}) RETURNING {pk}), "
        f"steps AS (INSERT INTO {quote(StepAnswer._meta.db_table)} "
        f"({', '.join(quote(field.column) for field in (attempt_fk, *step_fields))}) "
        f"SELECT attempt.{pk}, step.* FROM attempt, UNNEST({arrays}) AS step) "
        # The earliest attempt before this one (the new row is not visible here), probing the attempt
        # (user, problem, id) index.
        f"SELECT attempt.{pk}, earliest.{pk}, earliest.{score} FROM attempt LEFT JOIN LATERAL "
        f"(SELECT {pk}, {score} FROM {table} WHERE {user} = %s AND {problem} = %s ORDER BY {pk} LIMIT 1) "
        f"AS earliest ON true"
    )


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
    alias = Attempt.objects.db
    connection = connections[alias]
    if connection.vendor != "postgresql":
        with transaction.atomic(using=alias):
            earliest = (Attempt.objects.using(alias).filter(user=user, problem=problem).order_by("pk")
                        .values_list("pk", "score").first())
            attempt.save(using=alias)  # submitted_at is auto_now_add: the save stamps the wall clock
            if now is not None:
                Attempt.objects.using(alias).filter(pk=attempt.pk).update(submitted_at=now)
                attempt.submitted_at = now
            StepAnswer.objects.using(alias).bulk_create([StepAnswer(attempt=attempt, **step) for step in steps])
    else:
        fields = [Attempt._meta.get_field(name) for name in ATTEMPT_COLUMNS]
        # pre_save with add=False reads the attribute as set (add=True would let auto_now_add replace the stamp).
        params = [field.get_db_prep_save(field.pre_save(attempt, add=False), connection) for field in fields]
        for name in STEP_COLUMNS:
            field = StepAnswer._meta.get_field(name)
            params.append([field.get_db_prep_save(step[name], connection) for step in steps])
        params += [attempt.user_id, attempt.problem_id]
        with connection.cursor() as cursor:
            cursor.execute(_insert_sql(alias), params)
            attempt.pk, earliest_pk, earliest_score = cursor.fetchone()
        attempt._state.adding, attempt._state.db = False, alias
        earliest = None if earliest_pk is None else (earliest_pk, earliest_score)
    attempt.earliest_before = Attempt(pk=earliest[0], score=earliest[1]) if earliest else None
    return attempt

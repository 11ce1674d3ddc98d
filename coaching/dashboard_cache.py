"""The coach dashboard's :class:`~coaching.dashboard.Overview`, cached under a fingerprint of what it is built from.

Building the overview takes about fifteen queries and a thousand cells of Python for a 100-candidate cohort;
the open dashboard polls it every few seconds. :func:`cached_overview` answers from Django's cache (Redis in
production) when nothing it depends on has changed, checked by one query per request:

- *The rows it reads.* For every table the overview reads (the coach's cohorts, their memberships, the
  candidates, the assignments, their sets and entries, every bank item, and the candidates' work, attempts,
  graded steps, reviews, critiques, rounds and round items), the number of rows and a sum of 64-bit hashes
  of each row's ``(id, xmin)``. PostgreSQL gives every inserted or updated row version a new ``xmin`` (the
  transaction that wrote it), so any insert, update or delete that has committed changes the fingerprint,
  including the updates that leave counts and largest ids alone (a round closing, a set renamed, an item
  unpublished). The fingerprint is part of the cache key, so a changed database never finds the old entry.
- *The clock.* The overview depends on ``now`` in a few places: an assignment becomes late after its due
  time and "due within 48 h" from 48 hours before it; a misconception moves from the last 14 days to the
  14 before and then out; a review leaves the 30-day window. The same query returns the first of those
  moments still to come, and an entry is used only from the moment it was built until that one.
- *The reader's time zone.* The completion tables' headers show due dates in local time: the zone is
  part of the key.

Only PostgreSQL has ``xmin``: on another database (SQLite, the embedded default), and inside a transaction
(where rows the transaction itself writes twice keep one ``xmin``; a request runs outside one), the overview
is built every time, as before. The cache never decides what a coach may see: the key holds the coach's id and
superuser flag, and the fingerprint covers every row the visibility rules read.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from accounts.roles import oversees_all
from calculators.engine.misconceptions import MISCONCEPTIONS
from drills.models import Attempt, BankItem, CritiqueAttempt, ReviewLog, Round, RoundItem, StepAnswer

from . import dashboard, progress, visibility
from .models import Assignment, Cohort, Membership, QuestionSet, SetEntry, Work

# Bump when the cached value changes shape. A change to the code that builds the overview needs no bump: the
# key holds a digest of that code (code_version). Entries are dropped after CACHE_TIMEOUT_S, used or not.
CACHE_VERSION = 2
CACHE_TIMEOUT_S = 15 * 60

_SQL: dict[bool, str] = {}  # the fingerprint query by staff flag, built once per process


@functools.cache
def code_version() -> str:
    """A digest of the code and data the overview is built from besides the database: the modules that build
    it and the misconceptions' titles. After a deploy that changes either, old entries no longer match."""
    digest = hashlib.sha256()
    for module in (dashboard, progress, visibility, sys.modules[__name__]):
        digest.update(Path(module.__file__).read_bytes())
    digest.update(repr(sorted((key, getattr(m, "title", None)) for key, m in MISCONCEPTIONS.items())).encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class CohortLink:
    """A cohort as the dashboard lists it: name, page URL and number of members."""

    name: str
    url: str
    size: int


@dataclass
class Dashboard:
    """What the dashboard page shows of an :class:`~coaching.dashboard.Overview`: its tables, the cohorts, the
    number of candidates. Plain values only, so the cache holds no user (nor a password hash) and unpickles fast.
    """

    tables: list[dashboard.Table]
    cohorts: list[CohortLink]
    candidate_count: int


def _dashboard(coach, now: datetime) -> Dashboard:
    view = dashboard.overview(coach, now)
    return Dashboard(view.tables, [CohortLink(c.name, c.get_absolute_url(), len(c.memberships.all()))
                                   for c in view.cohorts], view.candidate_count)


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _digest(*aliases: str, moments: tuple[str, ...] = ()) -> str:
    """One text: the row count, the sum of a 64-bit hash of each joined row's ids and ``xmin``s (as numeric:
    never overflowing), then each of ``moments`` (SQL expressions, empty when NULL), separated by ``|``."""
    parts = ", ".join(f"{a}.id, {a}.xmin" for a in aliases)
    texts = ["count(*)", f"coalesce(sum(hashtextextended(concat_ws(':', {parts}), 0)::numeric), 0)",
             *(f"coalesce(({m})::text, '')" for m in moments)]
    return f"concat_ws('|', {', '.join(texts)})"


def _fingerprint_sql(staff: bool) -> str:
    """The fingerprint query for a coach (``staff``: for a superuser, who sees every cohort and assignment).

    Parameters: ``coach`` (the coach's id), ``now`` and ``soon`` (:data:`coaching.dashboard.SOON`). One row:
    per group of joined tables its row count and hash sum, then the moments at which the clock changes the
    overview (see the module docstring). Tables are joined where one hangs off another (a cohort's
    memberships and their users, an assignment's set and its entries, an attempt's steps, a round's items) so
    the query stays small to plan: a request pays for planning it every time.
    """
    if staff in _SQL:
        return _SQL[staff]
    t = {m.__name__: _table(m) for m in (Membership, Cohort, Assignment, QuestionSet, SetEntry, Work, BankItem,
                                         Attempt, StepAnswer, ReviewLog, CritiqueAttempt, Round, RoundItem)}
    user = _table(get_user_model())
    mine = "TRUE" if staff else "c.coach_id = %(coach)s"
    # Another coach's assignments count too: their work hides rows (coaching.visibility).
    assigned = ("TRUE" if staff else
                f"a.coach_id = %(coach)s OR a.id IN (SELECT assignment_id FROM {t['Work']} WHERE candidate_id IN "
                f"(SELECT id FROM who))")
    trend, earlier, window = dashboard.TREND_DAYS, 2 * dashboard.TREND_DAYS, dashboard.RETENTION_DAYS
    who = "(SELECT id FROM who)"
    columns = [
        f"""SELECT {_digest("c", "m", "u")} FROM {t['Cohort']} c
            LEFT JOIN {t['Membership']} m ON m.cohort_id = c.id LEFT JOIN {user} u ON u.id = m.candidate_id
            WHERE {mine}""",
        # An assignment turns late after its due time, and is "due within 48 h" from due time - SOON.
        f"""SELECT {_digest("a", "q", "e", moments=(
                "min(a.due_at) FILTER (WHERE a.due_at >= %(now)s)",
                "min(a.due_at - %(soon)s) FILTER (WHERE a.due_at - %(soon)s >= %(now)s)"))}
            FROM {t['Assignment']} a JOIN {t['QuestionSet']} q ON q.id = a.question_set_id
            LEFT JOIN {t['SetEntry']} e ON e.question_set_id = q.id WHERE {assigned}""",
        f"SELECT {_digest('i')} FROM {t['BankItem']} i",  # which items a coach may read hides rows
        f"SELECT {_digest('w')} FROM {t['Work']} w WHERE w.candidate_id IN {who}",
        # A misconception's attempt leaves the last 14 days, then the 14 before.
        f"""SELECT {_digest("a", "s", moments=(
                f"min(a.submitted_at) FILTER (WHERE a.submitted_at >= %(now)s - interval '{trend} days')"
                f" + interval '{trend} days'",
                f"min(a.submitted_at) FILTER (WHERE a.submitted_at >= %(now)s - interval '{earlier} days')"
                f" + interval '{earlier} days'"))}
            FROM {t['Attempt']} a LEFT JOIN {t['StepAnswer']} s ON s.attempt_id = a.id WHERE a.user_id IN {who}""",
        # A review leaves the 30-day window.
        f"""SELECT {_digest("r", moments=(
                f"min(r.reviewed_at) FILTER (WHERE r.reviewed_at >= %(now)s - interval '{window} days')"
                f" + interval '{window} days'",))}
            FROM {t['ReviewLog']} r WHERE r.user_id IN {who}""",
        f"SELECT {_digest('k')} FROM {t['CritiqueAttempt']} k WHERE k.user_id IN {who}",
        # A candidate's rounds, and any round their work for an assignment points to.
        f"""SELECT {_digest("o", "x")} FROM {t['Round']} o LEFT JOIN {t['RoundItem']} x ON x.round_id = o.id
            WHERE o.user_id IN {who} OR o.id IN (SELECT round_id FROM {t['Work']} WHERE candidate_id IN {who})""",
    ]
    # Scalar subqueries, not a join of one-row tables: the planner has no join order to search.
    _SQL[staff] = sql = (f"WITH who AS MATERIALIZED (SELECT DISTINCT m.candidate_id AS id FROM {t['Membership']} m "
                         f"JOIN {t['Cohort']} c ON c.id = m.cohort_id WHERE {mine})\n"
                         "SELECT " + ",\n".join(f"({column})" for column in columns))
    return sql


def cached_overview(coach, now: datetime | None = None) -> Dashboard:
    """The :class:`Dashboard` of ``coach``'s :func:`coaching.dashboard.overview`, from the cache when valid.

    Args:
        coach: the signed-in coach (a user; a superuser sees every cohort).
        now: the moment to show the dashboard at (default: now); an aware datetime.

    Returns the tables, cohorts and candidate count of ``overview(coach, now)``: one query on a hit
    (the fingerprint), that query and the overview's own on a miss. Raises what the overview raises; a
    cache that is unreachable is a miss (``config.cache.RedisCache``).
    """
    now = now or timezone.now()
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        # Inside a transaction, rows this transaction writes twice keep one xmin: the fingerprint could miss
        # its own changes. Outside one (a request), every change we can see was committed by another.
        return _dashboard(coach, now)
    with connection.cursor() as cursor:
        cursor.execute(_fingerprint_sql(oversees_all(coach)), {"coach": coach.pk, "now": now, "soon": dashboard.SOON})
        row = cursor.fetchone()
    digest = hashlib.sha256("\n".join(row).encode()).hexdigest()
    # The moments at which the clock changes the overview, each the first at or after now (see the module).
    moments = [datetime.fromisoformat(m) for text in row for m in text.split("|")[2:] if m]
    key = (f"coaching:dashboard:v{CACHE_VERSION}:{code_version()}:{coach.pk}:{int(oversees_all(coach))}:"
           f"{timezone.get_current_timezone_name()}:{digest}")
    stored = cache.get(key)
    if stored is not None:
        built_at, valid_until, view = stored
        if built_at <= now and (valid_until is None or now < valid_until):
            return view
    view = _dashboard(coach, now)
    # The first moment, at or after now, at which the clock changes what the overview shows (None: never).
    valid_until = min(moments, default=None)
    cache.set(key, (now, valid_until, view), CACHE_TIMEOUT_S)
    return view


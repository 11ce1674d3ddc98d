"""The coach dashboard's rendered tables, cached under a version per coach that every change they would see bumps.

Building the dashboard of a 100-candidate cohort takes about fifteen queries and renders over a thousand table
cells; the open dashboard polls it every few seconds. :func:`cached_dashboard` keeps the rendered tables in
Django's cache (Redis in production) under a key holding:

- *The coach's version*, a random token that :func:`bump_for_candidates` and :func:`bump_coaches` replace.
  ``coaching/signals.py`` calls them on every save and delete of what the dashboard reads: a candidate's attempts,
  reviews, critiques, rounds and their items and assignment work bump every coach of the candidate's cohorts; a
  membership, cohort, question set, entry or assignment bumps its coach and those of the candidates concerned.
  Superusers, who oversee every cohort (:func:`accounts.roles.oversees_all`), share one more version that every
  change bumps, and a change to the question
  bank (which questions a coach may read) bumps the version all keys hold. A version missing from the cache
  (evicted, or the cache emptied) is drawn afresh, so an old entry is never found again.
- *The clock*: the overview depends on ``now`` (an assignment turns late at its due time and "due within
  48 h" 48 hours before; work leaves the 14-day trend windows and reviews the 30-day window). An entry is used
  only from the moment it was built until the first of those moments to come (``Overview.changes_at``).
- *The reader's time zone*: the completion tables' headers show due dates in local time.

A version is bumped when the change is made and again when its transaction commits: a dashboard built in
between, from the rows as they were before the commit, is stored under a version that is then already gone.
The cache never decides what a coach may see: the key holds the coach's id and whether they oversee all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString

from accounts.roles import oversees_all

from . import dashboard
from .models import Cohort

# Bump when the cached value changes shape. Entries are dropped after CACHE_TIMEOUT_S, used or not.
CACHE_VERSION = 3
CACHE_TIMEOUT_S = 15 * 60
_EVERYONE, _ALL = "everyone", "oversees-all"


def _version_key(who) -> str:
    return f"coaching:dashboard:version:{who}"


@dataclass(frozen=True)
class CohortLink:
    """A cohort as the dashboard lists it: name, page URL and number of members."""

    name: str
    url: str
    size: int


@dataclass
class Dashboard:
    """What the dashboard page shows: its tables rendered (``coaching/_tables.html``), the cohorts and the number
    of candidates. Plain values only, so the cache holds no user (nor a password hash)."""

    tables_html: SafeString
    cohorts: list[CohortLink]
    candidate_count: int


def _versions(coach) -> str:
    """The versions the coach's entry is keyed by (their own, everyone's, and the superusers' for a superuser),
    drawn afresh for any the cache does not hold."""
    names = [coach.pk, _EVERYONE, *([_ALL] if oversees_all(coach) else [])]
    keys = [_version_key(name) for name in names]
    found = cache.get_many(keys)
    missing = {key: uuid.uuid4().hex for key in keys if key not in found}
    if missing:
        cache.set_many(missing, None)
    return ".".join(found.get(key) or missing[key] for key in keys)


def _bump(names: Iterable) -> None:
    tokens = {_version_key(name): uuid.uuid4().hex for name in names}
    cache.set_many(tokens, None)


def _bump_now_and_on_commit(names: set) -> None:
    names = {*names, _ALL}
    _bump(names)
    transaction.on_commit(lambda: _bump(names))


def bump_coaches(coach_ids: Iterable[int]) -> None:
    """Mark what the coaches ``coach_ids`` (and the superusers) see as changed: their next dashboard is built afresh."""
    _bump_now_and_on_commit(set(coach_ids))


def bump_for_candidates(candidates, *, coach_ids: Iterable[int] = (), cohort_ids: Iterable[int] = ()) -> None:
    """Mark the dashboards of every coach of a cohort of ``candidates`` (ids, or a ``values()`` queryset of
    them), of the cohorts ``cohort_ids``, of ``coach_ids`` and of the superusers as changed, in one query: the
    candidates' work or memberships, as those coaches see them, have changed."""
    found = Cohort.objects.filter(Q(memberships__candidate_id__in=candidates) | Q(pk__in=list(cohort_ids)))
    _bump_now_and_on_commit(set(found.values_list("coach_id", flat=True).distinct()) | set(coach_ids))


def bump_everyone() -> None:
    """Mark every coach's dashboard as changed (the question bank changed: which items a coach may read)."""
    _bump_now_and_on_commit({_EVERYONE})


def cached_dashboard(coach, now: datetime | None = None) -> Dashboard:
    """The :class:`Dashboard` of ``coach``'s :func:`coaching.dashboard.overview` at ``now``, from the cache when
    nothing the coach sees has changed since it was built and the clock has not changed it.

    Args:
        coach: the signed-in coach (a user; a superuser sees every cohort).
        now: the moment to show the dashboard at (default: now); an aware datetime.

    A hit costs two reads of the cache (the versions, the entry) and no query; a miss builds the overview and
    renders its tables. Raises what the overview raises; an unreachable cache is a miss (``core.cache``).
    """
    now = now or timezone.now()
    key = (f"coaching:dashboard:v{CACHE_VERSION}:{coach.pk}:{int(oversees_all(coach))}:"
           f"{timezone.get_current_timezone_name()}:{_versions(coach)}")
    stored = cache.get(key)
    if stored is not None:
        built_at, valid_until, view = stored
        if built_at <= now and (valid_until is None or now < valid_until):
            return view
    overview = dashboard.overview(coach, now)
    view = Dashboard(render_to_string("coaching/_tables.html", {"tables": overview.tables}),
                     [CohortLink(c.name, c.get_absolute_url(), len(c.memberships.all())) for c in overview.cohorts],
                     overview.candidate_count)
    cache.set(key, (now, overview.changes_at, view), CACHE_TIMEOUT_S)
    return view

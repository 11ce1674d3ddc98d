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

A version is bumped once, when the change's transaction commits (at once outside one): a dashboard built
before, from the rows as they were, is stored under a version that the commit then replaces. The changes of one
transaction are gathered: the coaches of every candidate concerned are found in one query after the commit and
each version is written once, however many rows the request saved.
The cache never decides what a coach may see: the key holds the coach's id and whether they oversee all.

A candidate's coaches are kept in the cache too (:func:`_coaches_of`), so that a candidate's new attempt or review
bumps them without a query: each candidate's entry is stored with the *memberships version* read before the query
that found them, and is used only while that version stands. ``coaching/signals.py`` bumps it
(:func:`memberships_changed`) on every save and delete of a membership or a cohort (a cohort's coach may change),
when the change commits, so an entry read before a change is never used after it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q, QuerySet
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString

from accounts.roles import oversees_all

from . import dashboard
from .models import Cohort, Membership

# Bump when the cached value changes shape. Entries are dropped after CACHE_TIMEOUT_S, used or not.
CACHE_VERSION = 3
CACHE_TIMEOUT_S = 15 * 60
_EVERYONE, _ALL, _MEMBERSHIPS = "everyone", "oversees-all", "memberships"
# A candidate's coaches stay in the cache this long after they were read (each entry is one small list).
COACHES_TIMEOUT_S = 24 * 60 * 60


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


def _coaches_key(candidate_id: int) -> str:
    return f"coaching:dashboard:coaches-of:{candidate_id}"


def _coaches_of(candidate_ids: set[int]) -> set[int]:
    """The coaches (user ids) of every cohort one of ``candidate_ids`` belongs to, from the cache for each
    candidate whose entry was stored under the memberships version that stands, from the database (one query)
    for the others, whose entries are then stored under the version read before that query.

    Raises what the query raises; an unreachable cache reads as empty (``core.cache``): every candidate is then
    looked up.
    """
    version_key = _version_key(_MEMBERSHIPS)
    keys = {candidate: _coaches_key(candidate) for candidate in candidate_ids}
    found = cache.get_many([version_key, *keys.values()])
    version = found.get(version_key)
    coaches: set[int] = set()
    missing = []
    for candidate, key in keys.items():
        entry = found.get(key)
        if version is not None and entry is not None and entry[0] == version:
            coaches.update(entry[1])
        else:
            missing.append(candidate)
    if not missing:
        return coaches
    if version is None:  # drawn before the query; add(): a version bumped meanwhile is never overwritten
        version = uuid.uuid4().hex
        if not cache.add(version_key, version, None):
            version = None  # another request drew one first: look up without storing this time
    rows = (Membership.objects.filter(candidate_id__in=missing)
            .values_list("candidate_id", "cohort__coach_id").distinct())
    found_coaches: dict[int, list[int]] = {candidate: [] for candidate in missing}
    for candidate, coach in rows:
        found_coaches[candidate].append(coach)
        coaches.add(coach)
    if version is not None:
        cache.set_many({keys[candidate]: (version, sorted(ids)) for candidate, ids in found_coaches.items()},
                       COACHES_TIMEOUT_S)
    return coaches


def _bump(names: Iterable) -> None:
    tokens = {_version_key(name): uuid.uuid4().hex for name in names}
    cache.set_many(tokens, None)


class _Pending:
    """The bumps asked for since the last flush on this thread: names (coach ids or ``_EVERYONE``), candidates
    (ids, or ``values()`` querysets of them) and cohorts whose coaches are bumped."""

    def __init__(self) -> None:
        self.names: set = {_ALL}
        self.candidates: set[int] = set()
        self.candidate_queries: list = []
        self.cohorts: set[int] = set()
        self.flushed = False

    def flush(self) -> None:
        """Find the coaches of the candidates and cohorts (one query) and write every version once. Each call of
        :func:`_on_commit` registers this; the first to run does the work, the others find it flushed."""
        if self.flushed:
            return
        self.flushed = True
        names = set(self.names)
        if self.candidate_queries or self.cohorts or _MEMBERSHIPS in names:  # memberships changed: read them
            where = Q(memberships__candidate_id__in=self.candidates) | Q(pk__in=self.cohorts)
            for query in self.candidate_queries:
                where |= Q(memberships__candidate_id__in=query)
            names |= set(Cohort.objects.filter(where).values_list("coach_id", flat=True).distinct())
        elif self.candidates:  # a candidate's own work: their coaches, from the cache
            names |= _coaches_of(self.candidates)
        _bump(names)


_local = threading.local()


def _on_commit(*, names: Iterable = (), candidates=(), cohort_ids: Iterable[int] = ()) -> None:
    """Gather a change into this thread's pending bumps and flush them when the transaction commits.

    A callback is registered for every change, so a bump whose transaction rolled back is never needed for a
    later one to happen: it only rides along with the next flush (one extra version written, harmless)."""
    pending = getattr(_local, "pending", None)
    if pending is None or pending.flushed:
        pending = _local.pending = _Pending()
    pending.names.update(names)
    pending.cohorts.update(cohort_ids)
    if isinstance(candidates, QuerySet):
        pending.candidate_queries.append(candidates)
    else:
        pending.candidates.update(candidates)
    transaction.on_commit(pending.flush)


def bump_coaches(coach_ids: Iterable[int]) -> None:
    """Mark what the coaches ``coach_ids`` (and the superusers) see as changed: their next dashboard is built afresh
    (when the transaction commits)."""
    _on_commit(names=coach_ids)


def bump_for_candidates(candidates, *, coach_ids: Iterable[int] = (), cohort_ids: Iterable[int] = ()) -> None:
    """Mark the dashboards of every coach of a cohort of ``candidates`` (ids, or a ``values()`` queryset of
    them), of the cohorts ``cohort_ids``, of ``coach_ids`` and of the superusers as changed when the transaction
    commits: the candidates' work or memberships, as those coaches see them, have changed. The coaches are found
    after the commit, in one query for all the transaction's changes."""
    _on_commit(names=coach_ids, candidates=candidates, cohort_ids=cohort_ids)


def bump_after_handover(assignments: QuerySet, coach_ids: Iterable[int]) -> None:
    """Mark as changed what a queryset ``update()`` of ``assignments`` (about to hand them to another coach) does
    not signal: the dashboards of ``coach_ids``, of every coach of the candidates those assignments go to (one by
    one or through their cohorts: another coach's assignment hides work, :mod:`coaching.visibility`), of the
    superusers, and of every coach (the question bank's authors changed). Call it before the update: the
    assignments are read now, their coaches after the commit."""
    rows = list(assignments.values_list("candidate_id", "cohort_id"))
    cohort_ids = {cohort for _, cohort in rows if cohort}
    _on_commit(names={*coach_ids, _EVERYONE}, candidates={candidate for candidate, _ in rows if candidate},
               cohort_ids=cohort_ids)
    if cohort_ids:
        _on_commit(candidates=Membership.objects.filter(cohort_id__in=cohort_ids).values("candidate_id"))


def memberships_changed() -> None:
    """Mark every candidate's coaches, as :func:`_coaches_of` keeps them, as changed when the transaction commits
    (a membership or a cohort was saved or deleted)."""
    _on_commit(names={_MEMBERSHIPS})


def bump_everyone() -> None:
    """Mark every coach's dashboard as changed (the question bank changed: which items a coach may read)."""
    _on_commit(names={_EVERYONE})


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

"""What of a candidate's work a coach may see.

A candidate can belong to the cohorts of several coaches. The rule, stated on
the invitation page too: a coach sees the candidate's own practice on items that
coach may see (published items and the coach's own), and the work done for that
coach's own assignments. A coach never sees another coach's unpublished items,
nor work done for another coach's assignments (the problems drawn for it, the
rounds started for it, the open answers written for it), nor a re-grade of a
problem from any of that. A superuser sees everything.

:func:`hidden_work` answers with the ids to leave out, in a fixed number of
queries whatever the number of candidates, so the dashboards stay bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q, QuerySet

from accounts.roles import oversees_all
from drills.models import Attempt, BankItem, CritiqueAttempt, ReviewLog, RoundItem

from .models import Work


def items_visible_to(coach) -> QuerySet:
    """Bank items ``coach`` may read: published ones and the coach's own (a superuser: all)."""
    if oversees_all(coach):
        return BankItem.objects.all()
    return BankItem.objects.filter(Q(published=True) | Q(author=coach))


@dataclass(frozen=True)
class HiddenWork:
    """Ids of attempts, review logs and critique attempts a coach may not see (every set empty for a superuser)."""

    attempt_ids: frozenset[int] = field(default_factory=frozenset)
    review_ids: frozenset[int] = field(default_factory=frozenset)
    critique_ids: frozenset[int] = field(default_factory=frozenset)

    def attempts(self, queryset: QuerySet) -> QuerySet:
        """``queryset`` of Attempt without the hidden ones."""
        return queryset.exclude(pk__in=self.attempt_ids) if self.attempt_ids else queryset

    def reviews(self, queryset: QuerySet) -> QuerySet:
        """``queryset`` of ReviewLog without the hidden ones."""
        return queryset.exclude(pk__in=self.review_ids) if self.review_ids else queryset


def hidden_work(coach, candidate_ids) -> HiddenWork:
    """The attempts, open answers and critique attempts of ``candidate_ids`` (ids, or a ``values()`` subquery
    of them) that ``coach`` may not see.

    Hidden: anything done on an item the coach may not read (another coach's
    unpublished question, in a review or in a round); the problems and rounds an
    assignment of another coach started (``Work`` rows); the reviews and
    critique attempts of an item another coach's assignment started, made from
    that start, and, when one of this coach's own assignments started the same
    item later, before that later start (from then on they are for both); and
    every attempt of a problem with a hidden attempt (its re-grades on the drill
    page). Five queries at most, whatever the number of candidates: the critique
    query runs only when another coach's assignment started an item.
    """
    if oversees_all(coach):
        return HiddenWork()
    ids = candidate_ids if isinstance(candidate_ids, QuerySet) else list(candidate_ids)  # a subquery stays one
    works = list(Work.objects.filter(candidate_id__in=ids)
                 .values("assignment__coach_id", "candidate_id", "problem_id", "round_id", "entry__item_id",
                         "started_at"))
    foreign = [w for w in works if w["assignment__coach_id"] != coach.pk]
    own_started = _earliest_start(w for w in works if w["assignment__coach_id"] == coach.pk)
    foreign_started = _earliest_start(foreign)
    foreign_rounds = {w["round_id"] for w in foreign if w["round_id"]}
    readable = items_visible_to(coach).values("pk")

    attempt_ids = set()
    review_ids = set()
    critique_ids = set()
    for attempt_id, review_id, critique_id in (
            RoundItem.objects.filter(round__user_id__in=ids)
            .filter(Q(round_id__in=foreign_rounds) | (Q(item__isnull=False) & ~Q(item_id__in=readable)))
            .values_list("attempt_id", "review_id", "critique_attempt_id")):
        attempt_ids.add(attempt_id)
        review_ids.add(review_id)
        critique_ids.add(critique_id)

    # Answers to an item another coach's assignment started, from that start; if this coach's own assignment
    # started the same item later, the answers from then on are for both (before it, for the other coach only).
    windows = [(key, started, own_started.get(key)) for key, started in foreign_started.items()
               if own_started.get(key) is None or own_started[key] > started]
    reviews = Q(item__isnull=True) | ~Q(item_id__in=readable)
    for (candidate_id, item_id), started, until in windows:
        reviews |= _window(candidate_id, item_id, "reviewed_at", started, until)
    foreign_problems = {w["problem_id"] for w in foreign if w["problem_id"]}
    for review_id, attempt_id in (ReviewLog.objects.filter(user_id__in=ids).filter(reviews)
                                  .values_list("pk", "attempt_id")):
        review_ids.add(review_id)
        attempt_ids.add(attempt_id)
    if windows:  # critiques written for another coach's assignment (only coach progress counts critiques)
        critiques = Q()
        for (candidate_id, item_id), started, until in windows:
            critiques |= _window(candidate_id, item_id, "submitted_at", started, until)
        critique_ids.update(CritiqueAttempt.objects.filter(user_id__in=ids).filter(critiques)
                            .values_list("pk", flat=True))
    attempt_ids.discard(None)
    if foreign_problems or attempt_ids:
        # A problem with a hidden attempt is hidden whole: re-grading it on the drill page is more of the
        # same work, and a visible re-grade would show the coach what the hidden attempt was given.
        hidden_problems = Attempt.objects.filter(pk__in=attempt_ids).values("problem_id")
        attempt_ids.update(Attempt.objects.filter(user_id__in=ids)
                           .filter(Q(problem_id__in=foreign_problems) | Q(problem_id__in=hidden_problems))
                           .values_list("pk", flat=True))
    review_ids.discard(None)
    critique_ids.discard(None)
    return HiddenWork(frozenset(attempt_ids), frozenset(review_ids), frozenset(critique_ids))


def _earliest_start(works) -> dict[tuple[int, int], datetime]:
    """(candidate id, item id) → the earliest ``started_at`` among ``works`` (``Work`` value dicts) on an item."""
    earliest: dict[tuple[int, int], datetime] = {}
    for w in works:
        if w["entry__item_id"]:
            key = (w["candidate_id"], w["entry__item_id"])
            earliest[key] = min(earliest.get(key, w["started_at"]), w["started_at"])
    return earliest


def _window(candidate_id: int, item_id: int, moment: str, started: datetime, until: datetime | None) -> Q:
    """The rows of one candidate on one item whose time field ``moment`` is from ``started`` (and before
    ``until`` if given)."""
    window = Q(user_id=candidate_id, item_id=item_id, **{f"{moment}__gte": started})
    return window & Q(**{f"{moment}__lt": until}) if until is not None else window

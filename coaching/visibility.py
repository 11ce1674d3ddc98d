"""What of a candidate's work a coach may see.

A candidate can belong to the cohorts of several coaches. The rule, stated on
the invitation page too: a coach sees the candidate's own practice on items that
coach may see (published items and the coach's own), and the work done for that
coach's own assignments. A coach never sees another coach's unpublished items,
nor work done for another coach's assignments (the problems drawn for it, the
rounds started for it, the open answers written for it), nor a re-grade of a
problem from any of that. Staff see everything.

:func:`hidden_work` answers with the ids to leave out, in a fixed number of
queries whatever the number of candidates, so the dashboards stay bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q, QuerySet

from drills.models import Attempt, BankItem, ReviewLog, RoundItem

from .models import Work


def items_visible_to(coach) -> QuerySet:
    """Bank items ``coach`` may read: published ones and the coach's own (staff: all)."""
    if coach.is_staff:
        return BankItem.objects.all()
    return BankItem.objects.filter(Q(published=True) | Q(author=coach))


@dataclass(frozen=True)
class HiddenWork:
    """Ids of attempts and review logs a coach may not see (both sets empty for staff)."""

    attempt_ids: frozenset[int] = field(default_factory=frozenset)
    review_ids: frozenset[int] = field(default_factory=frozenset)

    def attempts(self, queryset: QuerySet) -> QuerySet:
        """``queryset`` of Attempt without the hidden ones."""
        return queryset.exclude(pk__in=self.attempt_ids) if self.attempt_ids else queryset

    def reviews(self, queryset: QuerySet) -> QuerySet:
        """``queryset`` of ReviewLog without the hidden ones."""
        return queryset.exclude(pk__in=self.review_ids) if self.review_ids else queryset


def hidden_work(coach, candidate_ids) -> HiddenWork:
    """The attempts and open answers of ``candidate_ids`` (ids, or a ``values()`` subquery of them) that
    ``coach`` may not see.

    Hidden: anything done on an item the coach may not read (another coach's
    unpublished question, in a review or in a round); the problems and rounds an
    assignment of another coach started (``Work`` rows); and the reviews of the
    open questions of another coach's assignment made after that work started,
    unless the same question was also started for one of this coach's own
    assignments; and every attempt of a problem with a hidden attempt (its
    re-grades on the drill page). Four queries at most, whatever the number of
    candidates.
    """
    if coach.is_staff:
        return HiddenWork()
    ids = candidate_ids if isinstance(candidate_ids, QuerySet) else list(candidate_ids)  # a subquery stays one
    works = list(Work.objects.filter(candidate_id__in=ids)
                 .values("assignment__coach_id", "candidate_id", "problem_id", "round_id", "entry__item_id",
                         "started_at"))
    foreign = [w for w in works if w["assignment__coach_id"] != coach.pk]
    own_items = {(w["candidate_id"], w["entry__item_id"]) for w in works
                 if w["assignment__coach_id"] == coach.pk and w["entry__item_id"]}
    foreign_rounds = {w["round_id"] for w in foreign if w["round_id"]}
    readable = items_visible_to(coach).values("pk")

    attempt_ids = set()
    review_ids = set()
    for attempt_id, review_id in (RoundItem.objects.filter(round__user_id__in=ids)
                                  .filter(Q(round_id__in=foreign_rounds) |
                                          (Q(item__isnull=False) & ~Q(item_id__in=readable)))
                                  .values_list("attempt_id", "review_id")):
        attempt_ids.add(attempt_id)
        review_ids.add(review_id)

    foreign_items = {}
    for w in foreign:
        item_key = (w["candidate_id"], w["entry__item_id"])
        if w["entry__item_id"] and item_key not in own_items:
            started = foreign_items.get(item_key)
            foreign_items[item_key] = w["started_at"] if started is None else min(started, w["started_at"])
    reviews = Q(item__isnull=True) | ~Q(item_id__in=readable)
    for (candidate_id, item_id), started in foreign_items.items():
        reviews |= Q(user_id=candidate_id, item_id=item_id, reviewed_at__gte=started)
    foreign_problems = {w["problem_id"] for w in foreign if w["problem_id"]}
    for review_id, attempt_id in (ReviewLog.objects.filter(user_id__in=ids).filter(reviews)
                                  .values_list("pk", "attempt_id")):
        review_ids.add(review_id)
        attempt_ids.add(attempt_id)
    attempt_ids.discard(None)
    if foreign_problems or attempt_ids:
        # A problem with a hidden attempt is hidden whole: re-grading it on the drill page is more of the
        # same work, and a visible re-grade would show the coach what the hidden attempt was given.
        hidden_problems = Attempt.objects.filter(pk__in=attempt_ids).values("problem_id")
        attempt_ids.update(Attempt.objects.filter(user_id__in=ids)
                           .filter(Q(problem_id__in=foreign_problems) | Q(problem_id__in=hidden_problems))
                           .values_list("pk", flat=True))
    review_ids.discard(None)
    return HiddenWork(frozenset(attempt_ids), frozenset(review_ids))

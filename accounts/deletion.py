"""What deleting an account does to what others rely on: reviews let through, a coach's work handed over.

:func:`mark_account_deletion` writes the marker that lets the review log's DELETE trigger through for this
user in this transaction (:mod:`drills.reviews.append_only`); :func:`hand_over_coaching` gives a coach's
cohorts, question sets, assignments and round presets to a successor, so that deleting a coach deletes
none of their candidates' assignments, progress or e-mail history.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connection


class HandOverError(Exception):
    """A coach with cohorts or assignments cannot be deleted: there is no other superuser to hand them to."""


def successor_for(user):
    """The account that takes over a deleted coach's cohorts: the oldest active superuser other than ``user``."""
    return (get_user_model().objects.filter(is_superuser=True, is_active=True).exclude(pk=user.pk)
            .order_by("date_joined", "pk").first())


def hand_over_coaching(user) -> int:
    """Reassign ``user``'s cohorts, sets, assignments and round presets to :func:`successor_for`; return how many.

    Raises :class:`HandOverError` when the user coaches anyone and there is no successor.
    """
    from coaching.models import Assignment, Cohort, QuestionSet
    from drills.models import RoundTemplate

    owned = [Cohort.objects.filter(coach=user), QuestionSet.objects.filter(coach=user),
             Assignment.objects.filter(coach=user)]
    presets = RoundTemplate.objects.filter(owner=user)
    if not any(query.exists() for query in owned) and not presets.exists():
        return 0
    successor = successor_for(user)
    if successor is None:
        raise HandOverError("This coach's cohorts and assignments need another owner: "
                            "create a superuser account first, then delete this one.")
    moved = sum(query.update(coach=successor) for query in owned)
    return moved + presets.update(owner=successor)


def mark_account_deletion(user) -> None:
    """Let the review log's trigger delete ``user``'s reviews within the current transaction."""
    from drills.reviews.append_only import mark_erasure

    mark_erasure(user.pk, connection)


def clear_account_deletion(user_id: int) -> None:
    """Remove the marker before the transaction commits."""
    from drills.reviews.append_only import clear_erasure

    clear_erasure(user_id)

"""What deleting an account does to what others rely on: reviews let through, a coach's cohorts handed over or closed.

:func:`mark_account_deletion` writes the marker that lets the review log's DELETE trigger through for this
user in this transaction (:mod:`drills.reviews.append_only`).

A coach's cohorts follow the coach's choice on the deletion page (:func:`settle_coaching`), and need no
superuser either way:

- **Handed over** to another coach they name: that coach becomes the owner of the cohorts, question sets,
  assignments, round presets and questions (kept unpublished), so the candidates' assignments and progress
  go on; every member is told by e-mail who now sees their work, and that they may leave the cohort.
- **Closed** (no coach named): the cohorts, sets and assignments end with the account; every member is told
  by e-mail. The candidates keep all their own work (attempts, reviews, rounds, cards). The questions the coach
  wrote are archived (no author, unpublished): nobody new sees them, and whoever holds one in their deck keeps
  reviewing it (:func:`drills.bank.models.visible_condition`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import connection

from accounts.roles import is_coach
from coaching import dashboard_cache
from coaching.models import Assignment, Cohort, Membership, QuestionSet
from coaching.tasks import send_cohort_notice
from drills.models import BankItem, RoundTemplate
from drills.reviews.append_only import clear_erasure, mark_erasure
from outbox.services import enqueue

# The suffix a handed-over cohort takes when its new coach already has a cohort of that name.
RENAMED = "{name} (from {coach})"


class HandOverError(Exception):
    """The named successor cannot take the cohorts over (unknown, not a coach, inactive, or oneself)."""


def successor_named(user, username: str):
    """The active coach called ``username`` (any case) who may take over ``user``'s cohorts.

    Raises :class:`HandOverError`, with a sentence naming what was typed, when there is no such account, it
    is ``user``'s own, or it is not a coach.
    """
    successor = get_user_model()._default_manager.filter(username__iexact=username.strip(), is_active=True).first()
    if successor is None:
        raise HandOverError(f"No active account is called “{username.strip()}”: type another coach's user name, "
                            "or leave the box empty to close your cohorts.")
    if successor.pk == user.pk:
        raise HandOverError("That is your own account: name another coach, or leave the box empty.")
    if not is_coach(successor):
        raise HandOverError(f"“{successor.get_username()}” is not a coach: only a coach can take over cohorts.")
    return successor


@dataclass(frozen=True)
class Settled:
    """What :func:`settle_coaching` did: the cohorts handed over or closed, and the candidates told."""

    cohorts: int
    told: int


def settle_coaching(user, successor=None) -> Settled:
    """Hand ``user``'s coaching to ``successor`` (a coach), or close it when ``successor`` is ``None``.

    Runs inside the deletion's transaction, before the account row is deleted. Each member of each cohort gets
    one e-mail (enqueued through the outbox, sent after the commit): the cohort's new coach, or that it closed.
    Handing over renames a cohort whose name the successor already uses (:data:`RENAMED`). Closing deletes the
    cohorts, sets, assignments and presets here (the account's deletion would cascade to them anyway) and
    archives the questions (no author, unpublished). Raises nothing of its own.
    """
    cohorts = list(Cohort.objects.filter(coach=user))
    members = list(Membership.objects.filter(cohort__in=cohorts).values_list("cohort_id", "candidate_id"))
    names = {cohort.pk: cohort.name for cohort in cohorts}
    coach_name = user.get_username()
    if successor is not None:
        taken = set(Cohort.objects.filter(coach=successor).values_list("name", flat=True))
        for cohort in cohorts:
            if cohort.name in taken:
                cohort.name = names[cohort.pk] = RENAMED.format(name=cohort.name, coach=coach_name)[:120]
            cohort.coach = successor
            cohort.save(update_fields=["name", "coach"])
        # Queryset updates send no signal: the dashboards they change are bumped here.
        dashboard_cache.bump_after_handover(Assignment.objects.filter(coach=user), [successor.pk])
        QuestionSet.objects.filter(coach=user).update(coach=successor)
        Assignment.objects.filter(coach=user).update(coach=successor)
        RoundTemplate.objects.filter(owner=user).update(owner=successor)
        BankItem.objects.filter(author=user).update(author=successor, published=False)
    else:
        dashboard_cache.bump_everyone()  # the questions unpublished below (an update sends no signal)
        BankItem.objects.filter(author=user).update(author=None, published=False)
    for cohort_id, candidate_id in members:
        enqueue(send_cohort_notice,
                [candidate_id, names[cohort_id], coach_name, successor.pk if successor else None,
                 cohort_id if successor else None])
    if successor is None:
        # Explicit, in this order, rather than left to the account's cascade: the set entries their candidates
        # started are protected (Work.entry RESTRICT) until the assignments and their work are gone.
        Assignment.objects.filter(coach=user).delete()
        QuestionSet.objects.filter(coach=user).delete()
        Cohort.objects.filter(coach=user).delete()
    return Settled(cohorts=len(cohorts), told=len(members))


def mark_account_deletion(user) -> None:
    """Let the review log's trigger delete ``user``'s reviews within the current transaction."""
    mark_erasure(user.pk, connection)


def clear_account_deletion(user_id: int) -> None:
    """Remove the marker before the transaction commits."""
    clear_erasure(user_id)

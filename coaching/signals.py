"""What changes a coach's dashboard: every save and delete of a row it reads bumps the coaches' versions.

Connected in :meth:`coaching.apps.CoachingConfig.ready`. A candidate's work (attempts, reviews, critiques,
rounds and their items, assignment work) and memberships bump every coach of the candidate's cohorts; a cohort,
a question set, its entries and an assignment bump their coach (and, for an assignment, the coaches of the
candidates it goes to: another coach's assignment hides work, :mod:`coaching.visibility`); a question of the
bank bumps everyone; a membership or a cohort also bumps the memberships version (the candidates' coaches as the
cache keeps them). See :mod:`coaching.dashboard_cache`. Queryset updates send no signal: the services that
use one on these tables call :mod:`coaching.dashboard_cache` themselves.
"""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save

from drills.models import Attempt, BankItem, CritiqueAttempt, ReviewLog, Round, RoundItem

from . import dashboard_cache
from .models import Assignment, Cohort, Membership, QuestionSet, SetEntry, Work


def _candidate_work(sender, instance, **kwargs) -> None:
    dashboard_cache.bump_for_candidates([instance.candidate_id if sender is Work else instance.user_id])


def _round_item(sender, instance: RoundItem, **kwargs) -> None:
    dashboard_cache.bump_for_candidates(Round.objects.filter(pk=instance.round_id).values("user_id"))


def _membership(sender, instance: Membership, **kwargs) -> None:
    dashboard_cache.bump_for_candidates([instance.candidate_id], cohort_ids=[instance.cohort_id])
    dashboard_cache.memberships_changed()


def _cohort(sender, instance: Cohort, **kwargs) -> None:
    dashboard_cache.bump_coaches([instance.coach_id])
    dashboard_cache.memberships_changed()  # its coach may have changed: who its candidates' coaches are


def _coach_owned(sender, instance, **kwargs) -> None:
    dashboard_cache.bump_coaches([instance.coach_id])


def _set_entry(sender, instance: SetEntry, **kwargs) -> None:
    dashboard_cache.bump_coaches(QuestionSet.objects.filter(pk=instance.question_set_id)
                                 .values_list("coach_id", flat=True))


def _assignment(sender, instance: Assignment, **kwargs) -> None:
    members = Membership.objects.filter(cohort_id=instance.cohort_id).values("candidate_id")
    dashboard_cache.bump_for_candidates([instance.candidate_id] if instance.candidate_id else members,
                                        coach_ids=[instance.coach_id])


def _bank(sender, instance, **kwargs) -> None:
    dashboard_cache.bump_everyone()


RECEIVERS = [
    *((model, _candidate_work) for model in (Attempt, ReviewLog, CritiqueAttempt, Round, Work)),
    (RoundItem, _round_item), (Membership, _membership), (Cohort, _cohort), (QuestionSet, _coach_owned),
    (SetEntry, _set_entry), (Assignment, _assignment), (BankItem, _bank),
]


def connect() -> None:
    """Connect the receivers to every model's ``post_save`` and ``post_delete`` (once: each has a uid)."""
    for model, receiver in RECEIVERS:
        for name, signal in (("saved", post_save), ("deleted", post_delete)):
            signal.connect(receiver, sender=model, dispatch_uid=f"coaching-dashboard-{model.__name__}-{name}")

"""Who may see what: coaches see candidates of their own cohorts only (a superuser sees everyone)."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from accounts.roles import COACH_GROUP as COACH_GROUP
from accounts.roles import is_coach as is_coach
from accounts.roles import oversees_all

from .models import Cohort


def coach_required(view):
    """Log in first (302 to the login page); then 403 unless a coach (:func:`accounts.roles.is_coach`)."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not is_coach(request.user):
            raise PermissionDenied("This page is for coaches.")
        return view(request, *args, **kwargs)

    return wrapped


def cohorts_of(coach):
    """The coach's cohorts (a superuser: every cohort)."""
    cohorts = Cohort.objects.select_related("coach")
    return cohorts if oversees_all(coach) else cohorts.filter(coach=coach)


def candidates_of(coach):
    """The candidates the coach may see now: members of one of their cohorts (a superuser: every member)."""
    users = get_user_model().objects.filter(memberships__isnull=False)
    if not oversees_all(coach):
        users = users.filter(memberships__cohort__coach=coach)
    return users.distinct().order_by("username")


def can_see_candidate(coach, candidate_id: int) -> bool:
    """Whether ``candidate_id`` is in one of ``coach``'s cohorts (a superuser: a member of any cohort)."""
    return candidates_of(coach).filter(pk=candidate_id).exists()

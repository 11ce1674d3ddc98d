"""The coach role: the ``coach`` group (created by ``create_demo_accounts``, sign-up and the admin), and its tests.

A module of its own, importing nothing of the project, so that the bank's visibility rule
(:func:`drills.bank.models.visible_condition`) and the coaching app can both ask without an import circle.

Who coaches is declared here once (DESIGN §7): a member of the ``coach`` group, or a superuser (who holds every
permission). Staff status alone grants nothing: a staff account with no permissions is a candidate on these
pages. Only a superuser oversees every cohort (:func:`oversees_all`).
"""

from __future__ import annotations

from django.db.models import Q

COACH_GROUP = "coach"


def oversees_all(user) -> bool:
    """Whether ``user`` sees every cohort, candidate, set and question as if they were its coach: a superuser."""
    return bool(getattr(user, "is_superuser", False)) and user.is_authenticated


def is_coach(user) -> bool:
    """Whether ``user`` (a user, or an anonymous user) is a coach: in the ``coach`` group, or a superuser.

    Reads the flag :class:`accounts.backends.CoachFlagBackend` puts on the session's user (no query), else asks
    the database once and keeps the answer on ``user``. Raises nothing.
    """
    if not user.is_authenticated:
        return False
    if oversees_all(user):
        return True
    cached = getattr(user, "_is_coach", None)
    if cached is None:
        cached = user._is_coach = user.groups.filter(name=COACH_GROUP).exists()
    return cached


def coach_accounts(prefix: str = "") -> Q:
    """The condition "is a coach" (:func:`is_coach`) on users reached through ``prefix`` (e.g. ``"candidate__"``)."""
    return Q(**{f"{prefix}groups__name": COACH_GROUP}) | Q(**{f"{prefix}is_superuser": True})

"""The coach role: the ``coach`` group (created by ``create_demo_accounts`` and the admin), and the one test of it.

A module of its own, importing nothing of the project, so that the bank's visibility rule
(:func:`drills.bank.models.visible_condition`) and the coaching app can both ask without an import circle.
"""

from __future__ import annotations

COACH_GROUP = "coach"


def is_coach(user) -> bool:
    """Whether ``user`` (a user, or an anonymous user) is a coach: in the ``coach`` group, or staff.

    Reads the flag :class:`accounts.backends.CoachFlagBackend` puts on the session's user (no query), else asks
    the database once and keeps the answer on ``user``. Raises nothing.
    """
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    cached = getattr(user, "_is_coach", None)
    if cached is None:
        cached = user._is_coach = user.groups.filter(name=COACH_GROUP).exists()
    return cached

"""Show every date and time in the logged-in user's own time zone (kept in their review settings)."""

from __future__ import annotations

import zoneinfo

from django.utils import timezone

from drills.models import ReviewSettings

# The session entry holding the zone name: (user pk, name), "" for "no settings, UTC". (The key's name is older
# than this module: kept, so sessions opened before the middleware moved here keep their zone.)
SESSION_ZONE_KEY = "drills_time_zone"


def remember_time_zone(request, name: str) -> None:
    """Keep ``name`` as the zone of this session's user (the settings page calls this when it changes)."""
    session = getattr(request, "session", None)
    if session is not None:
        session[SESSION_ZONE_KEY] = (request.user.pk, name or "")


def _stored_zone_name(user) -> str:
    """The zone name in the user's ``ReviewSettings`` ("" without settings): one query."""
    return ReviewSettings.objects.filter(user=user).values_list("time_zone", flat=True).first() or ""


def remember_time_zone_at_login(sender, request, user, **kwargs) -> None:
    """``user_logged_in`` receiver: put the user's zone in the session that logging in is about to save.

    Logging in writes the session anyway (a new key), so the zone rides along and no later request has to
    write the session, or query the settings, for it.
    """
    if request is not None and getattr(request, "session", None) is not None:
        request.session[SESSION_ZONE_KEY] = (user.pk, _stored_zone_name(user))


def _zone_name(request, user) -> str:
    """The user's zone name ("" when they have no settings), from the session when it holds it.

    Reading it from ``ReviewSettings`` was a query on every request, the floor included; the session is
    loaded anyway (it is what says who the user is), so the name is read at login
    (:func:`remember_time_zone_at_login`) and kept in it; a session without it (one opened before this
    was deployed) reads it here once. The entry carries the user's pk, so a session that changes hands
    never shows the previous user's zone.
    """
    session = getattr(request, "session", None)
    if session is not None:
        kept = session.get(SESSION_ZONE_KEY)
        # A list after the session's JSON round trip: compare element-wise, whatever became of the tuple.
        if isinstance(kept, (list, tuple)) and len(kept) == 2 and kept[0] == user.pk:
            return kept[1]
    name = _stored_zone_name(user)
    if session is not None:
        session[SESSION_ZONE_KEY] = (user.pk, name)
    return name


class UserTimezoneMiddleware:
    """Activate the user's time zone (``ReviewSettings.time_zone``) for the request.

    Storage stays in UTC; only display changes. Anonymous users, and users
    without settings or with an unknown zone name, see UTC. The name is kept in
    the session at login (:func:`remember_time_zone` updates it when the
    settings page saves a new one). A zone changed elsewhere (the admin, the
    settings page in another browser) shows in this session from its next login.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            name = _zone_name(request, user)
            try:
                zone = zoneinfo.ZoneInfo(name) if name else None
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                zone = None
        if zone is not None:
            timezone.activate(zone)
        else:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()

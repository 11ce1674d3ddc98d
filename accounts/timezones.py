"""Every date and time in the logged-in user's own time zone (:class:`accounts.models.TimeZonePreference`).

:func:`zone_of` and :func:`zone_name_of` read a user's zone (UTC without a choice), :func:`set_time_zone` changes
it; :class:`UserTimezoneMiddleware` activates it for each request, reading it from the session, where it is put at
login (:func:`remember_time_zone_at_login`) and when it changes (:func:`remember_time_zone`).
"""

from __future__ import annotations

import zoneinfo
from functools import lru_cache

from django.utils import timezone

from accounts.models import TimeZonePreference

UTC = "UTC"
# The session entry holding the zone name: (user pk, name), "" for "no choice, UTC". (The key's name is older
# than this module: kept, so sessions opened before the preference moved here keep their zone.)
SESSION_ZONE_KEY = "drills_time_zone"
# Where a user object keeps its zone name once read (as accounts.roles keeps ``_is_coach``): one query per request.
_MEMO = "_time_zone_name"


def zone_label(name: str) -> str:
    """An IANA zone name as every page shows it: "America/New York" for ``America/New_York``."""
    return name.replace("_", " ")


@lru_cache(maxsize=1)
def time_zone_choices() -> list[tuple[str, str]]:
    """The IANA zones (Region/City, and UTC) as (name, label) choices, sorted."""
    names = sorted(name for name in zoneinfo.available_timezones() if "/" in name or name == UTC)
    return [(name, zone_label(name)) for name in names]


@lru_cache(maxsize=1)
def zone_names() -> frozenset[str]:
    """The names of :func:`time_zone_choices`: the only text that reaches ``ZoneInfo`` from a form."""
    return frozenset(name for name, _ in time_zone_choices())


def _stored_zone_name(user) -> str:
    """The zone name the user chose ("" without a choice), through the ORM relation (one query, or none when the
    relation was selected with the user)."""
    try:
        return user.time_zone_preference.time_zone
    except TimeZonePreference.DoesNotExist:
        return ""


def zone_name_of(user) -> str:
    """The IANA name of ``user``'s time zone, ``"UTC"`` when they chose none; read once per user object."""
    name = getattr(user, _MEMO, None)
    if name is None:
        name = _stored_zone_name(user)
        setattr(user, _MEMO, name)
    return name or UTC


def chose_time_zone(user) -> bool:
    """Whether ``user`` chose a time zone (UTC included), as opposed to having UTC because they chose none."""
    zone_name_of(user)  # sets the memo
    return bool(getattr(user, _MEMO))


def zone_of(user) -> zoneinfo.ZoneInfo:
    """``user``'s time zone (:func:`zone_name_of`); UTC for an unknown name. Raises nothing."""
    try:
        return zoneinfo.ZoneInfo(zone_name_of(user))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo(UTC)


def zones_of(user_ids) -> dict[int, zoneinfo.ZoneInfo]:
    """User id → time zone, for the users of ``user_ids`` who chose one (one query; the rest are in UTC)."""
    zones = {}
    for user_id, name in TimeZonePreference.objects.filter(user_id__in=user_ids).values_list("user_id", "time_zone"):
        try:
            zones[user_id] = zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    return zones


def set_time_zone(user, name: str) -> None:
    """Keep ``name`` (an IANA name, already checked) as ``user``'s time zone."""
    TimeZonePreference.objects.update_or_create(user=user, defaults={"time_zone": name})
    setattr(user, _MEMO, name)


def remember_time_zone(request, name: str) -> None:
    """Keep ``name`` as the zone of this session's user (the pages that change it call this)."""
    session = getattr(request, "session", None)
    if session is not None:
        session[SESSION_ZONE_KEY] = (request.user.pk, name or "")


def remember_time_zone_at_login(sender, request, user, **kwargs) -> None:
    """``user_logged_in`` receiver: put the user's zone in the session that logging in is about to save.

    Logging in writes the session anyway (a new key), so the zone rides along and no later request has to
    write the session, or query the preference, for it.
    """
    if request is not None and getattr(request, "session", None) is not None:
        request.session[SESSION_ZONE_KEY] = (user.pk, _stored_zone_name(user))


def _zone_name(request, user) -> str:
    """The user's zone name ("" when they chose none), from the session when it holds it.

    Reading it from the database was a query on every request, the floor included; the session is
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
    """Activate the user's time zone (:class:`~accounts.models.TimeZonePreference`) for the request.

    Storage stays in UTC; only display changes. Anonymous users, and users
    without a choice or with an unknown zone name, see UTC. The name is kept in
    the session at login (:func:`remember_time_zone` updates it when the
    settings page saves a new one), and on the request's user, so
    :func:`zone_of` asks nothing more. A zone changed elsewhere (the admin, the
    settings page in another browser) shows in this session from its next login.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            name = _zone_name(request, user)
            setattr(user, _MEMO, name)
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

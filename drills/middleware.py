"""Show every date and time in the logged-in candidate's own time zone."""

from __future__ import annotations

import zoneinfo

from django.utils import timezone


class UserTimezoneMiddleware:
    """Activate the user's time zone (``ReviewSettings.time_zone``) for the request.

    Storage stays in UTC; only display changes. Anonymous users, and users
    without settings or with an unknown zone name, see UTC.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            from .models import ReviewSettings

            name = ReviewSettings.objects.filter(user=user).values_list("time_zone", flat=True).first()
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

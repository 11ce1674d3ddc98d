"""The per-address limit on failed log-ins, beside django-axes's per-username one.

django-axes locks a (username, address) pair after ``AXES_FAILURE_LIMIT`` failures; someone trying one
password on many usernames from one address never reaches it. :class:`AddressLimitBackend` refuses every
log-in from an address that failed ``AXES_ADDRESS_FAILURE_LIMIT`` times (50 by default) within
``AXES_COOLOFF_TIME`` (15 minutes), whatever the usernames, by summing axes's own failure records for
that address; the refusal is axes's lockout page (HTTP 429), and it lifts as the failures age out.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone


def failures_from(address: str | None) -> int:
    """Failed log-ins recorded for ``address`` within the cool-off window, over every username."""
    if not address:
        return 0
    from axes.models import AccessAttempt

    since = timezone.now() - settings.AXES_COOLOFF_TIME
    total = AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=since).aggregate(
        total=Sum("failures_since_start"))["total"]
    return total or 0


class AddressLimitBackend:
    """Refuse any log-in from an address over the per-address failure limit (authenticates nobody itself).

    Deliberately no ``get_user``: Django (and the test client's ``force_login``) pick the first backend
    that has one to restore a session's user, which must stay ``accounts.backends.CoachFlagBackend``.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        """Raise axes's ``AxesBackendPermissionDenied`` (a lockout answer) when the address is over the limit."""
        if request is None:
            return None
        from axes.exceptions import AxesBackendPermissionDenied
        from axes.helpers import get_client_ip_address

        if failures_from(get_client_ip_address(request)) >= settings.AXES_ADDRESS_FAILURE_LIMIT:
            request.axes_locked_out = True  # axes's middleware answers with the lockout page
            raise AxesBackendPermissionDenied("Too many failed log-ins from this address.")
        return None

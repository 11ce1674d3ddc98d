"""Failed log-ins from one address slow that address down; they never lock everyone behind it out.

django-axes locks one (username, address) pair after ``AXES_FAILURE_LIMIT`` failures
(``AXES_LOCKOUT_PARAMETERS``). Someone trying one password on many usernames from one address never reaches
that limit, and locking the whole address instead would lock out every user behind a company's NAT. So
:class:`AddressLimitBackend` slows such an address down: once it has ``AXES_ADDRESS_SLOW_AFTER`` failures
within ``AXES_COOLOFF_TIME`` (over every username, summed from axes's own records), each attempt from it must
come :func:`address_wait` seconds after its last failure -- 1 s, doubling every ``AXES_ADDRESS_SLOW_STEP``
failures, at most ``AXES_ADDRESS_MAX_WAIT_S`` -- and one that comes sooner is refused before any password is
checked (HTTP 429 with ``Retry-After``, :func:`lockout_response`), without counting as a failure. A user behind
the address waits a few seconds at worst; a guesser is held to one try per wait.
"""

from __future__ import annotations

import math
from datetime import datetime

from django.conf import settings
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def failures_from(address: str | None, now: datetime | None = None) -> tuple[int, datetime | None]:
    """Failed log-ins recorded for ``address`` within the cool-off window, over every username, and the last one's
    time (``(0, None)`` for none, or no address)."""
    if not address:
        return 0, None
    from axes.models import AccessAttempt

    since = (now or timezone.now()) - settings.AXES_COOLOFF_TIME
    found = AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=since).aggregate(
        total=Sum("failures_since_start"), last=Max("attempt_time"))
    return found["total"] or 0, found["last"]


def address_wait(failures: int) -> int:
    """Seconds an address with ``failures`` recent failures waits after its last one: 0 below
    ``AXES_ADDRESS_SLOW_AFTER``, then 1 doubling every ``AXES_ADDRESS_SLOW_STEP`` failures, at most
    ``AXES_ADDRESS_MAX_WAIT_S`` (defaults 20, 10, 30: 1 s at 20 failures, 8 s at 50, 30 s from 70)."""
    if failures < settings.AXES_ADDRESS_SLOW_AFTER:
        return 0
    doublings = (failures - settings.AXES_ADDRESS_SLOW_AFTER) // settings.AXES_ADDRESS_SLOW_STEP
    return min(settings.AXES_ADDRESS_MAX_WAIT_S, 2 ** min(doublings, 16))


def seconds_to_wait(address: str | None, now: datetime | None = None) -> int:
    """Whole seconds before ``address`` may try to log in again (0: now)."""
    now = now or timezone.now()
    failures, last = failures_from(address, now)
    wait = address_wait(failures)
    if not wait or last is None:
        return 0
    remaining = (last - now).total_seconds() + wait
    return max(0, math.ceil(remaining))


class AddressLimitBackend:
    """Refuse a log-in that comes too soon after the last failure from a slowed-down address (authenticates
    nobody itself).

    Deliberately no ``get_user``: Django (and the test client's ``force_login``) pick the first backend
    that has one to restore a session's user, which must stay ``accounts.backends.CoachFlagBackend``.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        """Raise axes's ``AxesBackendPermissionDenied`` (answered by :func:`lockout_response`) when the address
        must wait; the refused attempt is not recorded as a failure (``AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT``
        is off). Returns ``None`` otherwise, for the next backend to check the password."""
        if request is None:
            return None
        from axes.exceptions import AxesBackendPermissionDenied
        from axes.helpers import get_client_ip_address

        wait = seconds_to_wait(get_client_ip_address(request))
        if wait:
            request.axes_locked_out = True  # axes's middleware answers with lockout_response
            request.address_wait_s = wait
            raise AxesBackendPermissionDenied(f"Too many failed log-ins from this address: wait {wait} s.")
        return None


def lockout_response(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """The answer to a refused log-in (``AXES_LOCKOUT_CALLABLE``): HTTP 429 with ``Retry-After``, the lockout page.

    Either the address must wait a few seconds (:class:`AddressLimitBackend`), or axes locked this username at
    this address (``AXES_FAILURE_LIMIT`` failures) for the cool-off time.
    """
    from axes.helpers import get_client_username, get_cool_off, get_failure_limit

    wait = getattr(request, "address_wait_s", None)
    cool_off = get_cool_off(request)
    context = {"address_wait_s": wait, "failure_limit": get_failure_limit(request, credentials),
               "username": get_client_username(request, credentials) or "", "cooloff_timedelta": cool_off}
    response = render(request, settings.AXES_LOCKOUT_TEMPLATE, context, status=429)
    response["Retry-After"] = str(wait if wait else int(cool_off.total_seconds()) if cool_off else 60)
    return response

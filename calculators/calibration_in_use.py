"""The calibration a user applies, as the calculator and simulator pages read it: from the session, not a query.

:class:`calculators.models.AppliedCalibration` is the record; the pages need its name and constants on every
request, and the calculator page touches no model (tests/config/test_query_counts.py), so a snapshot of it rides in
the session, as the time zone does (``accounts/timezones.py``): written at log-in (:func:`remember_at_login`)
and whenever the user applies or stops one (:func:`remember`), read by :func:`in_use`; a session opened before
this existed reads the record once. The snapshot carries the user's pk, so a session that changes hands never
shows the previous user's calibration. A calibration deleted or changed elsewhere shows as it was until the
session next logs in or applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse

from calculators.models import AppliedCalibration, CalibratedStack, Calibration

SESSION_KEY = "calibration_in_use"


@dataclass(frozen=True)
class InUse(CalibratedStack):
    """What the pages show of an applied calibration (the fields of :class:`Calibration` they read; what it
    applies to and where it was fitted as :class:`CalibratedStack` says, as for the record)."""

    pk: int
    name: str
    owner_id: int
    owner: str
    model: str
    gpu: str
    gpus: int
    weights_dtype: str
    values: dict = field(hash=False)
    ranges: dict = field(hash=False)

    def get_absolute_url(self) -> str:
        return reverse("lab:calibration", args=[self.pk])


def snapshot(calibration: Calibration | None) -> dict | None:
    """The session's copy of ``calibration`` (JSON), or None."""
    if calibration is None:
        return None
    return {"pk": calibration.pk, "name": calibration.name, "owner_id": calibration.owner_id,
            "owner": calibration.owner.get_username(), "model": calibration.model, "gpu": calibration.gpu,
            "gpus": calibration.gpus, "weights_dtype": calibration.weights_dtype, "values": calibration.values,
            "ranges": calibration.ranges}


def _stored(user) -> dict | None:
    found = AppliedCalibration.objects.filter(user=user).select_related("calibration__owner").first()
    return snapshot(found.calibration) if found else None


def remember(request, calibration: Calibration | None) -> None:
    """Keep ``calibration`` (None: none) as this session's user's applied one (the views that change it call
    this)."""
    session = getattr(request, "session", None)
    if session is not None:
        session[SESSION_KEY] = [request.user.pk, snapshot(calibration)]


def remember_at_login(sender, request, user, **kwargs) -> None:
    """``user_logged_in`` receiver: put the user's applied calibration in the session logging in saves."""
    if request is not None and getattr(request, "session", None) is not None:
        request.session[SESSION_KEY] = [user.pk, _stored(user)]


def in_use(request) -> InUse | None:
    """The calibration the request's user applies (None for none, or an anonymous visitor), from the session
    when it holds it, else read once and kept there."""
    user = request.user
    if not user.is_authenticated:
        return None
    session = getattr(request, "session", None)
    kept = session.get(SESSION_KEY) if session is not None else None
    if isinstance(kept, (list, tuple)) and len(kept) == 2 and kept[0] == user.pk:
        data = kept[1]
    else:
        data = _stored(user)
        if session is not None:
            session[SESSION_KEY] = [user.pk, data]
    return InUse(**data) if data else None

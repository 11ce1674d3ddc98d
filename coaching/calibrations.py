"""Calibrations shared with a cohort (issue 32): a coach shares one of their own, a member applies it.

A coach's calibration (:class:`calculators.models.Calibration`, fitted in the lab) is shared with one of their
cohorts from the cohort's page; a member sees the calibrations shared with their cohorts at
``/calibrations/shared/`` and may apply one to their calculators and simulator (it then shows as in use, with who
shared it). Sharing gives no right to change it: it stays the coach's.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from calculators.calibration_in_use import in_use, remember
from calculators.models import AppliedCalibration, Calibration

from .access import coach_required, cohorts_of
from .models import SharedCalibration


def shared_with(user):
    """The calibrations shared with any cohort ``user`` is a member of (each once)."""
    return Calibration.objects.filter(shares__cohort__memberships__candidate=user).distinct()


@coach_required
@require_POST
def share(request: HttpRequest, pk: int) -> HttpResponse:
    """Share one of the coach's own calibrations with one of their cohorts (POST ``calibration``)."""
    cohort = get_object_or_404(cohorts_of(request.user), pk=pk)
    try:
        chosen = Calibration.objects.owned_by(request.user).get(pk=int(request.POST.get("calibration", "")))
    except (ValueError, Calibration.DoesNotExist):
        messages.error(request, "Choose one of your own calibrations to share (fit and save one in the lab).")
        return redirect(cohort)
    SharedCalibration.objects.get_or_create(cohort=cohort, calibration=chosen)
    messages.success(request, f"“{chosen.name}” is shared with {cohort.name}: its members can apply it.")
    return redirect(cohort)


@login_required
@require_safe
def shared_calibrations(request: HttpRequest) -> HttpResponse:
    """The calibrations the user's coaches shared with their cohorts, each with its fit and an Apply button."""
    return render(request, "coaching/shared_calibrations.html", {
        "calibrations": shared_with(request.user).select_related("owner"),
        "in_use": in_use(request)})


@login_required
@require_POST
def apply_shared(request: HttpRequest, pk: int) -> HttpResponse:
    """Apply a calibration shared with one of the user's cohorts (POST); 404 for one not shared with them."""
    chosen = get_object_or_404(shared_with(request.user), pk=pk)
    AppliedCalibration.objects.update_or_create(user=request.user, defaults={"calibration": chosen})
    remember(request, chosen)
    messages.success(request, f"“{chosen.name}” (shared by {chosen.owner}) is in use on the calculators and the "
                              "simulator wherever the card and precision are its own.")
    return redirect("coaching:shared_calibrations")

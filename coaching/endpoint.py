"""A coach's grading endpoint for a cohort (issue 34): the model that grades the written answers of the members
who have no endpoint of their own (:mod:`llm_grading`). The members are told, in their grading settings and on
every answer graded, that their answers go to it. The key is the coach's: encrypted, never shown back, and deleted
with the coach's account; a cohort handed to another coach loses it.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from llm_grading.forms import EndpointForm
from llm_grading.models import Endpoint

from .access import coach_required
from .models import Cohort


def _coached_cohort(request: HttpRequest, pk: int) -> Cohort:
    """One of the coach's own cohorts (404 otherwise, staff included: the key would be theirs)."""
    return get_object_or_404(Cohort.objects.filter(coach=request.user), pk=pk)


@coach_required
@require_http_methods(["GET", "POST"])
def cohort_endpoint(request: HttpRequest, pk: int) -> HttpResponse:
    """Set, change or show the cohort's endpoint."""
    cohort = _coached_cohort(request, pk)
    current = Endpoint.objects.filter(cohort=cohort).first()
    if current is not None and current.owner_id != request.user.pk:
        current.delete()  # a cohort handed over: the key was the previous coach's, never the new one's to use
        current = None
    form = EndpointForm(request.POST or None, instance=current or Endpoint(owner=request.user, cohort=cohort))
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Saved: members of {cohort.name} without an endpoint of their own are now graded "
                                  "by this one, and told so.")
        return redirect("coaching:cohort_endpoint", pk=cohort.pk)
    return render(request, "llm_grading/cohort.html", {"form": form, "cohort": cohort, "current": current,
                                                       "members": cohort.memberships.count()})


@coach_required
@require_POST
def remove_cohort_endpoint(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete the cohort's endpoint and its key."""
    cohort = _coached_cohort(request, pk)
    deleted, _ = Endpoint.objects.filter(cohort=cohort).delete()
    if deleted:
        messages.success(request, f"Removed: {cohort.name}'s endpoint and its key are deleted.")
    return redirect("coaching:cohort_endpoint", pk=cohort.pk)

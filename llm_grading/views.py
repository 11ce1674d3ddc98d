"""Pages of grading by the user's model: the endpoint settings, a grading as it runs, retrying, accepting.

* ``/grading/settings/`` — a candidate's own endpoint (base URL, model, write-only key); it says when their
  answers go to a coach's endpoint instead (a coach sets that one on the cohort's page: :mod:`coaching.endpoint`).
* ``/grading/<pk>/`` — one grading: with htmx the fragment the answer's page polls (it runs a queued grading
  in-process in the embedded default: :func:`llm_grading.services.run_here`), without it a page of its own.
* ``/grading/<pk>/retry/`` and ``/grading/<pk>/accept/`` — grade again after a failure; record the score kept
  for an answer graded on its own page (a design prompt's).

Everything is the user's own: another user's grading is a 404.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from . import services
from .forms import EndpointForm
from .models import RATINGS, Endpoint, Grading
from .presentation import fragment_context


def _own(request: HttpRequest, pk: int) -> Grading:
    return get_object_or_404(Grading.objects.of(request.user).select_related("item"), pk=pk)


def page_of(grading: Grading) -> str:
    """The page the answer was written on (it shows the grading), else the grading's own page."""
    return grading.page_url or reverse("llm_grading:grading", args=[grading.pk])


@login_required
@require_http_methods(["GET", "HEAD"])
def grading(request: HttpRequest, pk: int) -> HttpResponse:
    """One grading: the polled fragment (htmx) or its own page; a queued one runs now in the embedded default."""
    found = services.run_here(_own(request, pk))
    mode = request.GET.get("mode", "standalone")
    context = fragment_context(found, mode if request.htmx else "standalone")
    template = "llm_grading/grading.html#grading" if request.htmx else "llm_grading/grading.html"
    response = render(request, template, {"g": context})
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Grade the same answer again (after a failure); the fragment of the new grading, or back to its page."""
    old = _own(request, pk)
    new = old if old.pending else services.retry(old)
    if new is None:
        messages.warning(request, "There is no endpoint to grade with any more: score the answer yourself.")
        return redirect(page_of(old))
    if request.htmx:
        mode = request.POST.get("mode", "standalone")
        return render(request, "llm_grading/grading.html#grading", {"g": fragment_context(new, mode)})
    return redirect(page_of(new) if new.origin != Grading.DESIGN else reverse("llm_grading:grading", args=[new.pk]))


@login_required
@require_POST
def accept(request: HttpRequest, pk: int) -> HttpResponse:
    """Record the score the candidate keeps for a grading shown on its own (a design prompt's answer)."""
    found = _own(request, pk)
    rating = request.POST.get("rating", "")
    if found.status != Grading.DONE or rating not in ("1", "2", "3", "4"):
        messages.warning(request, "Choose one of the four scores once the grading is done.")
        return redirect("llm_grading:grading", pk=found.pk)
    services.record_choice(request.user, found.pk, int(rating))
    messages.success(request, f"Recorded: {dict(RATINGS)[int(rating)]}.")
    return redirect("llm_grading:grading", pk=found.pk)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_settings(request: HttpRequest) -> HttpResponse:
    """The candidate's own endpoint: set, change or remove it; the coach's endpoint that applies otherwise."""
    own = Endpoint.objects.filter(owner=request.user, cohort__isnull=True).first()
    form = EndpointForm(request.POST or None, instance=own or Endpoint(owner=request.user))
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Saved: your open answers are now graded by this endpoint.")
        return redirect("llm_grading:settings")
    coach_endpoints = list(Endpoint.objects.filter(cohort__memberships__candidate=request.user)
                           .select_related("cohort", "cohort__coach").order_by("-updated_at", "-pk"))
    return render(request, "llm_grading/settings.html", {
        "form": form, "own": own, "coach_endpoints": coach_endpoints,
        "recent": Grading.objects.of(request.user).select_related("item")[:10],
        "timeout_s": settings.LLM_GRADING_TIMEOUT_S})


@login_required
@require_POST
def remove_endpoint(request: HttpRequest) -> HttpResponse:
    """Delete the candidate's own endpoint and its key."""
    deleted, _ = Endpoint.objects.filter(owner=request.user, cohort__isnull=True).delete()
    if deleted:
        messages.success(request, "Removed: the endpoint and its key are deleted.")
    return redirect("llm_grading:settings")

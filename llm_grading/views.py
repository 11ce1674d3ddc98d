"""Pages of grading by the user's model: the endpoint settings, a grading as it runs, retrying, accepting.

* ``/grading/settings/`` — a candidate's own endpoint (base URL, model, write-only key); it says when their
  answers go to a coach's endpoint instead.
* ``/grading/cohort/<pk>/`` — a coach's endpoint for one of their cohorts.
* ``/grading/<pk>/`` — one grading: with htmx the fragment the answer's page polls (it runs a queued grading
  in-process in the embedded default: :func:`llm_grading.services.run_here`), without it a page of its own.
* ``/grading/<pk>/retry/`` and ``/grading/<pk>/accept/`` — grade again after a failure; record the score kept.
* ``/grading/design/<slug>/`` — a design prompt answered on its page, sent for grading.

Everything is the user's own: another user's grading is a 404, another coach's cohort a 404.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from coaching.access import coach_required
from coaching.models import Cohort, Membership
from drills.models import BankItem

from . import services
from .forms import EndpointForm
from .models import RATINGS, Endpoint, Grading
from .presentation import fragment_context


def _own(request: HttpRequest, pk: int) -> Grading:
    return get_object_or_404(Grading.objects.of(request.user).select_related("item"), pk=pk)


def origin_url(grading: Grading) -> str:
    """The page the answer was written on (where the grading is shown), else the grading's own page."""
    if grading.origin == Grading.REVIEW:
        return reverse("reviews:card", args=[grading.origin_id])
    if grading.origin == Grading.ROUND:
        from drills.models import RoundItem

        found = RoundItem.objects.filter(pk=grading.origin_id, round__user=grading.user).first()
        if found is not None:
            return found.get_absolute_url()
    if grading.origin == Grading.CRITIQUE:
        from drills.models import CritiqueAttempt

        attempt = CritiqueAttempt.objects.filter(pk=grading.origin_id, user=grading.user).select_related(
            "item").first()
        if attempt is not None:
            return attempt.get_absolute_url() + "#assess"
    return reverse("llm_grading:grading", args=[grading.pk])


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
    """Grade the same answer again (after a failure); the fragment of the new grading, or back to the page."""
    old = _own(request, pk)
    new = services.retry(old) if not old.pending else old
    if new is None:
        messages.warning(request, "There is no endpoint to grade with any more: score the answer yourself.")
        return redirect(origin_url(old))
    if request.htmx:
        mode = request.POST.get("mode", "standalone")
        return render(request, "llm_grading/grading.html#grading", {"g": fragment_context(new, mode)})
    return redirect(origin_url(new) if new.origin != Grading.DESIGN else reverse("llm_grading:grading",
                                                                                  args=[new.pk]))


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
@require_POST
def design_answer(request: HttpRequest, slug: str) -> HttpResponse:
    """A design prompt answered on its page, sent to the user's model; the answer is kept whatever happens."""
    item = get_object_or_404(BankItem.objects.published(), slug=slug, kind=BankItem.DESIGN)
    answer = str(request.POST.get("answer", ""))[:20_000]
    if not answer.strip():
        messages.warning(request, "Write your answer first: an empty answer is not sent for grading.")
        return redirect(reverse("drills:design", args=[slug]) + "#your-answer")
    created = services.request(request.user, item, answer, Grading.DESIGN, item.pk)
    if created is None:
        messages.warning(request, "No endpoint grades your answers yet: set one in the grading settings.")
        return redirect("llm_grading:settings")
    return redirect("llm_grading:grading", pk=created.pk)


def _coach_endpoints(user) -> list[Endpoint]:
    return list(Endpoint.objects.filter(cohort__memberships__candidate=user).select_related("cohort",
                                                                                          "cohort__coach"))


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
    coach_endpoints = _coach_endpoints(request.user)
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


def _coached_cohort(request: HttpRequest, pk: int) -> Cohort:
    return get_object_or_404(Cohort.objects.filter(coach=request.user), pk=pk)


@coach_required
@require_http_methods(["GET", "POST"])
def cohort_endpoint(request: HttpRequest, pk: int) -> HttpResponse:
    """A coach's endpoint for one of their cohorts: it grades the members who have none of their own."""
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
        return redirect("llm_grading:cohort", pk=cohort.pk)
    members = Membership.objects.filter(cohort=cohort).count()
    return render(request, "llm_grading/cohort.html", {"form": form, "cohort": cohort, "current": current,
                                                       "members": members})


@coach_required
@require_POST
def remove_cohort_endpoint(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete the cohort's endpoint and its key."""
    cohort = _coached_cohort(request, pk)
    deleted, _ = Endpoint.objects.filter(cohort=cohort).delete()
    if deleted:
        messages.success(request, f"Removed: {cohort.name}'s endpoint and its key are deleted.")
    return redirect("llm_grading:cohort", pk=cohort.pk)


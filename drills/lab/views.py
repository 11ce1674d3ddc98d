"""The lab at ``/lab/``: a candidate's measurements beside the engine's predictions, and their saved runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from drills.lab.forms import LabForm
from drills.models import LabRun

RUNS_SHOWN = 20


def _save(form: LabForm, user) -> LabRun:
    data = form.cleaned_data
    fields = {name: data.get(name) for name in (*LabRun.SETUP, *LabRun.MEASURED)}
    fields["engine_flags"] = fields["engine_flags"] or ""
    fields["startup_log"] = fields["startup_log"] or ""
    return LabRun.objects.create(user=user, summary=form.prediction.summary, **fields)


def _render(request: HttpRequest, form: LabForm, run: LabRun | None = None) -> HttpResponse:
    context = {"form": form, "prediction": form.prediction if form.is_bound and not form.errors else None,
               "run": run, "runs": LabRun.objects.of(request.user)[:RUNS_SHOWN]}
    template = "drills/lab.html#lab" if request.htmx else "drills/lab.html"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
def lab(request: HttpRequest) -> HttpResponse:
    """The lab form; on POST the predictions beside the measurements (saved for a logged-in candidate)."""
    if request.method == "GET":
        return _render(request, LabForm())
    form = LabForm(request.POST)
    run = None
    if form.is_valid() and request.user.is_authenticated:
        run = _save(form, request.user)
        if not request.htmx:
            return redirect(run)
    return _render(request, form, run)


@login_required
@require_safe
def run(request: HttpRequest, pk: int) -> HttpResponse:
    """A saved run (the candidate's own only), its predictions recomputed by the engine."""
    saved = get_object_or_404(LabRun.objects.of(request.user), pk=pk)
    form = LabForm(data=saved.form_data())
    form.is_valid()
    return _render(request, form, saved)

"""The lab at ``/lab/``: a candidate's measurements beside the engine's predictions, and their saved runs; at
``/lab/calibrate/`` a benchmark's output replayed and fitted, and the calibrations a user keeps and applies."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from calculators import simulation
from calculators.calibration_in_use import in_use, remember
from calculators.models import AppliedCalibration, Calibration
from drills.lab.bench_output import FORMATS
from drills.lab.calibrate_forms import CalibrateForm
from drills.lab.forms import LabForm
from drills.lab.replay import replay
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


# --- calibration from a benchmark (issue 32) -------------------------------------------------------------------


def _calibrate_render(request: HttpRequest, form: CalibrateForm, *, saved: Calibration | None = None,
                      anonymous_save: bool = False) -> HttpResponse:
    replays = None
    if form.is_bound and not form.errors and form.fit is not None:
        budget = simulation.max_steps(anonymous=not request.user.is_authenticated)
        replays = replay(form.stack, form.reading.points, form.fit, budget)
    context = {"form": form, "fit": form.fit if not form.errors else None, "reading": form.reading,
               "replays": replays, "saved": saved, "anonymous_save": anonymous_save,
               "calibrations": Calibration.objects.owned_by(request.user)[:RUNS_SHOWN],
               "in_use": in_use(request), "formats": FORMATS}
    template = "drills/calibrate.html#calibrate" if request.htmx else "drills/calibrate.html"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
def calibrate(request: HttpRequest) -> HttpResponse:
    """Paste a benchmark's output: what was read, the simulator's replay beside it, the fitted constants; a
    logged-in user saves the fit by name (anonymous visitors fit but cannot save)."""
    if request.method == "GET":
        return _calibrate_render(request, CalibrateForm())
    logged_in = request.user.is_authenticated
    saving = "save" in request.POST
    form = CalibrateForm(request.POST, owner=request.user if logged_in else None, saving=saving and logged_in)
    if form.is_valid() and saving and logged_in:
        calibration = form.save()
        messages.success(request, f"Saved “{calibration.name}”. Apply it to use it on the calculators and the "
                                  "simulator.")
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = calibration.get_absolute_url()
            return response
        return redirect(calibration)
    return _calibrate_render(request, form, anonymous_save=saving and not logged_in)


@login_required
@require_safe
def calibration(request: HttpRequest, pk: int) -> HttpResponse:
    """A saved calibration (the owner's only): its fit and the replay, read again from the output it was saved
    with."""
    saved = get_object_or_404(Calibration.objects.owned_by(request.user), pk=pk)
    form = CalibrateForm(data={"model": saved.model, "gpu": saved.gpu, "gpus": saved.gpus,
                               "weights_dtype": saved.weights_dtype, "kv_dtype": saved.kv_dtype,
                               "engine": saved.engine or "other", "output": saved.source_text, "name": saved.name})
    form.is_valid()
    return _calibrate_render(request, form, saved=saved)


@login_required
@require_POST
def calibration_apply(request: HttpRequest, pk: int) -> HttpResponse:
    """Apply one of the user's own calibrations to the calculators and the simulator (POST)."""
    chosen = get_object_or_404(Calibration.objects.owned_by(request.user), pk=pk)
    AppliedCalibration.objects.update_or_create(user=request.user, defaults={"calibration": chosen})
    remember(request, chosen)
    messages.success(request, f"“{chosen.name}” is in use on the calculators and the simulator wherever the card "
                              "and precision are its own.")
    return redirect(chosen)


@login_required
@require_POST
def calibration_stop(request: HttpRequest) -> HttpResponse:
    """Stop applying any calibration (POST): the pages use the calibration table again."""
    AppliedCalibration.objects.filter(user=request.user).delete()
    remember(request, None)
    messages.success(request, "No calibration is in use: the calculators and the simulator use the table again.")
    return redirect("lab:calibrate")

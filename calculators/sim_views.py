"""The simulator page, ``/simulator/``: a sweep over arrival rates, its curves and its tables; and
``/simulator/fidelity/``, how close the serving model is to public measurements.

The view binds the form to the query string and asks :mod:`calculators.simulation`
what the cache holds for the sweep, within the step budget of the visitor (lower when not logged
in: ``simulation.max_steps``). Embedded (no broker) it computes one missing
rate per request, so an htmx chain (or, without JavaScript, the "next rate" link)
walks the sweep a rate at a time; with a broker it enqueues the missing rates once
and the page polls. An htmx request gets the ``#sweep`` partial.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from calculators import simulation
from calculators.calibration_in_use import in_use
from calculators.engine.errors import EngineError
from calculators.fidelity import fidelity_view
from calculators.sim_forms import SimulatorForm, sweep_view


@require_safe
def simulator(request: HttpRequest) -> HttpResponse:
    """Show the form; for submitted inputs, the sweep's progress or its charts and tables."""
    form = SimulatorForm(request.GET if request.GET else None,
                         calibration=in_use(request))
    status, error, view = None, None, None
    broker = simulation.broker_configured()
    budget = simulation.max_steps(anonymous=not request.user.is_authenticated)
    if form.is_bound and form.is_valid():
        status = simulation.sweep_status(form.inputs)
        if not status.complete:
            if broker:
                simulation.queue_missing(status, budget)
            else:
                try:
                    status = simulation.run_next(status, budget)
                except EngineError as exc:
                    error = str(exc)
        error = error or status.error
        if status.complete and not error:
            view = sweep_view(status, request.GET.get("show"))
    context = {"form": form, "status": status, "error": error, "sweep": view, "broker": broker,
               "query": request.GET.urlencode()}
    template = "calculators/simulator.html" + ("#sweep" if request.htmx else "")
    return render(request, template, context)


@require_safe
def fidelity(request: HttpRequest) -> HttpResponse:
    """``/simulator/fidelity/``: the serving model against public measurements (:mod:`calculators.fidelity`)."""
    return render(request, "calculators/fidelity.html", fidelity_view())

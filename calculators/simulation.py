"""Simulator runs for the web: cached by the inputs' hash, one rate at a time, on a worker when there is one.

The one way the apps reach the simulator (``calculators/sim``): the page, the API, the chapters'
figures and the Celery task :func:`simulate_point` share these functions (a contract in
``pyproject.toml`` keeps the apps above calculators from importing ``calculators.sim``). A sweep point (cleaned inputs
and one rate) is keyed by the SHA-256 of its canonical JSON, and its result
(``{"summary", "series"}``) is kept in Django's cache for :data:`RESULT_TTL_S`.

- Embedded default (no broker, eager Celery): the page computes one missing
  rate per request (:func:`run_next`), so no request runs a whole sweep.
- With a broker: :func:`queue_missing` enqueues one :func:`simulate_point` task
  per missing rate (through the outbox) and marks it queued, and the page polls
  :func:`sweep_status` until every rate is cached. The task lives here, beside the
  service it runs (the worker imports this module: ``CELERY_IMPORTS`` in settings).

Every web run is bounded by :data:`settings.SIMULATOR_WEB_MAX_STEPS` engine
steps (a sweep shares that budget in the API), so a request outlives no
worker timeout.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.cache import cache

from calculators.engine.catalog import Catalog
from calculators.engine.errors import EngineError
from calculators.engine.procedures import Family, Result
from calculators.sim import config as sim_config
from calculators.sim import results as sim_results
from calculators.sim.config import build_setup, clean_sim_inputs
from calculators.sim.results import knee
from calculators.sim.run import echo_inputs, run_workload, simulate
from calculators.sim.workload import workload_for
from outbox import services as outbox

RESULT_TTL_S = 24 * 3600
QUEUED_TTL_S = 600
KEY_VERSION = "sim1"

#: The simulator's inputs (one ``InputSpec`` each) and the longest sweep it takes: the API's schema names them.
INPUTS = sim_config.INPUTS
MAX_SWEEP_POINTS = sim_config.MAX_SWEEP_POINTS
#: The knee of a sweep is the highest rate whose goodput is at least this share of the rate.
KNEE_SHARE = sim_results.KNEE_SHARE


def max_steps() -> int:
    """Engine steps one web request may simulate."""
    return int(getattr(settings, "SIMULATOR_WEB_MAX_STEPS", 400_000))


def point_key(inputs: dict[str, Any], rate: float | None) -> str:
    """The cache key of one sweep point: the hash of the cleaned inputs (less the sweep) and the rate."""
    body = {key: value for key, value in inputs.items() if key != "sweep"}
    rate = None if rate is None else float(rate)  # 10 and 10.0 are one point
    text = json.dumps({"inputs": body, "rate": rate}, sort_keys=True, separators=(",", ":"))
    return f"{KEY_VERSION}:{hashlib.sha256(text.encode()).hexdigest()}"


def rates_of(inputs: dict[str, Any]) -> list[float | None]:
    """The rates a request covers: its sweep's, else its one rate (None for a trace)."""
    if inputs.get("trace"):
        return [None]
    return list(inputs.get("sweep") or [inputs["rate"]])


def run_point(inputs: dict[str, Any], rate: float | None, budget: int | None = None) -> dict:
    """Simulate one point (or read it from the cache) and cache it; raises the engine's errors."""
    key = point_key(inputs, rate)
    found = cache.get(key)
    if found is not None:
        return found
    result = run_workload(inputs, workload_for(inputs, rate), build_setup(inputs),
                          max_steps() if budget is None else budget)
    cache.set(key, result, RESULT_TTL_S)
    return result


@dataclass
class SweepStatus:
    """Which rates of a sweep are done: ``points`` (rate, result or None) in rate order."""

    inputs: dict
    points: list

    @property
    def done(self) -> int:
        return sum(1 for _, result in self.points if result is not None)

    @property
    def error(self) -> str | None:
        """A worker's sentence for a rate that could not run (bad input or over budget)."""
        return next((result["error"] for _, result in self.points if result and "error" in result), None)

    @property
    def total(self) -> int:
        return len(self.points)

    @property
    def complete(self) -> bool:
        return self.done == self.total

    @property
    def missing(self) -> list:
        return [rate for rate, result in self.points if result is None]

    def summaries(self) -> list[dict]:
        """The summaries of the finished rates."""
        return [result["summary"] for _, result in self.points if result and "summary" in result]

    def knee_req_s(self) -> float | None:
        """The sweep's knee, once every rate is done."""
        return knee(self.summaries()) if self.complete else None


def sweep_status(inputs: dict[str, Any]) -> SweepStatus:
    """What the cache holds for each rate of cleaned ``inputs``."""
    rates = rates_of(inputs)
    found = cache.get_many([point_key(inputs, rate) for rate in rates])
    return SweepStatus(inputs, [(rate, found.get(point_key(inputs, rate))) for rate in rates])


def run_next(status: SweepStatus) -> SweepStatus:
    """Compute the first missing rate (embedded mode): one simulation per call."""
    if status.missing:
        run_point(status.inputs, status.missing[0])
    return sweep_status(status.inputs)


def broker_configured() -> bool:
    """Whether tasks go to a worker (a broker is set) rather than run in-process."""
    return not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True)


def queue_missing(status: SweepStatus) -> None:
    """Enqueue one task per missing rate not already queued (with a broker)."""
    for rate in status.missing:
        flag = point_key(status.inputs, rate) + ":queued"
        if cache.add(flag, True, QUEUED_TTL_S):
            outbox.enqueue(simulate_point, args=(status.inputs, rate))


@shared_task(name="calculators.simulate_point", acks_late=True)
def simulate_point(inputs: dict, rate: float | None) -> None:
    """Celery task: simulate cleaned ``inputs`` (JSON) at ``rate`` req/s into the cache, for the page.

    Idempotent (a cached point is not run again); a bad-input error is cached as the point's result, so the
    page can say why.
    """
    try:
        run_point(inputs, rate)
    except EngineError as exc:
        cache.set(point_key(inputs, rate), {"error": str(exc)}, QUEUED_TTL_S)


def run_sweep(inputs: dict[str, Any]) -> list[dict]:
    """Every rate of cleaned simulator ``inputs`` (one result per rate, in order), each through
    :func:`run_point` (cached by the inputs' hash), the whole call sharing one budget of :func:`max_steps`
    engine steps (an over-budget run raises ``InputError``). The simulated drills' sweep runner
    (:data:`calculators.sim.scenario.SweepRunner`), passed to them by :func:`run_drill` and the problem
    generator."""
    budget = max_steps()
    results = []
    for rate in rates_of(inputs):
        result = run_point(inputs, rate, budget)
        budget -= result["summary"].get("steps", 0)
        results.append(result)
    return results


def run_drill(family: Family, raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
    """``family.run(raw)``, with a simulated drill's sweep run first through :func:`run_sweep` (cached, one
    budget) rather than in the request without a limit; raises what the family raises."""
    if family.prepare is not None:
        raw = family.prepare(raw, catalog, run_sweep)
    return family.run(raw, catalog)


def simulate_for_api(raw: dict[str, Any]) -> dict:
    """The ``simulate`` command's JSON for API inputs, each point through the cache.

    The whole call shares one budget of :func:`max_steps` engine steps. Raises the engine's
    errors for bad input or a run over budget.
    """
    inputs = clean_sim_inputs(raw)
    setup = build_setup(inputs)
    results = run_sweep(inputs)
    if "sweep" in inputs:
        summaries = [result["summary"] for result in results]
        return {"inputs": echo_inputs(inputs, setup), "sweep": summaries, "knee_req_s": knee(summaries)}
    if inputs.get("trace"):
        inputs["duration_s"] = results[0]["summary"]["duration_s"]
    return {"inputs": echo_inputs(inputs, setup), **results[0]}


def simulate_for_chapter(raw: dict[str, Any]) -> dict:
    """The ``simulate`` command's JSON for a chapter's figure: one run, or a sweep with its knee.

    Unlike the page and the API, no web budget bounds it and nothing is cached here: a chapter is rendered
    once per process (the figure memoises it) and its inputs are the author's, not a visitor's. Raises the
    engine's errors for bad input.
    """
    return simulate(raw)

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
steps (a sweep shares that budget in the API), and an anonymous caller's by the
lower ``SIMULATOR_ANON_MAX_STEPS`` (:func:`max_steps`), so a request outlives no
worker timeout. A run refused for its budget is remembered with the budget it
was refused at, so asking again is answered from the cache, not by running the
same steps to the same refusal.

The API (``/api/v1/simulate/``) goes through :func:`api_call`: a call answered
from the cache is free; one that must simulate is counted against its caller
(:func:`charge`: per address when anonymous, per account when logged in, over a
window of ``SIMULATOR_LIMIT_WINDOW_S``), and over the limit it is refused with
the seconds to wait. With a broker the call is one :func:`simulate_call` task
and the API answers at once with where its result will be (:func:`api_outcome`
reads it); embedded, it runs in the request. Either way the outcome (the JSON,
or the refusal's sentence) is cached under the call's :func:`call_token`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.cache import cache

from calculators.engine.catalog import Catalog
from calculators.engine.errors import EngineError, InputError
from calculators.engine.procedures import Family, Result
from calculators.sim import config as sim_config
from calculators.sim import results as sim_results
from calculators.sim.config import build_setup, clean_sim_inputs
from calculators.sim.results import knee, knee_concurrency
from calculators.sim.run import at_point, echo_inputs, run_workload, simulate, sweep_json
from calculators.sim.workload import workload_for
from outbox import services as outbox

RESULT_TTL_S = 24 * 3600
QUEUED_TTL_S = 600
KEY_VERSION = "sim3"  # sim2: summaries count the requests missing each target; sim3: and the queue at the end

#: The simulator's inputs (one ``InputSpec`` each) and the longest sweep it takes: the API's schema names them.
INPUTS = sim_config.INPUTS
MAX_SWEEP_POINTS = sim_config.MAX_SWEEP_POINTS
#: The knee of a sweep is the highest rate whose goodput is at least this share of the rate.
KNEE_SHARE = sim_results.KNEE_SHARE


def max_steps(anonymous: bool = False) -> int:
    """Engine steps one web request may simulate: ``SIMULATOR_WEB_MAX_STEPS``, or the lower
    ``SIMULATOR_ANON_MAX_STEPS`` for a caller who is not logged in."""
    steps = int(getattr(settings, "SIMULATOR_WEB_MAX_STEPS", 400_000))
    if anonymous:
        return min(steps, int(getattr(settings, "SIMULATOR_ANON_MAX_STEPS", 100_000)))
    return steps


def point_key(inputs: dict[str, Any], rate: float | None) -> str:
    """The cache key of one sweep point: the hash of the cleaned inputs (less the sweep) and the rate; a
    concurrency sweep's point (``rate`` then a concurrency) is keyed as that one closed loop."""
    inputs, rate = at_point(inputs, rate)
    body = {key: value for key, value in inputs.items() if key != "sweep"}
    rate = None if rate is None else float(rate)  # 10 and 10.0 are one point
    text = json.dumps({"inputs": body, "rate": rate}, sort_keys=True, separators=(",", ":"))
    return f"{KEY_VERSION}:{hashlib.sha256(text.encode()).hexdigest()}"


def rates_of(inputs: dict[str, Any]) -> list[float | None]:
    """The points a request covers: its sweep's rates, or its concurrency sweep's concurrencies, else its one
    rate (None for a trace or one closed loop)."""
    if inputs.get("trace") or inputs.get("concurrency"):
        return [None]
    if "concurrency_sweep" in inputs:
        return list(inputs["concurrency_sweep"])
    return list(inputs.get("sweep") or [inputs["rate"]])


def run_point(inputs: dict[str, Any], rate: float | None, budget: int | None = None) -> dict:
    """Simulate one point (or read it from the cache) and cache it; raises the engine's errors.

    A run the engine refuses (over ``budget`` engine steps, a request the KV cache cannot hold) is cached
    too, with the budget it was given: the same point asked again within that budget raises the same
    :class:`InputError` at once; a larger budget (a logged-in caller's) runs it again.
    """
    key = point_key(inputs, rate)
    found = cache.get(key)
    if found is not None:
        return found
    budget = max_steps() if budget is None else budget
    refused = cache.get(key + ":refused")
    if refused is not None and budget <= refused["budget"]:
        raise InputError(refused["error"], field=refused["field"])
    point_inputs, rate = at_point(inputs, rate)
    try:
        result = run_workload(point_inputs, workload_for(point_inputs, rate), build_setup(point_inputs), budget)
    except InputError as exc:
        cache.set(key + ":refused", {"budget": budget, "error": str(exc), "field": exc.field}, RESULT_TTL_S)
        raise
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

    @property
    def by_concurrency(self) -> bool:
        """Whether the sweep's points are a closed loop's concurrencies rather than rates."""
        return "concurrency_sweep" in self.inputs

    def knee_req_s(self) -> float | None:
        """The sweep's knee, once every point is done: a rate, or a concurrency (:attr:`by_concurrency`)."""
        if not self.complete:
            return None
        return knee_concurrency(self.summaries()) if self.by_concurrency else knee(self.summaries())


def sweep_status(inputs: dict[str, Any]) -> SweepStatus:
    """What the cache holds for each rate of cleaned ``inputs``."""
    rates = rates_of(inputs)
    found = cache.get_many([point_key(inputs, rate) for rate in rates])
    return SweepStatus(inputs, [(rate, found.get(point_key(inputs, rate))) for rate in rates])


def run_next(status: SweepStatus, budget: int | None = None) -> SweepStatus:
    """Compute the first missing rate (embedded mode) within ``budget`` engine steps (default
    :func:`max_steps`): one simulation per call."""
    if status.missing:
        run_point(status.inputs, status.missing[0], budget)
    return sweep_status(status.inputs)


def broker_configured() -> bool:
    """Whether tasks go to a worker (a broker is set) rather than run in-process."""
    return not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True)


def queue_missing(status: SweepStatus, budget: int | None = None) -> None:
    """Enqueue one task per missing rate not already queued (with a broker), each within ``budget`` engine
    steps (default :func:`max_steps`)."""
    for rate in status.missing:
        flag = point_key(status.inputs, rate) + ":queued"
        if cache.add(flag, True, QUEUED_TTL_S):
            outbox.enqueue(simulate_point, args=(status.inputs, rate, budget))


@shared_task(name="calculators.simulate_point", acks_late=True)
def simulate_point(inputs: dict, rate: float | None, budget: int | None = None) -> None:
    """Celery task: simulate cleaned ``inputs`` (JSON) at ``rate`` req/s into the cache, for the page, within
    ``budget`` engine steps (default :func:`max_steps`).

    Idempotent (a cached point is not run again); a bad-input error is cached as the point's result, so the
    page can say why.
    """
    try:
        run_point(inputs, rate, budget)
    except EngineError as exc:
        cache.set(point_key(inputs, rate), {"error": str(exc)}, QUEUED_TTL_S)


def run_sweep(inputs: dict[str, Any], budget: int | None = None) -> list[dict]:
    """Every rate of cleaned simulator ``inputs`` (one result per rate, in order), each through
    :func:`run_point` (cached by the inputs' hash, refusals too), the whole call sharing one budget of
    ``budget`` (default :func:`max_steps`) engine steps (an over-budget run raises ``InputError``). The
    simulated drills' sweep runner (:data:`calculators.sim.scenario.SweepRunner`), passed to them by
    :func:`run_drill` and the problem generator."""
    budget = max_steps() if budget is None else budget
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


def _api_json(inputs: dict[str, Any], budget: int) -> dict:
    """The ``simulate`` command's JSON for cleaned API ``inputs`` (not changed: a trace's duration is set on a
    copy), each point through the cache, the whole call sharing one budget of ``budget`` engine steps. Raises
    the engine's errors for bad input or a run over budget."""
    inputs = dict(inputs)
    setup = build_setup(inputs)
    results = run_sweep(inputs, budget)
    if "sweep" in inputs or "concurrency_sweep" in inputs:
        return sweep_json(inputs, setup, [result["summary"] for result in results])
    if inputs.get("trace"):
        inputs["duration_s"] = results[0]["summary"]["duration_s"]
    return {"inputs": echo_inputs(inputs, setup), **results[0]}


# --- the API: limits, one task per call, outcomes by token ----------------------------------------


@dataclass
class Outcome:
    """What an API call came to: ``result`` (the JSON), or ``error`` and ``field`` (the engine's refusal);
    ``pending`` while a worker has it; ``retry_after_s`` when the caller is over their limit."""

    token: str
    result: dict | None = None
    error: str | None = None
    field: str | None = None
    pending: bool = False
    retry_after_s: int | None = None


def call_token(inputs: dict[str, Any], budget: int) -> str:
    """The id of an API call: the SHA-256 of its cleaned inputs and its step budget (64 hex digits)."""
    text = json.dumps({"inputs": inputs, "budget": budget}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _call_key(token: str, part: str) -> str:
    return f"{KEY_VERSION}:call:{token}:{part}"


def charge(caller: str, anonymous: bool, now: float | None = None) -> int | None:
    """Count one call that simulates against ``caller`` (``"addr:<ip>"`` or ``"user:<pk>"``): ``None`` while
    within ``SIMULATOR_ANON_CALLS`` (anonymous) or ``SIMULATOR_USER_CALLS`` calls per window of
    ``SIMULATOR_LIMIT_WINDOW_S`` seconds, else the whole seconds until the window ends (a Retry-After).

    A fixed window counted in Django's cache (``add`` then ``incr``: atomic on Redis and locmem), so
    every process and worker of the site shares the count.
    """
    window = int(settings.SIMULATOR_LIMIT_WINDOW_S)
    limit = int(settings.SIMULATOR_ANON_CALLS if anonymous else settings.SIMULATOR_USER_CALLS)
    now = time.time() if now is None else now
    slot = int(now // window)
    key = f"{KEY_VERSION}:limit:{caller}:{slot}"
    cache.add(key, 0, window + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # the window's key expired between add and incr
        cache.set(key, 1, window + 1)
        count = 1
    if count <= limit:
        return None
    return max(1, math.ceil((slot + 1) * window - now))


def _finished(token: str) -> Outcome | None:
    stored = cache.get(_call_key(token, "outcome"))
    if stored is None:
        return None
    return Outcome(token, result=stored.get("result"), error=stored.get("error"), field=stored.get("field"))


def _run_call(token: str, inputs: dict[str, Any], budget: int) -> Outcome:
    """Run an API call now and cache its outcome (the JSON, or the refusal) under ``token``."""
    try:
        stored: dict = {"result": _api_json(inputs, budget)}
    except EngineError as exc:
        stored = {"error": str(exc), "field": getattr(exc, "field", None)}
    cache.set(_call_key(token, "outcome"), stored, RESULT_TTL_S)
    return Outcome(token, result=stored.get("result"), error=stored.get("error"), field=stored.get("field"))


def api_call(raw: dict[str, Any], *, caller: str, anonymous: bool) -> Outcome:
    """An API call of ``caller``: answered from the cache, refused over the caller's limit, queued for a worker
    (with a broker: ``pending``), or run here (embedded). Raises the engine's errors for inputs that cannot be
    read (before anything is counted or run)."""
    inputs = clean_sim_inputs(raw)
    build_setup(inputs)  # a model or card that cannot serve is refused before anything is counted
    budget = max_steps(anonymous)
    token = call_token(inputs, budget)
    finished = _finished(token)
    if finished is not None:
        return finished
    if sweep_status(inputs).complete:  # every point is cached: composing them costs nothing
        return _run_call(token, inputs, budget)
    queued = _call_key(token, "queued")
    if cache.get(queued):
        return Outcome(token, pending=True)
    wait = charge(caller, anonymous)
    if wait is not None:
        return Outcome(token, retry_after_s=wait)
    if not broker_configured():
        return _run_call(token, inputs, budget)
    cache.set(_call_key(token, "call"), {"inputs": inputs, "budget": budget}, RESULT_TTL_S)
    if cache.add(queued, True, QUEUED_TTL_S):
        outbox.enqueue(simulate_call, args=(token,))
    return Outcome(token, pending=True)


def api_outcome(token: str) -> Outcome | None:
    """The outcome of the call ``token`` (:func:`api_call`): finished, or ``pending`` while it is queued or
    running; ``None`` for a token never asked for, or whose result has expired (after :data:`RESULT_TTL_S`)."""
    finished = _finished(token)
    if finished is not None:
        return finished
    if cache.get(_call_key(token, "queued")):
        return Outcome(token, pending=True)
    return None


@shared_task(name="calculators.simulate_call", acks_late=True)
def simulate_call(token: str) -> None:
    """Celery task: run the API call ``token`` (its inputs and budget were cached by :func:`api_call`) and
    cache its outcome, which :func:`api_outcome` reads. Idempotent: a finished call is not run again."""
    call = cache.get(_call_key(token, "call"))
    if call is None or _finished(token) is not None:
        return
    try:
        _run_call(token, call["inputs"], call["budget"])
    finally:
        cache.delete(_call_key(token, "queued"))


def simulate_for_chapter(raw: dict[str, Any]) -> dict:
    """The ``simulate`` command's JSON for a chapter's figure: one run, or a sweep with its knee.

    Unlike the page and the API, no web budget bounds it and nothing is cached here: a chapter is rendered
    once per process (the figure memoises it) and its inputs are the author's, not a visitor's. Raises the
    engine's errors for bad input.
    """
    return simulate(raw)

"""The measured workloads replayed through the serving simulator, beside the measurement (issue 32, item 2).

Each point runs as it was measured: a closed loop of its concurrency (``vllm bench serve --max-concurrency``,
genai-perf's ``--concurrency``), or Poisson arrivals at its rate, with its mean prompt and output lengths (fixed:
the outputs give means only), for its duration (at most :data:`MAX_REPLAY_S` simulated seconds). It runs under
two sets of constants: the calibration table's for the stack (what the calculators use today) and, when there is
one, the fit's. Each metric gets the measured value, the simulated value under each, the error (simulated ÷
measured − 1) and a band: the simulated values at the pessimistic and the optimistic ends of the constants (the
table's low/high rows; the fit's two standard errors), so a measurement inside the band is one the constants'
uncertainty already covers. Runs go through :func:`calculators.simulation.run_point` (cached by their inputs,
within the caller's step budget).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calculators import simulation
from calculators.engine.calibration import COSTS
from calculators.engine.errors import EngineError
from calculators.engine.quantities import default
from drills.lab.bench_output import Point
from drills.lab.fit import CONSTANTS, Fit, Stack

MAX_REPLAY_S = 120.0
MAX_REPLAY_POINTS = 8
#: The metrics compared: (label, the point's field, the simulator summary's (key, statistic), unit).
METRICS = (
    ("TTFT mean", "ttft_mean_ms", ("ttft_ms", "mean"), "ms"),
    ("TTFT p99", "ttft_p99_ms", ("ttft_ms", "p99"), "ms"),
    ("TPOT mean", "tpot_mean_ms", ("tpot_ms", "mean"), "ms"),
    ("TPOT p99", "tpot_p99_ms", ("tpot_ms", "p99"), "ms"),
    ("ITL mean", "itl_mean_ms", ("itl_ms", "mean"), "ms"),
    ("ITL p99", "itl_p99_ms", ("itl_ms", "p99"), "ms"),
    ("Request throughput", "request_throughput", ("throughput_req_s", None), "req/s"),
    ("Output token throughput", "output_throughput", ("output_tok_s", None), "tok/s"),
)


@dataclass
class Simulated:
    """One metric under one set of constants: the central value and the band's ends (``None`` if not run)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def error(self, measured: float) -> float | None:
        """Simulated ÷ measured − 1."""
        return None if self.value is None or not measured else self.value / measured - 1

    def covers(self, measured: float) -> bool:
        """Whether ``measured`` lies within the band."""
        if self.low is None or self.high is None:
            return False
        return min(self.low, self.high) <= measured <= max(self.low, self.high)


@dataclass
class MetricRow:
    """One metric of one point: measured, and simulated under the table's and the fit's constants."""

    label: str
    unit: str
    measured: float
    table: Simulated
    fitted: Simulated | None

    @property
    def table_error(self) -> float | None:
        """The table's simulated value's error, per cent."""
        error = self.table.error(self.measured)
        return None if error is None else 100 * error

    @property
    def fitted_error(self) -> float | None:
        """The fit's simulated value's error, per cent."""
        error = self.fitted.error(self.measured) if self.fitted else None
        return None if error is None else 100 * error

    @property
    def table_error_text(self) -> str:
        """The table's error as shown: signed, per cent (``+46.4 %``)."""
        return signed_pct(self.table_error)

    @property
    def fitted_error_text(self) -> str:
        """The fit's error as shown."""
        return signed_pct(self.fitted_error)

    @property
    def band_text(self) -> str:
        """The fit's band, lower value first (``26.27–32.58``), or '' without one."""
        if not self.fitted or self.fitted.low is None or self.fitted.high is None:
            return ""
        low, high = sorted((self.fitted.low, self.fitted.high))
        return f"{low:,.2f}–\u200b{high:,.2f}"  # a line may break after the dash

    @property
    def inside(self) -> bool:
        """Whether the measurement lies within the fit's band."""
        return bool(self.fitted and self.fitted.covers(self.measured))


@dataclass
class PointReplay:
    """One point's replay: how it was run, its rows, or the simulator's sentence when it could not run."""

    label: str
    workload: str
    rows: list[MetricRow] = field(default_factory=list)
    error: str = ""


def signed_pct(value: float | None) -> str:
    """A per-cent error with its sign (``+46.4 %``, ``−14.2 %``), '' for none."""
    if value is None:
        return ""
    return f"{'+' if value >= 0 else '−'}{abs(value):.1f}\u00a0%"


def table_constants(stack: Stack, end: str = "value") -> dict:
    """The calibration table's constants for ``stack`` (``end``: ``"value"``, or ``"pessimistic"`` /
    ``"optimistic"``, the low or high row by whether each is an efficiency or a cost)."""
    found = {}
    for key in CONSTANTS:
        pick = end
        if end != "value":
            pessimistic = "high" if key in COSTS else "low"
            optimistic = "low" if key in COSTS else "high"
            pick = pessimistic if end == "pessimistic" else optimistic
        found[key] = default(key, gpu=stack.gpu, precision=stack.weights_dtype, engine=stack.engine, end=pick)
    return found


def fitted_constants(fit: Fit, end: str = "value") -> dict:
    """The fit's constants, or the ends of its bands (pessimistic: low efficiencies, high overhead)."""
    found = dict(fit.values)
    if end == "value":
        return found
    for key in fit.fitted:
        low, high = fit.band(key)
        worse = high if key in COSTS else low
        better = low if key in COSTS else high
        found[key] = worse if end == "pessimistic" else better
    return found


def sim_inputs(stack: Stack, point: Point, constants: dict) -> dict:
    """The simulator's raw inputs for ``point`` on ``stack`` under ``constants``."""
    raw = {"model": stack.model, "gpu": stack.gpu, "gpus": stack.tp, "weights_dtype": stack.weights_dtype,
           "kv_dtype": stack.kv_dtype, "prompt_tokens": max(1, round(point.input_tokens or 1)),
           "output_tokens": max(1, round(point.output_tokens or 1)),
           "duration_s": min(MAX_REPLAY_S, max(1.0, point.duration_s or 60.0)), **constants}
    if point.concurrency:
        raw["concurrency"] = point.concurrency
    elif point.rate:
        raw["rate"] = point.rate
    return raw


def _run(raw: dict, budget: int) -> dict:
    inputs = simulation.clean_sim_inputs(raw)
    rate = None if inputs.get("concurrency") else inputs["rate"]
    return simulation.run_point(inputs, rate, budget)["summary"]


def _metric(summary: dict, key: tuple) -> float | None:
    value = summary[key[0]]
    return value.get(key[1]) if key[1] else value


def _simulate(stack: Stack, point: Point, ends: dict, budget: int) -> dict:
    """Summaries by end (``value``, ``pessimistic``, ``optimistic``); the band's ends only when they differ."""
    summaries = {"value": _run(sim_inputs(stack, point, ends["value"]), budget)}
    for end in ("pessimistic", "optimistic"):
        if ends[end] != ends["value"]:
            summaries[end] = _run(sim_inputs(stack, point, ends[end]), budget)
    return summaries


def _simulated(summaries: dict, key: tuple) -> Simulated:
    value = _metric(summaries["value"], key)
    low = _metric(summaries["pessimistic"], key) if "pessimistic" in summaries else None
    high = _metric(summaries["optimistic"], key) if "optimistic" in summaries else None
    return Simulated(value, low, high)


def describe_load(point: Point) -> str:
    """How the point is replayed, in words."""
    lengths = f"{point.input_tokens or 0:,.0f} prompt and {point.output_tokens or 0:,.0f} output tokens"
    seconds = min(MAX_REPLAY_S, max(1.0, point.duration_s or 60.0))
    if point.concurrency:
        clients = "client" if point.concurrency == 1 else "clients"
        return f"closed loop of {point.concurrency:,} {clients}, {lengths}, {seconds:g} s"
    return f"Poisson arrivals at {point.rate:g} req/s, {lengths}, {seconds:g} s"


def replay(stack: Stack, points: list[Point], fit: Fit | None, budget: int) -> list[PointReplay]:
    """Each of the first :data:`MAX_REPLAY_POINTS` points through the simulator under the table's constants
    and, with ``fit``, the fit's; ``budget`` engine steps per run (the caller's web budget). A point the
    simulator refuses (no load given, a request the cache cannot hold, over budget) keeps its sentence."""
    table_ends = {end: table_constants(stack, end) for end in ("value", "pessimistic", "optimistic")}
    fit_ends = {end: fitted_constants(fit, end) for end in ("value", "pessimistic", "optimistic")} if fit else None
    found = []
    for point in points[:MAX_REPLAY_POINTS]:
        if not point.load or not point.input_tokens or not point.output_tokens:
            found.append(PointReplay(point.label, "", error=(
                "Not replayed: the output gives no concurrency or request rate (paste the command line with "
                "--concurrency or --request-rate, or type concurrency= or rate=)." if not point.load else
                "Not replayed: the output gives no prompt and output lengths.")))
            continue
        replayed = PointReplay(point.label, describe_load(point))
        try:
            before = _simulate(stack, point, table_ends, budget)
            after = _simulate(stack, point, fit_ends, budget) if fit_ends else None
        except EngineError as exc:
            replayed.error = f"The simulator could not replay it: {exc}"
            found.append(replayed)
            continue
        for label, name, key, unit in METRICS:
            measured = getattr(point, name)
            if measured is None:
                continue
            replayed.rows.append(MetricRow(label, unit, measured, _simulated(before, key),
                                           _simulated(after, key) if after else None))
        found.append(replayed)
    return found

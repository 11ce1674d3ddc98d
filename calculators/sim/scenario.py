"""What the simulated drills share: their scenario, its sweep, and the simulation a problem stores.

The drills "predict the knee", "p99 TTFT at this rate", "the batch where TPOT
crosses the target" and "where preemption begins" (:mod:`.drills`) are graded
against a run of the serving simulator (docs/architecture.md §13), which lives
beside them here: the engine never imports the simulator. A sweep runs through
a *sweep runner* passed in as a parameter (:data:`SweepRunner`: the cleaned
simulator inputs, with ``sweep`` → one run result per rate); by default
:func:`run_sweep` simulates here, remembering the last sweeps in this process,
and the web passes ``calculators.simulation.run_sweep``, which keeps every
rate in Django's cache under one step budget. Each result is kept as one
compact point per rate (:data:`POINT_KEYS`).

A problem stores that sweep beside its inputs (``inputs["simulation"]``,
written by ``Family.prepare`` when the problem is drawn), with the simulator
inputs it was run for. Solving a problem reads the stored sweep whenever it was
run for the same scenario, so regrading never simulates again and a later
change to the catalog or the simulator does not move a stored answer.

The sweep is fixed by the scenario (no input names it): eight rates around an
estimate from the step model (docs/architecture.md §12), in two significant
figures, so a problem costs eight short runs (60 s simulated each, well under
two seconds of wall time on the reference stack).
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable

from calculators.engine.catalog import Catalog
from calculators.engine.errors import InputError
from calculators.engine.formula import whole_floor
from calculators.engine.formulas.memory import weight_bytes
from calculators.engine.procedures.inputs import (
    GPU,
    KV_DTYPE,
    MODEL,
    WEIGHTS_DTYPE,
    InputSpec,
    clean_inputs,
    resolve_model,
)
from calculators.engine.quantities import default
from calculators.engine.step_model import Replica, step_ms

from .config import (
    CALIBRATED_INPUTS,
    MAX_BATCHED_TOKENS,
    MAX_NUM_SEQS,
    MAX_SWEEP_POINTS,
    STATED_CONVENTION,
    build_setup,
    clean_sim_inputs,
    row_companions,
)
from .results import KNEE_SHARE, knee_bracket
from .run import run_workload
from .workload import workload_for

GIB = 2**30
MIB = 2**20
# The simulator's defaults (calculators/sim/config.py), its quantities': utilisation, reserve, block.
UTILIZATION, RESERVE_GIB, BLOCK_SIZE = (default(key) for key in ("utilization", "reserve_gib", "block_size"))
DURATION_S = 60.0
BUSY_LIMIT = 0.95  # the prefills' share of the card's time at which the step model expects no steady batch
STEP_TOKEN_BUDGET = MAX_BATCHED_TOKENS.default  # the simulator's per-step token budget, vLLM's (8,192)
SEQUENCE_LIMIT = MAX_NUM_SEQS.default  # the most sequences it runs at once, vLLM's (256)
CACHE_DURATION_S = 120.0  # long requests take longer to fill the cache
SWEEP_FACTORS = (0.25, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3, 1.5)
# Around the rate that fills the cache, wider: the estimate leaves out the decode steps that prefills stall.
CACHE_SWEEP_FACTORS = (0.3, 0.6, 0.8, 1.0, 1.2, 1.4, 1.7, 2.0)
POINT_KEYS = ("rate_req_s", "goodput_req_s", "ttft_mean_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_p99_ms",
              "e2e_mean_ms", "mean_in_system", "mean_running", "preemptions", "kv_peak_fraction", "arrived",
              "ttft_missed", "tpot_missed", "in_flight", "slots")
STORE_VERSION = 1

PROMPT = InputSpec("prompt_tokens", "int", 512, "prompt length of every request", minimum=1, maximum=32_768,
                   unit="tok", label="Prompt tokens")
OUTPUT = InputSpec("output_tokens", "int", 128, "output length of every request", minimum=2, maximum=8192,
                   unit="tok", label="Output tokens")
TTFT_SLO = InputSpec("ttft_slo_ms", "float", 500.0, "TTFT target", minimum=1, maximum=600_000, unit="ms",
                     label="TTFT target")
TPOT_SLO = InputSpec("tpot_slo_ms", "float", 40.0, "TPOT target", minimum=1, maximum=60_000, unit="ms",
                     label="TPOT target")
SIM_SEED = InputSpec("sim_seed", "int", 0, "the simulator's random seed (arrivals)", minimum=0,
                     maximum=2**32 - 1, label="Simulator seed")
INPUTS = (MODEL, GPU, WEIGHTS_DTYPE, KV_DTYPE, PROMPT, OUTPUT, TTFT_SLO, TPOT_SLO, SIM_SEED)
# Where preemption begins: long requests by default, so the cache fills before the sequence limit.
CACHE_INPUTS = (MODEL, GPU, WEIGHTS_DTYPE, KV_DTYPE, replace(PROMPT, default=4096), replace(OUTPUT, default=512),
                TTFT_SLO, TPOT_SLO, SIM_SEED)

# Stacks a drill is drawn on: dense models on one card, so a step is the memory read of §12.
STACKS = (("llama-3.1-8b", "h100-sxm5-80gb", "bf16"), ("llama-3.1-8b", "a100-sxm4-80gb", "bf16"),
          ("qwen2.5-7b", "h100-sxm5-80gb", "bf16"),
          ("llama-3.1-8b", "l40s", "bf16"))

# The cleaned simulator inputs (with ``sweep``) → one run result (``{"summary", "series"}``) per rate, in order.
SweepRunner = Callable[[dict], list[dict]]
_REMEMBERED = 32  # sweeps kept by run_sweep in this process
_remembered: OrderedDict[str, list[dict]] = OrderedDict()


def run_sweep(inputs: dict[str, Any]) -> list[dict]:
    """Every rate of cleaned simulator ``inputs``' sweep simulated in this process, no step limit (the
    command line's and the tests' runner; the last :data:`_REMEMBERED` sweeps are kept, as the same
    inputs always give the same run)."""
    key = json.dumps(inputs, sort_keys=True, default=str)
    if key in _remembered:
        _remembered.move_to_end(key)
        return _remembered[key]
    setup = build_setup(inputs)
    results = [run_workload(inputs, workload_for(inputs, rate), setup) for rate in inputs["sweep"]]
    _remembered[key] = results
    if len(_remembered) > _REMEMBERED:
        _remembered.popitem(last=False)
    return results


def compact_points(inputs: dict[str, Any], results: list[dict]) -> list[dict]:
    """One point of :data:`POINT_KEYS` per rate of ``inputs``' sweep: rate, goodput, mean and p99 TTFT, mean
    and p99 TPOT, mean end-to-end latency (ms), the mean requests in the system, the mean running sequences
    (over the run's series), preemptions, the peak KV use, and the requests that arrived and that missed
    each target, and the requests in flight at the end beside what the replicas run at once (the knee's
    growing-queue rule, :func:`.results.queue_growing`; points stored before the p99 TPOT, the misses or the
    queue were kept lack those keys)."""
    points = []
    for rate, result in zip(inputs["sweep"], results):
        summary, running = result["summary"], result["series"]["running"]
        points.append({
            "rate_req_s": rate, "goodput_req_s": summary["goodput_req_s"],
            "ttft_mean_ms": summary["ttft_ms"]["mean"], "ttft_p99_ms": summary["ttft_ms"]["p99"],
            "tpot_mean_ms": summary["tpot_ms"]["mean"], "tpot_p99_ms": summary["tpot_ms"]["p99"],
            "e2e_mean_ms": summary["e2e_ms"]["mean"], "mean_in_system": summary["mean_in_system"],
            "mean_running": round(sum(running) / len(running), 6) if running else 0.0,
            "preemptions": summary["preemptions"], "kv_peak_fraction": summary["kv_peak_fraction"],
            "arrived": summary["arrived"], "ttft_missed": summary["ttft_missed"],
            "tpot_missed": summary["tpot_missed"], "in_flight": summary["in_flight"], "slots": summary["slots"]})
    return points


def table_constants(inputs: dict[str, Any]) -> dict[str, float]:
    """The calibration table's row for the drill's card and weight precision (docs/architecture.md §12): the
    efficiencies, the all-reduce latency and the step overhead a drill drawn now is simulated and stepped with
    (the quantities' defaults on a card without a row)."""
    return {key: default(key, gpu=inputs["gpu"], precision=inputs["weights_dtype"]) for key in CALIBRATED_INPUTS}


def stored_constants(stored: dict | None) -> dict[str, float] | None:
    """The constants a stored simulation was run with (its ``simulator_inputs``), so a stored problem keeps its
    numbers: those drawn before generator v26 ran at the stated convention (:data:`.config.STATED_CONVENTION`),
    which they name or, older still, leave out. None without a stored simulation."""
    if not stored or not stored.get("simulator_inputs"):
        return None
    given = stored["simulator_inputs"]
    return {key: given.get(key, STATED_CONVENTION[key]) for key in CALIBRATED_INPUTS}


def split_inputs(raw: dict[str, Any], catalog: Catalog, specs=INPUTS) -> tuple[dict, dict | None]:
    """Cleaned drill inputs and the stored simulation (``None`` when the inputs carry none)."""
    raw = dict(raw)
    stored = raw.pop("simulation", None)
    return clean_inputs(specs, raw, catalog), stored


class Scenario:
    """A drill's stack and workload, its replica (step model) and KV cache, and its sweep of rates. ``constants``:
    the efficiencies, all-reduce latency and step overhead (:data:`.config.CALIBRATED_INPUTS`) its steps and its
    sweep use; by default the calibration table's row for the card (:func:`table_constants`), a stored problem's
    own (:func:`stored_constants`) when it has them."""

    def __init__(self, inputs: dict[str, Any], catalog: Catalog, center: str = "tpot",
                 constants: dict[str, float] | None = None):
        self.inputs = inputs
        cfg, _ = resolve_model(inputs, catalog)
        gpu = catalog.gpu(inputs["gpu"])
        self.gpu = gpu
        self.constants = constants or table_constants(inputs)
        companions = row_companions({"gpu": inputs["gpu"], "weights_dtype": inputs["weights_dtype"], **self.constants})
        self.replica = Replica(cfg, gpu, 1, weights_dtype=inputs["weights_dtype"], kv_dtype=inputs["kv_dtype"],
                               **self.constants, **companions)
        self.weight_bytes = weight_bytes(cfg, inputs["weights_dtype"])
        budget = gpu.memory_mib * MIB * UTILIZATION - self.weight_bytes - RESERVE_GIB * GIB
        self.kv_bytes_per_token = self.replica.kv_bytes_per_token
        blocks = whole_floor(budget / (BLOCK_SIZE * self.kv_bytes_per_token)) if budget > 0 else 0
        if blocks * BLOCK_SIZE < inputs["prompt_tokens"] + inputs["output_tokens"]:
            raise InputError(f"On one {gpu.name} the KV cache cannot hold one request of "
                             f"{inputs['prompt_tokens'] + inputs['output_tokens']:,} tokens.", field="prompt_tokens")
        self.kv_tokens = blocks * BLOCK_SIZE
        self.center = center
        self.duration_s = CACHE_DURATION_S if center == "cache" else DURATION_S

    @property
    def mean_context(self) -> float:
        """Tokens a decoding sequence holds on average: the prompt and half the output."""
        return self.inputs["prompt_tokens"] + self.inputs["output_tokens"] / 2

    def decode_step(self, batch: int) -> float:
        """One decode step (ms) of ``batch`` sequences at the mean context."""
        return step_ms(self.replica, decode_batch=batch,
                       decode_context_tokens=round(batch * self.mean_context)).step_ms

    def prefill_step(self):
        """The step with one whole prompt's prefill and nothing decoding (docs/architecture.md §12's B = 0)."""
        return step_ms(self.replica, decode_batch=0, decode_context_tokens=0,
                       prefill_chunks=((self.inputs["prompt_tokens"], 0),))

    @property
    def full_cache_batch(self) -> int:
        """Requests whose whole prompt and output fit the cache at once."""
        return self.kv_tokens // (self.inputs["prompt_tokens"] + self.inputs["output_tokens"])

    def prefill_chunks(self, batch: int) -> tuple[tuple[int, int], ...]:
        """The chunks ``(p, c0)`` one prompt is prefilled in beside ``batch`` decoders, as the simulator's
        scheduler cuts them: each step's token budget (vLLM's 8,192, :data:`.config.MAX_BATCHED_TOKENS`) less
        one token per decoder, of whom at most vLLM's 256 (:data:`.config.MAX_NUM_SEQS`) run (one chunk for every
        drawn prompt but the longest beside a batch)."""
        room = STEP_TOKEN_BUDGET - min(batch, SEQUENCE_LIMIT)
        prompt = self.inputs["prompt_tokens"]
        return tuple((min(room, prompt - done), done) for done in range(0, prompt, room))

    def prefill_steps(self, batch: int) -> tuple[float, float]:
        """(one decode step of ``batch`` sequences alone, the steps that carry one prompt's chunks beside them),
        ms: the simulator's mixed step (:func:`~calculators.engine.step_model.step_ms` with each chunk of
        :meth:`prefill_chunks` beside the decode batch), summed over the chunks."""
        context = round(batch * self.mean_context)
        alone = step_ms(self.replica, decode_batch=batch, decode_context_tokens=context).step_ms
        mixed = sum(step_ms(self.replica, decode_batch=batch, decode_context_tokens=context,
                            prefill_chunks=(chunk,)).step_ms for chunk in self.prefill_chunks(batch))
        return alone, mixed

    def prefill_charge(self, batch: int) -> float:
        """What one prompt's prefill adds to the steps it shares with ``batch`` decoders (ms): the steps carrying
        its chunks less as many decode steps alone (:meth:`prefill_steps`). Where the mixed step is
        compute-bound that is the prefill's compute share, its FLOPs at the prefill MFU (and the KV read of its
        earlier chunks); where its compute hides under the weights and KV the decoders read anyway, less or
        nothing; the step overhead is paid once either way. With nothing decoding it is the whole prefill step
        (docs/architecture.md §12's B = 0)."""
        alone, mixed = self.prefill_steps(batch)
        return mixed - alone * len(self.prefill_chunks(batch))

    def load(self, rate: float) -> tuple[float, float]:
        """(running batch, TPOT in ms) the step model expects at ``rate`` req/s, a fixed point of two relations:
        Little's law for the batch (a request stays for the steps carrying its prefill and one step per output
        token), and each decode step stretched by the share of the card's time the prompts' prefills add to the
        steps they share, ``rate`` × :meth:`prefill_charge` per second (before generator v28 a whole prefill
        step each, as if no decoder shared it). ``(inf, inf)`` where that share reaches :data:`BUSY_LIMIT`."""
        batch, busy, tpot, decoders = 1.0, 0.0, math.inf, 0
        for _ in range(30):
            if min(round(batch), 100_000) == decoders:  # the same batch again: a fixed point
                break
            decoders = min(round(batch), 100_000)
            busy = rate * self.prefill_charge(decoders) / 1000
            alone, mixed = self.prefill_steps(decoders)
            # Capped while iterating: a small first batch charges the prefills most (nothing else to share with).
            tpot = alone / (1 - min(busy, BUSY_LIMIT))
            batch = max(1.0, rate * (self.inputs["output_tokens"] * tpot + mixed) / 1000)
        if busy >= BUSY_LIMIT:
            return math.inf, math.inf
        return batch, tpot

    def prefill_share(self, rate: float) -> float:
        """The share of the card's time the prompts' prefills add at ``rate`` req/s (``rate`` ×
        :meth:`prefill_charge` at the batch :meth:`load` expects there); 1 where :meth:`load` finds no batch."""
        batch, _ = self.load(rate)
        return 1.0 if math.isinf(batch) else rate * self.prefill_charge(min(round(batch), 100_000)) / 1000

    def center_rate(self) -> float:
        """The rate the sweep is centred on (req/s): where the step model expects the TPOT target to bind
        (``center`` "tpot") or the cache to fill with whole requests ("cache"); found by bisection up to the
        rate at which the cache's whole requests would decode at one step each (no faster rate can keep either)
        or the idle card's prefill rate, whichever is higher."""
        limit = min(SEQUENCE_LIMIT, self.full_cache_batch)
        low = 0.0
        high = max(1000 / self.prefill_step().step_ms,
                   1000 * self.full_cache_batch / (self.inputs["output_tokens"] * self.decode_step(1)))
        for _ in range(40):
            rate = (low + high) / 2
            batch, tpot = self.load(rate)
            if self.center == "cache":
                ok = batch < self.full_cache_batch
            else:
                ok = tpot <= self.inputs["tpot_slo_ms"] and batch <= limit
            low, high = (rate, high) if ok else (low, rate)
        return max(low, 0.01)

    def sweep(self) -> list[float]:
        """Eight rates (req/s, two significant figures) from a quarter to 1.5 × the centre rate (from 0.3 to
        2 × for the cache)."""
        center = self.center_rate()
        factors = CACHE_SWEEP_FACTORS if self.center == "cache" else SWEEP_FACTORS
        rates = sorted({float(f"{center * factor:.2g}") for factor in factors})
        return [rate for rate in rates if rate > 0]

    def simulator_inputs(self) -> dict[str, Any]:
        """The ``simulate`` command's inputs for this scenario's sweep (snake case), at the scenario's
        :attr:`constants` (the calibration table's row, the ones :attr:`replica` and the drills' steps use), so the
        sweep and the steps the candidate works agree, and a stored sweep says what it ran with."""
        inputs = self.inputs
        return {"model": inputs["model"], "gpu": inputs["gpu"], "gpus": 1, "weights_dtype": inputs["weights_dtype"],
                "kv_dtype": inputs["kv_dtype"], "prompt_tokens": inputs["prompt_tokens"],
                "output_tokens": inputs["output_tokens"], "ttft_slo_ms": inputs["ttft_slo_ms"],
                "tpot_slo_ms": inputs["tpot_slo_ms"], "duration_s": self.duration_s, "seed": inputs["sim_seed"],
                **self.constants, "sweep": self.sweep()}


def simulation_for(scenario: Scenario, stored: dict | None, runner: SweepRunner = run_sweep) -> dict:
    """The stored simulation when there is one, else a fresh one through ``runner``.

    A stored one is used as it is, even if the step model or the simulator has changed since (its
    ``simulator_inputs`` say what it was run for): a problem's answers never move. Returns
    ``{"version", "simulator_inputs", "points"}``. Raises the simulator's :class:`InputError` for a
    scenario it refuses (over ``runner``'s step budget, too many requests).
    """
    if stored and stored.get("version") == STORE_VERSION and stored.get("points"):
        return stored
    wanted = scenario.simulator_inputs()
    inputs = clean_sim_inputs(wanted)
    return {"version": STORE_VERSION, "simulator_inputs": wanted, "points": compact_points(inputs, runner(inputs))}


def refine_knee(simulation: dict, runner: SweepRunner = run_sweep) -> dict:
    """``simulation`` with the knee's refining points (``"refine"``), to store with a knee problem.

    Goodput ÷ rate crosses :data:`.results.KNEE_SHARE` between two swept rates (:func:`.results.knee_bracket`);
    the rates evenly inside that gap (three significant figures), as many as keep the sweep within the
    simulator's :data:`.config.MAX_SWEEP_POINTS` (docs/architecture.md §13: four after the eight), are simulated
    through ``runner`` (the web's goes through its cache) and kept apart from ``points``, so the statement
    lists the load test's eight rates and the other drills read the same eight. Unchanged when the sweep has
    no crossing (no rate keeps the share, or the highest does) or already holds its refinement. Raises what
    ``runner`` raises."""
    bracket = knee_bracket(simulation["points"])
    if bracket is None or "refine" in simulation:
        return simulation
    low, high = (point["rate_req_s"] for point in bracket)
    room = MAX_SWEEP_POINTS - len(simulation["points"])
    swept = {point["rate_req_s"] for point in simulation["points"]}
    rates = sorted({float(f"{low + (high - low) * k / (room + 1):.3g}") for k in range(1, room + 1)} - swept)
    rates = [rate for rate in rates if low < rate < high]
    if not rates:
        return simulation
    inputs = clean_sim_inputs({**simulation["simulator_inputs"], "sweep": rates})
    return {**simulation, "refine": compact_points(inputs, runner(inputs))}


def knee_points(simulation: dict) -> list[dict]:
    """A knee problem's swept points and its refining points (:func:`refine_knee`), by rate."""
    return sorted(simulation["points"] + simulation.get("refine", []), key=lambda point: point["rate_req_s"])


def point_at(points: list[dict], rate: float) -> dict:
    """The stored point of ``rate``."""
    return next(p for p in points if p["rate_req_s"] == rate)


def _fits(stack: tuple[str, str, str], catalog: Catalog) -> bool:
    """Whether one card of ``stack`` holds its model with a KV cache for a long request."""
    model, gpu, dtype = stack
    try:
        Scenario({"model": model, "gpu": gpu, "weights_dtype": dtype, "kv_dtype": dtype, "prompt_tokens": 8192,
                  "output_tokens": 512, "ttft_slo_ms": 1.0, "tpot_slo_ms": 1.0, "sim_seed": 0}, catalog)
    except InputError:
        return False
    return True


def draw_scenario(rng, catalog: Catalog, prompts=(256, 512, 1024), outputs=(64, 128),
                  tpots=(20.0, 25.0, 30.0, 40.0)) -> dict:
    """A drill's inputs: a stack of :data:`STACKS`, a fixed workload, targets the stack can meet at batch 1.

    A catalog pinned to a coach's fixed model or card draws from what it holds when no listed stack is
    in it; raises :class:`InputError` when that stack has no room for the cache."""
    stacks = [s for s in STACKS if s[1] in catalog.gpus and s[0] in catalog.models] or [
        pair for pair in ((model, gpu, "bf16") for model in sorted(catalog.models) for gpu in sorted(catalog.gpus))
        if _fits(pair, catalog)]
    if not stacks:
        raise InputError("No card here holds the model's weights with room for its KV cache.", field="model")
    model, gpu, dtype = rng.choice(stacks)
    inputs = {"model": model, "gpu": gpu, "weights_dtype": dtype, "kv_dtype": dtype,
              "prompt_tokens": rng.choice(prompts), "output_tokens": rng.choice(outputs),
              "sim_seed": rng.randrange(2**16)}
    scenario = Scenario({**inputs, "ttft_slo_ms": 1.0, "tpot_slo_ms": 1.0}, catalog)
    # Targets an idle server meets with room: five times its prefill step (TTFT), twice its decode step (TPOT).
    idle_ttft = scenario.prefill_step().step_ms
    inputs["ttft_slo_ms"] = rng.choice([t for t in (300.0, 500.0, 1000.0, 2000.0) if t >= 5 * idle_ttft] or [
        1000.0 * math.ceil(5 * idle_ttft / 1000)])
    one = scenario.decode_step(1)
    inputs["tpot_slo_ms"] = next((t for t in tpots if t >= 2 * one), tpots[-1] * math.ceil(2 * one / tpots[-1]))
    return inputs


def _g(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}g}" if value is not None else "none"


def _missed_share(point: dict, key: str) -> float | None:
    """The share of a point's requests that missed a target (``key`` "ttft_missed" or "tpot_missed"); None for
    a point stored before the misses were kept."""
    return point[key] / point["arrived"] if point.get(key) is not None and point.get("arrived") else None


def _p99(point: dict, key: str) -> str:
    value = point.get(key)
    return "not kept" if value is None else f"{value:,.1f} ms"


def knee_reason(kept: dict, lost: dict, inputs: dict[str, Any]) -> str:
    """Why the knee lies between swept points ``kept`` (goodput ÷ rate at least 0.9) and ``lost`` (below): the
    target more of ``lost``'s requests miss, with the share of its window's requests missing each target and
    its p99s (``inputs``' ``ttft_slo_ms`` and ``tpot_slo_ms`` the targets); when none misses either, the
    arrivals that fell short of the rate (goodput counts per second of the window, the rate is an average)."""
    high = _g(lost["rate_req_s"])
    ttft_lost, tpot_lost = _missed_share(lost, "ttft_missed"), _missed_share(lost, "tpot_missed")
    targets = {"TTFT": (inputs["ttft_slo_ms"], _p99(lost, "ttft_p99_ms")),
               "TPOT": (inputs["tpot_slo_ms"], _p99(lost, "tpot_p99_ms"))}
    if ttft_lost is None or tpot_lost is None:  # a sweep stored before the misses were kept
        return (f"At {high} req/s {1 - lost['goodput_req_s'] / lost['rate_req_s']:.0%} of the rate is lost to missed "
                f"targets: p99 TTFT {targets['TTFT'][1]} against {targets['TTFT'][0]:g} ms, p99 TPOT "
                f"{targets['TPOT'][1]} against {targets['TPOT'][0]:g} ms.")
    if not ttft_lost and not tpot_lost:
        return (f"At {high} req/s no request misses a target: goodput ÷ rate falls below {KNEE_SHARE:g} because "
                f"Poisson arrivals brought {lost['arrived']:,} requests, fewer than {high} req/s gives on average.")
    if tpot_lost >= ttft_lost:
        failing, other, now, other_now, key = "TPOT", "TTFT", tpot_lost, ttft_lost, "tpot_missed"
        cause = ("the running batch has grown until a decode step, with the prefills sharing it, takes longer than "
                 "the TPOT target")
    else:
        failing, other, now, other_now, key = "TTFT", "TPOT", ttft_lost, tpot_lost, "ttft_missed"
        cause = "prompts arrive faster than the card prefills them, so they queue before their first token"
    target, p99 = targets[failing]
    other_target, other_p99 = targets[other]
    before = _missed_share(kept, key) or 0.0
    return (f"{failing} is the target that starts failing: at {high} req/s {now:.0%} of the requests miss its "
            f"{target:g} ms (p99 {failing} {p99}), against {before:.0%} at {_g(kept['rate_req_s'])} req/s, and "
            f"{other_now:.0%} miss the {other_target:g} ms {other} target (p99 {other} {other_p99}); {cause}.")


def knee_note(kept: dict, lost: dict, reason: str) -> str:
    """Goodput ÷ rate either side of the knee, then ``reason``, why it falls there (:func:`knee_reason`)."""
    return (f"Goodput ÷ rate is {kept['goodput_req_s'] / kept['rate_req_s']:.3f} at {_g(kept['rate_req_s'])} req/s "
            f"and {lost['goodput_req_s'] / lost['rate_req_s']:.3f} at {_g(lost['rate_req_s'])} req/s, so it crosses "
            f"{KNEE_SHARE:g} between the two. {reason}")


def latency_note(point: dict) -> str:
    """What the simulator measured at one rate: TTFT mean and p99, end-to-end, requests in the system."""
    return (f"At {_g(point['rate_req_s'])} req/s the simulator measured TTFT {point['ttft_mean_ms']:.1f} ms mean and "
            f"{point['ttft_p99_ms']:.1f} ms at p99, {point['e2e_mean_ms'] / 1000:.3f} s end to end on average, and "
            f"{point['mean_in_system']:.2f} requests in the system on average (Little's law on its output gives "
            f"{point['rate_req_s'] * point['e2e_mean_ms'] / 1000:.2f}).")


def tpot_note(points: list[dict]) -> str:
    """Mean TPOT and mean running sequences at each swept rate."""
    rows = ", ".join(f"{_g(p['rate_req_s'])} req/s → {_g(p['tpot_mean_ms'])} ms with {p['mean_running']:.1f} running"
                     for p in points)
    return f"Mean TPOT per swept rate: {rows}."


def preemption_note(points: list[dict]) -> str:
    """Preemptions and peak KV-cache use at each swept rate."""
    rows = ", ".join(f"{_g(p['rate_req_s'])} req/s → {p['preemptions']:,} ({p['kv_peak_fraction']:.0%} peak cache use)"
                     for p in points)
    return f"Preemptions per swept rate: {rows}."

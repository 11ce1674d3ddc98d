"""The simulator's inputs: their defaults, bounds (docs/architecture.md §13) and the replica they describe.

Inputs use the snake-case names of the ``simulate`` command's flags
(``--max-batched-tokens`` → ``max_batched_tokens``). :func:`clean_sim_inputs`
applies defaults and checks every bound, raising :class:`InputError` (or the
catalog's and config's errors) with one sentence naming the field; nothing is
ever evaluated. :func:`build_setup` turns cleaned inputs into the
:class:`~calculators.engine.step_model.Replica` whose steps the simulator
costs, and the number of KV blocks the ladder's budget holds.

Defaults: the reference stack (docs/architecture.md §2: Llama-3.1-8B bf16 on one H100
SXM, utilisation 0.90, 3 GiB activation reserve per card, 16-token blocks);
vLLM's scheduler defaults for chunked prefill (``--max-num-batched-tokens``
8192, ``--max-num-seqs`` 256); a chat service's targets of 500 ms TTFT and
50 ms TPOT; one minute of 512-token prompts and 256-token outputs at 10 req/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calculators.engine.calibration import COSTS, KEYS
from calculators.engine.catalog import Catalog
from calculators.engine.errors import InputError
from calculators.engine.formula import whole_floor
from calculators.engine.formulas.memory import weight_bytes
from calculators.engine.procedures.inputs import (
    ALLREDUCE_LATENCY_US,
    BANDWIDTH_EFFICIENCY,
    BLOCK_SIZE,
    GPU,
    GPUS,
    KV_DTYPE,
    MFU,
    MODEL,
    PP,
    PREFILL_MFU,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    calibrated_defaults,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)
from calculators.engine.quantities import default
from calculators.engine.step_model import Replica, check_stages

from .engine import CAPACITY_POLICIES

GIB = 2**30
MIB = 2**20

# docs/architecture.md §13's bounds.
MAX_DURATION_S = 3600
MIN_DURATION_S = 1  # shorter than a second holds no request's life (and a goodput over a denormal time overflows)
MAX_REQUESTS = 50_000
MAX_SWEEP_POINTS = 12
MAX_TOKENS = 131_072  # one request's prompt or output: the longest context the catalog's models take

LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "lognormal")
ARRIVALS = ("poisson", "gamma")
ROUTERS = ("round-robin", "least-loaded", "prefix")

RATE = InputSpec("rate", "float", 10.0, "mean arrival rate, requests per second", minimum=0,
                 exclusive_minimum=True, maximum=10_000, unit="req/s", label="Request rate")
ARRIVAL = InputSpec("arrival", "choice", "poisson", "arrival process", choices=ARRIVALS, label="Arrivals")
CV = InputSpec("cv", "float", 1.0, "coefficient of variation of the gaps between arrivals (gamma arrivals)",
               minimum=0.1, maximum=10, label="Burstiness (CV of the gaps)")
DURATION_S = InputSpec("duration_s", "float", None, "simulated time, s (default 60, or a trace's span)",
                       minimum=MIN_DURATION_S, maximum=MAX_DURATION_S, unit="s", label="Simulated time")
PROMPT_TOKENS = InputSpec("prompt_tokens", "int", 512, "mean prompt length, tokens", minimum=1, maximum=MAX_TOKENS,
                          unit="tok", label="Mean prompt length")
OUTPUT_TOKENS = InputSpec("output_tokens", "int", 256, "mean output length, tokens", minimum=1,
                          maximum=MAX_TOKENS, unit="tok", label="Mean output length")
PROMPT_DIST = InputSpec("prompt_dist", "choice", "fixed", "how prompt lengths are drawn around the mean",
                        choices=LENGTH_DISTRIBUTIONS, label="Prompt lengths")
OUTPUT_DIST = InputSpec("output_dist", "choice", "fixed", "how output lengths are drawn around the mean",
                        choices=LENGTH_DISTRIBUTIONS, label="Output lengths")
PREFIX_FRACTION = InputSpec("prefix_fraction", "float", 0.0, "share of each prompt that is a prefix shared "
                            "with the other requests of its group (a system prompt)", minimum=0, maximum=0.99,
                            label="Shared prefix share")
SEED = InputSpec("seed", "int", 0, "random seed (the same seed gives the same run)", minimum=0, maximum=2**32 - 1,
                 label="Seed")
TTFT_SLO_MS = InputSpec("ttft_slo_ms", "float", 500.0, "TTFT target, ms", minimum=0, exclusive_minimum=True,
                        maximum=3_600_000, unit="ms", label="TTFT target")
TPOT_SLO_MS = InputSpec("tpot_slo_ms", "float", 50.0, "TPOT target, ms", minimum=0, exclusive_minimum=True,
                        maximum=3_600_000, unit="ms", label="TPOT target")
REPLICAS = InputSpec("replicas", "int", 1, "replicas behind the router", minimum=1, maximum=64, label="Replicas")
ROUTER = InputSpec("router", "choice", "round-robin", "how the router picks a replica", choices=ROUTERS, label="Router")
MAX_BATCHED_TOKENS = InputSpec("max_batched_tokens", "int", 8192, "token budget of one step (chunked prefill)",
                               minimum=1, maximum=1_048_576, unit="tok", label="Token budget per step")
MAX_NUM_SEQS = InputSpec("max_num_seqs", "int", 256, "most sequences running at once", minimum=1,
                         maximum=16_384, label="Most running sequences")
CONCURRENCY = InputSpec("concurrency", "int", None, "closed loop: this many clients, each sending its next request "
                        "when its last one ends (as vllm bench serve --max-concurrency); replaces the rate",
                        minimum=1, maximum=16_384, label="Concurrent clients (closed loop)")
THINK_TIME_S = InputSpec("think_time_s", "float", 0.0, "closed loop: seconds a client waits after a response "
                         "before its next request", minimum=0, maximum=MAX_DURATION_S, unit="s",
                         label="Think time (closed loop)")
CAPACITY_POLICY = InputSpec("capacity_policy", "choice", "preempt", "when the KV cache runs short: preempt the "
                            "newest sequence and recompute it later (vLLM), or no-evict: admit only a request whose "
                            "whole prompt and output fit beside the running ones' (TensorRT-LLM's default)",
                            choices=CAPACITY_POLICIES, label="Capacity policy")
MICROBATCHES = InputSpec("microbatches", "int", 1, "parts a step's batch goes through the pipeline in (the bubble "
                         "is (pp − 1) ÷ (microbatches + pp − 1) of the step)", minimum=1, maximum=1024,
                         label="Microbatches")
STEP_OVERHEAD_MS = InputSpec.of("step_overhead_ms", "float", "fixed cost of one engine step (kernel launches, "
                                "scheduling, sampling), ms")

INPUTS = (MODEL, GPU, GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, UTILIZATION, RESERVE_GIB, BLOCK_SIZE, RATE,
          ARRIVAL, CV, DURATION_S, PROMPT_TOKENS, OUTPUT_TOKENS, PROMPT_DIST, OUTPUT_DIST, PREFIX_FRACTION, SEED,
          TTFT_SLO_MS, TPOT_SLO_MS, REPLICAS, ROUTER, MAX_BATCHED_TOKENS, MAX_NUM_SEQS, BANDWIDTH_EFFICIENCY, MFU,
          PREFILL_MFU, ALLREDUCE_LATENCY_US, STEP_OVERHEAD_MS, CONCURRENCY, THINK_TIME_S, CAPACITY_POLICY, PP,
          MICROBATCHES)

# The inputs a stack without them reads from the calibration table (docs/architecture.md §12), and their stated
# convention (the quantities' own defaults: 0.75, 0.5, 0.4, 10 µs, 0 ms), which a run given them reproduces.
CALIBRATED_INPUTS = ("bandwidth_efficiency", "mfu", "prefill_mfu", "allreduce_latency_us", "step_overhead_ms")
STATED_CONVENTION = {key: default(key) for key in CALIBRATED_INPUTS}

DEFAULT_DURATION_S = 60.0
# Text inputs besides the numbers: a pasted trace (CSV), the sweep's rates, a closed loop's concurrencies to sweep.
TEXT_INPUTS = ("trace", "sweep", "concurrency_sweep")
MAX_TRACE_CHARS = 2_000_000


def parse_sweep(text: Any) -> tuple[float, ...]:
    """Rates of a sweep from ``"R1,R2,…"`` (or a list of numbers), in req/s, sorted and unique.

    Raises :class:`InputError` (field ``sweep``) for a rate that is not a positive finite
    number within :data:`RATE`'s bound, a rate listed twice (``5,5,5``: a sweep of one point that reads as
    three), or more than :data:`MAX_SWEEP_POINTS` rates.
    """
    items = text if isinstance(text, (list, tuple)) else str(text).split(",")
    items = [item for item in items if str(item).strip() != ""]
    if not items:
        raise InputError("sweep must list at least one rate, e.g. 5,10,20.", field="sweep")
    if len(items) > MAX_SWEEP_POINTS:
        raise InputError(f"sweep may list at most {MAX_SWEEP_POINTS} rates, not {len(items)}.", field="sweep")
    rates = []
    for item in items:
        try:
            rate = float(str(item).strip())
        except ValueError:
            raise InputError(f"sweep: {str(item).strip()!r} is not a rate in req/s.", field="sweep") from None
        if not math.isfinite(rate) or rate <= 0 or rate > RATE.maximum:
            raise InputError(f"sweep: every rate must be above 0 and at most {RATE.maximum:,.0f} req/s, "
                             f"not {str(item).strip()}.", field="sweep")
        if rate in rates:
            raise InputError(f"sweep lists {rate:g} req/s more than once: give each rate once.",
                             field="sweep")
        rates.append(rate)
    return tuple(sorted(rates))


def parse_concurrency_sweep(text: Any) -> tuple[int, ...]:
    """Concurrencies of a closed-loop sweep from ``"C1,C2,…"`` (or a list), sorted and unique: each run is a closed
    loop of that many clients (with the inputs' think time).

    Raises :class:`InputError` (field ``concurrency_sweep``) for a value that is not a whole number within
    :data:`CONCURRENCY`'s bounds (1 to 16,384), or more than :data:`MAX_SWEEP_POINTS` of them.
    """
    items = text if isinstance(text, (list, tuple)) else str(text).split(",")
    items = [item for item in items if str(item).strip() != ""]
    if not items:
        raise InputError("concurrency_sweep must list at least one concurrency, e.g. 1,8,32.",
                         field="concurrency_sweep")
    if len(items) > MAX_SWEEP_POINTS:
        raise InputError(f"concurrency_sweep may list at most {MAX_SWEEP_POINTS} concurrencies, not {len(items)}.",
                         field="concurrency_sweep")
    found = []
    for item in items:
        shown = str(item).strip()
        try:
            value = float(shown)
        except ValueError:
            raise InputError(f"concurrency_sweep: {shown!r} is not a number of clients.",
                             field="concurrency_sweep") from None
        if not value.is_integer() or not CONCURRENCY.minimum <= value <= CONCURRENCY.maximum:
            raise InputError(f"concurrency_sweep: every concurrency must be a whole number from "
                             f"{CONCURRENCY.minimum} to {CONCURRENCY.maximum:,}, not {shown}.",
                             field="concurrency_sweep")
        found.append(int(value))
    return tuple(sorted(set(found)))


def clean_sim_inputs(raw: dict[str, Any], catalog: Catalog | None = None) -> dict[str, Any]:
    """Defaults applied and bounds checked; ``trace`` (CSV text) and ``sweep`` kept as given. An efficiency,
    all-reduce latency or step overhead left out is the calibration table's for the card and weight precision
    (:func:`~calculators.engine.procedures.inputs.calibrated_defaults`; the quantity's default without a row).

    ``concurrency_sweep`` (:func:`parse_concurrency_sweep`) runs one closed loop per concurrency, with the think
    time; it excludes a trace, a sweep of rates and one concurrency.

    Raises :class:`InputError` for an unknown name, a value out of bounds, a pipeline degree that does not divide
    the model's layers (field ``pp``), a token
    budget below the sequence limit (vLLM refuses that too), or a run expected to
    exceed :data:`MAX_REQUESTS` requests; the catalog's and config's errors for an
    unknown model or GPU or a bad config.
    """
    catalog = catalog_or_default(catalog)
    raw = dict(raw)
    text = {name: raw.pop(name) for name in TEXT_INPUTS if raw.get(name) not in (None, "")}
    inputs = clean_inputs(INPUTS, raw, catalog)
    inputs.update(calibrated_defaults(INPUTS, {**inputs, **{key: raw.get(key) for key in CALIBRATED_INPUTS}}))
    if "trace" in text:
        trace = text["trace"]
        if not isinstance(trace, str):
            raise InputError("trace must be CSV text.", field="trace")
        if len(trace) > MAX_TRACE_CHARS:
            raise InputError(f"The trace is longer than {MAX_TRACE_CHARS:,} characters.", field="trace")
        inputs["trace"] = trace
    if "sweep" in text:
        if "trace" in text:
            raise InputError("A sweep varies the arrival rate, which a trace fixes: give --sweep or --trace, "
                             "not both.", field="sweep")
        inputs["sweep"] = list(parse_sweep(text["sweep"]))
    if "concurrency_sweep" in text:
        if "trace" in text or "sweep" in text or inputs.get("concurrency"):
            raise InputError("A concurrency sweep sets how many clients send, which a trace, a sweep of rates or "
                             "one concurrency also sets: give --concurrency-sweep alone.", field="concurrency_sweep")
        inputs["concurrency_sweep"] = list(parse_concurrency_sweep(text["concurrency_sweep"]))
    if inputs.get("concurrency") and ("sweep" in inputs or "trace" in inputs):
        raise InputError("A closed loop's clients set when requests arrive, which a sweep's rate or a trace also "
                         "sets: give --concurrency without --sweep and --trace.", field="concurrency")
    check_stages(resolve_model(inputs, catalog)[0], inputs["pp"])
    if inputs["max_batched_tokens"] < inputs["max_num_seqs"]:
        raise InputError(f"max_batched_tokens ({inputs['max_batched_tokens']:,}) must be at least max_num_seqs "
                         f"({inputs['max_num_seqs']:,}): every running sequence needs a token each step.",
                         field="max_batched_tokens")
    if inputs.get("concurrency") or "concurrency_sweep" in inputs:  # a closed loop sends at most MAX_REQUESTS
        inputs["duration_s"] = inputs["duration_s"] or DEFAULT_DURATION_S
    elif "trace" not in inputs:
        duration = inputs["duration_s"] = inputs["duration_s"] or DEFAULT_DURATION_S
        top_rate = max(inputs.get("sweep") or [inputs["rate"]])
        if top_rate * duration > MAX_REQUESTS:
            raise InputError(f"{top_rate:g} req/s for {duration:g} s is about {top_rate * duration:,.0f} requests; "
                             f"the simulator takes at most {MAX_REQUESTS:,} per run: shorten the duration or "
                             f"lower the rate.", field="duration_s")
    return inputs


@dataclass(frozen=True)
class Setup:
    """What one run needs besides the workload: the ``replica`` (step model), its KV ``blocks``
    of ``block_size`` tokens, and the ladder's figures behind them (GiB)."""

    replica: Replica
    blocks: int
    block_size: int
    kv_budget_gib: float
    weights_gib: float
    kv_bytes_per_token_replica: float

    @property
    def kv_tokens(self) -> int:
        """Tokens the replica's KV cache holds."""
        return self.blocks * self.block_size


def row_companions(inputs: dict[str, Any]) -> dict[str, float]:
    """The calibration row's terms the simulator has no input for, where ``inputs`` hold that row's value of
    the input they go with: the bandwidth efficiency at large batch beside the batch-1 one, the all-reduce
    latency's growth per TP doubling beside the all-reduce latency (docs/architecture.md §12). A value typed in
    place of the row's stands alone (a flat efficiency, a latency that does not grow)."""
    row = {key: default(key, gpu=inputs["gpu"], precision=inputs["weights_dtype"])
           for key in ("bandwidth_efficiency", "bandwidth_efficiency_large_batch", "allreduce_latency_us",
                       "allreduce_latency_per_tp_doubling_us")}
    found = {}
    if inputs["bandwidth_efficiency"] == row["bandwidth_efficiency"]:
        found["bandwidth_efficiency_large_batch"] = row["bandwidth_efficiency_large_batch"]
    if inputs["allreduce_latency_us"] == row["allreduce_latency_us"]:
        found["allreduce_latency_per_tp_doubling_us"] = row["allreduce_latency_per_tp_doubling_us"]
    return found


def band_setups(inputs: dict[str, Any], setup: "Setup", catalog: Catalog | None = None) -> tuple | None:
    """The replica at the calibration row's optimistic and pessimistic ends, as ``(optimistic, pessimistic)``
    :class:`Setup` s (the same KV blocks; each efficiency at its band's high or low end, each cost at its low or
    high end), when every calibrated input of ``inputs`` is the row's central value (docs/architecture.md §13:
    a result's band). ``None`` when a value was typed (its band is not the table's) or the card has no row."""
    gpu, precision = inputs["gpu"], inputs["weights_dtype"]
    if any(inputs[key] != default(key, gpu=gpu, precision=precision) for key in CALIBRATED_INPUTS):
        return None
    ends = []
    for optimistic in (True, False):
        found = {}
        for key in KEYS:
            cost = key in COSTS
            end = "low" if optimistic == cost else "high"
            found[key] = default(key, gpu=gpu, precision=precision, end=end)
        ends.append(found)
    if ends[0] == ends[1]:
        return None
    replicas = []
    for values in ends:
        replica = Replica(setup.replica.model, setup.replica.gpu, setup.replica.tp, weights_dtype=precision,
                          kv_dtype=inputs["kv_dtype"], weights_bits=inputs["weights_bits"], pp=setup.replica.pp,
                          microbatches=setup.replica.microbatches, **values)
        replicas.append(Setup(replica, setup.blocks, setup.block_size, setup.kv_budget_gib, setup.weights_gib,
                              setup.kv_bytes_per_token_replica))
    return tuple(replicas)


def build_setup(inputs: dict[str, Any], catalog: Catalog | None = None) -> Setup:
    """The replica and its KV blocks for cleaned ``inputs``.

    The budget is the ladder's (docs/architecture.md §12): cards × card memory × utilisation −
    weights − cards × activation reserve, the cards ``gpus × pp`` (each pipeline stage holds
    layers ÷ pp, so weights and KV per card divide by pp); blocks = ⌊budget ÷ (block × KV bytes
    per token × K/V replication)⌋ (the engine's whole-number rule, ``whole_floor``), every layer
    charged in full (a windowed layer is charged as a full one, as vLLM's paged allocator sizes
    blocks). Raises :class:`InputError` (field ``gpus``)
    when the weights and reserves leave no room for one block, (field ``pp``) when the degree
    does not divide the layers.
    """
    catalog = catalog_or_default(catalog)
    cfg, _ = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    t = inputs["gpus"]
    cards = t * inputs["pp"]
    replica = Replica(cfg, gpu, t, weights_dtype=inputs["weights_dtype"], kv_dtype=inputs["kv_dtype"],
                      weights_bits=inputs["weights_bits"], bandwidth_efficiency=inputs["bandwidth_efficiency"],
                      mfu=inputs["mfu"], prefill_mfu=inputs["prefill_mfu"],
                      allreduce_latency_us=inputs["allreduce_latency_us"], step_overhead_ms=inputs["step_overhead_ms"],
                      pp=inputs["pp"], microbatches=inputs["microbatches"], **row_companions(inputs))
    weights_gib = weight_bytes(cfg, inputs["weights_dtype"], inputs["weights_bits"]) / GIB
    budget_gib = (cards * gpu.memory_mib * MIB / GIB * inputs["utilization"] - weights_gib
                  - cards * inputs["reserve_gib"])
    per_token = replica.kv_bytes_per_token * replica.kv_replication
    blocks = max(0, whole_floor(budget_gib * GIB / (inputs["block_size"] * per_token))) if budget_gib > 0 else 0
    if blocks == 0:
        raise InputError(f"On {cards} × {gpu.name} the weights ({weights_gib:,.2f} GiB) and reserves leave no KV "
                         f"cache (budget {budget_gib:,.2f} GiB): add cards or choose a narrower format.", field="gpus")
    return Setup(replica, blocks, inputs["block_size"], budget_gib, weights_gib, per_token)

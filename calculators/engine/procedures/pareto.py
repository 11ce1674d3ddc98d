"""The ``pareto`` family: the throughput–interactivity curve of a served model (docs/architecture.md §12).

Every decode batch trades the speed one user sees (tok/s per user, 1 ÷ step)
against what the cards earn (tok/s per card, batch ÷ step ÷ cards). The curve
runs over the grid of docs/architecture.md §12: batches 1, 2, 4, … up to the KV limit, at
each tensor-parallel degree of 1, 2, 4 and 8 (and the degree asked for) that the
heads accept and whose cards hold the weights, each point costed by
:func:`~..step_model.step_ms`. The graded steps work out the point a TPOT target
picks at the degree asked for:

``weights_gib``, ``replica_kv_budget_gib`` (the ladder's budget, as slo has it),
``kv_replication``, ``per_user_gib`` (one sequence at the context, replica-wide),
``batch_memory_limit`` (the KV limit: the top of the grid), ``batch_tpot_limit``
(the largest batch whose step meets the target), ``batch`` (the largest power of
two within both limits: the grid point the target marks), then the serving step
at that batch (a mixture of experts reads the experts the batch touches) —
``weight_bytes_per_step``, ``kv_bytes_per_step``, ``bytes_per_step``,
``flops_per_step``, ``memory_ms``, ``compute_ms``, ``comm_ms``, ``step_ms`` — and
the point's coordinates ``tok_s_per_user`` and ``tok_s_per_card``.

The curve itself is in ``result.extra["curve"]`` (:mod:`.pareto_curve`).
"""

from __future__ import annotations

import random
from typing import Any, Callable

import sympy

from ..catalog import Catalog
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..formulas import serving as S
from ..hf_config import ModelConfig
from ..step_model import Replica, step_ms
from .base import (
    DEGREE_RULE_AFTER_GIVEN,
    LINK,
    NO_LINK,
    Family,
    Offline,
    Plan,
    Result,
    StepSpec,
    evaluate,
    evaluate_steps,
    format_number,
)
from .compute import COMPUTE_TIME_STEP, MEMORY_TIME_STEP, draw_served_model, step_given
from .inputs import (
    ALLREDUCE_LATENCY_US,
    BANDWIDTH_EFFICIENCY,
    CONTEXT,
    GPU,
    GPUS,
    KV_DTYPE,
    MODEL,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)
from .inputs import MFU as STEP_MFU
from .kv import fp4_cache_note, sparse_limit_note
from .slo import TPOT_TARGET_MS, batch_limit_specs, slo_given

# --- The throughput–interactivity curve itself: every grid point of docs/architecture.md §12, costed by the …

CURVE_DEGREES = (1, 2, 4, 8)
# A step this close above the target still meets it (the largest_batch search's tolerance).
TARGET_TOLERANCE = 1e-12


def power_of_two_at_most(value: float) -> int:
    """The largest power of two ``≤ value`` (1, 2, 4, …), or 0 when ``value < 1``."""
    if value < 1:
        return 0
    power = 1 << (int(value).bit_length() - 1)
    return power


def grid_batches(limit: int) -> list[int]:
    """Batches 1, 2, 4, … up to ``limit`` (the KV limit); empty below 1."""
    batches, batch = [], 1
    while batch <= limit:
        batches.append(batch)
        batch *= 2
    return batches


def _point(replica: Replica, batch: int, context: int, target_ms: float) -> dict[str, Any]:
    cost = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * context)
    return {"batch": batch, "step_ms": cost.step_ms, "memory_ms": cost.memory_ms, "compute_ms": cost.compute_ms,
            "comm_ms": cost.comm_ms, "tok_s_per_user": 1000 / cost.step_ms,
            "tok_s_per_card": batch * 1000 / cost.step_ms / replica.tp,
            "meets_target": cost.step_ms <= target_ms * (1 + TARGET_TOLERANCE)}


def pareto_curve(cfg: ModelConfig, gpu, inputs: dict[str, Any], kv_limit: Callable[[int], int]) -> dict[str, Any]:
    """The curve for cleaned ``inputs`` (the pareto family's), with ``kv_limit(degree)`` giving the
    batch the KV budget holds at a degree (raising :class:`InputError` where the degree is refused).

    Returns ``{"target_ms", "target_tok_s_per_user", "marked": {"gpus", "batch"} | None, "best": point
    | None, "degrees": [{"gpus", "kv_limit", "refused", "points", "marked_batch"}]}``; each point holds
    ``batch``, ``step_ms``, ``memory_ms``, ``compute_ms``, ``comm_ms``, ``tok_s_per_user``,
    ``tok_s_per_card`` and ``meets_target`` (and ``gpus`` in ``best``).
    """
    target = inputs["tpot_target_ms"]
    degrees = []
    for degree in sorted(set(CURVE_DEGREES) | {inputs["gpus"]}):
        entry: dict[str, Any] = {"gpus": degree, "kv_limit": 0, "refused": "", "points": [], "marked_batch": 0}
        degrees.append(entry)
        try:
            limit = kv_limit(degree)
            replica = Replica(cfg, gpu, degree, inputs["weights_dtype"], inputs["kv_dtype"], inputs["weights_bits"],
                              bandwidth_efficiency=inputs["bandwidth_efficiency"], mfu=inputs["mfu"],
                              allreduce_latency_us=inputs["allreduce_latency_us"])
        except InputError as exc:
            entry["refused"] = str(exc)
            continue
        entry["kv_limit"] = limit
        if limit < 1:
            entry["refused"] = (f"a replica of {degree} × {gpu.name} holds no sequence of {inputs['context']:,} "
                                f"tokens beside the weights and reserves.")
            continue
        entry["points"] = [_point(replica, batch, inputs["context"], target) for batch in grid_batches(limit)]
        meeting = [p["batch"] for p in entry["points"] if p["meets_target"]]
        entry["marked_batch"] = max(meeting, default=0)
    marked = next((d for d in degrees if d["gpus"] == inputs["gpus"] and d["marked_batch"]), None)
    candidates = [{**p, "gpus": d["gpus"]} for d in degrees for p in d["points"] if p["meets_target"]]
    best = max(candidates, key=lambda p: (p["tok_s_per_card"], p["tok_s_per_user"]), default=None)
    return {"target_ms": target, "target_tok_s_per_user": 1000 / target,
            "marked": {"gpus": marked["gpus"], "batch": marked["marked_batch"]} if marked else None,
            "best": best, "degrees": degrees}


def curve_notes(curve: dict[str, Any], inputs: dict[str, Any], values: dict[str, float], gpu_name: str) -> list[str]:
    """What the curve is, where the target puts the graded point, the best point across degrees and
    why any degree is missing."""
    tok_s = lambda v: format_number(v, "tok/s")  # noqa: E731 - a local shorthand
    target = curve["target_ms"]
    shown = [d for d in curve["degrees"] if d["points"]]
    notes = [
        f"The curve: at each tensor-parallel degree of {', '.join(str(d['gpus']) for d in shown)} the batch "
        f"doubles from 1 up to the KV limit; each point is one decode step of the serving model (every sequence "
        f"holding {inputs['context']:,} tokens), plotted as tok/s per user (1 ÷ step) against tok/s per card "
        f"(batch ÷ step ÷ cards). Points right of {tok_s(curve['target_tok_s_per_user'])} per user meet the "
        f"{target:g} ms TPOT target.",
    ]
    batch, exact = int(values["batch"]), int(min(values["batch_memory_limit"], values["batch_tpot_limit"]))
    binding = "the KV cache" if values["batch_memory_limit"] <= values["batch_tpot_limit"] else "the TPOT target"
    bound = "compute" if values["compute_ms"] > values["memory_ms"] else "memory-bandwidth"
    notes.append(
        f"On {inputs['gpus']} × {gpu_name} the target marks batch {batch:,}: {values['step_ms']:.3f} ms per step "
        f"({bound}-bound), {tok_s(values['tok_s_per_user'])} per user and {tok_s(values['tok_s_per_card'])} per "
        f"card. {binding[0].upper() + binding[1:]} binds: the largest batch within both limits is {exact:,}"
        + (f", and the grid rounds it down to {batch:,}." if exact != batch else ", itself a grid point."))
    best = curve["best"]
    if best and (best["gpus"], best["batch"]) != (inputs["gpus"], batch):
        notes.append(
            f"Across the degrees the most tok/s per card that meets the target is batch {best['batch']:,} on "
            f"{best['gpus']} card{'s' if best['gpus'] > 1 else ''}: {tok_s(best['tok_s_per_card'])} per card at "
            f"{tok_s(best['tok_s_per_user'])} per user, {best['tok_s_per_card'] / values['tok_s_per_card']:.2f}× "
            f"the marked point's.")
    elif best:
        notes.append("The marked point is also the most tok/s per card that meets the target at any degree of the "
                     "grid.")
    for degree in curve["degrees"]:
        if degree["refused"]:
            notes.append(f"No curve at {degree['gpus']} card{'s' if degree['gpus'] > 1 else ''}: {degree['refused']}")
    notes.append("A larger degree buys interactivity (each step reads its share of the weights from more cards) "
                 "but pays two all-reduces per layer and, past the K/V head count, a copy of the cache per card: "
                 "per card it earns less unless its batch grows with it.")
    return notes


PARETO_CONTEXT = CONTEXT  # tokens each sequence holds: sizes the KV limit and every step's cache read
INPUTS = (MODEL, GPU, GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, PARETO_CONTEXT, UTILIZATION, RESERVE_GIB,
          TPOT_TARGET_MS, BANDWIDTH_EFFICIENCY, STEP_MFU, ALLREDUCE_LATENCY_US)

# --- formulas ---------------------------------------------------------------------------------


class grid_batch(sympy.Function):  # lower case: printed by name in the formula
    """The largest power of two at most ``x`` (0 below 1): the doubling grid's point under a limit.

    Evaluates on numbers, prints by name and lambdifies through ``_imp_``
    (:func:`.pareto_curve.power_of_two_at_most`), so every evaluation agrees."""

    nargs = 1
    _imp_ = staticmethod(power_of_two_at_most)

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sympy.Integer(power_of_two_at_most(float(x)))
        return None


GRID_BATCH = Formula(
    "batch",
    (Var("batch_memory_limit", "users", "sequences the KV budget holds"),
     Var("batch_tpot_limit", "users", "sequences within the TPOT target")),
    lambda s: grid_batch(sympy.Min(s["batch_memory_limit"], s["batch_tpot_limit"])),
    label="Batch the TPOT target marks on the doubling grid",
)

TOK_S_PER_CARD = Formula(
    "tok_s_per_card",
    (Var("batch", "users", "sequences in the batch (one token each per step)"),
     Var("step_ms", "ms", "step time"), Var("gpus", "GPUs", "cards in the replica")),
    lambda s: ratio(s["batch"], product(s["step_ms"], s["gpus"])),
)

# A mixture of experts reads its dense part and the experts the grid batch touches, E × (1 − (1 − k/E)^B)
# per MoE layer (formulas.serving.EXPERTS_TOUCHED written out, the batch being a step here).
WEIGHT_BYTES_AT_BATCH_MOE = Formula(
    "weight_bytes_per_step",
    (Var("always_read_params", "1", "parameters every token uses (all but the routed experts)"),
     Var("moe_layers", "1", "mixture-of-experts layers"),
     Var("experts", "1", "routed experts per MoE layer (E)"),
     Var("experts_per_token", "1", "routed experts per token (top-k)"),
     Var("batch", "users", "sequences in the step"),
     Var("expert_params", "1", "parameters of one routed expert"),
     Var("weight_bits", "bit", "bits per weight outside the routed experts"),
     Var("expert_weight_bits", "bit", "bits per routed-expert parameter")),
    lambda s: total(product(s["always_read_params"], s["weight_bits"]), product(
        s["moe_layers"], s["experts"], 1 - (1 - ratio(s["experts_per_token"], s["experts"])) ** s["batch"],
        s["expert_params"], s["expert_weight_bits"])),
    label="Weights read per step (the experts the batch touches)",
)

PARETO_FORMULAS = (GRID_BATCH, WEIGHT_BYTES_AT_BATCH_MOE, TOK_S_PER_CARD)
STEP_KEYS = ("weights_gib", "replica_kv_budget_gib", "kv_replication", "per_user_gib", "batch_memory_limit",
             "batch_tpot_limit", "batch", "weight_bytes_per_step", "kv_bytes_per_step", "bytes_per_step",
             "flops_per_step", "memory_ms", "compute_ms", "comm_ms", "step_ms", "tok_s_per_user", "tok_s_per_card")
LIMIT_STEPS = 5  # weights_gib … batch_memory_limit: what a degree's KV limit needs


def pareto_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The seventeen steps (experts, windows and a latent change formulas, never the keys)."""
    at_batch = {"batch": "batch"}
    specs = [
        *batch_limit_specs(cfg, per_user_label="KV cache per sequence at the context (replica-wide)",
                           memory_label="KV limit: the batch the budget holds (top of the grid)"),
        StepSpec(GRID_BATCH,
                 {"batch_memory_limit": "batch_memory_limit", "batch_tpot_limit": "batch_tpot_limit"},
                 rounding="floor",
                 label="Grid batch the target marks (largest power of two within both limits)"),
    ]
    if cfg.is_moe:
        specs.append(StepSpec(WEIGHT_BYTES_AT_BATCH_MOE, at_batch,
                              label="Weights read per step (the experts the batch touches)"))
    else:
        specs.append(StepSpec(S.STEP_WEIGHT_BYTES,
                              label="Weights read per step (parameters × bytes)"))
    kv, flops = S.step_forms(cfg.window_layers, cfg.index_topk)
    return specs + [
        StepSpec(kv,
                 {**at_batch, "kv_replication": "kv_replication"},
                 label="KV cache read per step (every sequence's context)"),
        StepSpec(S.STEP_BYTES,
                 {"weight_bytes_per_step": "weight_bytes_per_step", "kv_bytes_per_step": "kv_bytes_per_step"}),
        StepSpec(flops,
                 at_batch,
                 label="FLOPs per step (2 × active parameters + attention, per sequence)"),
        MEMORY_TIME_STEP,
        COMPUTE_TIME_STEP,
        StepSpec(S.COMM_MS, {"step_tokens": "batch"}, label="Communication time (two all-reduces per layer)"),
        StepSpec(S.STEP_MS,
                 {"memory_ms": "memory_ms", "compute_ms": "compute_ms", "comm_ms": "comm_ms"},
                 label="Step time (TPOT: max(memory, compute) + communication)"),
        StepSpec(S.TOK_S_PER_USER,
                 {"step_ms": "step_ms"},
                 label="Tokens per second per user (1 ÷ step: the curve's x)"),
        StepSpec(TOK_S_PER_CARD, {"batch": "batch", "step_ms": "step_ms"},
                 label="Tokens per second per card (batch ÷ step ÷ cards: the curve's y)"),
    ]


def pareto_given(cfg: ModelConfig, gpu, inputs: dict[str, Any]) -> dict[str, float]:
    """The numbers the steps read: slo's (budget, limits) and the serving step's (bytes, FLOPs, links).

    Raises :class:`~..errors.InputError` on a degree the heads refuse or a ring with no link on record."""
    given, _, _ = slo_given(cfg, gpu, {**inputs, "request_rate": 1.0, "output_tokens": 1, "gpus_per_node": 8})
    step = step_given(cfg, gpu, {**inputs, "batch": 1})
    for key in ("batch", "step_tokens", "experts_touched"):  # these follow the grid batch, a step
        step.pop(key)
    return {**step, **given}


def check_limits(values: dict[str, float], gpu, inputs: dict[str, Any]) -> None:
    """Raise :class:`InputError` when the replica holds no sequence or none meets the target."""
    cards = f"{inputs['gpus']} × {gpu.name}"
    if values["batch_memory_limit"] < 1:
        raise InputError(f"The KV budget of {format_number(values['replica_kv_budget_gib'], 'GiB')} on {cards} "
                         f"holds no sequence of {inputs['context']:,} tokens "
                         f"({format_number(values['per_user_gib'], 'GiB')}) after the weights: the curve starts at "
                         f"a larger degree, a smaller precision or a shorter context.", field="gpus")
    if values["batch_tpot_limit"] < 1:
        raise InputError(f"Not even one sequence meets a TPOT of {inputs['tpot_target_ms']:g} ms on {cards}: "
                         f"relax the target or add cards.", field="tpot_target_ms")


# --- the procedure ---------------------------------------------------------------------------

def plan_pareto(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """The point a TPOT target marks at the degree asked for, and the curve over the grid.

    ``raw`` holds ``model`` or ``config``, ``gpu``, ``gpus`` (the degree of the graded point: it must obey
    the degree rule), ``weights_dtype``/``weights_bits``, ``kv_dtype``, ``context`` (tokens each sequence
    holds, default 8,192), ``utilization`` and ``reserve_gib`` for the KV limit, ``tpot_target_ms`` (50),
    ``bandwidth_efficiency``, ``mfu`` and ``allreduce_latency_us`` (the tuning inputs' defaults are their
    quantities', :data:`..quantities.INPUTS`). ``result.extra["curve"]`` holds every degree's points. Raises
    :class:`~..errors.EngineError` subclasses on bad input, :class:`~..errors.InputError` when the
    degree holds no sequence (field ``gpus``) or none meets the target (``tpot_target_ms``).
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    given = pareto_given(cfg, gpu, inputs)
    if inputs["gpus"] > 1 and not given["link_gb_s"]:
        raise InputError(NO_LINK.format(gpus=inputs["gpus"], gpu=gpu.name, domain=gpu.nvlink_domain_gpus), field="gpus")
    specs = pareto_specs(cfg)
    limits = {"batch_tpot_limit": lambda values: check_limits(values, gpu, inputs)}

    def finish(result: Result) -> None:
        asked = int(result.values["batch_memory_limit"])  # the asked degree's limit: this evaluation's
        curve = pareto_curve(cfg, gpu, inputs,
                             lambda degree: asked if degree == inputs["gpus"] else _limit_at(cfg, gpu, inputs, degree))
        result.extra["curve"] = curve
        result.notes = (curve_notes(curve, inputs, result.values, gpu.name) + fp4_cache_note(inputs["kv_dtype"], gpu)
                        + [gpu.memory_note] + sparse_limit_note(cfg, "The TPOT batch limit") + list(cfg.notes))

    return Plan("pareto", inputs, specs, given, [], {"model_name": model_name}, finish=finish, checks=limits)


def _limit_at(cfg: ModelConfig, gpu, inputs: dict[str, Any], degree: int) -> int:
    """The KV limit (batch the budget holds) at ``degree``; raises InputError where the degree is refused."""
    given = pareto_given(cfg, gpu, {**inputs, "gpus": degree})
    values = evaluate_steps(pareto_specs(cfg)[:LIMIT_STEPS], given)
    return int(values["batch_memory_limit"])


# --- problems ---------------------------------------------------------------------------------

TPOT_TARGETS_DRAWN = (20, 25, 30, 40, 50, 60, 75, 100)
CONTEXTS_DRAWN = (2048, 4096, 8192, 16384, 32768)
MAX_DRAWS = 300


def generate_pareto(rng: random.Random, catalog: Catalog) -> dict:
    """A curve problem: a served model on the smallest degree that holds it (one time in three the next
    one up, so comm and replication enter), a context it supports, a KV precision the card's engines
    offer, and a TPOT target some batch meets.

    Deterministic for a given ``rng``; raises ``RuntimeError`` when :data:`MAX_DRAWS` draws give
    no such problem."""
    for _ in range(MAX_DRAWS):
        inputs = draw_served_model(rng, catalog)
        cfg = catalog.model(inputs["model"]).config
        if rng.random() < 1 / 3 and inputs["gpus"] * 2 <= 8 and not cfg.heads % (inputs["gpus"] * 2):
            inputs["gpus"] *= 2
        limit = cfg.max_position_embeddings or 8192
        inputs["context"] = rng.choice([c for c in CONTEXTS_DRAWN if c <= limit] or [2048])
        card = catalog.gpu(inputs["gpu"])
        # bf16 mostly; fp8 where the card has it, and on FP4 cards the nvfp4 cache engines offer there.
        caches = ["bf16", "bf16"] + (["fp8"] if card.dense_tflops.get("fp8") else []) \
            + (["nvfp4"] if card.dense_tflops.get("fp4") else [])
        inputs["kv_dtype"] = rng.choice(caches)
        for target in rng.sample(TPOT_TARGETS_DRAWN, len(TPOT_TARGETS_DRAWN)):
            inputs["tpot_target_ms"] = float(target)
            try:
                evaluate(plan_pareto(inputs, catalog))
            except InputError:
                continue
            return inputs
    raise RuntimeError("No throughput–interactivity problem could be drawn from the catalog.")


def describe_pareto(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in an interviewer's words."""
    i = {spec.name: inputs.get(spec.name, spec.default) for spec in INPUTS}
    gpu = catalog.gpu(i["gpu"]).name
    cards = f"one {gpu}" if i["gpus"] == 1 else f"{i['gpus']} × {gpu} in tensor parallel"
    return (
        f"You serve {inputs.get('model', 'the pasted config')} with {i['weights_dtype']} weights and a "
        f"{i['kv_dtype']} KV cache; every sequence holds {i['context']:,} tokens. The engine uses "
        f"{i['utilization']:.0%} of each card's memory and keeps {i['reserve_gib']:g} GiB per card for activations; "
        f"decode reaches {i['bandwidth_efficiency']:g} of peak bandwidth and an MFU of {i['mfu']:g}, and each "
        f"all-reduce costs {i['allreduce_latency_us']:g} µs. On a replica of {cards}, sweep the batch 1, 2, 4, … up "
        f"to what the KV cache holds: where does a TPOT target of {i['tpot_target_ms']:g} ms put you? Give the KV "
        f"limit, the largest batch the target allows, the grid batch that meets both, the bytes, FLOPs, memory, "
        f"compute and all-reduce times of its step, and its tok/s per user and per card.")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
PARETO_RUBRIC = (
    "Traces throughput per card against the per-user rate across batch sizes",
    "Finds the batch the TPOT target allows and reads the throughput there",
    "Compares degrees at the same target, counting the weights each replica stores",
    "Names the point the product should run at and why",
)


FAMILIES = (
    Family("pareto", "Throughput–interactivity curve",
           "Tokens per second per card against tokens per second per user, batch by batch up to the KV limit at "
           "each tensor-parallel degree, and the point a TPOT target picks.",
           INPUTS, plan_pareto, generate=generate_pareto,
           order=72, describe=describe_pareto,
           headlines=("tok_s_per_card", "tok_s_per_user", "batch"), rubric=PARETO_RUBRIC,
           offline=Offline(checks=(DEGREE_RULE_AFTER_GIVEN, LINK,
                                   {"kind": "pareto_feasible", "after": "batch_tpot_limit"}),
                           extras={"curve": {"degrees": list(CURVE_DEGREES)}})),
)

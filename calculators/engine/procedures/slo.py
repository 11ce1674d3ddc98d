"""The ``slo`` family: the largest decode batch that meets a TPOT target, and the fleet it implies.

A replica of N cards decodes a batch of B sequences one step at a time. A step
reads the weights once and every sequence's KV cache, and performs 2 × active
parameters × B FLOPs; it takes the longer of the two, each at a stated
efficiency (a fraction of peak bandwidth, an MFU of the dense peak). Steps, in
order:

``weights_gib`` (parameters × bits), ``replica_kv_budget_gib`` (the ladder's
budget: N × card × utilisation − weights − N × reserve), ``per_user_gib``
(one sequence's cache at the context limit, windows applied),
``batch_memory_limit`` (⌊budget ÷ per user⌋), ``batch_tpot_limit`` (the
largest B whose step fits the target: what the bandwidth can read in the
target after the weights, in caches, and what the FLOPs allow),
``max_batch`` (the smaller limit), ``bytes_per_step_gib`` (weights + B caches; ``bytes_per_step`` before),
``tpot_ms`` (the step time at that batch), ``tokens_per_s`` (B ÷ step time),
``replicas`` (request rate × mean output tokens ÷ tokens per second, rounded
up) and ``nodes`` (replicas × N ÷ GPUs per node, rounded up).

Sources: bandwidth and dense TFLOP/s per precision are the ``gpus.json``
datasheet fields (``memory_bandwidth_GBps``, ``tflops.<precision>_dense``);
layer, head and width counts are the model's ``config.json`` fields. The
step-time model is the roofline (Williams, Waterman and Patterson, 2009)
applied to one decode step.

The parts: :mod:`.slo_formulas` (formulas and steps), :mod:`.slo_step` (the step time),
:mod:`.slo_inputs` (inputs and given numbers), :mod:`.slo_notes` (feasibility and notes),
:mod:`.slo_variants` (misconceptions); this module runs the family and draws its problems.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..dtypes import NOMINAL_BITS, weight_bits
from .base import Result, evaluate_steps, format_number, run
from .drawing import KV_DTYPES_DRAWN, draw_context, draw_gpu, draw_model, draw_weights_dtype, gpu_supports
from .family import Family
from .fleet import ROUNDED_NODES_DOWN, check_packing
from .inputs import catalog_or_default, clean_inputs, resolve_model
from .kv import REPLICATION_IGNORED, REPLICATION_VARIANTS, valid_degree
from .offline import DEGREE_RULE_AFTER_GIVEN, PACKING, Offline
from .slo_formulas import STEP_KEYS, slo_specs
from .slo_inputs import INPUTS, slo_given
from .slo_notes import check_feasible, slo_notes
from .slo_variants import (
    CACHE_FIT_IGNORED,
    KV_READ_IGNORED,
    ONE_CARD_BANDWIDTH,
    PER_USER_RATE,
    ROOFLINE_AS_EXPECTATION,
    SPARSE_TFLOPS,
    TPOT_TARGET_IGNORED,
    VARIANTS,
)
from .step import COMM_IGNORED


def run_slo(raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
    """The largest decode batch meeting a TPOT target on one replica, and the replicas and nodes a load needs.

    ``raw`` holds ``model`` or ``config``, ``gpu``, ``gpus`` (per replica),
    ``weights_dtype``, ``weights_bits``, ``kv_dtype``, ``context`` (tokens),
    ``utilization``, ``reserve_gib``, ``tpot_target_ms``,
    ``bandwidth_efficiency``, ``mfu``, ``request_rate`` (req/s),
    ``output_tokens`` (mean) and ``gpus_per_node``. Missing ones default to
    Llama-3.1-70B at bf16 on 8 × H100 SXM, the ladder's 8,192 tokens, a 50 ms
    target, 20 req/s of 500 output tokens, 8-GPU nodes, and the tuning inputs'
    quantities' defaults (:data:`..quantities.INPUTS`). ``result.extra`` holds ``binding``
    (``memory``, ``tpot`` or ``both``), ``compute_bound``, ``weights_read_ms``
    and ``compute_precision``. Raises :class:`~..errors.EngineError`
    subclasses on bad input, and :class:`~..errors.InputError` when not one
    sequence fits the memory (field ``gpus``) or the target
    (``tpot_target_ms``).
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    check_packing(inputs["gpus"], inputs["gpus_per_node"], "gpus")
    given, precision, precision_note = slo_given(cfg, gpu, inputs)
    specs = slo_specs(cfg)
    through_batch = STEP_KEYS.index("max_batch") + 1
    check_feasible(evaluate_steps(specs[:through_batch], given), given, gpu, inputs)
    result = run("slo", inputs, specs, given, [])
    notes, extra = slo_notes(cfg, gpu, inputs, given, result.values, precision, precision_note)
    result.notes.extend(notes)
    result.extra.update(extra, model_name=model_name)
    return result


# --- problems ------------------------------------------------------------------------------------

TP_DEGREES = (1, 2, 4, 8)
MIN_BATCH = 4
TPOT_TARGETS_DRAWN = (15, 20, 25, 30, 40, 50, 60, 75, 100)
MAX_DRAWS = 300
BIGGER_REPLICA_SHARE = 0.25
MAX_REPLICAS = 64


def _draw_candidate(rng, catalog: Catalog) -> dict:
    model, gpu = draw_model(rng, catalog), draw_gpu(rng, catalog)
    weights = draw_weights_dtype(rng, catalog, gpu)
    return {
        "model": model,
        "gpu": gpu,
        "gpus": 1,
        "weights_dtype": weights,
        "kv_dtype": rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, gpu, "fp8") else "bf16",
        "context": draw_context(rng, catalog, model),
        "utilization": rng.choice((0.85, 0.9, 0.9, 0.92, 0.95)),
        "reserve_gib": rng.choice((2.0, 3.0, 3.0, 4.0)),
        "tpot_target_ms": 50.0,
        "bandwidth_efficiency": rng.choice((0.65, 0.7, 0.75, 0.75, 0.8, 0.85)),
        "mfu": rng.choice((0.35, 0.4, 0.5, 0.5, 0.6)),
        "request_rate": float(rng.randint(1, 200)),
        "output_tokens": rng.randrange(100, 2001, 50),
        "gpus_per_node": 8,
    }


def _limits(inputs: dict, catalog: Catalog) -> dict[str, float]:
    cleaned = clean_inputs(INPUTS, inputs, catalog)
    cfg, _ = resolve_model(cleaned, catalog)
    given, _, _ = slo_given(cfg, catalog.gpu(cleaned["gpu"]), cleaned)
    specs = slo_specs(cfg)
    return evaluate_steps(specs[:STEP_KEYS.index("max_batch") + 1], given)


def generate_slo(rng, catalog: Catalog) -> dict:
    """An SLO problem on a catalog model and card: the smallest tensor-parallel degree (1, 2, 4 or 8)
    whose KV budget holds at least four sequences (doubled one time in four), a TPOT target
    (15–100 ms) that at least one sequence meets, drawn so that memory binds in some problems and
    the target in others, and a load of 1–200 req/s that needs at most 64 replicas.

    Deterministic for a given ``rng``; raises ``RuntimeError`` when :data:`MAX_DRAWS` draws give
    no such problem."""
    for _ in range(MAX_DRAWS):
        inputs = _draw_candidate(rng, catalog)
        cfg = catalog.model(inputs["model"]).config
        for degree in TP_DEGREES:
            if not valid_degree(cfg, degree):
                continue
            inputs["gpus"] = degree
            if _limits(inputs, catalog)["batch_memory_limit"] >= MIN_BATCH:
                break
        else:
            continue
        if inputs["gpus"] < TP_DEGREES[-1] and rng.random() < BIGGER_REPLICA_SHARE \
                and valid_degree(cfg, inputs["gpus"] * 2):
            inputs["gpus"] *= 2
        feasible = []
        for target in TPOT_TARGETS_DRAWN:
            inputs["tpot_target_ms"] = float(target)
            if _limits(inputs, catalog)["batch_tpot_limit"] >= 1:
                feasible.append(float(target))
        if not feasible:
            continue
        inputs["tpot_target_ms"] = rng.choice(feasible)
        # Keep the fleet to at most MAX_REPLICAS replicas: a load of 1–200 req/s scaled to the replica.
        replica_rate = run_slo({**inputs, "request_rate": 1.0}, catalog).values["tokens_per_s"]
        most = min(200, int(MAX_REPLICAS * replica_rate / inputs["output_tokens"]))
        if most >= 1:
            inputs["request_rate"] = float(rng.randint(1, most))
            return inputs
    raise RuntimeError("No SLO problem could be drawn from the catalog.")


def describe_slo(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    i = {spec.name: inputs.get(spec.name, spec.default) for spec in INPUTS}
    gpu = catalog.gpu(i["gpu"]).name
    cards = f"one {gpu}" if i["gpus"] == 1 else f"{i['gpus']} × {gpu} (tensor parallel)"
    bits = weight_bits(i["weights_dtype"], i["weights_bits"])
    width = f" (charged {bits:g} bits each)" if bits != NOMINAL_BITS[i["weights_dtype"]] else ""
    return (
        f"A replica of {i['model']} runs on {cards} with {i['weights_dtype']} weights{width} and "
        f"{'a' if i['kv_dtype'].startswith('b') else 'an'} {i['kv_dtype']} KV cache. "
        f"Size every sequence at the {i['context']:,}-token context limit; the engine uses "
        f"{i['utilization']:.0%} of each card's memory and keeps {i['reserve_gib']:g} GiB per card for activations. "
        f"Assume decode reaches {i['bandwidth_efficiency']:.0%} of peak memory bandwidth and an MFU of "
        f"{i['mfu']:g} on the dense TFLOP/s. The service promises a TPOT of {i['tpot_target_ms']:g} ms. What is "
        f"the largest batch that meets it, which limit binds, what step time and tokens per second does the "
        f"replica then deliver, and how many replicas and {i['gpus_per_node']}-GPU nodes serve "
        f"{format_number(i['request_rate'], '1')} requests per second averaging {i['output_tokens']:,} output tokens?"
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
SLO_RUBRIC = (
    "Takes the smaller of the memory limit and the TPOT limit as the batch",
    "Builds the step from bytes, FLOPs and the all-reduces, not from one of them",
    "Derives the replica's rate from the batch over the step",
    "Rounds replicas and nodes up for the load and names which limit binds",
)


FAMILIES = (
    Family("slo", "Batch size for a TPOT target",
           "The largest decode batch that meets a TPOT target and fits the KV cache, its throughput, and the "
           "replicas and nodes a load needs.",
           INPUTS, run_slo, generate=generate_slo,
           variants={**VARIANTS, "kv_replication": REPLICATION_VARIANTS["kv_replication"],
                     "per_user_gib": (*VARIANTS["per_user_gib"], *REPLICATION_VARIANTS["per_user_gib"])},
           misconceptions=(ROOFLINE_AS_EXPECTATION, ONE_CARD_BANDWIDTH, KV_READ_IGNORED, CACHE_FIT_IGNORED,
                           TPOT_TARGET_IGNORED, PER_USER_RATE, SPARSE_TFLOPS, ROUNDED_NODES_DOWN, REPLICATION_IGNORED,
                           COMM_IGNORED),
           order=70, describe=describe_slo,
           headlines=("max_batch", "tpot_ms", "nodes"), chapter="14-capacity-planning", difficulty=3,
           rubric=SLO_RUBRIC,
           offline=Offline(checks=({"kind": "packing", "replica": "gpus", "node": "gpus_per_node", "message": PACKING},
                                   DEGREE_RULE_AFTER_GIVEN, {"kind": "slo_feasible", "after": "max_batch"}))),
)

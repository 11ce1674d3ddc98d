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

The parts: :mod:`..formulas.fleet` (the formulas: batch limits, the step time, the fleet), and its mistakes
are the registry's (:mod:`..mistakes`); this module holds the inputs and the given numbers, the steps, checks
feasibility, writes the notes, runs the family and draws its problems.
"""

from __future__ import annotations

from typing import Any

from ..catalog import NOMINAL_BITS, Catalog, Gpu
from ..errors import InputError
from ..formulas import memory as F
from ..formulas.fleet import (
    BATCH_MEMORY_LIMIT,
    BATCH_TPOT_LIMIT,
    BYTES_PER_STEP,
    BYTES_PER_STEP_MOE,
    MAX_BATCH,
    NODES,
    REPLICA_KV_BUDGET_GIB,
    REPLICAS,
    TOKENS_PER_S,
    TPOT_MS,
)
from ..hf_config import ModelConfig, param_breakdown
from ..step_model import COMPUTE_PRECISION as STEP_COMPUTE_PRECISION
from .base import (
    DEGREE_RULE_AFTER_GIVEN,
    KV_DTYPES_DRAWN,
    NO_LINK,
    PACKING,
    Family,
    Offline,
    Plan,
    Result,
    StepSpec,
    draw_context,
    draw_gpu,
    draw_model,
    draw_weights_dtype,
    evaluate,
    evaluate_steps,
    format_number,
    gpu_supports,
    widths_given,
    widths_notes,
    widths_phrase,
)
from .compute import GIB, flops_per_sequence, step_given, weights_read_ms
from .fleet import GPUS_PER_NODE, check_packing
from .inputs import (
    ALLREDUCE_LATENCY_US,
    BANDWIDTH_EFFICIENCY,
    CONTEXT,
    GPU,
    KV_DTYPE,
    MFU,
    MODEL_HINT,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)
from .kv import fp4_cache_note, kv_given, kv_notes, replication_spec, sparse_limit_note, valid_degree
from .params import params_given

# --- The ``slo`` family's inputs and the numbers its steps read (:func:`slo_given`).

SLO_MODEL = InputSpec("model", "model", "llama-3.1-70b", "model id from the catalog", label="Model",
                      hint=MODEL_HINT)
SLO_GPUS = InputSpec("gpus", "int", 8, "cards per replica (tensor-parallel degree)", minimum=1, maximum=1024,
                     unit="GPUs", label="GPUs per replica")
TPOT_TARGET_MS = InputSpec("tpot_target_ms", "float", 50.0, "time per output token the service promises, ms",
                           minimum=0, exclusive_minimum=True, maximum=10_000, unit="ms", label="TPOT target")
REQUEST_RATE = InputSpec("request_rate", "float", 20.0, "mean arrival rate, requests per second", minimum=0,
                         exclusive_minimum=True, maximum=1_000_000, unit="req/s", label="Request rate")
OUTPUT_TOKENS = InputSpec("output_tokens", "int", 500, "mean output tokens per request", minimum=1,
                          maximum=1_000_000, unit="tok", label="Mean output length")

INPUTS = (SLO_MODEL, GPU, SLO_GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, CONTEXT, UTILIZATION, RESERVE_GIB,
          TPOT_TARGET_MS, BANDWIDTH_EFFICIENCY, MFU, REQUEST_RATE, OUTPUT_TOKENS, GPUS_PER_NODE, ALLREDUCE_LATENCY_US)

# The tensor-core precision a decode step multiplies in, by weight format (step_model's table, docs/architecture.md
# §12): int4 weights are dequantised to bf16 (weight-only kernels); fp8 and int8 run W8A8 on their own
# tensor cores; nvfp4 and mxfp4 run on fp4 tensor cores where the card lists them.
COMPUTE_PRECISION = STEP_COMPUTE_PRECISION



STEP_KEYS = ("weights_gib", "replica_kv_budget_gib", "kv_replication", "per_user_gib", "batch_memory_limit",
             "batch_tpot_limit", "max_batch", "bytes_per_step_gib", "tpot_ms", "tokens_per_s", "replicas", "nodes")


def batch_limit_specs(cfg: ModelConfig, *, per_user_label: str, memory_label: str) -> list[StepSpec]:
    """The six steps slo and pareto share: weights, the replica's KV budget, K/V replication, the cache per
    sequence (its latent and sliding windows followed) and the two batch limits, memory and TPOT. The
    labels of the per-sequence cache and the memory limit are each family's own wording."""
    per_user = F.PER_USER_GIB_WINDOWED if cfg.window_layers else F.PER_USER_GIB
    return [
        StepSpec(F.weights_form(cfg.is_moe, gib=True)),
        StepSpec(REPLICA_KV_BUDGET_GIB, {"weights_gib": "weights_gib"},
                 label="KV cache budget (cards × utilisation − weights − reserves)"),
        replication_spec(cfg),
        StepSpec(per_user, {"kv_replication": "kv_replication"}, label=per_user_label),
        StepSpec(BATCH_MEMORY_LIMIT,
                 {"replica_kv_budget_gib": "replica_kv_budget_gib", "per_user_gib": "per_user_gib"},
                 rounding="floor",
                 label=memory_label),
        StepSpec(BATCH_TPOT_LIMIT,
                 {"per_user_gib": "per_user_gib"}, rounding="floor"),
    ]


def slo_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The twelve steps for a model (its cache per sequence follows its latent and sliding windows;
    a mixture of experts reads the experts its batch touches)."""
    step_bytes = BYTES_PER_STEP_MOE if cfg.is_moe else BYTES_PER_STEP
    return [
        *batch_limit_specs(cfg, per_user_label="KV cache per sequence at the context limit (replica-wide)",
                           memory_label="Batch the KV budget holds"),
        StepSpec(MAX_BATCH,
                 {"batch_memory_limit": "batch_memory_limit", "batch_tpot_limit": "batch_tpot_limit"},
                 rounding="floor",
                 label="Largest batch (the smaller limit)"),
        StepSpec(step_bytes,
                 {**({} if cfg.is_moe else {"weights_gib": "weights_gib"}), "max_batch": "max_batch",
                  "per_user_gib": "per_user_gib"},
                 label="Bytes read per step (weights + caches)"),
        StepSpec(TPOT_MS,
                 {"bytes_per_step": "bytes_per_step_gib", "max_batch": "max_batch"},
                 label="Step time at that batch (TPOT: max(memory, compute) + all-reduces)"),
        StepSpec(TOKENS_PER_S,
                 {"max_batch": "max_batch", "tpot_ms": "tpot_ms"}),
        StepSpec(REPLICAS, {"tokens_per_s": "tokens_per_s"},
                 rounding="ceil",
                 label="Replicas for the load (rounded up)"),
        StepSpec(NODES, {"replicas": "replicas"}, rounding="ceil", label="Nodes (rounded up)"),
    ]

def compute_precision(gpu: Gpu, weights_dtype: str) -> tuple[str, str | None]:
    """The key of ``gpu.dense_tflops`` a decode step's matrix multiplies run at, and a sentence
    saying why when it is not the weights' own format (``None`` otherwise).

    A card without tensor cores for the wanted precision (fp8 on an A100, tf32 on a card that
    lists none) falls back to bf16. The table of wanted precisions is
    :data:`~..step_model.COMPUTE_PRECISION`. Raises :class:`~..errors.InputError`
    (field ``gpu``) when the card has no dense bf16 figure on record.
    """
    wanted = COMPUTE_PRECISION[weights_dtype]
    if not gpu.dense_tflops.get("bf16"):
        raise InputError(f"The {gpu.name} has no dense bf16 throughput on record (see its catalog entry), so a "
                         f"decode step on it cannot be costed.", field="gpu")
    if not gpu.dense_tflops.get(wanted):
        return "bf16", (f"The {gpu.name} lists no dense {wanted} throughput, so {weights_dtype} weights are "
                        f"multiplied at bf16 (weight-only kernels dequantise them).")
    if weights_dtype == "int4":
        return wanted, ("int4 weights are dequantised and multiplied at bf16 (weight-only quantisation), so the "
                        "compute term uses the bf16 dense figure.")
    if weights_dtype in ("nvfp4", "mxfp4"):
        return wanted, (f"{weights_dtype} weights are multiplied on fp4 tensor cores, so the compute term uses the "
                        f"dense fp4 figure.")
    if weights_dtype in ("fp8", "int8"):
        return wanted, (f"{weights_dtype} weights are multiplied on {weights_dtype} tensor cores (activations "
                        f"quantised too), so the compute term uses the dense {weights_dtype} figure.")
    return wanted, None


def slo_given(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any]) -> tuple[dict[str, float], str, str | None]:
    """The numbers the steps read (keyed by formula variable: parameter counts, bits, MiB and GiB,
    GB/s, dense TFLOP/s, ms, req/s), the compute precision and its note (or ``None``).

    ``inputs`` are the cleaned :data:`INPUTS`. Raises :class:`~..errors.InputError` when the card has
    no dense bf16 figure (:func:`compute_precision`), or (field ``gpus``) when a replica of more
    than one card crosses a link with no bandwidth on record.
    """
    precision, precision_note = compute_precision(gpu, inputs["weights_dtype"])
    breakdown = param_breakdown(cfg)
    given: dict[str, Any] = {
        **params_given(cfg),
        **kv_given(cfg, inputs["kv_dtype"], inputs["gpus"]),
        **F.weights_given(cfg, inputs["weights_dtype"], inputs["weights_bits"]),
        **widths_given(cfg, inputs),
        "active_params": breakdown.active,
        "gpus": inputs["gpus"],
        "card_mib": gpu.memory_mib,
        "card_marketed_gb": gpu.marketed_gb,
        "utilization": inputs["utilization"],
        "reserve_gib": inputs["reserve_gib"],
        "context": inputs["context"],
        "bandwidth_gb_s": gpu.bandwidth_gb_s,
        "bandwidth_efficiency": inputs["bandwidth_efficiency"],
        "peak_tflops": gpu.dense_tflops[precision],
        "sparse_tflops": gpu.sparse_tflops.get(precision),
        "mfu": inputs["mfu"],
        "tpot_target_ms": inputs["tpot_target_ms"],
        "request_rate": inputs["request_rate"],
        "output_tokens": inputs["output_tokens"],
        "gpus_per_node": inputs["gpus_per_node"],
    }
    given["kv_bytes_per_token"] = F.kv_per_token_form(cfg.kv_lora_rank, cfg.index_topk)(given)
    step = step_given(cfg, gpu, {**inputs, "batch": 1})
    for key in ("always_read_params", "experts", "experts_per_token", "attention_head_dim", "allreduces",
                "activation_bytes", "link_gb_s", "allreduce_latency_us", "nvlink_domain_gpus",
                "nvlink_gb_s_per_direction", "pcie_gb_s_per_direction", "scale_out_gb_s"):
        given[key] = step[key]
    if inputs["gpus"] > 1 and not given["link_gb_s"]:
        raise InputError(NO_LINK.format(gpus=inputs["gpus"], gpu=gpu.name, domain=gpu.nvlink_domain_gpus), field="gpus")
    return given, precision, precision_note


def _step_parts_ms(given: dict[str, float], bytes_gib: float, batch: float) -> tuple[float, float]:
    """(bandwidth time, compute time) of one step, in ms."""
    reading = bytes_gib * GIB / (given["gpus"] * given["bandwidth_gb_s"] * 1e9 * given["bandwidth_efficiency"])
    computing = flops_per_sequence(given) * batch / (given["gpus"] * given["peak_tflops"] * 1e12 * given["mfu"])
    return reading * 1e3, computing * 1e3


def check_feasible(values: dict[str, float], given: dict[str, float], gpu: Gpu, inputs: dict[str, Any]) -> None:
    """Raise :class:`~..errors.InputError` when the replica cannot serve one sequence within the target.

    ``values`` are the steps through ``max_batch`` (GiB and sequences); the error names the field
    to change: ``gpus`` when the weights or one sequence's cache do not fit, ``tpot_target_ms``
    when reading the weights alone takes longer than the target.
    """
    gib = lambda v: format_number(v, "GiB")  # noqa: E731 - a local shorthand
    cards = f"{inputs['gpus']} × {gpu.name}"
    if values["batch_memory_limit"] < 1:
        if values["replica_kv_budget_gib"] <= 0:
            raise InputError(
                f"The weights ({gib(values['weights_gib'])}) and the activation reserves do not fit in {cards}; "
                f"use more GPUs per replica or a smaller weight precision.", field="gpus")
        raise InputError(
            f"The KV budget of {gib(values['replica_kv_budget_gib'])} on {cards} cannot hold one sequence of "
            f"{inputs['context']:,} tokens ({gib(values['per_user_gib'])}); use more GPUs, a shorter context or "
            f"an fp8 cache.", field="gpus")
    if values["batch_tpot_limit"] < 1:
        reading = weights_read_ms(given, values["weights_gib"])
        raise InputError(
            f"Not even one sequence meets a TPOT of {inputs['tpot_target_ms']:g} ms: reading the weights alone "
            f"takes {reading:.3g} ms at {inputs['bandwidth_efficiency']:g} of {cards}'s bandwidth. Relax the target "
            f"or add GPUs.", field="tpot_target_ms")


def _step_model_note(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any], given: dict[str, float],
                     precision: str) -> str:
    """How a decode step at batch B is timed, with this replica's numbers."""
    n, context = inputs["gpus"], inputs["context"]
    return (
        f"A decode step at batch B (the serving model's step) takes the longer of two times, plus the "
        f"all-reduces: the bytes read (the weights once plus B replica-wide caches, each at the full "
        f"{context:,}-token context) over {n} × {format_number(gpu.bandwidth_gb_s, 'GB/s')} at "
        f"{inputs['bandwidth_efficiency']:g} of peak, and B × (2 × {given['active_params']:,} active parameters + "
        f"the attention over {context:,} cached tokens) FLOPs over {n} × {given['peak_tflops']:g} dense {precision} "
        f"TFLOP/s at an MFU of {inputs['mfu']:g} (never the 2:4 sparse figure)"
        + (f"; then {int(given['allreduces'])} all-reduces of B × {cfg.hidden_size:,} × 2 B over "
           f"{format_number(given['link_gb_s'], 'GB/s')} per direction plus {inputs['allreduce_latency_us']:g} µs "
           f"each" if given["allreduces"] else "")
        + ". The KV budget is the ladder's: cards × utilisation − weights − one reserve per card.")


def _binding_note(inputs: dict[str, Any], given: dict[str, float], values: dict[str, float]) -> tuple[str, str]:
    """Which limit binds (``memory``, ``tpot`` or ``both``) and the note that says why."""
    n, context, target = inputs["gpus"], inputs["context"], inputs["tpot_target_ms"]
    memory, tpot, batch = (int(values[k]) for k in ("batch_memory_limit", "batch_tpot_limit", "max_batch"))
    if memory < tpot:
        return "memory", (
            f"Memory binds: the KV budget holds {memory:,} sequences at {context:,} tokens, while the {target:g} ms "
            f"target would allow {tpot:,}. The replica has latency to spare; more cache room (more cards, an fp8 "
            f"cache, a shorter context limit) raises the batch, a faster card does not.")
    if tpot == memory:
        return "both", (f"Both limits allow {batch:,} sequences: the KV budget and the {target:g} ms target bind "
                        f"together.")
    reading_weights = weights_read_ms(given, values["weights_gib"])
    bandwidth_side = ((target - reading_weights) * 1e-3 * n * given["bandwidth_gb_s"] * 1e9
                      * given["bandwidth_efficiency"] / (values["per_user_gib"] * GIB))
    compute_side = target * 1e-3 * n * given["peak_tflops"] * 1e12 * given["mfu"] / flops_per_sequence(given)
    if bandwidth_side <= compute_side:
        side = (f"the bandwidth side: reading the weights takes {reading_weights:.3g} ms of each step, and the "
                f"rest reads {bandwidth_side:,.1f} caches")
        lever = "Fewer bytes per step (fp8 weights or cache, a shorter context) or a looser target"
    else:
        side = (f"the compute side: the FLOPs of {compute_side:,.1f} sequences fill the target, so this batch "
                f"is compute-bound")
        lever = "More FLOP/s (fp8 tensor cores, more cards) or a looser target"
    return "tpot", (f"The TPOT target binds: {target:g} ms allows {tpot:,} sequences ({side}), while the KV budget "
                    f"would hold {memory:,}. {lever} raises the batch.")


def _model_notes(cfg: ModelConfig, inputs: dict[str, Any], given: dict[str, float], batch: int,
                 precision_note: str | None) -> list[str]:
    """The notes about the model: its experts, its compute precision, its weights' width, its cache."""
    notes = []
    if cfg.is_moe:
        touched = cfg.num_experts * (1 - (1 - cfg.experts_per_token / cfg.num_experts) ** batch)
        notes.append(
            f"Mixture of experts: a batch of {batch:,} touches {touched:.2f} of the {cfg.num_experts} routed "
            f"experts per layer (E × (1 − (1 − k/E)^B)), so the step reads those experts' weights, while each "
            f"token computes with its {given['active_params']:,} active parameters.")
    if precision_note:
        notes.append(precision_note)
    notes += widths_notes(cfg, inputs)
    uniform = given["weight_bits"] == given["expert_weight_bits"]
    if given["weight_bits"] != NOMINAL_BITS[inputs["weights_dtype"]] and uniform:
        notes.append(f"{inputs['weights_dtype']} weights are charged {given['weight_bits']:g} bits each, not the "
                     f"nominal {NOMINAL_BITS[inputs['weights_dtype']]}.")
    return notes + kv_notes(cfg) + sparse_limit_note(cfg, "The TPOT batch limit") + list(cfg.notes)


def slo_notes(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any], given: dict[str, float],
              values: dict[str, float], precision: str, precision_note: str | None) -> tuple[list[str], dict]:
    """The result's notes and its ``extra`` entries (``binding``, ``compute_bound``, ``weights_read_ms``,
    ``compute_precision``), from the cleaned inputs, the given numbers and the step values."""
    batch = int(values["max_batch"])
    binding, binding_note = _binding_note(inputs, given, values)
    reading, computing = _step_parts_ms(given, values["bytes_per_step_gib"], batch)
    compute_bound = computing > reading
    demand = inputs["request_rate"] * inputs["output_tokens"]
    notes = [
        gpu.memory_note,
        *fp4_cache_note(inputs["kv_dtype"], gpu),
        _step_model_note(cfg, gpu, inputs, given, precision),
        binding_note,
        f"At {batch:,} sequences the step is {'compute' if compute_bound else 'memory-bandwidth'}-bound: "
        f"{format_number(values['bytes_per_step_gib'], 'GiB')} read take {reading:.3g} ms, the FLOPs "
        f"{computing:.3g} ms.",
        f"Replicas: {format_number(inputs['request_rate'], '1')} req/s × {inputs['output_tokens']:,} output tokens "
        f"= {demand:,.0f} tok/s of decode, over {format_number(values['tokens_per_s'], 'tok/s')} per replica. "
        f"That is Little's law at full occupancy with prefill and queueing left out; size the headroom and "
        f"spares with the fleet calculator.",
        *_model_notes(cfg, inputs, given, batch, precision_note),
    ]
    extra = {"binding": binding, "compute_bound": compute_bound,
             "weights_read_ms": weights_read_ms(given, values["weights_gib"]), "compute_precision": precision}
    return notes, extra


def plan_slo(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
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
    feasible = {"max_batch": lambda values: check_feasible(values, given, gpu, inputs)}

    def finish(result: Result) -> None:
        notes, extra = slo_notes(cfg, gpu, inputs, given, result.values, precision, precision_note)
        result.notes.extend(notes)
        result.extra.update(extra, model_name=model_name)

    return Plan("slo", inputs, specs, given, [], finish=finish, checks=feasible)


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
        replica_rate = evaluate(plan_slo({**inputs, "request_rate": 1.0}, catalog)).values["tokens_per_s"]
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
    return (
        f"A replica of {i['model']} runs on {cards} with {widths_phrase(i, catalog)} and "
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
           INPUTS, plan_slo, generate=generate_slo,
           order=70, describe=describe_slo,
           headlines=("max_batch", "tpot_ms", "nodes"), chapter="14-capacity-planning", difficulty=3,
           rubric=SLO_RUBRIC,
           offline=Offline(checks=({"kind": "packing", "replica": "gpus", "node": "gpus_per_node", "message": PACKING},
                                   DEGREE_RULE_AFTER_GIVEN, {"kind": "slo_feasible", "after": "max_batch"}))),
)

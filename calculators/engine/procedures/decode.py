"""The ``decode`` family: one decode step of a replica (docs/architecture.md §12) and the range to expect.

A replica of ``gpus`` cards in tensor parallel decodes ``batch`` sequences that
hold ``context`` tokens each on average. Steps, in order: today's eight —
``weight_bytes_per_step`` (the parameters the batch uses × bits ÷ 8; for a
mixture of experts the dense part plus the experts the batch touches),
``kv_replication`` (K/V copies across the cards), ``kv_bytes_per_step``
(batch × context × KV per token × replication, windows applied),
``bytes_per_step``, ``bandwidth_gb_s`` (the cards add up), ``ceiling_tok_s``
(batch × bandwidth ÷ bytes: 3,350 GB/s ÷ 16,060,522,496 B = 208.6 tok/s for
the reference stack at batch 1 and zero context), ``realistic_low_tok_s`` and
``realistic_high_tok_s`` (× 0.65 and × 0.85), ``mbu`` (a measured per-sequence
rate's bytes per second ÷ peak bandwidth) — then the step itself:
``flops_per_step``, ``memory_ms`` (at the bandwidth efficiency),
``compute_ms`` (at the MFU, of the weight format's compute precision),
``comm_ms`` (two all-reduces per layer when split), ``step_ms`` = max(memory,
compute) + comm, ``tok_s_per_user`` = 1 ÷ step and ``tok_s_per_replica`` =
batch ÷ step.

The step list never changes: without a measured rate, ``mbu`` is 0 and a note
says so.
"""

from __future__ import annotations

import random
from typing import Any

from ..catalog import NOMINAL_BITS, Catalog
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import product, ratio
from ..formulas import serving as S
from ..formulas.memory import weight_bytes
from ..hf_config import ModelConfig
from .base import (
    DEGREE_RULE,
    KV_DTYPES_DRAWN,
    NO_LINK,
    NOT_ABOVE,
    Family,
    Offline,
    Plan,
    Result,
    StepSpec,
    evaluate,
    evaluate_steps,
    format_number,
    gpu_supports,
    widths_notes,
    widths_phrase,
)
from .compute import (
    BATCH,
    datasheet_phrase,
    draw_served_model,
    gpu_phrase,
    kv_read_spec,
    model_phrase,
    moe_note,
    params_used,
    replication_step,
    step_given,
    time_specs,
    weight_spec,
)
from .inputs import (
    ALLREDUCE_LATENCY_US,
    BANDWIDTH_EFFICIENCY,
    GPU,
    GPUS,
    KV_DTYPE,
    MODEL,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    input_or_default,
    resolve_model,
    with_aliases,
)
from .inputs import MFU as STEP_MFU
from .kv import fp4_cache_note, kv_notes, window_note

# Tokens already cached, not a context limit: its own key (issue 29); ``context``, its older key, is still read.
CACHED_TOKENS = InputSpec("cached_tokens", "int", 0, "average tokens already in each sequence's KV cache, read at "
                          "every step", minimum=0, maximum=10_000_000, unit="tok", label="Tokens in the cache",
                          older_names=("context",))
# 0.65–0.85: the share of peak bandwidth real decode kernels achieve (the runbook map's errata, seed 000).
EFFICIENCY_LOW = InputSpec("efficiency_low", "float", 0.65, "low end of the fraction of peak bandwidth "
                           "real kernels reach", minimum=0, maximum=1, exclusive_minimum=True,
                           label="Bandwidth efficiency, low")
EFFICIENCY_HIGH = InputSpec("efficiency_high", "float", 0.85, "high end of the fraction of peak bandwidth "
                            "real kernels reach", minimum=0, maximum=1, exclusive_minimum=True,
                            label="Bandwidth efficiency, high")
MEASURED_TOK_S = InputSpec("measured_tok_s", "float", None, "measured decode rate of one sequence, for the MBU "
                           "(optional)", minimum=0, maximum=1_000_000, exclusive_minimum=True, unit="tok/s",
                           label="Measured decode rate")

INPUTS = (MODEL, GPU, GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, CACHED_TOKENS, EFFICIENCY_LOW, EFFICIENCY_HIGH,
          MEASURED_TOK_S, BATCH, BANDWIDTH_EFFICIENCY, STEP_MFU, ALLREDUCE_LATENCY_US)

STEP_KEYS = ("weight_bytes_per_step", "kv_replication", "kv_bytes_per_step", "bytes_per_step", "bandwidth_gb_s",
             "ceiling_tok_s", "realistic_low_tok_s", "realistic_high_tok_s", "mbu", "flops_per_step", "memory_ms",
             "compute_ms", "comm_ms", "step_ms", "tok_s_per_user", "tok_s_per_replica")

# --- formulas (the step's own are formulas.serving's; these are the range and the measurement) --

BANDWIDTH = Formula(
    "bandwidth_gb_s",
    (Var("gpus", "GPUs", "cards in the replica"), Var("card_bandwidth", "GB/s", "bandwidth per card")),
    lambda s: product(s["gpus"], s["card_bandwidth"]),
)

REALISTIC_LOW = Formula(
    "realistic_low_tok_s",
    (Var("ceiling_tok_s", "tok/s", "decode ceiling"), Var("efficiency_low", "1", "fraction of peak, low")),
    lambda s: product(s["ceiling_tok_s"], s["efficiency_low"]),
)

REALISTIC_HIGH = Formula(
    "realistic_high_tok_s",
    (Var("ceiling_tok_s", "tok/s", "decode ceiling"), Var("efficiency_high", "1", "fraction of peak, high")),
    lambda s: product(s["ceiling_tok_s"], s["efficiency_high"]),
)

MBU = Formula(
    "mbu",
    (Var("measured_tok_s", "tok/s", "measured decode rate of one sequence (steps per second)"),
     Var("bytes_per_step", "B", "bytes read per step"),
     Var("bandwidth_gb_s", "GB/s", "peak memory bandwidth")),
    lambda s: ratio(product(s["measured_tok_s"], s["bytes_per_step"]), s["bandwidth_gb_s"]),
)

DECODE_FORMULAS = (S.STEP_WEIGHT_BYTES, S.STEP_WEIGHT_BYTES_MOE, S.KV_REPLICATION, S.KV_REPLICATION_MLA,
                   S.STEP_KV_BYTES, S.STEP_KV_BYTES_WINDOWED, S.STEP_BYTES, BANDWIDTH, S.CEILING_TOK_S, REALISTIC_LOW,
                   REALISTIC_HIGH, MBU, S.STEP_FLOPS, S.STEP_FLOPS_WINDOWED, S.MEMORY_MS, S.COMPUTE_MS, S.COMM_MS,
                   S.STEP_MS, S.TOK_S_PER_USER, S.TOK_S_PER_REPLICA)


def decode_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The sixteen steps (the weights, KV and FLOP formulas follow the model's experts, latent and windows)."""
    return [
        weight_spec(cfg),
        replication_step(cfg),
        kv_read_spec(cfg),
        StepSpec(S.STEP_BYTES,
                 {"weight_bytes_per_step": "weight_bytes_per_step", "kv_bytes_per_step": "kv_bytes_per_step"}),
        StepSpec(BANDWIDTH),
        StepSpec(S.CEILING_TOK_S,
                 {"bandwidth_gb_s": "bandwidth_gb_s", "bytes_per_step": "bytes_per_step"},
                 label="Decode ceiling (batch × bandwidth ÷ bytes per step)"),
        StepSpec(REALISTIC_LOW,
                 {"ceiling_tok_s": "ceiling_tok_s"},
                 label="Realistic rate, low end (ceiling × low efficiency)"),
        StepSpec(REALISTIC_HIGH,
                 {"ceiling_tok_s": "ceiling_tok_s"},
                 label="Realistic rate, high end (ceiling × high efficiency)"),
        StepSpec(MBU,
                 {"bytes_per_step": "bytes_per_step", "bandwidth_gb_s": "bandwidth_gb_s"},
                 label="MBU of the measured rate (0 when none is given)"),
        *time_specs(cfg),
    ]


# --- the procedure ---------------------------------------------------------------------------


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g} %"


def plan_decode(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """One decode step of a replica: bytes and FLOPs, the ceiling and realistic range, MBU, the
    memory, compute and communication times, the step and the rates it gives.

    ``raw`` holds ``model`` or ``config``, ``gpu`` and ``gpus`` (the tensor-parallel
    degree: it must obey the degree rule), ``weights_dtype``/``weights_bits``,
    ``kv_dtype``, ``cached_tokens`` (average tokens in each sequence's cache, default
    0), ``batch`` (sequences, default 1), ``efficiency_low``/``_high`` (default
    0.65 and 0.85), optionally ``measured_tok_s`` (one sequence's rate),
    ``bandwidth_efficiency``, ``mfu`` and ``allreduce_latency_us`` (each its
    quantity's default when missing). The reference stack gives 208.6 tok/s,
    135.6–177.3 realistic, and a 6.39 ms step at the default bandwidth efficiency. Raises :class:`~..errors.EngineError`
    subclasses on bad input (an efficiency range whose low end is above its
    high end: field ``efficiency_low``; a link with no figure on record: ``gpus``).
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    if inputs["efficiency_low"] > inputs["efficiency_high"]:
        raise InputError(NOT_ABOVE.format(low="efficiency_low", low_value=inputs["efficiency_low"],
                                          high="efficiency_high", high_value=inputs["efficiency_high"]),
                         field="efficiency_low")
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    asked, limit = inputs["batch"], kv_batch_limit(cfg, gpu, inputs)
    capped = limit is not None and 1 <= limit < asked
    if capped:  # the engine never quotes a batch whose caches the replica cannot hold
        inputs["batch"] = limit
    given = step_given(cfg, gpu, {**inputs, "context": inputs["cached_tokens"]})
    if inputs["gpus"] > 1 and not given["link_gb_s"]:
        raise InputError(NO_LINK.format(gpus=inputs["gpus"], gpu=gpu.name, domain=gpu.nvlink_domain_gpus), field="gpus")
    given.update({
        "weights_dtype_bits_nominal": NOMINAL_BITS[inputs["weights_dtype"]],
        "efficiency_low": inputs["efficiency_low"],
        "efficiency_high": inputs["efficiency_high"],
        "measured_tok_s": inputs["measured_tok_s"] or 0.0,
    })

    def finish(result: Result) -> None:
        cap = [f"The batch is capped at the KV limit: at {inputs['cached_tokens']:,} tokens each the replica's KV "
               f"budget (the ladder's, at its default utilisation and reserve) holds {limit:,} sequences, so the "
               f"step is quoted for {limit:,}, not the {asked:,} asked for."] if capped else []
        result.notes = (cap + decode_notes(cfg, gpu, inputs, given, result.values)
                        + fp4_cache_note(inputs["kv_dtype"], gpu) + kv_notes(cfg) + list(cfg.notes))

    return Plan("decode", inputs, decode_specs(cfg), given, [], {"model_name": model_name}, finish=finish)


def kv_batch_limit(cfg: ModelConfig, gpu, inputs: dict[str, Any]) -> int | None:
    """The most sequences of ``inputs['cached_tokens']`` tokens each the replica's KV budget holds (slo's
    ``batch_memory_limit``: cards × memory × utilisation − weights − reserves, at the ladder's default
    utilisation and reserve): 0 when the weights leave no room, ``None`` — no limit — when nothing is cached or
    slo cannot cost the card (no dense bf16 figure). The one capacity rule of the family: the plan caps a batch
    with it and the generator draws a batch and a context under it."""
    from .slo import batch_limit_specs, slo_given  # slo's budget; imported here, slo reads the step module too

    if not inputs["cached_tokens"]:
        return None
    try:
        given, _, _ = slo_given(cfg, gpu, {**inputs, "context": inputs["cached_tokens"],
                                           "utilization": UTILIZATION.default, "reserve_gib": RESERVE_GIB.default,
                                           "tpot_target_ms": 50.0, "request_rate": 1.0, "output_tokens": 1,
                                           "gpus_per_node": 8})
    except InputError:  # slo refuses a card without a dense bf16 figure; the step below reports what it can
        return None
    specs = [s for s in batch_limit_specs(cfg, per_user_label="", memory_label="") if s.key != "batch_tpot_limit"]
    return max(0, int(evaluate_steps(specs, given)["batch_memory_limit"]))


def decode_notes(cfg: ModelConfig, gpu, inputs: dict[str, Any], given: dict, v: dict) -> list[str]:
    """What the step counts and leaves out, which time binds, and what the numbers mean."""
    tok_s = lambda value: format_number(value, "tok/s")  # noqa: E731 - a local shorthand
    batch, context, bits = inputs["batch"], inputs["cached_tokens"], given["weight_bits"]
    total_params, active = params_used(cfg)
    sequences = "one sequence" if batch == 1 else f"{batch:,} sequences"
    mixed = bits != given["expert_weight_bits"]
    read = v["weight_bytes_per_step"] * 8 / bits
    cache = (f"the KV cache of {sequences} at {context:,} tokens each" if context
             else "the KV cache, empty at a context of 0")
    weights_read = (f"{format_number(v['weight_bytes_per_step'], 'B')}: the routed experts at their own width, the "
                    f"rest at {bits:g} bits" if mixed else f"{read:,.0f} parameters at {bits:g} bits")
    notes = [f"Each step produces one token for {'each of ' if batch > 1 else ''}{sequences}: "
             f"it reads the weights once ({weights_read}) plus {cache}; "
             f"activations and the new tokens' own K and V are left out."]
    notes.append(
        f"The ceiling is a bound, not a forecast: real kernels reach about {inputs['efficiency_low'] * 100:g}–"
        f"{_percent(inputs['efficiency_high'])} of peak bandwidth, so plan on {tok_s(v['realistic_low_tok_s'])} to "
        f"{tok_s(v['realistic_high_tok_s'])}, and less as the cache grows.")
    bound = "compute" if v["compute_ms"] > v["memory_ms"] else "memory-bandwidth"
    notes.append(
        f"The step: {v['memory_ms']:.3f} ms to read at {inputs['bandwidth_efficiency']:g} of peak bandwidth, "
        f"{v['compute_ms']:.3f} ms to compute at an MFU of {inputs['mfu']:g} "
        f"({given['peak_tflops']:,g} dense TFLOP/s per card), so it is {bound}-bound"
        + (f", plus {v['comm_ms']:.3f} ms of all-reduces" if v["comm_ms"] else "")
        + f": {v['step_ms']:.3f} ms, {tok_s(v['tok_s_per_user'])} per sequence and "
          f"{tok_s(v['tok_s_per_replica'])} for the replica.")
    if inputs["gpus"] > 1:
        notes.append(
            f"{inputs['gpus']} cards in tensor parallel: each reads its share of the weights and caches, so the "
            f"bandwidths add up, but every layer adds two all-reduces of {batch:,} × {cfg.hidden_size:,} × 2 B "
            f"over a {format_number(given['link_gb_s'], 'GB/s')} link plus {inputs['allreduce_latency_us']:g} µs "
            f"each: scaling is below linear.")
    if v["kv_replication"] > 1:
        notes.append(f"Each K/V head is kept {v['kv_replication']:g} times across the {inputs['gpus']} cards, and "
                     f"every copy is read: the cache read is {v['kv_replication']:g} × one copy's.")
    notes += _measured_notes(inputs["measured_tok_s"], v)
    weights_bytes = weight_bytes(cfg, inputs["weights_dtype"], inputs["weights_bits"])
    cards_bytes = inputs["gpus"] * gpu.memory_bytes
    needed = weights_bytes + v["kv_bytes_per_step"]
    if needed > cards_bytes:
        notes.insert(0, f"The weights and these caches ({format_number(needed / 2**30, 'GiB')}) do not fit in "
                        f"{inputs['gpus']} × {gpu.name} ({format_number(cards_bytes / 2**30, 'GiB')}): the "
                        f"step is hypothetical. The capacity ladder finds a replica that fits.")
    notes += window_note(cfg, context, "The context")
    if cfg.is_moe:
        notes += moe_note(cfg, total_params, active,
                          f"a batch of {batch:,} touches {given['experts_touched']:.2f} of the {cfg.num_experts} "
                          f"routed experts per layer (E × (1 − (1 − k/E)^B)), and the step reads those.")
    notes += widths_notes(cfg, inputs)
    if bits != NOMINAL_BITS[inputs["weights_dtype"]] and not mixed:
        notes.append(f"{inputs['weights_dtype']} weights are charged {bits:g} bits each (block scales included), "
                     f"not the nominal {NOMINAL_BITS[inputs['weights_dtype']]}.")
    return notes


def _measured_notes(measured: float | None, v: dict) -> list[str]:
    if not measured:
        return ["No measured rate was given, so mbu is 0; enter measured_tok_s to get the MBU."]
    notes = [f"The measured {format_number(measured, 'tok/s')} per sequence moves "
             f"{format_number(measured * v['bytes_per_step'] / 1e9, 'GB/s')} of the "
             f"{format_number(v['bandwidth_gb_s'], 'GB/s')} peak: MBU {v['mbu']:.0%}."]
    if v["mbu"] > 1:
        notes.append("An MBU above 1 is impossible for plain decoding: the measurement must include "
                     "speculative decoding or a larger batch, or fewer bytes are read than counted here.")
    return notes


# --- problems --------------------------------------------------------------------------------

CONTEXTS = (0, 0, 1024, 2048, 4096, 8192, 16384, 32768)
EFFICIENCIES = ((0.65, 0.85), (0.65, 0.85), (0.65, 0.85), (0.6, 0.8), (0.7, 0.9))
# A single stream half the time (today's problem), else a continuous batch.
BATCHES = (1, 1, 1, 8, 16, 32, 64)


def drawn_kv_limit(inputs: dict, catalog: Catalog) -> int | None:
    """:func:`kv_batch_limit` for a drawn problem's inputs (read as the plan reads them)."""
    cleaned = clean_inputs(INPUTS, inputs, catalog)
    cfg, _ = resolve_model(cleaned, catalog)
    return kv_batch_limit(cfg, catalog.gpu(cleaned["gpu"]), cleaned)


def generate_decode(rng: random.Random, catalog: Catalog, fixed: dict | None = None) -> dict:
    """A decode problem: a model on the smallest TP degree that holds its weights, a context
    the model supports, a batch whose KV cache fits beside the weights, and a measured rate between
    50 % and 92 % of the ceiling. ``fixed`` inputs (a coach's degree, precision, context or batch) are
    held and the rate drawn for them."""
    fixed = with_aliases(INPUTS, fixed or {})  # a set stored before cached_tokens fixes it as context
    inputs = draw_served_model(rng, catalog)
    limit = catalog.model(inputs["model"]).config.max_position_embeddings or 8192
    inputs["kv_dtype"] = rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, inputs["gpu"], "fp8") else "bf16"
    inputs["cached_tokens"] = rng.choice([c for c in CONTEXTS if c <= limit])
    inputs["efficiency_low"], inputs["efficiency_high"] = rng.choice(EFFICIENCIES)
    inputs["batch"] = rng.choice(BATCHES)
    inputs.update(fixed)
    # The batch's KV cache must fit the KV limit the plan caps at (kv_batch_limit: the ladder's budget, reserve
    # kept): else the largest drawn batch that does, at a shorter context if even one sequence does not fit (a
    # big model on small cards). A coach's fixed batch stays as fixed and the plan's note says it is capped.
    holds = drawn_kv_limit(inputs, catalog)
    while "cached_tokens" not in fixed and holds is not None and holds < 1 and inputs["cached_tokens"] > CONTEXTS[0]:
        inputs["cached_tokens"] = max(c for c in CONTEXTS if c < inputs["cached_tokens"])
        holds = drawn_kv_limit(inputs, catalog)
    if "batch" not in fixed and holds is not None:
        inputs["batch"] = min(inputs["batch"], max([b for b in BATCHES if b <= holds] or [1]))
    result = evaluate(plan_decode(inputs, catalog))
    ceiling, batch = result.values["ceiling_tok_s"], result.inputs["batch"]  # the batch the step is quoted for
    # One sequence's measured rate: below its share of the ceiling (the replica's ÷ batch).
    measured = max(0.1, round(ceiling / batch * rng.uniform(0.5, 0.92), 1))
    inputs["measured_tok_s"] = fixed.get("measured_tok_s", measured)
    return inputs


def describe_decode(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    weights = widths_phrase(inputs, catalog)
    context = with_aliases(INPUTS, inputs).get("cached_tokens", 0)  # a stored problem may say context
    cache = (f"{context:,} tokens already sit in its {inputs.get('kv_dtype', 'bf16')} KV cache" if context
             else "its KV cache is still empty")
    low, high = inputs.get("efficiency_low", 0.65), inputs.get("efficiency_high", 0.85)
    measured = inputs.get("measured_tok_s")
    closing = (f"You measured {measured:g} tok/s per sequence: what MBU is that?" if measured
               else "Nothing was measured yet: enter 0 for the MBU.")
    batch = inputs.get("batch", 1)
    who = "One user decodes" if batch == 1 else f"A batch of {batch:,} sequences decodes"
    if batch > 1 and context:
        cache = f"each sequence holds {context:,} tokens in its {inputs.get('kv_dtype', 'bf16')} KV cache"
    return (
        f"{who} on {model_phrase(inputs)} with {weights} on {gpu_phrase(inputs, catalog)}, and "
        f"{cache}. {datasheet_phrase(catalog.gpu(inputs['gpu']))} How many bytes does each decode step read for "
        f"the weights (how many copies of the K/V heads does the replica keep?), for the caches and in all? What "
        f"bandwidth does the replica have, and what is the ceiling in tok/s? Real kernels reach "
        f"{low * 100:g}–{_percent(high)} of peak bandwidth: give that range. {closing} Then cost the step at "
        f"{input_or_default(inputs, 'bandwidth_efficiency'):g} of peak bandwidth and an MFU of "
        f"{input_or_default(inputs, 'mfu'):g}, "
        f"with {input_or_default(inputs, 'allreduce_latency_us'):g} µs per all-reduce: its FLOPs, memory, compute and "
        f"communication times, the step time, and the tokens per second per sequence and per replica."
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
DECODE_RUBRIC = (
    "Counts the bytes of a step as the weights once plus every sequence's cache at its context",
    "Uses the whole replica's bandwidth for a tensor-parallel split",
    "States the ceiling as a bound and derates it to a realistic 65–85 % of peak bandwidth",
    "Takes the step as the longer of memory and compute time plus the all-reduces",
    "Separates the rate each user sees from the replica's throughput",
    "Computes MBU from a measured rate against the bytes the step must read",
)


FAMILIES = (
    Family("decode", "Decode step",
           "One decode step of a replica: bytes and FLOPs, the bandwidth ceiling and realistic range, MBU, and "
           "the memory, compute and all-reduce times that set the step and the tokens per second.",
           INPUTS, plan_decode, generate=generate_decode, order=52, describe=describe_decode,
           headlines=("ceiling_tok_s", "realistic_low_tok_s"), chapter="05-prefill-and-decode", rubric=DECODE_RUBRIC,
           offline=Offline(checks=({"kind": "not_above", "low": "efficiency_low", "high": "efficiency_high",
                                    "message": NOT_ABOVE},
                                   DEGREE_RULE))),
)

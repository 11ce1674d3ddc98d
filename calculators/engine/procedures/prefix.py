"""The ``prefix`` family: what prefix caching saves, and the KV cache it pins.

Steps, in order: ``prefix_flops`` (the shared prefix's own prefill, on the
``prefill`` family's convention: 2 × N × P + 4 × layers × d_model × P²),
``flops_saved_per_request`` (× the hit rate: the mean over requests),
``effective_flop_s`` (cards × dense peak × MFU), ``ttft_saved_ms`` (the FLOPs
saved ÷ the compute delivered), ``kv_bytes_per_token`` (formula 1) and
``pinned_gib`` (KV per token × prefix length, once per distinct prefix,
sliding windows applied).

A hit skips the prefix tokens' pass through the weights and their attention
among themselves; the new tokens still attend over the cached prefix, and that
part is not saved.
"""

from __future__ import annotations

import random
from typing import Any

from ..catalog import Catalog
from ..formula import Formula, Var
from ..formulas import memory as F
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from .base import KV_DTYPES_DRAWN, Family, Plan, Result, StepSpec, evaluate, format_number, gpu_supports
from .compute import (
    MFU,
    PRECISION,
    compute_peak_note,
    datasheet_phrase,
    draw_served_model,
    gpu_phrase,
    model_phrase,
    moe_note,
    params_used,
    peak_tflops,
)
from .inputs import (
    GPU,
    GPUS,
    KV_DTYPE,
    MODEL,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    input_or_default,
    resolve_model,
    with_aliases,
)
from .kv import kv_given, kv_notes, kv_per_token_spec, window_note
from .prefill import EFFECTIVE_SPEC, attention_term, flops_given, linear_term, time_ms

PREFIX_TOKENS = InputSpec("prefix_tokens", "int", 1024, "length of the shared prefix (system prompt, tools), "
                          "tokens", minimum=1, maximum=10_000_000, unit="tok", label="Shared prefix")
HIT_RATE = InputSpec("hit_rate", "float", 0.8, "fraction of requests that find the prefix in the cache",
                     minimum=0, maximum=1, label="Prefix hit rate")
DISTINCT_PREFIXES = InputSpec("distinct_prefixes", "int", 1, "distinct prefixes kept in the cache", minimum=1,
                              maximum=1_000_000, label="Distinct prefixes")

INPUTS = (MODEL, GPU, GPUS, PRECISION, KV_DTYPE, PREFIX_TOKENS, HIT_RATE, MFU, DISTINCT_PREFIXES)

STEP_KEYS = ("prefix_flops", "flops_saved_per_request", "effective_flop_s", "ttft_saved_ms", "kv_bytes_per_token",
             "pinned_gib")

# --- formulas --------------------------------------------------------------------------------

PREFIX_FLOPS = Formula(
    "prefix_flops",
    (Var("params", "1", "parameters a token multiplies through"),
     Var("prefix_tokens", "tok", "prefix length"),
     Var("layers", "1", "layers (num_hidden_layers)"),
     Var("hidden_size", "1", "model width d_model (hidden_size)")),
    lambda s: total(linear_term(s, s["prefix_tokens"]), attention_term(s, s["prefix_tokens"])),
)

FLOPS_SAVED = Formula(
    "flops_saved_per_request",
    (Var("hit_rate", "1", "fraction of requests that hit"), Var("prefix_flops", "FLOP", "prefill FLOPs of the prefix")),
    lambda s: product(s["hit_rate"], s["prefix_flops"]),
    label="Prefill FLOPs saved per request",
)

TTFT_SAVED = Formula(
    "ttft_saved_ms",
    (Var("flops_saved_per_request", "FLOP", "FLOPs saved per request"),
     Var("effective_flop_s", "FLOP/s", "compute delivered")),
    lambda s: ratio(s["flops_saved_per_request"], s["effective_flop_s"]),
)

PINNED = Formula(
    "pinned_gib",
    (Var("distinct_prefixes", "1", "distinct prefixes cached"),
     Var("kv_bytes_per_token", "B", "KV cache per token"),
     Var("prefix_tokens", "tok", "prefix length")),
    lambda s: product(s["distinct_prefixes"], s["kv_bytes_per_token"], s["prefix_tokens"]),
    label="KV cache pinned by the prefixes",
)

PINNED_WINDOWED = Formula(
    "pinned_gib",
    (Var("distinct_prefixes", "1", "distinct prefixes cached"),
     Var("kv_bytes_per_token", "B", "KV cache per token, every layer full"),
     Var("prefix_tokens", "tok", "prefix length"), *F.WINDOW_VARS),
    lambda s: product(s["distinct_prefixes"], F.windowed_cache(s, s["prefix_tokens"])),
    label="KV cache pinned by the prefixes (sliding windows applied)",
)

PREFIX_FORMULAS = (PREFIX_FLOPS, FLOPS_SAVED, TTFT_SAVED, PINNED, PINNED_WINDOWED)


def prefix_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The six steps (the KV formulas depend on the model's attention)."""
    return [
        StepSpec(PREFIX_FLOPS,
                 label="Prefill FLOPs of the prefix (2 × N × P + 4 × layers × d_model × P²)"),
        StepSpec(FLOPS_SAVED,
                 {"prefix_flops": "prefix_flops"},
                 label="FLOPs saved per request (hit rate × prefix FLOPs)"),
        EFFECTIVE_SPEC,
        StepSpec(TTFT_SAVED,
                 {"flops_saved_per_request": "flops_saved_per_request", "effective_flop_s": "effective_flop_s"},
                 label="TTFT saved per request, on average"),
        kv_per_token_spec(cfg),
        StepSpec(PINNED_WINDOWED if cfg.window_layers else PINNED, {"kv_bytes_per_token": "kv_bytes_per_token"},
                 label="KV cache the cached prefixes pin (once per distinct prefix)"),
    ]


# --- the procedure ---------------------------------------------------------------------------


def pinned_phrase(distinct: int) -> str:
    """``the one prefix takes`` or ``the 4 prefixes take``."""
    return "the one prefix takes" if distinct == 1 else f"the {distinct:,} prefixes take"


def plan_prefix(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Prefill FLOPs and TTFT a cached prefix saves per request, and the KV cache it pins.

    ``raw`` holds ``model`` or ``config``, ``gpu``, ``gpus``, ``precision``
    (dense TFLOP/s from ``gpus.json``), ``kv_dtype``, ``prefix_tokens``,
    ``hit_rate`` (0 to 1), ``prefill_mfu`` (``mfu`` before) and ``distinct_prefixes``. The reference stack
    with a 1,024-token prefix at 80 % hits: (2 × 8,030,261,248 × 1,024 + 4 × 32 ×
    4,096 × 1,024²) × 0.8 FLOPs saved, 0.125 GiB pinned. Raises
    :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    dense, sparse = peak_tflops(gpu, inputs["precision"])
    given = {
        **kv_given(cfg, inputs["kv_dtype"]),
        **flops_given(cfg),
        "prefix_tokens": inputs["prefix_tokens"],
        "hit_rate": inputs["hit_rate"],
        "gpus": inputs["gpus"],
        "peak_tflops": dense,
        "sparse_tflops": sparse,
        "mfu": inputs["prefill_mfu"],
        "distinct_prefixes": inputs["distinct_prefixes"],
    }

    def finish(result: Result) -> None:
        v = result.values
        ms = lambda value: format_number(value, "ms")  # noqa: E731 - a local shorthand
        per_hit = time_ms(v["prefix_flops"], v["effective_flop_s"])
        per_prefix = v["pinned_gib"] / inputs["distinct_prefixes"]
        notes = [
            "A hit skips the prefix's own prefill: its tokens' pass through the weights and their attention among "
            "themselves (the prefill convention: 4 × layers × d_model × P², no causal halving). The new tokens still "
            "attend over the cached prefix, so that part is not saved.",
            f"Each hit saves {ms(per_hit)} of TTFT; with {inputs['hit_rate'] * 100:g} % of requests hitting, that "
            f"averages {ms(v['ttft_saved_ms'])} per request. Prefix caching shortens TTFT, not only the GPU bill.",
            f"Each distinct prefix pins {format_number(per_prefix, 'GiB')} of KV cache once, however many requests "
            f"share it; {pinned_phrase(inputs['distinct_prefixes'])} {format_number(v['pinned_gib'], 'GiB')} of "
            f"every replica's KV budget, which is no longer there for users.",
            compute_peak_note(gpu, inputs["precision"], dense, sparse, inputs["gpus"]),
            f"Time at {inputs['prefill_mfu'] * 100:g} % MFU; prefill kernels reach about 35–50 % of the dense peak.",
        ]
        notes += window_note(cfg, inputs["prefix_tokens"], "The shared prefix")
        notes += moe_note(cfg, *params_used(cfg), "prefill FLOPs count the used ones.")
        result.notes = notes + kv_notes(cfg) + list(cfg.notes)

    return Plan("prefix", inputs, prefix_specs(cfg), given, [], {"model_name": model_name}, finish=finish)


# --- problems --------------------------------------------------------------------------------

PREFIXES = (256, 512, 1024, 1500, 2048, 4096, 8192)
HIT_RATES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
MFUS = (0.35, 0.4, 0.4, 0.45, 0.5)
DISTINCT = (1, 1, 2, 4, 8, 16, 50)


# Largest share of the memory left after the weights that drawn prefixes may pin.
PINNED_SHARE = 0.25


def generate_prefix(rng: random.Random, catalog: Catalog) -> dict:
    """A prefix-caching problem: a model on the smallest TP degree that holds it, a shared
    prefix the model supports, a hit rate, an MFU and a number of distinct prefixes that
    together pin at most a quarter of the memory the weights leave."""
    drawn = draw_served_model(rng, catalog, precision=True)
    limit = catalog.model(drawn["model"]).config.max_position_embeddings or 8192
    inputs = {"model": drawn["model"], "gpu": drawn["gpu"], "gpus": drawn["gpus"], "precision": drawn["precision"],
              "kv_dtype": rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, drawn["gpu"], "fp8") else "bf16",
              "prefix_tokens": rng.choice([p for p in PREFIXES if p <= limit]),
              "hit_rate": rng.choice(HIT_RATES), "prefill_mfu": rng.choice(MFUS),
              "distinct_prefixes": rng.choice(DISTINCT)}
    free_gib = (drawn["gpus"] * catalog.gpu(drawn["gpu"]).memory_bytes
                - F.weight_bytes(catalog.model(drawn["model"]).config, drawn["weights_dtype"])) / 2**30
    while (inputs["distinct_prefixes"] > 1 or inputs["prefix_tokens"] > PREFIXES[0]) and \
            evaluate(plan_prefix(inputs, catalog)).values["pinned_gib"] > PINNED_SHARE * free_gib:
        if inputs["distinct_prefixes"] > 1:
            inputs["distinct_prefixes"] = DISTINCT[DISTINCT.index(inputs["distinct_prefixes"]) - 1]
        else:
            inputs["prefix_tokens"] = PREFIXES[PREFIXES.index(inputs["prefix_tokens"]) - 1]
    return inputs


def describe_prefix(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    mfu = input_or_default(with_aliases(INPUTS, inputs), "prefill_mfu")  # a stored problem may say mfu
    distinct = inputs.get("distinct_prefixes", 1)
    kept = ("one shared prefix is kept" if distinct == 1
            else f"{distinct:,} distinct prefixes of that length are kept (one per product surface)")
    return (
        f"Requests to {model_phrase(inputs)} on {gpu_phrase(inputs, catalog)} open with the same "
        f"{inputs.get('prefix_tokens', 1024):,}-token prefix, a system prompt with tool definitions, and "
        f"{inputs.get('hit_rate', 0.8) * 100:g} % of them find it in the prefix cache; {kept}. Prefill runs in "
        f"{inputs.get('precision', 'bf16')} at {mfu * 100:g} % MFU. "
        f"{datasheet_phrase(catalog.gpu(inputs['gpu']), inputs.get('precision', 'bf16'))} What does the prefix's own "
        f"prefill cost in FLOPs (2 × N × P plus 4 × layers × d_model × P²), and how much does the cache save per "
        f"request on average, in FLOPs and in TTFT? With the KV cache in {inputs.get('kv_dtype', 'bf16')}, how "
        f"many bytes per token does the model store, and how many GiB do the cached prefixes pin?"
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
PREFIX_RUBRIC = (
    "Counts the prefix's own prefill as the saving of a hit",
    "Averages by the request hit rate, not the per-hit saving",
    "Notes the hit saves prefill (TTFT), not decode bandwidth",
    "Charges the pinned blocks against the KV budget",
)


FAMILIES = (
    Family("prefix", "Prefix caching",
           "Prefill FLOPs and TTFT a shared prefix saves per request, and the KV cache it pins.",
           INPUTS, plan_prefix, generate=generate_prefix,
           order=56, describe=describe_prefix,
           headlines=("ttft_saved_ms", "pinned_gib"), chapter="10-paged-memory-and-prefix-caching", difficulty=3,
           rubric=PREFIX_RUBRIC),
)

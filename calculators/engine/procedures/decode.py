"""The ``decode`` family: the single-stream decode ceiling and the range to expect (formula 4).

Steps, in order: ``weight_bytes_per_step`` (the parameters one token uses ×
bits ÷ 8), ``kv_bytes_per_step`` (the KV cache of the tokens already in
context, read once per step; sliding windows applied), ``bytes_per_step``,
``bandwidth_gb_s`` (the replica's cards add up under tensor parallelism),
``ceiling_tok_s`` (bandwidth ÷ bytes per step: 3,350 GB/s ÷ 16,060,522,496 B =
208.6 tok/s for the reference stack at zero context), ``realistic_low_tok_s``
and ``realistic_high_tok_s`` (the ceiling × 0.65 and × 0.85: 135.6–177.3 tok/s)
and ``mbu`` (a measured rate's bytes per second ÷ peak bandwidth).

The step list never changes: without a measured rate, ``mbu`` is 0 and a note
says so.
"""

from __future__ import annotations

import random
from typing import Any

from .. import formulas as F
from ..catalog import Catalog
from ..dtypes import NOMINAL_BITS, weight_bits
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from ..misconceptions import MisconceptionInfo
from .base import Result, StepSpec, format_number, run
from .drawing import KV_DTYPES_DRAWN, gpu_supports
from .family import Family
from .inputs import (GPU, GPUS, KV_DTYPE, MODEL, WEIGHTS_BITS, WEIGHTS_DTYPE, InputSpec, catalog_or_default,
                     clean_inputs, resolve_model)
from .kv import kv_given, kv_notes
from .roofline import (ROOFLINE_AS_EXPECTATION, datasheet_phrase, draw_served_model, gpu_phrase, model_phrase,
                       moe_note, params_used)

CONTEXT = InputSpec("context", "int", 0, "tokens already in the KV cache, read at every step", minimum=0,
                    maximum=10_000_000, unit="tok", label="Tokens in the cache")
# 0.65–0.85: the share of peak bandwidth real decode kernels achieve (the runbook map's errata, seed 000).
EFFICIENCY_LOW = InputSpec("efficiency_low", "float", 0.65, "low end of the fraction of peak bandwidth "
                           "real kernels reach", minimum=0, maximum=1, exclusive_minimum=True)
EFFICIENCY_HIGH = InputSpec("efficiency_high", "float", 0.85, "high end of the fraction of peak bandwidth "
                            "real kernels reach", minimum=0, maximum=1, exclusive_minimum=True)
MEASURED_TOK_S = InputSpec("measured_tok_s", "float", None, "measured single-stream decode rate, for the MBU "
                           "(optional)", minimum=0, maximum=1_000_000, exclusive_minimum=True, unit="tok/s")

INPUTS = (MODEL, GPU, GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, CONTEXT, EFFICIENCY_LOW, EFFICIENCY_HIGH,
          MEASURED_TOK_S)

STEP_KEYS = ("weight_bytes_per_step", "kv_bytes_per_step", "bytes_per_step", "bandwidth_gb_s", "ceiling_tok_s",
             "realistic_low_tok_s", "realistic_high_tok_s", "mbu")

# --- formulas --------------------------------------------------------------------------------

WEIGHT_BYTES_PER_STEP = Formula(
    "weight_bytes_per_step", "Weights read per step", "B",
    (Var("params_read", "1", "parameters one token uses"), Var("weight_bits", "bit", "bits per weight")),
    lambda s: product(s["params_read"], s["weight_bits"]),
)

KV_BYTES_PER_STEP = Formula(
    "kv_bytes_per_step", "KV cache read per step", "B",
    (Var("kv_bytes_per_token", "B", "KV cache per token"), Var("context", "tok", "tokens in the cache")),
    lambda s: product(s["kv_bytes_per_token"], s["context"]),
)

# A sliding-window layer reads at most its window; full layers read the whole context.
KV_BYTES_PER_STEP_WINDOWED = Formula(
    "kv_bytes_per_step", "KV cache read per step (sliding windows applied)", "B",
    (Var("kv_bytes_per_token", "B", "KV cache per token, every layer full"),
     Var("context", "tok", "tokens in the cache"), *F.WINDOW_VARS),
    lambda s: F.windowed_cache(s, s["context"]),
)

BYTES_PER_STEP = Formula(
    "bytes_per_step", "Bytes read per step", "B",
    (Var("weight_bytes_per_step", "B", "weights read"), Var("kv_bytes_per_step", "B", "KV cache read")),
    lambda s: total(s["weight_bytes_per_step"], s["kv_bytes_per_step"]),
)

BANDWIDTH = Formula(
    "bandwidth_gb_s", "Memory bandwidth of the replica", "GB/s",
    (Var("gpus", "GPUs", "cards in the replica"), Var("card_bandwidth", "GB/s", "bandwidth per card")),
    lambda s: product(s["gpus"], s["card_bandwidth"]),
)

CEILING = Formula(
    "ceiling_tok_s", "Decode ceiling", "tok/s",
    (Var("bandwidth_gb_s", "GB/s", "memory bandwidth"), Var("bytes_per_step", "B", "bytes read per step")),
    lambda s: ratio(s["bandwidth_gb_s"], s["bytes_per_step"]),
)

REALISTIC_LOW = Formula(
    "realistic_low_tok_s", "Realistic decode rate, low end", "tok/s",
    (Var("ceiling_tok_s", "tok/s", "decode ceiling"), Var("efficiency_low", "1", "fraction of peak, low")),
    lambda s: product(s["ceiling_tok_s"], s["efficiency_low"]),
)

REALISTIC_HIGH = Formula(
    "realistic_high_tok_s", "Realistic decode rate, high end", "tok/s",
    (Var("ceiling_tok_s", "tok/s", "decode ceiling"), Var("efficiency_high", "1", "fraction of peak, high")),
    lambda s: product(s["ceiling_tok_s"], s["efficiency_high"]),
)

MBU = Formula(
    "mbu", "Memory-bandwidth utilisation", "1",
    (Var("measured_tok_s", "tok/s", "measured decode rate"),
     Var("bytes_per_step", "B", "bytes read per step"),
     Var("bandwidth_gb_s", "GB/s", "peak memory bandwidth")),
    lambda s: ratio(product(s["measured_tok_s"], s["bytes_per_step"]), s["bandwidth_gb_s"]),
)

DECODE_FORMULAS = (WEIGHT_BYTES_PER_STEP, KV_BYTES_PER_STEP, KV_BYTES_PER_STEP_WINDOWED, BYTES_PER_STEP, BANDWIDTH,
                   CEILING, REALISTIC_LOW, REALISTIC_HIGH, MBU)


def decode_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The eight steps (the KV read depends on whether the model has sliding windows)."""
    kv = KV_BYTES_PER_STEP_WINDOWED if cfg.window_layers else KV_BYTES_PER_STEP
    return [
        StepSpec("weight_bytes_per_step", "Weights read per step (parameters a token uses × bytes)",
                 WEIGHT_BYTES_PER_STEP),
        StepSpec("kv_bytes_per_step", "KV cache read per step (the tokens already in context)", kv),
        StepSpec("bytes_per_step", "Bytes read per step", BYTES_PER_STEP,
                 {"weight_bytes_per_step": "weight_bytes_per_step", "kv_bytes_per_step": "kv_bytes_per_step"}),
        StepSpec("bandwidth_gb_s", "Memory bandwidth of the replica", BANDWIDTH),
        StepSpec("ceiling_tok_s", "Decode ceiling (bandwidth ÷ bytes per step)", CEILING,
                 {"bandwidth_gb_s": "bandwidth_gb_s", "bytes_per_step": "bytes_per_step"}),
        StepSpec("realistic_low_tok_s", "Realistic rate, low end (ceiling × low efficiency)", REALISTIC_LOW,
                 {"ceiling_tok_s": "ceiling_tok_s"}),
        StepSpec("realistic_high_tok_s", "Realistic rate, high end (ceiling × high efficiency)", REALISTIC_HIGH,
                 {"ceiling_tok_s": "ceiling_tok_s"}),
        StepSpec("mbu", "MBU of the measured rate (0 when none is given)", MBU,
                 {"bytes_per_step": "bytes_per_step", "bandwidth_gb_s": "bandwidth_gb_s"}),
    ]


# --- misconceptions --------------------------------------------------------------------------

KV_READ_IGNORED = MisconceptionInfo(
    "kv-read-ignored", "KV cache read left out",
    "Each decode step reads the sequence's whole KV cache as well as the weights; at long contexts that read "
    "rivals the weights and the ceiling falls with every token.",
    "/runbook/05-prefill-and-decode/#decode-ceiling")


def _kv_ignored_bytes(g, s):
    return s["weight_bytes_per_step"] if s["kv_bytes_per_step"] > 0 else None


def _kv_ignored_ceiling(g, s):
    if s["kv_bytes_per_step"] <= 0:
        return None
    return CEILING({"bandwidth_gb_s": s["bandwidth_gb_s"], "bytes_per_step": s["weight_bytes_per_step"]})


def _nominal_4bit(g, s):
    if g["weights_dtype_bits_nominal"] != 4 or g["weight_bits"] == 4:
        return None
    return WEIGHT_BYTES_PER_STEP({**g, "weight_bits": 4})


VARIANTS = {
    "weight_bytes_per_step": (
        ("bits-for-bytes", lambda g, s: WEIGHT_BYTES_PER_STEP(g) * 8),
        ("nominal-4bit", _nominal_4bit),
    ),
    "bytes_per_step": (("kv-read-ignored", _kv_ignored_bytes),),
    "ceiling_tok_s": (("kv-read-ignored", _kv_ignored_ceiling),),
    "realistic_low_tok_s": (("roofline-as-expectation", lambda g, s: s["ceiling_tok_s"]),),
    "realistic_high_tok_s": (("roofline-as-expectation", lambda g, s: s["ceiling_tok_s"]),),
}

# --- the procedure ---------------------------------------------------------------------------


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str) -> float:
    """KV cache bytes per token, every layer counted as full (formula 1, or MLA's latent)."""
    given = kv_given(cfg, kv_dtype)
    return (F.KV_BYTES_PER_TOKEN_MLA if cfg.kv_lora_rank else F.KV_BYTES_PER_TOKEN)(given)


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g} %"


def run_decode(raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
    """Single-stream decode: bytes read per step, the bandwidth ceiling, the realistic range, MBU.

    ``raw`` holds ``model`` or ``config``, ``gpu`` and ``gpus`` (tensor parallel:
    bandwidth adds up), ``weights_dtype``/``weights_bits``, ``kv_dtype``,
    ``context`` (tokens in the cache, default 0), ``efficiency_low``/``_high``
    (fractions of peak bandwidth, default 0.65 and 0.85) and optionally
    ``measured_tok_s``. Bandwidth is ``gpus.json``'s ``memory_bandwidth_GBps``.
    The reference stack gives 208.6 tok/s, 135.6–177.3 realistic. Raises
    :class:`~..errors.EngineError` subclasses on bad input (an efficiency range
    whose low end is above its high end: field ``efficiency_low``).
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    if inputs["efficiency_low"] > inputs["efficiency_high"]:
        raise InputError(f"efficiency_low ({inputs['efficiency_low']:g}) must not be above efficiency_high "
                         f"({inputs['efficiency_high']:g}).", field="efficiency_low")
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    total_params, active = params_used(cfg)
    bits = weight_bits(inputs["weights_dtype"], inputs["weights_bits"])
    measured = inputs["measured_tok_s"]
    given = {
        **kv_given(cfg, inputs["kv_dtype"]),
        "kv_bytes_per_token": kv_bytes_per_token(cfg, inputs["kv_dtype"]),
        "params_read": active,
        "weight_bits": bits,
        "weights_dtype_bits_nominal": NOMINAL_BITS[inputs["weights_dtype"]],
        "context": inputs["context"],
        "gpus": inputs["gpus"],
        "card_bandwidth": gpu.bandwidth_gb_s,
        "efficiency_low": inputs["efficiency_low"],
        "efficiency_high": inputs["efficiency_high"],
        "measured_tok_s": measured or 0.0,
    }
    result = run("decode", inputs, decode_specs(cfg), given, [], {"model_name": model_name})
    v = result.values
    tok_s = lambda value: format_number(value, "tok/s")  # noqa: E731 - a local shorthand
    cache = (f"the KV cache of the {inputs['context']:,} tokens already in context" if inputs["context"]
             else "the KV cache, empty at a context of 0")
    notes = [
        f"Each step produces one token and reads every weight that token uses once "
        f"({active:,} parameters at {bits:g} bits) plus {cache}; activations and the new token's own K and V "
        f"are left out."
    ]
    notes.append(
        f"The ceiling is a bound, not a forecast: real kernels reach about {inputs['efficiency_low'] * 100:g}–"
        f"{_percent(inputs['efficiency_high'])} of peak bandwidth, so plan on {tok_s(v['realistic_low_tok_s'])} to "
        f"{tok_s(v['realistic_high_tok_s'])}, and less as the cache grows."
    )
    if inputs["gpus"] > 1:
        notes.append(
            f"{inputs['gpus']} cards in tensor parallel: each reads its 1/{inputs['gpus']} share of the weights and "
            f"cache, so the bandwidths add up; the all-reduce at every layer is left out, so real scaling is "
            f"below linear."
        )
    if measured:
        notes.append(
            f"The measured {tok_s(measured)} moves {format_number(measured * v['bytes_per_step'] / 1e9, 'GB/s')} "
            f"of the {format_number(v['bandwidth_gb_s'], 'GB/s')} peak: MBU {v['mbu']:.0%}."
        )
        if v["mbu"] > 1:
            notes.append("An MBU above 1 is impossible for plain decoding: the measurement must include "
                         "speculative decoding or batching, or fewer bytes are read than counted here.")
    else:
        notes.append("No measured rate was given, so mbu is 0; enter measured_tok_s to get the MBU.")
    weights_bytes = total_params * bits / 8
    cards_bytes = inputs["gpus"] * gpu.memory_bytes
    needed = weights_bytes + v["kv_bytes_per_step"]
    if needed > cards_bytes:
        notes.insert(0, f"The weights and this cache ({format_number(needed / 2**30, 'GiB')}) do not fit in "
                        f"{inputs['gpus']} × {gpu.name} ({format_number(cards_bytes / 2**30, 'GiB')}): the "
                        f"ceiling is hypothetical. The capacity ladder finds a replica that fits.")
    limit = cfg.max_position_embeddings
    if limit and inputs["context"] > limit:
        notes.append(f"The context of {inputs['context']:,} tokens is beyond the model's limit of {limit:,}.")
    notes += moe_note(cfg, total_params, active,
                      "a single stream reads only the experts it is routed to, so the bytes are the used ones.")
    if bits != NOMINAL_BITS[inputs["weights_dtype"]]:
        notes.append(f"{inputs['weights_dtype']} weights are charged {bits:g} bits each (block scales included), "
                     f"not the nominal {NOMINAL_BITS[inputs['weights_dtype']]}.")
    result.notes = notes + kv_notes(cfg) + list(cfg.notes)
    return result


# --- problems --------------------------------------------------------------------------------

CONTEXTS = (0, 0, 1024, 2048, 4096, 8192, 16384, 32768)
EFFICIENCIES = ((0.65, 0.85), (0.65, 0.85), (0.65, 0.85), (0.6, 0.8), (0.7, 0.9))


def generate_decode(rng: random.Random, catalog: Catalog) -> dict:
    """A decode problem: a model on the smallest TP degree that holds its weights, a context
    the model supports, and a measured rate between 50 % and 92 % of the ceiling."""
    inputs = draw_served_model(rng, catalog)
    limit = catalog.model(inputs["model"]).config.max_position_embeddings or 8192
    inputs["kv_dtype"] = rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, inputs["gpu"], "fp8") else "bf16"
    inputs["context"] = rng.choice([c for c in CONTEXTS if c <= limit])
    inputs["efficiency_low"], inputs["efficiency_high"] = rng.choice(EFFICIENCIES)
    ceiling = run_decode(inputs, catalog).values["ceiling_tok_s"]
    inputs["measured_tok_s"] = max(0.1, round(ceiling * rng.uniform(0.5, 0.92), 1))
    return inputs


def describe_decode(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    dtype = inputs.get("weights_dtype", "bf16")
    bits = weight_bits(dtype, inputs.get("weights_bits"))
    weights = f"{dtype} weights" + (f" (charged {bits:g} bits each)" if bits != NOMINAL_BITS[dtype] else "")
    context = inputs.get("context", 0)
    cache = (f"{context:,} tokens already sit in its {inputs.get('kv_dtype', 'bf16')} KV cache" if context
             else "its KV cache is still empty")
    low, high = inputs.get("efficiency_low", 0.65), inputs.get("efficiency_high", 0.85)
    measured = inputs.get("measured_tok_s")
    closing = (f"You measured {measured:g} tok/s: what MBU is that?" if measured
               else "Nothing was measured yet: enter 0 for the MBU.")
    return (
        f"One user decodes on {model_phrase(inputs)} with {weights} on {gpu_phrase(inputs, catalog)}, and "
        f"{cache}. {datasheet_phrase(catalog.gpu(inputs['gpu']))} How many bytes does each decode step read for "
        f"the weights, for the cache and in all? What "
        f"bandwidth does the replica have, and what is the single-stream ceiling in tok/s? Real kernels reach "
        f"{low * 100:g}–{_percent(high)} of peak bandwidth: give that range. {closing}"
    )


FAMILIES = (
    Family("decode", "Decode ceiling",
           "Single-stream decode: bytes read per step, the bandwidth ceiling, the realistic range and MBU.",
           INPUTS, run_decode, generate=generate_decode, variants=VARIANTS,
           misconceptions=(ROOFLINE_AS_EXPECTATION, KV_READ_IGNORED), order=52, describe=describe_decode),
)

"""The ``roofline`` family: ridge point, arithmetic intensity and the verdict (formula 4).

Steps, in order: ``ridge_flop_per_byte`` (dense peak FLOP/s ÷ memory
bandwidth), ``decode_flop_per_byte`` (a decode step at batch B: 2 × N_active ×
B FLOPs over the N_total × bits ÷ 8 weight bytes it reads), ``prefill_flop_per_byte``
(a prompt of L tokens, same convention), the two verdicts ``decode_bound`` and
``prefill_bound`` (1 = compute-bound, 0 = memory-bound) and ``batch_at_ridge``
(the largest decode batch still under the ridge: ⌊ridge × N_total × bits ÷ 8
÷ (2 × N_active)⌋, 295 at bf16 for the reference stack).

Convention (said in the notes): bytes are the weights only — every weight read
once per forward pass; the KV cache read and activations are left out, which
makes the decode intensity an upper bound that falls as the context grows.
FLOPs are the linear term 2 × N per token; prefill's attention term is left
out here (the ``prefill`` family has it).

What the compute families share (the precision input, the peak lookup, the
generators' helpers) is in :mod:`.compute`.
"""

from __future__ import annotations

import random
from typing import Any

from sympy import Max, Min, floor

from ..catalog import NOMINAL_BITS, Catalog, Gpu, article
from ..formula import Formula, Var
from ..formulas import memory as F
from ..formulas import product, ratio, total
from ..formulas.serving import RIDGE as SERVING_RIDGE
from ..formulas.serving import flops_per_sequence
from ..hf_config import ModelConfig
from ..step_model import attention_head_dim, kv_bytes_per_token
from .base import (
    Family,
    Plan,
    Result,
    StepSpec,
    computing_gpus,
    format_number,
    widths_given,
    widths_notes,
    widths_phrase,
)
from .compute import (
    MAX_DRAWS,
    PRECISION,
    PROMPT_TOKENS,
    compute_peak_note,
    datasheet_phrase,
    model_phrase,
    moe_note,
    params_used,
    peak_tflops,
    smallest_fitting_degree,
)
from .inputs import (
    GPU,
    KV_DTYPE,
    MODEL,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    resolve_model,
    with_aliases,
)
from .kv import sparse_limit_note

# --- The roofline at a context (docs/architecture.md §12): decode's intensity once the KV cache is read too.

_CONTEXT_VARS = (
    Var("heads", "1", "query heads (num_attention_heads)"),
    Var("attention_head_dim", "1", "values per query head in attention (MLA: absorbed)"),
    Var("context", "tok", "tokens in each sequence's cache"),
    Var("full_layers", "1", "layers attending over the whole context"),
    Var("window_layers", "1", "layers with a sliding window"),
    Var("window", "tok", "sliding window"),
    Var("layers", "1", "layers (num_hidden_layers)"),
    Var("kv_bytes_per_token", "B", "KV cache per token, every layer full"),
)


def _cached(s):
    """Token-layers in one sequence's cache: full layers × c + windowed layers × min(c, window)."""
    return total(product(s["full_layers"], s["context"]), product(s["window_layers"], Min(s["context"], s["window"])))




def _cache_bytes(s):
    return ratio(product(s["kv_bytes_per_token"], _cached(s)), s["layers"])


_TOTAL = Var("total_params", "1", "parameters read from memory")
_BITS = Var("weight_bits", "bit", "bits per weight")
# A mixture of experts: its routed experts a term of their own, at their own width (gpt-oss's MXFP4 experts).
_MOE_WEIGHT_VARS = (_TOTAL, Var("routed_expert_params", "1", "parameters of all routed experts"),
                    Var("weight_bits", "bit", "bits per weight outside the routed experts"),
                    Var("expert_weight_bits", "bit", "bits per routed-expert parameter"))


def _weights_read(s, moe: bool):
    """Weight bits read once: every parameter at one width, or a mixture of experts' two terms."""
    if not moe:
        return product(s["total_params"], s["weight_bits"])
    return total(product(s["total_params"] - s["routed_expert_params"], s["weight_bits"]),
                 product(s["routed_expert_params"], s["expert_weight_bits"]))


def _decode_intensity(moe: bool) -> Formula:
    return Formula(
        "decode_flop_per_byte",
        (Var("active_params", "1", "parameters a token multiplies through"),
         Var("batch", "1", "sequences decoding together"),
         *(_MOE_WEIGHT_VARS if moe else (_TOTAL, _BITS)), *_CONTEXT_VARS),
        lambda s: ratio(product(s["batch"], flops_per_sequence(s)),
                        total(_weights_read(s, moe), product(s["batch"], _cache_bytes(s)))),
        label="Arithmetic intensity of decode at the context" + (" (routed experts at their own width)" if moe
                                                                  else ""),
    )


DECODE_INTENSITY = _decode_intensity(False)
DECODE_INTENSITY_MOE = _decode_intensity(True)

# 1 when one sequence's FLOPs per byte of its own cache reach the ridge (a large enough batch gets
# there), else 0: ⌊2 − ridge × cache bytes ÷ FLOPs⌋ clipped to [0, 1] is 1 exactly when
# ridge × cache bytes ≤ FLOPs, and 1 at an empty cache.
RIDGE_REACHABLE = Formula(
    "ridge_reachable",
    (Var("ridge_flop_per_byte", "FLOP/byte", "ridge point"),
     Var("active_params", "1", "parameters a token multiplies through"), *_CONTEXT_VARS),
    lambda s: Max(0, Min(1, floor(2 - ratio(product(s["ridge_flop_per_byte"], _cache_bytes(s)),
                                            flops_per_sequence(s))))),
    label="Some batch reaches the ridge at this context (1) or none does (0)",
)


def context_given(cfg: ModelConfig, kv_dtype: str, context: int) -> dict[str, float]:
    """The config numbers the context terms read (one copy of the cache: the roofline is one card)."""
    return {
        "heads": cfg.heads,
        "attention_head_dim": attention_head_dim(cfg),
        "context": context,
        "full_layers": cfg.full_layers,
        "window_layers": cfg.window_layers,
        "window": cfg.sliding_window,
        "layers": cfg.layers,
        "kv_bytes_per_token": kv_bytes_per_token(cfg, kv_dtype),
    }


def sequence_intensity(given: dict[str, float]) -> float | None:
    """FLOP per byte of one sequence against its own cache (the large-batch limit), or None at c = 0."""
    cached = given["full_layers"] * given["context"] + given["window_layers"] * min(given["context"],
                                                                                      given["window"])
    if not cached:
        return None
    flops = 2 * given["active_params"] + 4 * given["heads"] * given["attention_head_dim"] * cached
    return flops / (given["kv_bytes_per_token"] * cached / given["layers"])


def reach_notes(given: dict, v: dict, fmt) -> list[str]:
    """What the batch at the ridge means once the caches are read, and whether any batch gets there."""
    batch = int(v["batch_at_ridge"])
    notes = [f"Weights only, one weight read serves every sequence: {batch:,} sequences reach the ridge. That is "
             f"an upper bound, not a free lunch: every sequence also reads its own KV cache each step, so the "
             f"step time grows with the batch even below the ridge (the decode calculator prices it)."]
    limit = sequence_intensity(given)
    if limit is not None:
        verdict = ("some large batch still reaches the ridge" if v["ridge_reachable"] else
                   "no batch ever reaches the ridge: decode stays memory-bound however many sequences share the "
                   "weights")
        notes.append(f"At {given['context']:,} tokens of context, a large batch tends to one sequence's FLOPs over "
                     f"its own cache bytes, {fmt(limit)} against a ridge of {fmt(v['ridge_flop_per_byte'])}: "
                     f"{verdict} (ridge_reachable = {v['ridge_reachable']:g}).")
    return notes


RIDGE = SERVING_RIDGE  # one formula, shared with moe (quantities.py)

def _prefill_intensity(moe: bool) -> Formula:
    return Formula(
        "prefill_flop_per_byte",
        (Var("active_params", "1", "parameters a token multiplies through"),
         Var("prompt_tokens", "tok", "prompt length"), *(_MOE_WEIGHT_VARS if moe else (_TOTAL, _BITS))),
        lambda s: ratio(product(2, s["active_params"], s["prompt_tokens"]), _weights_read(s, moe)),
        label="Arithmetic intensity of prefill" + (" (routed experts at their own width)" if moe else ""),
    )


PREFILL_INTENSITY = _prefill_intensity(False)
PREFILL_INTENSITY_MOE = _prefill_intensity(True)


def _verdict(key: str, label: str, intensity: str) -> Formula:
    """1 when ``intensity`` reaches the ridge (compute-bound), else 0."""
    return Formula(
        key,
        (Var(intensity, "FLOP/byte", "arithmetic intensity"), Var("ridge_flop_per_byte", "FLOP/byte", "ridge point")),
        lambda s: Min(1, floor(ratio(s[intensity], s["ridge_flop_per_byte"]))),
        label=label,
    )


DECODE_BOUND = _verdict("decode_bound", "Decode compute-bound (1) or memory-bound (0)", "decode_flop_per_byte")
PREFILL_BOUND = _verdict("prefill_bound", "Prefill compute-bound (1) or memory-bound (0)", "prefill_flop_per_byte")

def _batch_at_ridge(moe: bool) -> Formula:
    return Formula(
        "batch_at_ridge",
        (Var("ridge_flop_per_byte", "FLOP/byte", "ridge point"), *(_MOE_WEIGHT_VARS if moe else (_TOTAL, _BITS)),
         Var("active_params", "1", "parameters a token multiplies through")),
        lambda s: floor(ratio(product(s["ridge_flop_per_byte"], _weights_read(s, moe)),
                              product(2, s["active_params"]))),
        label="Batch at the ridge" + (" (routed experts at their own width)" if moe else ""),
    )


BATCH_AT_RIDGE = _batch_at_ridge(False)
BATCH_AT_RIDGE_MOE = _batch_at_ridge(True)

ROOFLINE_FORMULAS = (RIDGE, DECODE_INTENSITY, PREFILL_INTENSITY, DECODE_BOUND, PREFILL_BOUND, BATCH_AT_RIDGE,
                     RIDGE_REACHABLE, DECODE_INTENSITY_MOE, PREFILL_INTENSITY_MOE, BATCH_AT_RIDGE_MOE)

STEP_KEYS = ("ridge_flop_per_byte", "decode_flop_per_byte", "prefill_flop_per_byte", "decode_bound",
             "prefill_bound", "batch_at_ridge", "ridge_reachable")

def roofline_specs(moe: bool) -> list[StepSpec]:
    """The seven steps; a mixture of experts' weights read carry its routed experts as a term of their own."""
    return [
        StepSpec(RIDGE, label="Ridge point (dense peak ÷ bandwidth)"),
        StepSpec(DECODE_INTENSITY_MOE if moe else DECODE_INTENSITY,
                 label="Arithmetic intensity of one decode step at the batch"),
        StepSpec(PREFILL_INTENSITY_MOE if moe else PREFILL_INTENSITY,
                 label="Arithmetic intensity of prefill at the prompt length"),
        StepSpec(DECODE_BOUND,
                 {"decode_flop_per_byte": "decode_flop_per_byte", "ridge_flop_per_byte": "ridge_flop_per_byte"},
                 rounding="floor",
                 label="Decode verdict: compute-bound or memory-bound"),
        StepSpec(PREFILL_BOUND,
                 {"prefill_flop_per_byte": "prefill_flop_per_byte", "ridge_flop_per_byte": "ridge_flop_per_byte"},
                 rounding="floor",
                 label="Prefill verdict: compute-bound or memory-bound"),
        StepSpec(BATCH_AT_RIDGE_MOE if moe else BATCH_AT_RIDGE, {"ridge_flop_per_byte": "ridge_flop_per_byte"},
                 rounding="floor",
                 label="Batch at the ridge, weights only (largest batch still memory-bound, rounded down)"),
        StepSpec(RIDGE_REACHABLE,
                 {"ridge_flop_per_byte": "ridge_flop_per_byte"}, rounding="floor",
                 label="Does any batch reach the ridge at this context? (yes or no)"),
    ]


SPECS = roofline_specs(False)

BATCH = InputSpec("batch", "int", 1, "sequences decoding together (decode batch)", minimum=1, maximum=1_000_000,
                  unit="users", label="Decode batch")
# Tokens already cached, not a context limit: its own key (issue 29); ``context``, its older key, is still read.
CACHED_TOKENS = InputSpec("cached_tokens", "int", 0, "tokens already in each sequence's KV cache (0: weights "
                          "only)", minimum=0, maximum=10_000_000, unit="tok", label="Tokens in the cache",
                          older_names=("context",))
INPUTS = (MODEL, GPU, PRECISION, WEIGHTS_DTYPE, WEIGHTS_BITS, BATCH, PROMPT_TOKENS, CACHED_TOKENS, KV_DTYPE)

# --- misconceptions --------------------------------------------------------------------------

def _sparse_ridge(g) -> float | None:
    return RIDGE({"peak_tflops": g["sparse_tflops"], "bandwidth": g["bandwidth"]}) if g["sparse_tflops"] else None


# --- the procedure ---------------------------------------------------------------------------


def _bound_words(value: float) -> str:
    return "compute-bound" if value >= 1 else "memory-bound"


def _notes(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any], given: dict[str, Any],
           v: dict[str, float]) -> list[str]:
    """The roofline's notes: the peak used, the bytes and FLOPs convention, both verdicts, the ridge's reach,
    a mixture of experts' parameter counts and the weights' charged width."""
    dense, sparse, bits = given["peak_tflops"], given["sparse_tflops"], given["weight_bits"]
    total, active = given["total_params"], given["active_params"]
    ridge = v["ridge_flop_per_byte"]
    fmt = lambda value: format_number(value, "FLOP/byte")  # noqa: E731 - a local shorthand
    notes = [compute_peak_note(gpu, inputs["precision"], dense, sparse)
             + (f" With it the ridge would sit at {fmt(_sparse_ridge(given))}, twice the true one."
                if sparse else "")]
    notes.append(
        f"Decode bytes are the weights ({bits:g} bits per parameter, read once per step) plus each sequence's KV "
        f"cache at {inputs['cached_tokens']:,} tokens; decode FLOPs are 2 per active parameter plus the attention over "
        f"the cache, per sequence. Activations are left out. Prefill counts 2 FLOPs per parameter per token and "
        f"leaves its attention term out (the prefill calculator adds it), which only pushes prefill further right."
    )
    notes.append(
        f"Decode at a batch of {inputs['batch']:,}: {fmt(v['decode_flop_per_byte'])} against a ridge of "
        f"{fmt(ridge)}, so it is {_bound_words(v['decode_bound'])} (decode_bound = {v['decode_bound']:g}). "
        f"Prefill of {inputs['prompt_tokens']:,} tokens: {fmt(v['prefill_flop_per_byte'])}, so it is "
        f"{_bound_words(v['prefill_bound'])} (prefill_bound = {v['prefill_bound']:g})."
    )
    notes += reach_notes(given, v, fmt) + sparse_limit_note(cfg, "The decode intensity at the context")
    notes += moe_note(cfg, total, active,
                      "FLOPs count the used ones and bytes all of them, as a large batch touches every expert. "
                      "At small batches only the routed experts are read, so the true intensity there is higher.")
    notes += widths_notes(cfg, inputs)
    if bits != NOMINAL_BITS[inputs["weights_dtype"]] and bits == given["expert_weight_bits"]:
        notes.append(f"{inputs['weights_dtype']} weights are charged {bits:g} bits each (block scales included), "
                     f"not the nominal {NOMINAL_BITS[inputs['weights_dtype']]}.")
    return notes


def plan_roofline(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Ridge point, intensities of decode and prefill, verdicts and the batch at the ridge.

    ``raw`` holds ``gpu`` and ``precision`` (the card's dense TFLOP/s at that
    precision, ``gpus.json``'s ``tflops.<precision>_dense``, over its
    ``memory_bandwidth_GBps``), ``model`` or ``config``, ``weights_dtype`` and
    ``weights_bits`` (bytes read per parameter), ``batch`` (sequences) and
    ``prompt_tokens``; missing ones take the reference stack's values (H100 SXM,
    bf16, Llama-3.1-8B, batch 1, 2,048 tokens): a ridge of 989.4 ÷ 3,350 × 1,000 =
    295.3 FLOP/byte and a batch at the ridge of 295. Raises
    :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    dense, sparse = peak_tflops(gpu, inputs["precision"])
    _, active = params_used(cfg)
    given = {
        "peak_tflops": dense,
        "sparse_tflops": sparse,
        "bandwidth": gpu.bandwidth_gb_s,
        "active_params": active,
        **F.weights_given(cfg, inputs["weights_dtype"], inputs["weights_bits"]),
        **widths_given(cfg, inputs),
        "batch": inputs["batch"],
        "prompt_tokens": inputs["prompt_tokens"],
        **context_given(cfg, inputs["kv_dtype"], inputs["cached_tokens"]),
    }

    def finish(result: Result) -> None:
        result.notes = _notes(cfg, gpu, inputs, given, result.values) + list(cfg.notes)

    return Plan("roofline", inputs, roofline_specs(cfg.is_moe), given, [], {"model_name": model_name}, finish=finish)


# --- problems --------------------------------------------------------------------------------

BATCHES = (1, 1, 8, 16, 32, 64, 128, 256, 512, 1024)
PROMPTS = (128, 256, 512, 1024, 2048, 4096, 8192)
# Weights only half the time (the classic problem), else a cache that lowers the intensity.
CONTEXTS_DRAWN = (0, 0, 0, 1024, 2048, 8192, 32768)
# (compute precision, weight format): W16A16, W8A8, W8A16 and W4A16 deployments.
PAIRS = (("bf16", "bf16"), ("bf16", "bf16"), ("fp16", "fp16"), ("fp8", "fp8"), ("int8", "int8"),
         ("bf16", "int8"), ("bf16", "int4"))


def generate_roofline(rng: random.Random, catalog: Catalog) -> dict:
    """A roofline problem: a card at a precision it computes in, a model whose weights fit that one
    card (the problem says "on one <card>"), a decode batch and a prompt length; int4 weights at an
    effective 4.5 bits. Raises ``RuntimeError`` when no drawn (model, card, format) fits one card
    (a catalog pinned to a model too large for the card: :func:`drills.problems.generation.generate_inputs`
    turns it into a sentence).
    """
    for _ in range(MAX_DRAWS):
        gpu = rng.choice(sorted(computing_gpus(catalog)))
        precision, dtype = rng.choice(PAIRS)
        if not catalog.gpu(gpu).dense_tflops.get(precision):
            precision, dtype = "bf16", "bf16"
        model = rng.choice(sorted(catalog.models))
        if smallest_fitting_degree(catalog, model, gpu, dtype) == 1:
            break
    else:
        raise RuntimeError("the weights fit one card in none of the formats drawn, int4 included")
    batch, prompt, context = rng.choice(BATCHES), rng.choice(PROMPTS), rng.choice(CONTEXTS_DRAWN)
    # Lengths the model takes (Llama-2's 4,096 tokens): the longest drawn length within its limit.
    limit = catalog.model(model).config.max_position_embeddings or max(CONTEXTS_DRAWN)
    prompt = prompt if prompt <= limit else max(p for p in PROMPTS if p <= limit)
    context = context if context <= limit else max(c for c in CONTEXTS_DRAWN if c <= limit)
    return {"gpu": gpu, "precision": precision, "model": model, "weights_dtype": dtype, "batch": batch,
            "prompt_tokens": prompt, "cached_tokens": context, "kv_dtype": "bf16"}


def describe_roofline(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    gpu = catalog.gpu(inputs["gpu"]).name
    weights = widths_phrase(inputs, catalog)
    return (
        f"You serve {model_phrase(inputs)} with {weights} on one {gpu}, computing in {inputs['precision']}. "
        f"{datasheet_phrase(catalog.gpu(inputs['gpu']), inputs['precision'])} "
        f"Where is the card's ridge point? What arithmetic intensity does a decode step reach with "
        f"{inputs['batch']:,} sequence{'s' if inputs['batch'] != 1 else ''} in the batch, {_cache_words(inputs)}, "
        f"and a prefill of a "
        f"{inputs['prompt_tokens']:,}-token prompt (weights only)? Say for each whether it is compute-bound or "
        f"memory-bound, give the largest decode batch that stays memory-bound counting the weights only, "
        f"and say whether any batch reaches the ridge at that context (yes or no)."
    )


def _cache_words(inputs: dict[str, Any]) -> str:
    context = with_aliases(INPUTS, inputs).get("cached_tokens", 0)  # a stored problem may say context
    if not context:
        return "each with an empty KV cache (count the weight bytes only)"
    kv_dtype = inputs.get("kv_dtype", "bf16")
    return f"each holding {context:,} tokens in {article(kv_dtype)} {kv_dtype} KV cache read every step"


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
ROOFLINE_RUBRIC = (
    "Takes the ridge as the dense peak at the precision the multiply runs in ÷ bandwidth, never the sparse figure",
    "Derives decode intensity as FLOPs per step over bytes per step — the batch shares one weight read",
    "Adds each sequence's cache bytes, which keep long contexts memory-bound at any batch",
    "Derives prefill intensity from the prompt tokens sharing one weight read",
    "Compares each intensity with the ridge and names the bound it implies, as a bound, not a forecast",
)


FAMILIES = (
    Family("roofline", "Roofline",
           "Ridge point of a card, arithmetic intensity of decode and prefill, and which one is memory-bound.",
           INPUTS, plan_roofline, generate=generate_roofline, order=50,
           describe=describe_roofline,
           headlines=("ridge_flop_per_byte", "batch_at_ridge"), chapter="04-gpu-roofline", rubric=ROOFLINE_RUBRIC),
)

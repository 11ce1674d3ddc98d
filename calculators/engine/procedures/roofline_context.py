"""The roofline at a context (docs/architecture.md §12): decode's intensity once the KV cache is read too.

A decode step of ``B`` sequences holding ``c`` tokens each performs ``B × (2 ×
N_active + 4 × q_heads × head_dim × c)`` FLOPs (windowed layers at most their
window) and reads the weights once plus ``B × c × KV per token`` bytes. At
``c = 0`` this is the weights-only intensity the roofline family has always
shown. As ``B`` grows the intensity tends to one sequence's FLOPs over its own
cache bytes, which may stay below the ridge however large the batch:
``ridge_reachable`` says whether it does not (1) or does (0).
"""

from __future__ import annotations

from sympy import Max, Min, floor

from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from ..step_model import attention_head_dim, kv_bytes_per_token

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


def _flops_per_sequence(s):
    return total(product(2, s["active_params"]), product(4, s["heads"], s["attention_head_dim"], _cached(s)))


def _cache_bytes(s):
    return ratio(product(s["kv_bytes_per_token"], _cached(s)), s["layers"])


DECODE_INTENSITY = Formula(
    "decode_flop_per_byte", "Arithmetic intensity of decode at the context", "FLOP/byte",
    (Var("active_params", "1", "parameters a token multiplies through"),
     Var("batch", "1", "sequences decoding together"),
     Var("total_params", "1", "parameters read from memory"),
     Var("weight_bits", "bit", "bits per weight"), *_CONTEXT_VARS),
    lambda s: ratio(product(s["batch"], _flops_per_sequence(s)),
                    total(product(s["total_params"], s["weight_bits"]), product(s["batch"], _cache_bytes(s)))),
)

# 1 when one sequence's FLOPs per byte of its own cache reach the ridge (a large enough batch gets
# there), else 0: ⌊2 − ridge × cache bytes ÷ FLOPs⌋ clipped to [0, 1] is 1 exactly when
# ridge × cache bytes ≤ FLOPs, and 1 at an empty cache.
RIDGE_REACHABLE = Formula(
    "ridge_reachable", "Some batch reaches the ridge at this context (1) or none does (0)", "1",
    (Var("ridge_flop_per_byte", "FLOP/byte", "ridge point"),
     Var("active_params", "1", "parameters a token multiplies through"), *_CONTEXT_VARS),
    lambda s: Max(0, Min(1, floor(2 - ratio(product(s["ridge_flop_per_byte"], _cache_bytes(s)),
                                            _flops_per_sequence(s))))),
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

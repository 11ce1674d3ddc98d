"""The ``kv`` family: KV cache bytes per token and per user (formula 1).

Steps: ``kv_bytes_per_token`` (one token through every layer as if every layer
attended over the whole context: 2 × layers × K/V heads × head dim × bytes, or
for MLA layers × (kv_lora_rank + qk_rope_head_dim) × bytes) and ``per_user_gib``
(at ``context`` tokens, each sliding-window layer holding at most its window).
"""

from __future__ import annotations

from typing import Any

from .. import formulas as F
from ..catalog import Catalog
from ..dtypes import kv_bytes_per_value
from ..hf_config import ModelConfig
from .base import Result, StepSpec, run
from .drawing import KV_DTYPES_DRAWN, draw_context
from .family import Family
from .inputs import CONTEXT, KV_DTYPE, MODEL, catalog_or_default, clean_inputs, resolve_model

INPUTS = (MODEL, KV_DTYPE, CONTEXT)


def kv_given(cfg: ModelConfig, kv_dtype: str) -> dict[str, float]:
    """The config's numbers that the KV formulas read, keyed by variable name."""
    return {
        "layers": cfg.layers,
        "heads": cfg.heads,
        "hidden_size": cfg.hidden_size,
        "kv_heads": cfg.kv_heads,
        "head_dim": cfg.head_dim,
        "kv_bytes": kv_bytes_per_value(kv_dtype),
        "kv_lora_rank": cfg.kv_lora_rank,
        "qk_rope_head_dim": cfg.qk_rope_head_dim,
        "qk_nope_head_dim": cfg.qk_nope_head_dim,
        "v_head_dim": cfg.v_head_dim,
        "full_layers": cfg.full_layers,
        "window_layers": cfg.window_layers,
        "window": cfg.sliding_window,
    }


def kv_per_token_spec(cfg: ModelConfig) -> StepSpec:
    """The ``kv_bytes_per_token`` step for this attention kind."""
    formula = F.KV_BYTES_PER_TOKEN_MLA if cfg.kv_lora_rank else F.KV_BYTES_PER_TOKEN
    return StepSpec("kv_bytes_per_token", "KV cache per token", formula)


def per_user_spec(cfg: ModelConfig, label: str = "KV cache per user") -> StepSpec:
    """The ``per_user_gib`` step, windows applied when the model has them."""
    formula = F.PER_USER_GIB_WINDOWED if cfg.window_layers else F.PER_USER_GIB
    return StepSpec("per_user_gib", label, formula, from_steps={"kv_bytes_per_token": "kv_bytes_per_token"})


def kv_notes(cfg: ModelConfig) -> list[str]:
    """Sentences about the attention kind that change the cache arithmetic."""
    notes = []
    if cfg.kv_lora_rank:
        notes.append(
            f"Multi-head latent attention: each layer caches one latent of {cfg.kv_lora_rank} values plus "
            f"a shared rotary key of {cfg.qk_rope_head_dim}, not K and V per head "
            f"(num_key_value_heads {cfg.kv_heads} is nominal)."
        )
    elif cfg.attention_kind == "MQA":
        notes.append("Multi-query attention: one K/V head is shared by every query head.")
    elif cfg.attention_kind == "GQA":
        notes.append(f"Grouped-query attention: {cfg.heads} query heads share {cfg.kv_heads} K/V heads "
                     f"({cfg.heads // cfg.kv_heads} per group).")
    if cfg.window_layers:
        notes.append(
            f"{cfg.window_layers} of {cfg.layers} layers use a {cfg.sliding_window:,}-token sliding window, "
            f"so they never hold more than {cfg.sliding_window:,} tokens; kv_bytes_per_token counts every "
            f"layer as full."
        )
    return notes


def run_kv(raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
    """KV cache per token (B) and per user (GiB) for a model at a KV precision and context.

    ``raw`` holds ``model`` (catalog id) or ``config`` (a config.json dict or
    text), ``kv_dtype`` and ``context`` (tokens); missing ones take the
    reference stack's values. Raises :class:`~..errors.EngineError` subclasses on
    bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, _ = resolve_model(inputs, catalog)
    given = {**kv_given(cfg, inputs["kv_dtype"]), "context": inputs["context"]}
    specs = [kv_per_token_spec(cfg), per_user_spec(cfg)]
    return run("kv", inputs, specs, given, kv_notes(cfg) + list(cfg.notes))


def generate_kv(rng, catalog: Catalog) -> dict:
    """A KV problem: every attention kind (MHA, GQA, MQA, MLA, windows) comes up."""
    kinds: dict[str, list[str]] = {}
    for model in catalog.models.values():
        kind = "window" if model.config.window_layers else model.config.attention_kind
        kinds.setdefault(kind, []).append(model.id)
    kind = rng.choice(sorted(kinds))
    model = rng.choice(kinds[kind])
    return {"model": model, "kv_dtype": rng.choice(KV_DTYPES_DRAWN), "context": draw_context(rng, catalog, model)}


def describe_kv(inputs: dict, catalog: Catalog) -> str:
    """A KV problem in the words an interviewer would use."""
    return (f"How many bytes of KV cache does {inputs['model']} keep per token with a {inputs['kv_dtype']} cache "
            f"(every layer counted as full attention), and how many GiB per user at a context of "
            f"{inputs['context']:,} tokens (sliding windows applied)?")


FAMILIES = (
    Family("kv", "KV cache",
           "Bytes of KV cache per token and per user, for MHA, GQA, MQA, MLA and sliding windows.",
           INPUTS, run_kv, generate=generate_kv, order=20, describe=describe_kv),
)

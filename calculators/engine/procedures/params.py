"""The ``params`` and ``weights`` families: parameter count and weight memory (formula 2).

``params`` steps: ``total_params`` (embeddings, attention, MLP or experts,
norms and output head, each read from the config) and ``active_params`` (what a
token touches: for a mixture of experts, the total less the routed experts it
skips). ``weights`` steps: ``total_params``, ``weight_bytes`` (parameters × bits
÷ 8) and ``weights_gib`` (``weight_gib`` before: one quantity with the ladder's); with a ``load_path``
(:data:`LOAD_PATHS`), also ``weights_load_s``, a cold start's weight loading (bytes ÷ the loader's rate).
"""

from __future__ import annotations

from typing import Any

from ..catalog import NOMINAL_BITS, Catalog
from ..formulas import memory as F
from ..hf_config import ModelConfig, attention_params_per_layer, indexer_params_per_layer, mlp_params, param_breakdown
from .base import Family, Plan, StepSpec, draw_model, weights_phrase, widths_given, widths_notes
from .inputs import MODEL, WEIGHTS_BITS, WEIGHTS_DTYPE, InputSpec, catalog_or_default, clean_inputs, resolve_model

# The rates a cold start reads its weights at, each a public measurement (GB/s, its source), declared only here.
# vLLM documentation, "Loading Model Weights with InstantTensor", benchmark table (docs.vllm.ai,
# models/extensions/instanttensor): Qwen3-30B-A3B's bf16 checkpoint on one H200.
LOAD_PATHS: dict[str, tuple[float, str]] = {
    "safetensors": (1.1, "vLLM's default safetensors loader on one H200 (57.4 s for Qwen3-30B-A3B; vLLM documentation, "
                         "InstantTensor benchmark table)"),
    "direct-io": (35.0, "InstantTensor's parallel direct-I/O loader on one H200 (1.77 s for Qwen3-30B-A3B; vLLM "
                        "documentation, InstantTensor benchmark table)"),
}
LOAD_PATH = InputSpec("load_path", "choice", "none", "loader a cold start reads the weights with (none: no load "
                      "time)", choices=("none", *LOAD_PATHS), label="Weight loader",
                      hint="A measured loader's rate gives the cold start's weight-loading time; none leaves it out.")

PARAMS_INPUTS = (MODEL,)
WEIGHTS_INPUTS = (MODEL, WEIGHTS_DTYPE, WEIGHTS_BITS, LOAD_PATH)

TOTAL_PARAMS_STEP = StepSpec(F.TOTAL_PARAMS, tolerance=0.001)


def params_given(cfg: ModelConfig) -> dict[str, float]:
    """The component counts that ``total_params`` and ``active_params`` add up.

    ``mlp_per_layer`` is one dense MLP, or for a mixture of experts one layer's
    routed and shared experts plus its router; ``other_params`` holds the norms
    and any dense leading layers (DeepSeek's ``first_k_dense_replace``).
    """
    breakdown = param_breakdown(cfg)
    if cfg.is_moe:
        mlp_layers = cfg.layers - cfg.dense_layers
        per_layer = (breakdown.mlp_experts_total + breakdown.routers) // mlp_layers
        other = breakdown.norms + breakdown.mlp_dense
        expert = mlp_params(cfg, cfg.moe_intermediate_size)
        idle = cfg.num_experts - cfg.experts_per_token
    else:
        mlp_layers, per_layer = cfg.layers, mlp_params(cfg, cfg.intermediate_size)
        other, expert, idle = breakdown.norms, 0, 0
    return {
        "embedding_copies": 1 if cfg.tie_word_embeddings else 2,
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "layers": cfg.layers,
        "attention_per_layer": attention_params_per_layer(cfg),
        "mlp_layers": mlp_layers,
        "mlp_per_layer": per_layer,
        "other_params": other,
        "idle_experts": idle,
        "expert_params": expert,
    }


def params_notes(cfg: ModelConfig) -> list[str]:
    """What the count includes, in sentences."""
    notes = [
        f"Embeddings {'tied to' if cfg.tie_word_embeddings else 'separate from'} the output head"
        f"{' (defaulted for this model type)' if cfg.tie_defaulted else ''}; "
        f"{'gated (three-matrix)' if cfg.gated_mlp else 'plain (two-matrix)'} MLP; "
        f"{cfg.norms_per_layer} norms per layer."
    ]
    if cfg.is_moe:
        notes.append(
            f"Mixture of experts: {cfg.num_experts} routed experts per MoE layer, {cfg.experts_per_token} used "
            f"per token, {cfg.shared_experts} shared; {cfg.dense_layers} dense layers. Active "
            f"parameters count the whole embedding table; DeepSeek quotes them without it."
        )
    if cfg.qkv_bias:
        notes.append("The q, k and v projections carry biases.")
    if cfg.sparse_attention:
        notes.append(f"Attention per layer includes the sparse attention's lightning indexer "
                     f"({indexer_params_per_layer(cfg):,} parameters: its {cfg.index_n_heads} query heads of "
                     f"{cfg.index_head_dim} from the q latent, one key projection, the key's LayerNorm and one weight "
                     f"per head); every token runs it, so it counts as active too.")
    return notes


def plan_params(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Total and active parameter counts of a model (``model`` id or ``config``).

    Raises :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(PARAMS_INPUTS, raw, catalog)
    cfg, _ = resolve_model(inputs, catalog)
    specs = [
        TOTAL_PARAMS_STEP,
        StepSpec(F.ACTIVE_PARAMS,
                 from_steps={"total_params": "total_params"}, tolerance=0.001),
    ]
    return Plan("params", inputs, specs, params_given(cfg), params_notes(cfg) + list(cfg.notes))


def plan_weights(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Weight memory of a model at a precision, in bytes and GiB.

    ``raw`` holds ``model`` or ``config``, ``weights_dtype``, optionally
    ``weights_bits`` (an effective width overriding the precision's default) and ``load_path`` (a key of
    :data:`LOAD_PATHS`: adds ``weights_load_s``, the bytes ÷ that loader's measured GB/s, reported as
    ``extra["load_gb_s"]``; ``"none"``, the default, adds nothing).
    Raises :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(WEIGHTS_INPUTS, raw, catalog)
    cfg, _ = resolve_model(inputs, catalog)
    weights = F.weights_given(cfg, inputs["weights_dtype"], inputs["weights_bits"])
    given = {**params_given(cfg), **widths_given(cfg, inputs), "routed_expert_params": weights["routed_expert_params"]}
    bits = given["weight_bits"]
    specs = [
        TOTAL_PARAMS_STEP,
        StepSpec(F.weights_form(cfg.is_moe),
                 from_steps={"total_params": "total_params"}),
        StepSpec(F.WEIGHT_GIB, from_steps={"weight_bytes": "weight_bytes"}, label="Weight memory in GiB"),
    ]
    extra: dict[str, Any] = {}
    notes = params_notes(cfg) + widths_notes(cfg, inputs)
    if inputs["load_path"] in LOAD_PATHS:
        rate, source = LOAD_PATHS[inputs["load_path"]]
        given["load_gb_s"] = extra["load_gb_s"] = rate
        specs.append(StepSpec(F.WEIGHTS_LOAD_S, from_steps={"weight_bytes": "weight_bytes"},
                              label="Weight loading at a cold start (bytes ÷ the loader's rate)"))
        notes.append(f"Loaded at {rate:g} GB/s: {source}. It holds only if the storage keeps up.")
    if bits != NOMINAL_BITS[inputs["weights_dtype"]] and bits == given["expert_weight_bits"]:
        notes.append(f"{inputs['weights_dtype']} is charged {bits:g} bits per weight, not the nominal "
                     f"{NOMINAL_BITS[inputs['weights_dtype']]}: block scales and higher-precision tensors "
                     f"add to the file.")
    return Plan("weights", inputs, specs, given, notes + list(cfg.notes), extra)


def generate_params(rng, catalog: Catalog) -> dict:
    """A parameter-count problem on a random catalog model."""
    return {"model": draw_model(rng, catalog)}


def generate_weights(rng, catalog: Catalog) -> dict:
    """A weight-memory problem; int4 sometimes at a stated effective width."""
    dtype = rng.choice(("bf16", "fp16", "fp8", "int8", "int4"))
    inputs = {"model": draw_model(rng, catalog), "weights_dtype": dtype}
    if dtype == "int4":
        inputs["weights_bits"] = rng.choice((4.5, 4.5, 4.8))
    return inputs


def describe_params(inputs: dict, catalog: Catalog) -> str:
    """A parameter-count problem in the words an interviewer would use."""
    return (f"From its config, how many parameters does {inputs['model']} have, and how many does one token use? "
            f"Count embeddings, attention, MLP or experts, norms and the output head.")


def describe_weights(inputs: dict, catalog: Catalog) -> str:
    """A weight-memory problem in the words an interviewer would use."""
    return (f"How much memory do {inputs['model']}'s {weights_phrase(inputs)} take? Give the parameter count, "
            f"then bytes, then GiB.")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
WEIGHTS_RUBRIC = (
    "Multiplies parameters by the effective bits per weight, not the nominal width",
    "Divides by 8 for bytes and by 2^30 for GiB, never mixing GB and GiB",
    "States which tensors a quantised file keeps at higher precision",
)
PARAMS_RUBRIC = (
    "Counts the input embedding once and the output head separately unless the embeddings are tied",
    "Per layer, sizes the query and output projections from the hidden size and the K and V projections "
    "from the K/V heads × head dimension",
    "Counts three MLP matrices (gate, up, down) of hidden × intermediate size",
    "Adds the norm weights, per layer and final",
    "Multiplies the per-layer count by the layers and, for a mixture of experts, separates total from "
    "active parameters",
)


FAMILIES = (
    Family("params", "Parameter count", "Total and active parameters derived from a config.json.",
           PARAMS_INPUTS, plan_params, generate=generate_params, order=30, describe=describe_params,
           headlines=("total_params", "active_params"), chapter="02-forward-pass", difficulty=1, rubric=PARAMS_RUBRIC),
    Family("weights", "Weight memory",
           "Weight memory at bf16, fp16, fp8, int8 or int4 (at an effective width).",
           WEIGHTS_INPUTS, plan_weights, generate=generate_weights, order=40, describe=describe_weights,
           headlines=("weights_gib", "total_params"), chapter="09-number-formats", difficulty=1, rubric=WEIGHTS_RUBRIC),
)

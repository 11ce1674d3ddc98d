"""The ``lora`` family: memory per LoRA adapter, and how many fit beside the base weights.

LoRA (Hu et al., 2021, "LoRA: Low-Rank Adaptation of Large Language Models")
leaves a weight matrix W of shape (d_in, d_out) frozen and learns its update as
two thin factors, A (d_in × r) and B (r × d_out): r × (d_in + d_out)
parameters instead of d_in × d_out. Serving many fine-tunes from one base
copy then costs one small adapter per fine-tune.

Targets are presets of the projections adapted in every layer, with shapes
read from the config:

* ``qv`` — q (hidden → heads × head_dim) and v (hidden → K/V heads × head_dim:
  narrower under GQA and MQA);
* ``qkvo`` — q, k, v and o (heads × head_dim → hidden);
* ``all`` — those four plus the MLP's gate, up and down (hidden ↔
  intermediate; two matrices for a plain MLP; every expert of a mixture).

Steps: ``params_per_layer`` (r × Σ (d_in + d_out) over the targets),
``adapter_params`` (× layers), ``adapter_gib`` (× the adapter's bits),
``spare_gib`` (an input budget, or a share of the capacity ladder's KV budget:
(cards × card × utilisation − weights − cards × reserve) × share) and
``adapters_fit`` (⌊spare ÷ adapter⌋). Llama-3.1-8B at rank 16 on q and v:
16 × (4,096 + 4,096) + 16 × (4,096 + 1,024) = 212,992 per layer × 32 =
6,815,744 parameters = 13.0 MiB at bf16.
"""

from __future__ import annotations

from typing import Any

import sympy

from ..catalog import Catalog
from ..dtypes import NOMINAL_BITS, weight_bits
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from ..misconceptions import GIB, GIB_PER_GB, MisconceptionInfo
from ..param_count import param_breakdown
from .base import Result, StepSpec, evaluate_steps, format_number, run
from .drawing import gpu_supports
from .family import Family
from .inputs import (
    GPU,
    GPUS,
    MODEL,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)

# --- inputs ------------------------------------------------------------------------------------

PRESETS = ("qv", "qkvo", "all")
ADAPTER_DTYPES = ("bf16", "fp16", "fp32")

RANK = InputSpec("rank", "int", 16, "adapter rank r", minimum=1, maximum=4096)
TARGETS = InputSpec("targets", "choice", "qv", "projections adapted in every layer: qv (q and v), qkvo (the "
                    "four attention projections) or all (those and the MLP's gate, up and down)",
                    choices=PRESETS)
ADAPTER_DTYPE = InputSpec("adapter_dtype", "choice", "bf16", "adapter precision", choices=ADAPTER_DTYPES)
BUDGET_GIB = InputSpec("budget_gib", "float", None, "memory set aside for adapters, GiB (default: a share of "
                       "the capacity ladder's KV budget)", minimum=0, maximum=100_000, exclusive_minimum=True,
                       unit="GiB")
BUDGET_SHARE = InputSpec("budget_share", "float", 0.1, "share of the ladder's KV budget given to adapters "
                         "when no budget_gib is set", minimum=0, maximum=1, exclusive_minimum=True)

INPUTS = (MODEL, RANK, TARGETS, ADAPTER_DTYPE, BUDGET_GIB, GPU, GPUS, WEIGHTS_DTYPE, UTILIZATION, RESERVE_GIB,
          BUDGET_SHARE)

STEP_KEYS = ("params_per_layer", "adapter_params", "adapter_gib", "spare_gib", "adapters_fit")

# --- formulas ----------------------------------------------------------------------------------

_ATTENTION_VARS = (
    Var("rank", "1", "adapter rank r"),
    Var("hidden_size", "1", "model width (hidden_size)"),
    Var("q_width", "1", "query width (num_attention_heads × head_dim)"),
    Var("kv_width", "1", "K/V width (num_key_value_heads × head_dim)"),
)
_MLP_VARS = (
    Var("experts", "1", "MLPs per layer (1, or every expert of a mixture)"),
    Var("mlp_matrices", "1", "matrices per MLP (gate, up, down = 3; up, down = 2)"),
    Var("mlp_width", "1", "MLP inner width (intermediate_size, or an expert's)"),
)


def _adapter(s, d_in: str, d_out: str):
    """R × (d_in + d_out): the A and B factors of one adapted matrix."""
    return product(s["rank"], total(s[d_in], s[d_out]))


def _attention_terms(s, preset: str) -> list:
    q = _adapter(s, "hidden_size", "q_width")
    k = _adapter(s, "hidden_size", "kv_width")
    v = _adapter(s, "hidden_size", "kv_width")
    o = _adapter(s, "q_width", "hidden_size")
    return [q, v] if preset == "qv" else [q, k, v, o]


def _per_layer(preset: str):
    def build(s):
        terms = _attention_terms(s, preset)
        if preset == "all":
            terms.append(product(s["experts"], s["mlp_matrices"], _adapter(s, "hidden_size", "mlp_width")))
        return total(*terms)
    return build


PARAMS_PER_LAYER = {
    preset: Formula("params_per_layer", f"Adapter parameters per layer ({preset})", "1",
                    _ATTENTION_VARS + (_MLP_VARS if preset == "all" else ()), _per_layer(preset))
    for preset in PRESETS
}

ADAPTER_PARAMS = Formula(
    "adapter_params", "Adapter parameters", "1",
    (Var("params_per_layer", "1", "adapter parameters per layer"), Var("layers", "1", "layers (num_hidden_layers)")),
    lambda s: product(s["params_per_layer"], s["layers"]),
)

ADAPTER_GIB = Formula(
    "adapter_gib", "Adapter memory", "GiB",
    (Var("adapter_params", "1", "adapter parameters"), Var("adapter_bits", "bit", "bits per adapter value")),
    lambda s: product(s["adapter_params"], s["adapter_bits"]),
)

SPARE_FROM_BUDGET = Formula(
    "spare_gib", "Memory for adapters (given)", "GiB",
    (Var("budget_gib", "GiB", "memory set aside for adapters"),),
    lambda s: s["budget_gib"],
)

SPARE_FROM_LADDER = Formula(
    "spare_gib", "Memory for adapters (a share of the KV budget)", "GiB",
    (Var("gpus", "GPUs", "cards in the replica"),
     Var("card_mib", "MiB", "memory per card"),
     Var("utilization", "1", "utilisation fraction"),
     Var("total_params", "1", "base model parameters"),
     Var("weight_bits", "bit", "bits per base weight"),
     Var("reserve_gib", "GiB", "activation reserve per card"),
     Var("budget_share", "1", "share of the KV budget for adapters")),
    lambda s: product(total(product(s["gpus"], s["card_mib"], s["utilization"]),
                            -product(s["total_params"], s["weight_bits"]),
                            -product(s["gpus"], s["reserve_gib"])),
                      s["budget_share"]),
)

ADAPTERS_FIT = Formula(
    "adapters_fit", "Adapters that fit", "1",
    (Var("spare_gib", "GiB", "memory for adapters"), Var("adapter_gib", "GiB", "one adapter")),
    lambda s: sympy.Max(0, sympy.floor(ratio(s["spare_gib"], s["adapter_gib"]))),
)

ALL_FORMULAS = (*PARAMS_PER_LAYER.values(), ADAPTER_PARAMS, ADAPTER_GIB, SPARE_FROM_BUDGET, SPARE_FROM_LADDER,
                ADAPTERS_FIT)


def lora_specs(preset: str, by_budget: bool) -> list[StepSpec]:
    """The five steps for a target preset and a source of spare memory."""
    return [
        StepSpec("params_per_layer", "Adapter parameters per layer", PARAMS_PER_LAYER[preset], tolerance=0.001),
        StepSpec("adapter_params", "Adapter parameters (every layer)", ADAPTER_PARAMS,
                 {"params_per_layer": "params_per_layer"}, tolerance=0.001),
        StepSpec("adapter_gib", "Memory per adapter", ADAPTER_GIB, {"adapter_params": "adapter_params"}),
        StepSpec("spare_gib", "Memory for adapters", SPARE_FROM_BUDGET if by_budget else SPARE_FROM_LADDER),
        StepSpec("adapters_fit", "Adapters that fit", ADAPTERS_FIT,
                 {"spare_gib": "spare_gib", "adapter_gib": "adapter_gib"}, rounding="floor"),
    ]


# --- misconceptions ----------------------------------------------------------------------------

MISCONCEPTION_INFO = (
    MisconceptionInfo(
        "lora-square-projections", "k and v taken as square",
        "Under GQA or MQA the k and v projections output K/V heads × head_dim, narrower than hidden_size: "
        "read each matrix's shape from the config.", "/runbook/12-engines/#lora-adapters"),
    MisconceptionInfo(
        "lora-full-matrix", "Adapter sized as the full matrix",
        "An adapter stores two thin factors, r × (d_in + d_out) values, not the d_in × d_out update they "
        "multiply out to.", "/runbook/12-engines/#lora-adapters"),
    MisconceptionInfo(
        "lora-one-layer", "One layer's adapter taken for the whole",
        "The targets are adapted in every decoder layer: multiply the per-layer count by num_hidden_layers.",
        "/runbook/12-engines/#lora-adapters"),
)


def _per_layer_square(g, s):
    square = {**g, "q_width": g["hidden_size"], "kv_width": g["hidden_size"]}
    return PARAMS_PER_LAYER[PRESETS[int(g["preset"])]](square)


def _per_layer_full(g, s):
    preset = PRESETS[int(g["preset"])]
    h, q, kv = g["hidden_size"], g["q_width"], g["kv_width"]
    full = h * q + h * kv if preset == "qv" else h * q + 2 * h * kv + q * h
    if preset == "all":
        full += g["experts"] * g["mlp_matrices"] * h * g["mlp_width"]
    return full


def _params_square(g, s):
    return _per_layer_square(g, s) * g["layers"]


def _params_full(g, s):
    return _per_layer_full(g, s) * g["layers"]


def _params_one_layer(g, s):
    return s["params_per_layer"]


def _adapter_bits_for_bytes(g, s):
    return s["adapter_params"] * g["adapter_bits"] / GIB


def _adapter_gb(g, s):
    return ADAPTER_GIB({"adapter_params": s["adapter_params"], "adapter_bits": g["adapter_bits"]}) * GIB_PER_GB


VARIANTS = {
    "params_per_layer": (
        ("lora-square-projections", _per_layer_square),
        ("lora-full-matrix", _per_layer_full),
    ),
    "adapter_params": (
        ("lora-one-layer", _params_one_layer),
        ("lora-square-projections", _params_square),
        ("lora-full-matrix", _params_full),
    ),
    "adapter_gib": (
        ("bits-for-bytes", _adapter_bits_for_bytes),
        ("gb-gib-mix", _adapter_gb),
    ),
}


# --- the procedure -----------------------------------------------------------------------------

def lora_given(cfg: ModelConfig, preset: str, rank: int) -> dict[str, float]:
    """The matrix shapes the adapter formulas read, keyed by variable name.

    Raises :class:`InputError` for shapes this family does not model: MLA
    attention (DeepSeek's down- and up-projections are not q/k/v/o) and, for
    ``all``, a mixture of experts with dense leading layers or a shared expert
    of its own width.
    """
    if cfg.kv_lora_rank:
        raise InputError("Multi-head latent attention (kv_lora_rank) has no per-head q/k/v projections to adapt; "
                         "this calculator models q, k, v, o and the MLP of GQA, MQA and MHA models.",
                         field="model")
    if preset == "all" and cfg.is_moe and (cfg.dense_layers or cfg.shared_expert_intermediate_size):
        raise InputError("This mixture of experts mixes MLP widths (dense layers or a shared expert of its "
                         "own width); adapt the attention only (qv or qkvo).", field="targets")
    return {
        "rank": rank,
        "hidden_size": cfg.hidden_size,
        "q_width": cfg.heads * cfg.head_dim,
        "kv_width": cfg.kv_heads * cfg.head_dim,
        "experts": (cfg.num_experts + cfg.shared_experts) if cfg.is_moe else 1,
        "mlp_matrices": 3 if cfg.gated_mlp else 2,
        "mlp_width": cfg.moe_intermediate_size if cfg.is_moe else cfg.intermediate_size,
        "layers": cfg.layers,
        "preset": PRESETS.index(preset),
    }


def _shape_note(g: dict, preset: str) -> str:
    """Each adapted matrix's share, in the config's numbers."""
    r, h, q, kv = int(g["rank"]), int(g["hidden_size"]), int(g["q_width"]), int(g["kv_width"])
    parts = [f"q {r} × ({h:,} + {q:,}) = {r * (h + q):,}"]
    if preset != "qv":
        parts.append(f"k {r} × ({h:,} + {kv:,}) = {r * (h + kv):,}")
    parts.append(f"v {r} × ({h:,} + {kv:,}) = {r * (h + kv):,}")
    if preset != "qv":
        parts.append(f"o {r} × ({q:,} + {h:,}) = {r * (q + h):,}")
    if preset == "all":
        m, n, w = int(g["experts"]), int(g["mlp_matrices"]), int(g["mlp_width"])
        names = "gate, up and down" if n == 3 else "up and down"
        copies = f"{m} experts × " if m > 1 else ""
        parts.append(f"{names}: {copies}{n} × {r} × ({h:,} + {w:,}) = {m * n * r * (h + w):,}")
    return "Per layer: " + "; ".join(parts) + "."


def run_lora(raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
    """Memory per LoRA adapter and how many adapters fit beside the base weights.

    ``raw`` holds ``model`` (catalog id) or ``config``, ``rank``, ``targets``
    (``qv``, ``qkvo`` or ``all``), ``adapter_dtype``, and either ``budget_gib``
    (GiB set aside for adapters) or the ladder's inputs — ``gpu``, ``gpus``,
    ``weights_dtype``, ``utilization``, ``reserve_gib`` — and ``budget_share``
    (the fraction of the KV budget adapters may take). Raises
    :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    preset = inputs["targets"]
    try:
        shapes = lora_given(cfg, preset, inputs["rank"])
    except InputError as exc:
        if "config" in inputs and exc.field == "model":
            raise InputError(str(exc), field="config") from None
        raise
    by_budget = inputs["budget_gib"] is not None
    # With a stated budget the card plays no part (a stored problem may not carry one).
    gpu = None if by_budget else catalog.gpu(inputs["gpu"])
    base_bits = weight_bits(inputs["weights_dtype"])
    adapter_bits = NOMINAL_BITS[inputs["adapter_dtype"]]
    base = param_breakdown(cfg).total
    given = {
        **shapes,
        "adapter_bits": adapter_bits,
        "budget_gib": inputs["budget_gib"] or 0.0,
        "gpus": inputs["gpus"],
        "card_mib": gpu.memory_mib if gpu else 0.0,
        "utilization": inputs["utilization"],
        "total_params": base,
        "weight_bits": base_bits,
        "reserve_gib": inputs["reserve_gib"],
        "budget_share": inputs["budget_share"],
    }
    specs = lora_specs(preset, by_budget)
    values = evaluate_steps(specs, given)
    adapter_mib = values["adapter_gib"] * 1024

    notes = [
        _shape_note(shapes, preset),
        f"One adapter: {values['adapter_params']:,.0f} parameters × {adapter_bits / 8:g} bytes = "
        f"{values['adapter_gib'] * GIB:,.0f} B = {adapter_mib:,.1f} MiB, "
        f"{values['adapter_params'] / base:.3%} of the {base:,} base parameters. Each fine-tune costs an adapter; "
        f"the base weights are stored once.",
    ]
    if by_budget:
        notes.append(f"Spare memory is the {format_number(inputs['budget_gib'], 'GiB')} given for adapters.")
    elif gpu is not None:  # always, without a budget
        budget = values["spare_gib"] / inputs["budget_share"]
        cards = f"{inputs['gpus']} × {gpu.name}"
        if budget <= 0:
            notes.insert(0, f"The base weights at {inputs['weights_dtype']} and the reserves do not fit on "
                            f"{cards}: the ladder's KV budget is {format_number(-budget, 'GiB')} short, so no "
                            f"adapter fits. Add cards or give budget_gib.")
        else:
            notes.append(f"Spare memory is {inputs['budget_share']:g} of the ladder's KV budget on {cards} "
                         f"({format_number(budget, 'GiB')} after {inputs['weights_dtype']} weights and the "
                         f"reserve); every GiB given to adapters is a GiB of users' KV cache.")
        notes.append(gpu.memory_note)
    notes.append("This is the memory bound. Engines such as vLLM hold a fixed number of adapter slots on the "
                 "card (max_loras), each sized for the largest rank allowed, and page the other adapters in "
                 "from host memory; a batch can mix requests for different adapters.")
    smallest = min(int(shapes["hidden_size"]), int(shapes["kv_width"]))
    if inputs["rank"] > smallest:
        notes.append(f"A rank of {inputs['rank']} exceeds the narrowest adapted width ({smallest:,}): the "
                     f"factors cost more than that matrix's update would.")
    if cfg.model_type == "falcon":
        notes.append("Falcon fuses q, k and v into one query_key_value matrix, which PEFT adapts as one; the "
                     "projections are counted separately here.")
    notes += list(cfg.notes)
    return run("lora", inputs, specs, given, notes, {"model_name": model_name, "adapter_mib": adapter_mib})


# --- problems ----------------------------------------------------------------------------------

RANKS_DRAWN = (8, 16, 16, 32, 64)
ADAPTER_DTYPES_DRAWN = ("bf16", "bf16", "bf16", "fp16", "fp32")
BUDGETS_DRAWN = (0.5, 1.0, 2.0, 4.0, 8.0)
SHARES_DRAWN = (0.05, 0.1, 0.1, 0.2, 0.25)
BUDGET_MODE_SHARE = 0.4
MAX_DRAWS = 200


def generate_lora(rng, catalog: Catalog) -> dict:
    """A LoRA problem on a catalog model with per-head attention (not MLA): four times in
    ten with a stated budget, otherwise a share of the KV budget left on a card that
    holds the base weights."""
    models = sorted(m.id for m in catalog.models.values() if not m.config.kv_lora_rank)
    gpus = sorted(catalog.gpus)
    by_budget = rng.random() < BUDGET_MODE_SHARE
    for _ in range(MAX_DRAWS):
        inputs = {"model": rng.choice(models), "rank": rng.choice(RANKS_DRAWN), "targets": rng.choice(PRESETS),
                  "adapter_dtype": rng.choice(ADAPTER_DTYPES_DRAWN)}
        if by_budget:
            inputs["budget_gib"] = rng.choice(BUDGETS_DRAWN)
        else:
            gpu = rng.choice(gpus)
            weights = rng.choice(("bf16", "bf16", "fp8", "int8"))
            inputs.update({"gpu": gpu, "gpus": 1,
                           "weights_dtype": weights if gpu_supports(catalog, gpu, weights) else "int8",
                           "utilization": rng.choice((0.85, 0.9, 0.9, 0.92)),
                           "reserve_gib": rng.choice((1.0, 2.0, 3.0)),
                           "budget_share": rng.choice(SHARES_DRAWN)})
        try:
            result = run_lora(inputs, catalog)
        except InputError:
            continue  # a preset this model's shapes do not support
        if result.values["adapters_fit"] >= 1:
            return inputs
    raise RuntimeError("No LoRA problem could be drawn from the catalog.")


def describe_lora(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in an interviewer's words."""
    model = inputs.get("model", "the pasted model")
    targets = {"qv": "the q and v projections", "qkvo": "all four attention projections (q, k, v, o)",
               "all": "every attention projection and the MLP's matrices"}[inputs.get("targets", "qv")]
    if inputs.get("budget_gib"):
        room = f"{inputs['budget_gib']:g} GiB of GPU memory is set aside for adapters"
    else:
        gpu = catalog.gpu(inputs.get("gpu", "h100-sxm5-80gb")).name
        gpus = inputs.get("gpus", 1)
        cards = f"one {gpu}" if gpus == 1 else f"{gpus} × {gpu}"
        room = (f"the base model runs on {cards} with {inputs.get('weights_dtype', 'bf16')} weights, "
                f"{inputs.get('utilization', 0.9) * 100:g} % of memory usable and "
                f"{inputs.get('reserve_gib', 3.0):g} GiB per card reserved for activations, and adapters may take "
                f"{inputs.get('budget_share', 0.1) * 100:g} % of the KV cache budget that leaves")
    return (f"A platform serves many customer fine-tunes of {model} as LoRA adapters of rank "
            f"{inputs.get('rank', 16)} on {targets}, stored in {inputs.get('adapter_dtype', 'bf16')}; {room}. "
            f"How many parameters does one adapter add per layer and in all, how much memory does it take, how "
            f"much memory is there for adapters, and how many fit at once?")


FAMILIES = (
    Family("lora", "LoRA adapters",
           "Memory per LoRA adapter from its rank and target projections, and how many fit beside the base "
           "weights.",
           INPUTS, run_lora, generate=generate_lora, variants=VARIANTS, misconceptions=MISCONCEPTION_INFO,
           order=130, describe=describe_lora),
)

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

The formulas are in :mod:`..formulas.lora`; its mistakes are the registry's (:mod:`..mistakes`).
"""

from __future__ import annotations

from typing import Any

from ..catalog import NOMINAL_BITS, Catalog, Gpu
from ..errors import InputError
from ..formulas.lora import (
    ADAPTER_GIB,
    ADAPTER_PARAMS,
    ADAPTERS_FIT,
    PARAMS_PER_LAYER,
    PRESETS,
    SPARE_FROM_BUDGET,
    SPARE_FROM_LADDER,
    SPARE_FROM_LADDER_MOE,
)
from ..formulas.memory import weights_given
from ..hf_config import ModelConfig
from ..units import GIB
from .base import Family, Plan, Result, StepSpec, evaluate, format_number, gpu_supports
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
    input_or_default,
    resolve_model,
)

# --- inputs ------------------------------------------------------------------------------------

ADAPTER_DTYPES = ("bf16", "fp16", "fp32")

RANK = InputSpec("rank", "int", 16, "adapter rank r", minimum=1, maximum=4096, label="Adapter rank")
TARGETS = InputSpec("targets", "choice", "qv", "projections adapted in every layer: qv (q and v), qkvo (the "
                    "four attention projections) or all (those and the MLP's gate, up and down)",
                    choices=PRESETS, label="Target projections")
ADAPTER_DTYPE = InputSpec("adapter_dtype", "choice", "bf16", "adapter precision", choices=ADAPTER_DTYPES,
                          label="Adapter precision")
BUDGET_GIB = InputSpec("budget_gib", "float", None, "memory set aside for adapters, GiB (default: a share of "
                       "the capacity ladder's KV budget)", minimum=0, maximum=100_000, exclusive_minimum=True,
                       unit="GiB", label="Adapter budget")
BUDGET_SHARE = InputSpec("budget_share", "float", 0.1, "share of the ladder's KV budget given to adapters "
                         "when no budget_gib is set", minimum=0, maximum=1, exclusive_minimum=True,
                         label="Share of the KV budget")

INPUTS = (MODEL, RANK, TARGETS, ADAPTER_DTYPE, BUDGET_GIB, GPU, GPUS, WEIGHTS_DTYPE, UTILIZATION, RESERVE_GIB,
          BUDGET_SHARE)

STEP_KEYS = ("params_per_layer", "adapter_params", "adapter_gib", "spare_gib", "adapters_fit")

# --- the procedure -----------------------------------------------------------------------------


def lora_specs(preset: str, by_budget: bool, moe: bool = False) -> list[StepSpec]:
    """The five steps for a target preset and a source of spare memory (a mixture of experts' base weights
    carry their routed experts as a term of their own)."""
    return [
        StepSpec(PARAMS_PER_LAYER[preset], tolerance=0.001),
        StepSpec(ADAPTER_PARAMS,
                 {"params_per_layer": "params_per_layer"}, tolerance=0.001,
                 label="Adapter parameters (every layer)"),
        StepSpec(ADAPTER_GIB, {"adapter_params": "adapter_params"}),
        StepSpec(SPARE_FROM_BUDGET if by_budget else SPARE_FROM_LADDER_MOE if moe else SPARE_FROM_LADDER),
        StepSpec(ADAPTERS_FIT,
                 {"spare_gib": "spare_gib", "adapter_gib": "adapter_gib"}, rounding="floor"),
    ]


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


def _lora_given(inputs: dict[str, Any], cfg: ModelConfig, shapes: dict[str, float], gpu: Gpu | None
                ) -> dict[str, float]:
    """The numbers the steps read: the shapes, the adapter's bits, and the budget or the ladder's inputs."""
    return {
        **shapes,
        "adapter_bits": NOMINAL_BITS[inputs["adapter_dtype"]],
        "budget_gib": inputs["budget_gib"] or 0.0,
        "gpus": inputs["gpus"],
        "card_mib": gpu.memory_mib if gpu else 0.0,
        "utilization": inputs["utilization"],
        **weights_given(cfg, inputs["weights_dtype"]),
        "reserve_gib": inputs["reserve_gib"],
        "budget_share": inputs["budget_share"],
    }


def _spare_notes(inputs: dict[str, Any], values: dict[str, float], gpu: Gpu | None) -> tuple[list[str], list[str]]:
    """(notes to put first, notes to append) on where the spare memory comes from."""
    if inputs["budget_gib"] is not None:
        return [], [f"Spare memory is the {format_number(inputs['budget_gib'], 'GiB')} given for adapters."]
    if gpu is None:  # never: without a budget the card is read
        return [], []
    budget = values["spare_gib"] / inputs["budget_share"]
    cards = f"{inputs['gpus']} × {gpu.name}"
    if budget <= 0:
        return [f"The base weights at {inputs['weights_dtype']} and the reserves do not fit on "
                f"{cards}: the ladder's KV budget is {format_number(-budget, 'GiB')} short, so no "
                f"adapter fits. Add cards or give budget_gib."], [gpu.memory_note]
    return [], [f"Spare memory is {inputs['budget_share']:g} of the ladder's KV budget on {cards} "
                f"({format_number(budget, 'GiB')} after {inputs['weights_dtype']} weights and the "
                f"reserve); every GiB given to adapters is a GiB of users' KV cache.", gpu.memory_note]


def _notes(inputs: dict[str, Any], cfg: ModelConfig, given: dict[str, float], values: dict[str, float],
           gpu: Gpu | None) -> list[str]:
    """The result's notes: the shapes, one adapter's size, the spare memory, the engines' slots, caveats."""
    preset, base = inputs["targets"], given["total_params"]
    first, spare = _spare_notes(inputs, values, gpu)
    notes = [
        *first,
        _shape_note(given, preset),
        f"One adapter: {values['adapter_params']:,.0f} parameters × {given['adapter_bits'] / 8:g} bytes = "
        f"{values['adapter_gib'] * GIB:,.0f} B = {values['adapter_gib'] * 1024:,.1f} MiB, "
        f"{values['adapter_params'] / base:.3%} of the {base:,} base parameters. Each fine-tune costs an adapter; "
        f"the base weights are stored once.",
        *spare,
        "This is the memory bound. Engines such as vLLM hold a fixed number of adapter slots on the "
        "card (max_loras), each sized for the largest rank allowed, and page the other adapters in "
        "from host memory; a batch can mix requests for different adapters.",
    ]
    smallest = min(int(given["hidden_size"]), int(given["kv_width"]))
    if inputs["rank"] > smallest:
        notes.append(f"A rank of {inputs['rank']} exceeds the narrowest adapted width ({smallest:,}): the "
                     f"factors cost more than that matrix's update would.")
    if cfg.model_type == "falcon":
        notes.append("Falcon fuses q, k and v into one query_key_value matrix, which PEFT adapts as one; the "
                     "projections are counted separately here.")
    return notes + list(cfg.notes)


def plan_lora(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
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
    given = _lora_given(inputs, cfg, shapes, gpu)
    specs = lora_specs(preset, by_budget, cfg.is_moe)

    def finish(result: Result) -> None:
        values = result.values
        result.notes.extend(_notes(inputs, cfg, given, values, gpu))
        result.extra["adapter_mib"] = values["adapter_gib"] * 1024

    return Plan("lora", inputs, specs, given, [], {"model_name": model_name}, finish=finish)


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
    holds the base weights.

    Deterministic for a given ``rng``; raises ``RuntimeError`` when :data:`MAX_DRAWS` draws give
    no problem in which at least one adapter fits."""
    models = sorted(m.id for m in catalog.models.values() if not m.config.kv_lora_rank)
    gpus = sorted(catalog.gpus)
    by_budget = rng.random() < BUDGET_MODE_SHARE
    # A stated budget when no card of a pinned catalog holds the base weights (the first pass never fails
    # on the whole catalog, so its draws are unchanged).
    for by_budget in ((True,) if by_budget else (False, True)):
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
                result = evaluate(plan_lora(inputs, catalog))
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
                f"{input_or_default(inputs, 'utilization') * 100:g} % of memory usable and "
                f"{input_or_default(inputs, 'reserve_gib'):g} GiB per card reserved for activations, and adapters "
                f"may take "
                f"{inputs.get('budget_share', 0.1) * 100:g} % of the KV cache budget that leaves")
    return (f"A platform serves many customer fine-tunes of {model} as LoRA adapters of rank "
            f"{inputs.get('rank', 16)} on {targets}, stored in {inputs.get('adapter_dtype', 'bf16')}; {room}. "
            f"How many parameters does one adapter add per layer and in all, how much memory does it take, how "
            f"much memory is there for adapters, and how many fit at once?")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
LORA_RUBRIC = (
    "Sizes each adapted matrix as rank × (input width + output width), never the full update",
    "Uses the config's narrower K/V widths under grouped-query attention",
    "Counts every adapted layer and target projection",
    "Takes adapter memory from the KV budget and says how many users it costs",
)


FAMILIES = (
    Family("lora", "LoRA adapters",
           "Memory per LoRA adapter from its rank and target projections, and how many fit beside the base "
           "weights.",
           INPUTS, plan_lora, generate=generate_lora,
           order=130, describe=describe_lora,
           headlines=("adapter_gib", "adapters_fit"), chapter="12-engines", difficulty=3, rubric=LORA_RUBRIC),
)

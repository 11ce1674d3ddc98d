"""The ``moe`` family: a mixture of experts stores every expert and runs a few per token.

The three-way check (bytes stored, bytes moved, operations performed) applied
to a mixture of experts: memory holds *all* experts, because any token may be
routed to any of them; a token at batch 1 reads and multiplies only the
experts it is routed to, plus the attention, the shared experts, the router
and the embeddings every token uses. So MoE saves operations and, at small
batch, bytes moved; it saves no memory.

Steps: ``total_params`` and ``active_params`` (the ``params`` family's counts,
read from the config), ``weights_gib`` (all parameters × bits: everything is
resident), ``active_bytes_per_token`` (active parameters × bits: the weights
one token reads at batch 1), ``flops_per_token`` (2 × active parameters: a
multiply and an add per weight) and ``saving_ratio`` (total ÷ active: how many
times fewer operations per token than a dense model of the same size).

With ``layout="dp-attention"`` (a MoE model on a card) the family also sizes one card of the layout
DeepSeek and SGLang publish: attention data-parallel (each card holds every attention, embedding, dense
and shared-expert weight, and only its own users' latent, no copy across cards) and the routed experts
split over ``ep_degree`` cards. Steps: ``kv_bytes_per_token`` (at ``layout_kv_dtype``), ``per_user_gib`` (at
``layout_context`` tokens, one copy), ``ep_weights_per_gpu_gib`` (the replicated weights plus the routed experts ÷ EP),
``usable_per_gpu_gib`` (card × utilisation), ``kv_budget_gib`` (that less the card's weights and its
activation reserve) and ``users_worst_case`` (users per card at that context). What the layout costs in
time (the all-to-all, expert imbalance) is the EP steps' and a measurement's, not these.

Convention (the project's, docs/architecture.md §2): every parameter a token touches
counts, the whole embedding table included, as the reference decode ceiling
and prefill FLOPs count all 8,030,261,248 of Llama-3.1-8B. DeepSeek quotes its
active counts without the input embedding.
"""

from __future__ import annotations

from typing import Any

from sympy import Min, floor

from ..catalog import NOMINAL_BITS, Catalog
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import memory as F
from ..formulas import product, ratio, total
from ..formulas.serving import RIDGE
from ..hf_config import ModelConfig, mlp_params
from ..quantities import default
from ..step_model import ACTIVATION_BYTES, COMPUTE_PRECISION, compute_precision
from .base import (
    WEIGHT_DTYPES_DRAWN,
    Family,
    Plan,
    Result,
    StepSpec,
    computing_gpus,
    format_number,
    widths_given,
    widths_notes,
)
from .inputs import (
    GPU,
    KV_DTYPE,
    MODEL_HINT,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)
from .kv import kv_given, kv_per_token_spec, per_user_spec
from .params import TOTAL_PARAMS_STEP, params_given, params_notes
from .tp import USABLE_PER_GPU_GIB

# --- Expert parallelism for the ``moe`` family (docs/architecture.md §12): the all-to-all and the expert matmuls.

EP_BATCH = InputSpec("batch", "int", 64, "tokens in the step (decode batch)", minimum=1, maximum=1_000_000,
                     label="Decode batch")
EP_DEGREE = InputSpec("ep_degree", "int", 8, "cards the experts are spread over (expert parallelism)", minimum=1,
                      maximum=1024, unit="GPUs", label="Expert-parallel degree")

_B = Var("batch", "1", "tokens in the step")
_K = Var("experts_per_token", "1", "routed experts per token (top-k)")
_E = Var("experts", "1", "routed experts per MoE layer")

TOKENS_PER_EXPERT = Formula(
    "tokens_per_expert", (_B, _K, _E),
    lambda s: ratio(product(s["batch"], s["experts_per_token"]), s["experts"]),
)
ALL_TO_ALL_BYTES = Formula(
    "all_to_all_bytes",
    (Var("moe_layers", "1", "mixture-of-experts layers"), _B, _K, Var("hidden_size", "1", "model width"),
     Var("activation_bytes", "B", "bytes per activation value"), Var("ep_degree", "GPUs", "expert-parallel cards")),
    lambda s: product(2, s["moe_layers"], s["batch"], s["experts_per_token"], s["hidden_size"],
                      s["activation_bytes"], ratio(s["ep_degree"] - 1, s["ep_degree"])),
)
EXPERT_INTENSITY = Formula(
    "expert_flop_per_byte",
    (Var("tokens_per_expert", "1", "tokens per expert"),
     Var("expert_weight_bits", "bit", "bits per routed-expert parameter")),
    lambda s: ratio(product(2, s["tokens_per_expert"]), s["expert_weight_bits"]),
    label="Arithmetic intensity of an expert's matmul",
)
EP_RIDGE = RIDGE  # the roofline's ridge point, one formula (quantities.py)
EP_EFFICIENT = Formula(
    "ep_efficient",
    (Var("expert_flop_per_byte", "FLOP/byte", "expert intensity"), Var("ridge_flop_per_byte", "FLOP/byte", "ridge")),
    lambda s: Min(1, floor(ratio(s["expert_flop_per_byte"], s["ridge_flop_per_byte"]))),
    label="Expert matmuls reach the ridge (1) or not (0)",
)
EP_FORMULAS = (TOKENS_PER_EXPERT, ALL_TO_ALL_BYTES, EXPERT_INTENSITY, EP_RIDGE, EP_EFFICIENT)

EP_SPECS = [
    StepSpec(TOKENS_PER_EXPERT, label="Tokens per expert per step (B × k ÷ E)"),
    StepSpec(ALL_TO_ALL_BYTES, label="All-to-all bytes per step (dispatch and combine)"),
    StepSpec(EXPERT_INTENSITY, {"tokens_per_expert": "tokens_per_expert"},
             label="Intensity of an expert's matmul (2 × tokens per weight byte)"),
    StepSpec(EP_RIDGE, label="Ridge point of the card (dense peak ÷ bandwidth)"),
    StepSpec(EP_EFFICIENT,
             {"expert_flop_per_byte": "expert_flop_per_byte", "ridge_flop_per_byte": "ridge_flop_per_byte"},
             rounding="floor",
             label="EP efficient: the expert matmuls reach the ridge (1) or not (0)"),
]


def active_expert_params(cfg: ModelConfig) -> int:
    """Routed-expert parameters one token uses: MoE layers × experts per token × one expert (0 for a dense
    model)."""
    if not cfg.is_moe:
        return 0
    return (cfg.layers - cfg.dense_layers) * cfg.experts_per_token * mlp_params(cfg, cfg.moe_intermediate_size)


def ep_given(cfg: ModelConfig, batch: int, ep_degree: int, peak_tflops: float, bandwidth: float) -> dict:
    """The numbers the EP formulas read."""
    return {"moe_layers": cfg.layers - cfg.dense_layers, "experts": cfg.num_experts,
            "experts_per_token": cfg.experts_per_token, "hidden_size": cfg.hidden_size, "batch": batch,
            "activation_bytes": ACTIVATION_BYTES, "ep_degree": ep_degree, "peak_tflops": peak_tflops,
            "bandwidth": bandwidth}


def ep_notes(cfg: ModelConfig, v: dict, batch: int, ep_degree: int, gpu_name: str) -> list[str]:
    """What the all-to-all moves and whether the experts are worth their cards at this batch."""
    needed = v["ridge_flop_per_byte"] * v["tokens_per_expert"] / v["expert_flop_per_byte"]
    batch_at_ridge = needed * cfg.num_experts / cfg.experts_per_token
    verdict = ("efficient: each expert's weights are reused by enough tokens to keep the card compute-bound"
               if v["ep_efficient"] else
               f"bandwidth-bound: each expert reads its weights for only {v['tokens_per_expert']:.2f} tokens; a "
               f"batch of about {batch_at_ridge:,.0f} tokens would reach the ridge")
    return [f"Expert parallelism over {ep_degree} × {gpu_name}: each step sends "
            f"{format_number(v['all_to_all_bytes'], 'B')} through the all-to-all (dispatch and combine, "
            f"{(ep_degree - 1) / ep_degree:.0%} of tokens leave their card). At a batch of {batch:,} the experts "
            f"are {verdict}."]


# --- One card of the data-parallel-attention, expert-parallel layout (``layout="dp-attention"``) ----------

LAYOUT = InputSpec("layout", "choice", "none", "size one card of a layout (dp-attention: attention data-parallel, "
                   "routed experts over ep_degree cards)", choices=("none", "dp-attention"), label="Layout per card",
                   hint="dp-attention sizes one card: every shared weight, 1/EP of the routed experts and only its "
                        "own users' cache.")
LAYOUT_CONTEXT = InputSpec("layout_context", "int", 8192, "tokens each user holds (the layout's cache per card)",
                           minimum=1, maximum=10_000_000, unit="tok", label="Tokens per user (layout)")
LAYOUT_KV_DTYPE = InputSpec("layout_kv_dtype", "choice", "bf16", "precision of the layout's latent cache",
                            choices=KV_DTYPE.choices, label="KV cache precision (layout)")

EP_WEIGHTS_PER_GPU_GIB = Formula(
    "ep_weights_per_gpu_gib",
    (Var("total_params", "1", "parameters"), Var("mlp_layers", "1", "MoE layers"), _E,
     Var("expert_params", "1", "parameters of one routed expert"), Var("ep_degree", "GPUs", "expert-parallel cards"),
     Var("weight_bits", "bit", "bits per parameter outside the routed experts"),
     Var("expert_weight_bits", "bit", "bits per routed-expert parameter")),
    lambda s: total(product(total(s["total_params"], -product(s["mlp_layers"], s["experts"], s["expert_params"])),
                            s["weight_bits"]),
                    product(ratio(product(s["mlp_layers"], s["experts"], s["expert_params"]), s["ep_degree"]),
                            s["expert_weight_bits"])),
    label="Weights per card: every shared weight + the routed experts ÷ EP",
)
LAYOUT_FORMULAS = (EP_WEIGHTS_PER_GPU_GIB,)


def layout_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The per-card steps of the data-parallel-attention layout (one copy of each user's latent)."""
    return [
        kv_per_token_spec(cfg),
        per_user_spec(cfg, label="KV cache per user (one copy: attention is data-parallel)"),
        StepSpec(EP_WEIGHTS_PER_GPU_GIB, {"total_params": "total_params"}),
        StepSpec(USABLE_PER_GPU_GIB, label="Usable memory per card (× utilisation)"),
        StepSpec(F.KV_BUDGET_GIB, {"usable_gib": "usable_per_gpu_gib", "weights_gib": "ep_weights_per_gpu_gib"},
                 label="KV cache budget per card (after its weights and activation reserve)"),
        StepSpec(F.USERS_WORST_CASE, {"kv_budget_gib": "kv_budget_gib", "per_user_gib": "per_user_gib"},
                 rounding="floor", label="Users per card at this context"),
    ]


MOE_MODEL = InputSpec("model", "model", "mixtral-8x7b-v0.1", "model id from the catalog (a dense model "
                      "is allowed: it has no experts)", label="Model", hint=MODEL_HINT)

INPUTS = (MOE_MODEL, WEIGHTS_DTYPE, WEIGHTS_BITS, GPU, EP_BATCH, EP_DEGREE, LAYOUT, LAYOUT_CONTEXT, LAYOUT_KV_DTYPE)

STEP_KEYS = ("total_params", "active_params", "weights_gib", "active_bytes_per_token", "flops_per_token",
             "saving_ratio")

# --- formulas ----------------------------------------------------------------------------------

ACTIVE_BYTES_PER_TOKEN = Formula(
    "active_bytes_per_token",
    (Var("active_params", "1", "parameters used per token"), Var("weight_bits", "bit", "bits per parameter")),
    lambda s: product(s["active_params"], s["weight_bits"]),
    label="Weight bytes read per token at batch 1",
)

# A mixture of experts: the routed experts a token uses, at their own width, and every other parameter it uses.
ACTIVE_BYTES_PER_TOKEN_MOE = Formula(
    "active_bytes_per_token",
    (Var("active_params", "1", "parameters used per token"),
     Var("active_expert_params", "1", "routed-expert parameters a token uses (MoE layers × top-k × one expert)"),
     Var("weight_bits", "bit", "bits per parameter outside the routed experts"),
     Var("expert_weight_bits", "bit", "bits per routed-expert parameter")),
    lambda s: total(product(s["active_params"] - s["active_expert_params"], s["weight_bits"]),
                    product(s["active_expert_params"], s["expert_weight_bits"])),
    label="Weight bytes read per token at batch 1 (routed experts at their own width)",
)

FLOPS_PER_TOKEN = Formula(
    "flops_per_token",
    (Var("active_params", "1", "parameters used per token"),),
    lambda s: product(2, s["active_params"]),
)

SAVING_RATIO = Formula(
    "saving_ratio",
    (Var("total_params", "1", "parameters"), Var("active_params", "1", "parameters used per token")),
    lambda s: ratio(s["total_params"], s["active_params"]),
    label="Operations saved per token",
)

ALL_FORMULAS = (ACTIVE_BYTES_PER_TOKEN, ACTIVE_BYTES_PER_TOKEN_MOE, FLOPS_PER_TOKEN, SAVING_RATIO)


def moe_specs(moe: bool) -> list[StepSpec]:
    """The six steps; a mixture of experts' weights and bytes read carry their routed experts as a term of
    their own (at ``expert_weight_bits``), a dense model's one width."""
    weights = F.WEIGHTS_GIB_MIXED if moe else F.WEIGHTS_GIB
    return [
        TOTAL_PARAMS_STEP,
        StepSpec(F.ACTIVE_PARAMS,
                 from_steps={"total_params": "total_params"}, tolerance=0.001),
        StepSpec(weights,
                 from_steps={"total_params": "total_params"},
                 label="Weights resident (every expert)"),
        StepSpec(ACTIVE_BYTES_PER_TOKEN_MOE if moe else ACTIVE_BYTES_PER_TOKEN,
                 from_steps={"active_params": "active_params"},
                 label="Weight bytes read per token (batch 1)"),
        StepSpec(FLOPS_PER_TOKEN,
                 from_steps={"active_params": "active_params"},
                 label="Operations per token (2 × active)"),
        StepSpec(SAVING_RATIO,
                 from_steps={"total_params": "total_params", "active_params": "active_params"}),
    ]


SPECS = moe_specs(False)
MOE_SPECS = moe_specs(True)

# --- the procedure -----------------------------------------------------------------------------

def plan_moe(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Memory for all experts versus bytes and operations for the active ones, per token.

    ``raw`` holds ``model`` (catalog id) or ``config``, ``weights_dtype`` and
    optionally ``weights_bits`` (an effective width). Parameter counts come
    from the config (:func:`~..hf_config.param_breakdown`). Raises
    :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    given = {**params_given(cfg), **F.weights_given(cfg, inputs["weights_dtype"], inputs["weights_bits"]),
             **widths_given(cfg, inputs), "active_expert_params": active_expert_params(cfg)}
    bits = given["weight_bits"]
    specs = MOE_SPECS if cfg.is_moe else SPECS
    # A stored problem made before the EP steps carries no card in its catalog snapshot: it keeps its
    # six steps. A card with no sourced compute figure refuses the EP steps rather than guess.
    gpu = catalog.gpus.get(inputs["gpu"])
    if cfg.is_moe and gpu is not None:
        peak, bandwidth = float(gpu.dense_tflops[compute_precision(inputs["weights_dtype"], gpu)]), gpu.bandwidth_gb_s
        specs = specs + EP_SPECS
    else:  # no EP steps; the numbers are kept so every model reads the same inputs
        dense = gpu.dense_tflops if gpu else {}
        peak = float(dense.get(COMPUTE_PRECISION.get(inputs["weights_dtype"], "bf16")) or dense.get("bf16") or 0.0)
        bandwidth = gpu.bandwidth_gb_s if gpu else 0.0
    given.update(ep_given(cfg, inputs["batch"], inputs["ep_degree"], peak, bandwidth))
    # The layout's numbers are kept whatever the layout, as the EP ones are (the offline export sees what they
    # follow: the card, the cache precision).
    given.update({**kv_given(cfg, inputs["layout_kv_dtype"], 1), "context": inputs["layout_context"],
                  "card_mib": gpu.memory_mib if gpu else 0.0, "utilization": default("utilization"),
                  "reserve_gib": default("reserve_gib")})
    if inputs["layout"] == "dp-attention":
        if not cfg.is_moe or gpu is None:
            raise InputError("The dp-attention layout sizes a mixture of experts on a catalog card: choose an MoE "
                             "model and a card.", field="layout")
        specs = specs + layout_specs(cfg)

    def finish(result: Result) -> None:
        values = result.values
        total_gb = values["weights_gib"] * 2**30 / 1e9
        active_gb = values["active_bytes_per_token"] / 1e9

        if cfg.is_moe:
            notes = [
                f"Bytes stored: all {values['total_params']:,.0f} parameters stay resident "
                f"({format_number(values['weights_gib'], 'GiB')}), because the router may send any token to any "
                f"expert. Operations: a token uses {values['active_params']:,.0f}, "
                f"{values['saving_ratio']:.2f} times fewer than a dense model of the same size. MoE saves "
                f"operations, not memory.",
                f"Bytes moved: at batch 1 a decode step reads {active_gb:,.2f} GB of weights instead of "
                f"{total_gb:,.2f} GB. In a large batch the tokens are routed to different experts, so one step "
                f"reads most of the experts and the bandwidth saving fades; the saving in operations per token "
                f"stays.",
                f"Each of the {cfg.layers - cfg.dense_layers} MoE layers routes a token to {cfg.experts_per_token} "
                f"of {cfg.num_experts} experts"
                + (f" plus {cfg.shared_experts} shared" if cfg.shared_experts else "")
                + (" plus a shared expert" if cfg.shared_expert_intermediate_size else "") + ".",
                *(ep_notes(cfg, values, inputs["batch"], inputs["ep_degree"], gpu.name) if gpu else []),
            ]
        else:
            notes = [f"{model_name} is dense: it has no experts, every parameter is used by every token, and the "
                     f"ratio is 1."]
        notes.append("Active parameters count the whole embedding table, as the reference stack's decode ceiling "
                     "and prefill FLOPs do; a lookup reads one row of it, and DeepSeek's published active counts "
                     "leave it out.")
        notes += widths_notes(cfg, inputs)
        if bits != NOMINAL_BITS[inputs["weights_dtype"]] and bits == given["expert_weight_bits"]:
            notes.append(f"{inputs['weights_dtype']} weights are charged {bits:g} bits each, not the nominal "
                         f"{NOMINAL_BITS[inputs['weights_dtype']]}.")
        notes += params_notes(cfg)[:1] + list(cfg.notes)
        result.notes.extend(notes)

    return Plan("moe", inputs, specs, given, [], {"model_name": model_name, "is_moe": cfg.is_moe}, finish=finish)


# --- problems ----------------------------------------------------------------------------------

DENSE_SHARE = 0.15


def generate_moe(rng, catalog: Catalog) -> dict:
    """A mixture-of-experts problem: a catalog MoE model most of the time, a dense one
    (the 'no experts' case) about one time in seven."""
    moe = sorted(m.id for m in catalog.models.values() if m.config.is_moe)
    dense = sorted(m.id for m in catalog.models.values() if not m.config.is_moe)
    pool = dense if ((rng.random() < DENSE_SHARE and dense) or not moe) else moe  # one kind when pinned
    inputs = {"model": rng.choice(pool), "weights_dtype": rng.choice(WEIGHT_DTYPES_DRAWN),
              "gpu": rng.choice(sorted(computing_gpus(catalog))), "batch": rng.choice((1, 16, 64, 256, 1024, 4096)),
              "ep_degree": rng.choice((2, 4, 8, 16, 32))}
    if inputs["weights_dtype"] == "int4":
        inputs["weights_bits"] = rng.choice((4.5, 4.5, 4.8))
    return inputs


def describe_moe(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in an interviewer's words."""
    model = inputs.get("model", "the pasted model")
    dtype = inputs.get("weights_dtype", "bf16")
    bits = inputs.get("weights_bits")
    weights = f"{dtype}" + (f" (charged {bits:g} bits per weight)" if bits else "")
    return (f"Someone claims {model} is cheap to serve because each token only touches a few experts. Check "
            f"the claim with its config at {weights}: how many parameters does it hold and how many does one "
            f"token use? How many GiB must be resident, how many bytes of weights does one token read at "
            f"batch 1, how many operations does it cost, and by what factor does routing cut the operations?"
            + (f" With its experts spread over {inputs['ep_degree']} × {catalog.gpu(inputs['gpu']).name} and "
               f"{inputs['batch']:,} tokens in a step: how many tokens reach each expert, how many bytes cross the "
               f"all-to-all, and does an expert's matmul reach the card's ridge (1) or not (0)?"
               if "gpu" in inputs and catalog.model(model).config.is_moe else ""))


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
MOE_RUBRIC = (
    "Sizes memory from the total parameters — every expert stays resident",
    "Sizes FLOPs per token from the active parameters (shared layers plus the routed experts)",
    "States the saving as operations, not memory",
    "Works out tokens per expert at the batch and whether most experts are read each step",
    "Judges expert parallelism from the all-to-all bytes and the experts' intensity against the ridge",
)


FAMILIES = (
    Family("moe", "Mixture of experts",
           "Memory for every expert against bytes and operations for the active ones: MoE saves operations, "
           "not memory.",
           INPUTS, plan_moe, generate=generate_moe,
           order=120, describe=describe_moe,
           headlines=("weights_gib", "saving_ratio"), chapter="02-forward-pass", difficulty=3, rubric=MOE_RUBRIC),
)

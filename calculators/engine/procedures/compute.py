"""What the compute families (``roofline``, ``decode``, ``prefill``, ``prefix``) share, and the serving step as
family steps.

The compute-precision, prompt and MFU inputs, the dense/sparse peak lookup
(``gpus.json``'s ``tflops.<precision>_dense`` and ``_sparse_2to4``), the
parameters a token uses, the sentences their notes share, and the generators'
helpers: a model served at the smallest tensor-parallel degree that holds it,
and the phrases a drawn problem quotes.

*The serving step* (docs/architecture.md §12), shared by the families that show it: :func:`step_given`
resolves a replica (model, card, degree, precisions) and a
batch into the plain numbers :mod:`..formulas.serving` read, with the very
helpers :mod:`..step_model` uses, so a family's steps and the simulator's fast
path agree. :func:`step_specs` lists the step's :class:`StepSpec` s in order,
each reading earlier steps where the relation chains. The misconceptions that
belong to the step (communication left out, experts counted as all or as
top-k, replication ignored) live here too.
"""

from __future__ import annotations

import random
from typing import Any

from ..catalog import Catalog, Gpu
from ..errors import InputError
from ..formulas import serving as S
from ..formulas.memory import weight_bytes
from ..hf_config import ModelConfig, mlp_params, param_breakdown
from ..step_model import (
    ACTIVATION_BYTES,
    attention_head_dim,
    check_degree,
    compute_precision,
    kv_bytes_per_token,
    link_gb_s,
)
from .base import FIT_FRACTION, StepSpec, computing_gpus, widths_given
from .inputs import InputSpec
from .kv import kv_given

# Precisions a card's dense throughput is quoted at (keys of Gpu.dense_tflops).
COMPUTE_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "tf32", "fp4")

PRECISION = InputSpec("precision", "choice", "bf16", "compute precision whose dense TFLOP/s is the peak",
                      choices=COMPUTE_PRECISIONS, label="Compute precision")
PROMPT_TOKENS = InputSpec("prompt_tokens", "int", 2048, "prompt length, tokens", minimum=1,
                          maximum=10_000_000, unit="tok", label="Prompt length")
# The prefill and prefix families' MFU is prefill's: its quantity's key, default and label; ``mfu``, the key they
# used before (decode's MFU elsewhere), is still read in stored problems and links.
MFU = InputSpec.of("prefill_mfu", "float", "model FLOPs utilisation (fraction of the dense peak reached)",
                   older_names=("mfu",))

TP_DEGREES = (1, 2, 4, 8)
MAX_DRAWS = 200


def peak_tflops(gpu: Gpu, precision: str) -> tuple[float, float]:
    """(dense, 2:4-sparse) TFLOP/s of ``gpu`` at ``precision``, from ``gpus.json``'s
    ``tflops.<precision>_dense`` and ``_sparse_2to4`` (``int8_tops`` for int8).

    The sparse figure is 0.0 when none is on record. Raises :class:`InputError`
    (field ``precision``) when the card has no dense figure at that precision
    (fp8 on an A100, fp4 before Blackwell).
    """
    dense = gpu.dense_tflops.get(precision)
    if not dense:
        supported = ", ".join(p for p in COMPUTE_PRECISIONS if gpu.dense_tflops.get(p))
        if not supported:  # a card with no compute figure on record at all
            raise InputError(f"The {gpu.name} has no dense throughput on record at any precision, so it "
                             f"cannot be used for a compute problem; choose another card.", field="gpu")
        raise InputError(f"The {gpu.name} has no dense {precision} throughput on record; choose one of "
                         f"{supported}.", field="precision")
    return float(dense), float(gpu.sparse_tflops.get(precision) or 0.0)


def params_used(cfg: ModelConfig) -> tuple[int, int]:
    """(total, active) parameters: every stored weight, and those one token multiplies
    through (equal for a dense model; a mixture of experts uses its routed few)."""
    breakdown = param_breakdown(cfg)
    return breakdown.total, breakdown.active


def moe_note(cfg: ModelConfig, total: int, active: int, what: str) -> list[str]:
    """A sentence on which parameter count a mixture of experts is charged, or none."""
    if not cfg.is_moe:
        return []
    return [f"Mixture of experts: a token uses {active:,} of the {total:,} parameters "
            f"({cfg.experts_per_token} of {cfg.num_experts} routed experts per layer); {what}"]


def compute_peak_note(gpu: Gpu, precision: str, dense: float, sparse: float, gpus: int = 1) -> str:
    """One sentence naming the dense peak used and the sparse figure not used."""
    cards = f"{gpus} × " if gpus > 1 else ""
    text = f"Peak compute: {cards}{gpu.name} at {dense:,g} TFLOP/s dense in {precision}"
    if sparse:
        text += (f"; the datasheet's {sparse:,g} is the 2:4-sparsity figure, which dense inference "
                 f"never reaches")
    return text + "."


def smallest_fitting_degree(catalog: Catalog, model_id: str, gpu_id: str, dtype: str) -> int | None:
    """The smallest tensor-parallel degree of :data:`TP_DEGREES` that obeys the degree rule and
    whose cards hold the model's ``dtype`` weights (:func:`~..formulas.memory.weight_bytes`) in
    :data:`FIT_FRACTION` of their memory, or ``None``."""
    cfg = catalog.model(model_id).config
    weights = weight_bytes(cfg, dtype)
    card = catalog.gpu(gpu_id).memory_bytes
    for degree in TP_DEGREES:
        try:
            check_degree(cfg, degree)  # only degrees the heads accept (docs/architecture.md §12)
        except InputError:
            continue
        if weights <= FIT_FRACTION * degree * card:
            return degree
    return None


def opening_precisions(gpu: Gpu) -> dict[str, str]:
    """The weights and compute precision a page or a draw starts a card on when it has no dense bf16 figure on
    record (a card quoted only at fp8/fp4: Rubin, Rubin CPX, MI455X): fp8 where it lists fp8, else nvfp4 computing
    in fp4; ``{}`` for a card with a bf16 figure (bf16 stays the default)."""
    if gpu.dense_tflops.get("bf16"):
        return {}
    if gpu.dense_tflops.get("fp8"):
        return {"weights_dtype": "fp8", "precision": "fp8"}
    return {"weights_dtype": "nvfp4", "precision": "fp4"}


def draw_served_model(rng: random.Random, catalog: Catalog, dtypes=("bf16", "bf16", "fp8", "int8", "int4"),
                      precision: bool = False) -> dict:
    """A (model, gpu, gpus, weights_dtype[, precision]) that a real deployment would use:
    the weights fit the replica at the smallest TP degree that holds them.

    With ``precision`` a compute precision is drawn too (the weights' own format
    when the card computes in it, bf16 for int4 weights). On a card with no bf16 figure on record (Rubin,
    Rubin CPX, MI455X) bf16 and int4 draws become its :func:`opening_precisions`. Deterministic for a
    given ``rng``; raises ``RuntimeError`` if the catalog offers nothing that fits.
    """
    for _ in range(MAX_DRAWS):
        model = rng.choice(sorted(catalog.models))
        gpu = rng.choice(sorted(computing_gpus(catalog)))
        dtype = rng.choice(dtypes)
        card = catalog.gpu(gpu)
        if dtype in ("fp8", "int8") and not card.dense_tflops.get(dtype):
            dtype = "bf16"
        if dtype in ("bf16", "int4") and not card.dense_tflops.get("bf16"):  # a card quoted only at fp8/fp4
            dtype = opening_precisions(card)["weights_dtype"]
        degree = smallest_fitting_degree(catalog, model, gpu, dtype)
        if degree is None:
            continue
        drawn = {"model": model, "gpu": gpu, "gpus": degree, "weights_dtype": dtype}
        if precision:
            drawn["precision"] = dtype if dtype in ("bf16", "fp8", "int8") else "fp4" if dtype == "nvfp4" else "bf16"
        return drawn
    raise RuntimeError("No model in the catalog fits any card at up to 8-way tensor parallelism.")


def datasheet_phrase(gpu: Gpu, precision: str | None = None) -> str:
    """The card's datasheet figures a drawn problem quotes: bandwidth, and at ``precision``
    both the 2:4-sparse and the dense TFLOP/s (so the candidate has to pick one)."""
    text = f"The {gpu.name} datasheet lists {gpu.bandwidth_gb_s:,g} GB/s of memory bandwidth"
    dense = gpu.dense_tflops.get(precision) if precision else None
    if dense:
        sparse = gpu.sparse_tflops.get(precision)
        text += f" and, in {precision}, "
        text += (f"{sparse:,g} TFLOP/s with 2:4 sparsity or {dense:,g} TFLOP/s dense" if sparse
                 else f"{dense:,g} TFLOP/s dense")
    return text + "."


def model_phrase(inputs: dict[str, Any]) -> str:
    """How a drawn problem names its model."""
    return inputs.get("model") or "the pasted model"


def gpu_phrase(inputs: dict[str, Any], catalog: Catalog) -> str:
    """``one H100 SXM5 80GB`` or ``4 × H100 SXM5 80GB in tensor parallel``."""
    name = catalog.gpu(inputs["gpu"]).name
    gpus = inputs.get("gpus", 1)
    return f"one {name}" if gpus == 1 else f"{gpus} × {name} in tensor parallel"


BATCH = InputSpec("batch", "int", 1, "sequences decoding together in each step", minimum=1, maximum=100_000,
                  label="Batch")


def step_given(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any]) -> dict[str, Any]:
    """The numbers the step's formulas read, keyed by variable name.

    ``inputs`` holds ``gpus``, ``weights_dtype``, ``weights_bits``, ``kv_dtype``, ``batch``,
    ``context`` (average per sequence), ``bandwidth_efficiency``, ``mfu`` and
    ``allreduce_latency_us``. Raises :class:`~..errors.InputError` on a degree the heads refuse.
    """
    gpus = inputs["gpus"]
    check_degree(cfg, gpus)
    counts = param_breakdown(cfg)
    moe_layers = cfg.layers - cfg.dense_layers if cfg.is_moe else 0
    expert = mlp_params(cfg, cfg.moe_intermediate_size) if cfg.is_moe else 0
    batch = inputs["batch"]
    given = {
        **kv_given(cfg, inputs["kv_dtype"], gpus),
        "kv_bytes_per_token": kv_bytes_per_token(cfg, inputs["kv_dtype"]),
        "batch": batch,
        "context": inputs["context"],
        **widths_given(cfg, inputs),
        "params_read": counts.active,
        "active_params": counts.active,
        "always_read_params": counts.total - moe_layers * cfg.num_experts * expert,
        "moe_layers": moe_layers,
        "expert_params": expert,
        "experts": cfg.num_experts,
        "experts_per_token": cfg.experts_per_token,
        "attention_head_dim": attention_head_dim(cfg),
        "card_bandwidth": gpu.bandwidth_gb_s,
        "bandwidth_efficiency": inputs["bandwidth_efficiency"],
        "peak_tflops": float(gpu.dense_tflops[compute_precision(inputs["weights_dtype"], gpu)]),
        "mfu": inputs["mfu"],
        "allreduces": 2 * cfg.layers if gpus > 1 else 0,
        "step_tokens": batch,
        "activation_bytes": ACTIVATION_BYTES,
        "nvlink_domain_gpus": gpu.nvlink_domain_gpus,
        "nvlink_gb_s_per_direction": gpu.nvlink_gb_s_per_direction or 0.0,
        "pcie_gb_s_per_direction": gpu.pcie_gb_s_per_direction or 0.0,
        "scale_out_gb_s": gpu.scale_out_gb_s or 0.0,
        "link_gb_s": link_gb_s(gpu, gpus),
        "allreduce_latency_us": inputs["allreduce_latency_us"],
    }
    if cfg.is_moe:
        given["experts_touched"] = S.EXPERTS_TOUCHED({**given, "step_tokens": batch})
    else:
        given["experts_touched"] = 0.0
    return given


def weight_spec(cfg: ModelConfig) -> StepSpec:
    """``weight_bytes_per_step``: every weight of a dense model; a MoE's dense part and touched experts."""
    if cfg.is_moe:
        return StepSpec(S.STEP_WEIGHT_BYTES_MOE,
                        label="Weights read per step (the experts the batch touches)")
    return StepSpec(S.STEP_WEIGHT_BYTES,
                    label="Weights read per step (parameters a token uses × bytes)")


def replication_step(cfg: ModelConfig) -> StepSpec:
    """``kv_replication``: ``max(1, gpus ÷ kv_heads)``, or ``gpus`` for an MLA latent."""
    formula = S.KV_REPLICATION_MLA if cfg.kv_lora_rank else S.KV_REPLICATION
    return StepSpec(formula)


def kv_read_spec(cfg: ModelConfig) -> StepSpec:
    """``kv_bytes_per_step``: batch × context × KV per token × replication (windows applied)."""
    formula, _ = S.step_forms(cfg.window_layers, cfg.index_topk)
    return StepSpec(formula,
                    {"kv_replication": "kv_replication"},
                    label="KV cache read per step (every sequence's context)")


# The step's memory and compute times, the same steps wherever a family costs a step (time_specs, pareto).
MEMORY_TIME_STEP = StepSpec(S.MEMORY_MS, {"bytes_per_step": "bytes_per_step"},
                            label="Memory time (bytes ÷ replica bandwidth × efficiency)")
COMPUTE_TIME_STEP = StepSpec(S.COMPUTE_MS, {"flops_per_step": "flops_per_step"},
                             label="Compute time (FLOPs ÷ replica peak × MFU)")


def time_specs(cfg: ModelConfig) -> list[StepSpec]:
    """``flops_per_step`` through ``tok_s_per_replica`` (needs ``bytes_per_step`` before it)."""
    _, flops = S.step_forms(cfg.window_layers, cfg.index_topk)
    return [
        StepSpec(flops, label="FLOPs per step (2 × active parameters + attention, per sequence)"),
        MEMORY_TIME_STEP,
        COMPUTE_TIME_STEP,
        StepSpec(S.COMM_MS, label="Communication time (two all-reduces per layer)"),
        StepSpec(S.STEP_MS,
                 {"memory_ms": "memory_ms", "compute_ms": "compute_ms", "comm_ms": "comm_ms"},
                 label="Step time (max(memory, compute) + communication)"),
        StepSpec(S.TOK_S_PER_USER,
                 {"step_ms": "step_ms"},
                 label="Tokens per second per sequence (1 ÷ step)"),
        StepSpec(S.TOK_S_PER_REPLICA,
                 {"step_ms": "step_ms"},
                 label="Tokens per second per replica (batch ÷ step)"),
    ]




GIB = 2**30


def weights_read_ms(given: dict[str, float], weights_gib: float) -> float:
    """Milliseconds to read the weights once at the stated bandwidth efficiency."""
    return weights_gib * GIB / (given["gpus"] * given["bandwidth_gb_s"] * 1e9 * given["bandwidth_efficiency"]) * 1e3



def flops_per_sequence(g: dict[str, Any]) -> float:
    """FLOPs one sequence adds to a decode step: the step's formula
    (:data:`~..formulas.serving.STEP_FLOPS_WINDOWED`) at a batch of one.

    ``g`` holds ``active_params``, ``heads``, ``attention_head_dim``, ``full_layers``,
    ``window_layers``, ``window`` and ``context`` (tokens).
    """
    return S.STEP_FLOPS_WINDOWED({**g, "batch": 1})

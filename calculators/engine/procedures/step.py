"""The serving model's step as family steps (docs/architecture.md §12), shared by the families that show it.

:func:`step_given` resolves a replica (model, card, degree, precisions) and a
batch into the plain numbers :mod:`..formulas.serving` read, with the very
helpers :mod:`..step_model` uses, so a family's steps and the simulator's fast
path agree. :func:`step_specs` lists the step's :class:`StepSpec` s in order,
each reading earlier steps where the relation chains. The misconceptions that
belong to the step (communication left out, experts counted as all or as
top-k, replication ignored) live here too.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Gpu
from ..dtypes import weight_bits
from ..formulas import serving as S
from ..hf_config import ModelConfig
from ..param_count import mlp_params, param_breakdown
from ..step_model import (
    ACTIVATION_BYTES,
    attention_head_dim,
    check_degree,
    compute_precision,
    kv_bytes_per_token,
    link_gb_s,
)
from .base import StepSpec
from .inputs import InputSpec
from .kv import kv_given

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
        "weight_bits": weight_bits(inputs["weights_dtype"], inputs["weights_bits"]),
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
        return StepSpec("weight_bytes_per_step", "Weights read per step (the experts the batch touches)",
                        S.STEP_WEIGHT_BYTES_MOE)
    return StepSpec("weight_bytes_per_step", "Weights read per step (parameters a token uses × bytes)",
                    S.STEP_WEIGHT_BYTES)


def replication_step(cfg: ModelConfig) -> StepSpec:
    """``kv_replication``: ``max(1, gpus ÷ kv_heads)``, or ``gpus`` for an MLA latent."""
    formula = S.KV_REPLICATION_MLA if cfg.kv_lora_rank else S.KV_REPLICATION
    return StepSpec("kv_replication", "Copies of each K/V head across the replica", formula)


def kv_read_spec(cfg: ModelConfig) -> StepSpec:
    """``kv_bytes_per_step``: batch × context × KV per token × replication (windows applied)."""
    formula = S.STEP_KV_BYTES_WINDOWED if cfg.window_layers else S.STEP_KV_BYTES
    return StepSpec("kv_bytes_per_step", "KV cache read per step (every sequence's context)", formula,
                    {"kv_replication": "kv_replication"})


def time_specs(cfg: ModelConfig) -> list[StepSpec]:
    """``flops_per_step`` through ``tok_s_per_replica`` (needs ``bytes_per_step`` before it)."""
    flops = S.STEP_FLOPS_WINDOWED if cfg.window_layers else S.STEP_FLOPS
    return [
        StepSpec("flops_per_step", "FLOPs per step (2 × active parameters + attention, per sequence)", flops),
        StepSpec("memory_ms", "Memory time (bytes ÷ replica bandwidth × efficiency)", S.MEMORY_MS,
                 {"bytes_per_step": "bytes_per_step"}),
        StepSpec("compute_ms", "Compute time (FLOPs ÷ replica peak × MFU)", S.COMPUTE_MS,
                 {"flops_per_step": "flops_per_step"}),
        StepSpec("comm_ms", "Communication time (two all-reduces per layer)", S.COMM_MS),
        StepSpec("step_ms", "Step time (max(memory, compute) + communication)", S.STEP_MS,
                 {"memory_ms": "memory_ms", "compute_ms": "compute_ms", "comm_ms": "comm_ms"}),
        StepSpec("tok_s_per_user", "Tokens per second per sequence (1 ÷ step)", S.TOK_S_PER_USER,
                 {"step_ms": "step_ms"}),
        StepSpec("tok_s_per_replica", "Tokens per second per replica (batch ÷ step)", S.TOK_S_PER_REPLICA,
                 {"step_ms": "step_ms"}),
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

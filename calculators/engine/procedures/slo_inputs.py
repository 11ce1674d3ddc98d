"""The ``slo`` family's inputs and the numbers its steps read (:func:`slo_given`).

Bandwidth and dense TFLOP/s per precision are the ``gpus.json`` datasheet
fields (``memory_bandwidth_GBps``, ``tflops.<precision>_dense``); layer, head
and width counts are the model's ``config.json`` fields.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Gpu
from ..dtypes import NOMINAL_BITS, weight_bits
from ..errors import InputError
from ..formulas import memory as F
from ..hf_config import ModelConfig
from ..param_count import param_breakdown
from ..step_model import COMPUTE_PRECISION as STEP_COMPUTE_PRECISION
from .fleet import GPUS_PER_NODE
from .inputs import (
    ALLREDUCE_LATENCY_US,
    BANDWIDTH_EFFICIENCY,
    CONTEXT,
    GPU,
    KV_DTYPE,
    MFU,
    MODEL_HINT,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
)
from .kv import kv_given
from .offline import NO_LINK
from .params import params_given
from .step import step_given

GIB = 2**30

SLO_MODEL = InputSpec("model", "model", "llama-3.1-70b", "model id from the catalog", label="Model",
                      hint=MODEL_HINT)
SLO_GPUS = InputSpec("gpus", "int", 8, "cards per replica (tensor-parallel degree)", minimum=1, maximum=1024,
                     unit="GPUs", label="GPUs per replica")
TPOT_TARGET_MS = InputSpec("tpot_target_ms", "float", 50.0, "time per output token the service promises, ms",
                           minimum=0, exclusive_minimum=True, maximum=10_000, unit="ms", label="TPOT target")
REQUEST_RATE = InputSpec("request_rate", "float", 20.0, "mean arrival rate, requests per second", minimum=0,
                         exclusive_minimum=True, maximum=1_000_000, unit="req/s", label="Request rate")
OUTPUT_TOKENS = InputSpec("output_tokens", "int", 500, "mean output tokens per request", minimum=1,
                          maximum=1_000_000, unit="tok", label="Mean output length")

INPUTS = (SLO_MODEL, GPU, SLO_GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, CONTEXT, UTILIZATION, RESERVE_GIB,
          TPOT_TARGET_MS, BANDWIDTH_EFFICIENCY, MFU, REQUEST_RATE, OUTPUT_TOKENS, GPUS_PER_NODE, ALLREDUCE_LATENCY_US)

# The tensor-core precision a decode step multiplies in, by weight format (step_model's table, docs/architecture.md
# §12): int4 weights are dequantised to bf16 (weight-only kernels); fp8 and int8 run W8A8 on their own
# tensor cores; nvfp4 and mxfp4 run on fp4 tensor cores where the card lists them.
COMPUTE_PRECISION = STEP_COMPUTE_PRECISION


def compute_precision(gpu: Gpu, weights_dtype: str) -> tuple[str, str | None]:
    """The key of ``gpu.dense_tflops`` a decode step's matrix multiplies run at, and a sentence
    saying why when it is not the weights' own format (``None`` otherwise).

    A card without tensor cores for the wanted precision (fp8 on an A100, tf32 on a card that
    lists none) falls back to bf16. The table of wanted precisions is
    :data:`~..step_model.COMPUTE_PRECISION`. Raises :class:`~..errors.InputError`
    (field ``gpu``) when the card has no dense bf16 figure on record.
    """
    wanted = COMPUTE_PRECISION[weights_dtype]
    if not gpu.dense_tflops.get("bf16"):
        raise InputError(f"The {gpu.name} has no dense bf16 throughput on record (see its catalog entry), so a "
                         f"decode step on it cannot be costed.", field="gpu")
    if not gpu.dense_tflops.get(wanted):
        return "bf16", (f"The {gpu.name} lists no dense {wanted} throughput, so {weights_dtype} weights are "
                        f"multiplied at bf16 (weight-only kernels dequantise them).")
    if weights_dtype == "int4":
        return wanted, ("int4 weights are dequantised and multiplied at bf16 (weight-only quantisation), so the "
                        "compute term uses the bf16 dense figure.")
    if weights_dtype in ("nvfp4", "mxfp4"):
        return wanted, (f"{weights_dtype} weights are multiplied on fp4 tensor cores, so the compute term uses the "
                        f"dense fp4 figure.")
    if weights_dtype in ("fp8", "int8"):
        return wanted, (f"{weights_dtype} weights are multiplied on {weights_dtype} tensor cores (activations "
                        f"quantised too), so the compute term uses the dense {weights_dtype} figure.")
    return wanted, None


def slo_given(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any]) -> tuple[dict[str, float], str, str | None]:
    """The numbers the steps read (keyed by formula variable: parameter counts, bits, MiB and GiB,
    GB/s, dense TFLOP/s, ms, req/s), the compute precision and its note (or ``None``).

    ``inputs`` are the cleaned :data:`INPUTS`. Raises :class:`~..errors.InputError` when the card has
    no dense bf16 figure (:func:`compute_precision`), or (field ``gpus``) when a replica of more
    than one card crosses a link with no bandwidth on record.
    """
    precision, precision_note = compute_precision(gpu, inputs["weights_dtype"])
    breakdown = param_breakdown(cfg)
    given: dict[str, Any] = {
        **params_given(cfg),
        **kv_given(cfg, inputs["kv_dtype"], inputs["gpus"]),
        "total_params": breakdown.total,
        "active_params": breakdown.active,
        "weight_bits": weight_bits(inputs["weights_dtype"], inputs["weights_bits"]),
        "weights_dtype_bits_nominal": NOMINAL_BITS[inputs["weights_dtype"]],
        "gpus": inputs["gpus"],
        "card_mib": gpu.memory_mib,
        "card_marketed_gb": gpu.marketed_gb,
        "utilization": inputs["utilization"],
        "reserve_gib": inputs["reserve_gib"],
        "context": inputs["context"],
        "bandwidth_gb_s": gpu.bandwidth_gb_s,
        "bandwidth_efficiency": inputs["bandwidth_efficiency"],
        "peak_tflops": gpu.dense_tflops[precision],
        "sparse_tflops": gpu.sparse_tflops.get(precision),
        "mfu": inputs["mfu"],
        "tpot_target_ms": inputs["tpot_target_ms"],
        "request_rate": inputs["request_rate"],
        "output_tokens": inputs["output_tokens"],
        "gpus_per_node": inputs["gpus_per_node"],
    }
    kv_formula = F.KV_BYTES_PER_TOKEN_MLA if cfg.kv_lora_rank else F.KV_BYTES_PER_TOKEN
    given["kv_bytes_per_token"] = kv_formula(given)
    step = step_given(cfg, gpu, {**inputs, "batch": 1})
    for key in ("always_read_params", "experts", "experts_per_token", "attention_head_dim", "allreduces",
                "activation_bytes", "link_gb_s", "allreduce_latency_us", "nvlink_domain_gpus",
                "nvlink_gb_s_per_direction", "pcie_gb_s_per_direction", "scale_out_gb_s"):
        given[key] = step[key]
    given["routed_expert_params"] = step["moe_layers"] * step["experts"] * step["expert_params"]
    if inputs["gpus"] > 1 and not given["link_gb_s"]:
        raise InputError(NO_LINK.format(gpus=inputs["gpus"], gpu=gpu.name, domain=gpu.nvlink_domain_gpus), field="gpus")
    return given, precision, precision_note


def weights_read_ms(given: dict[str, float], weights_gib: float) -> float:
    """Milliseconds to read the weights once at the stated bandwidth efficiency."""
    return weights_gib * GIB / (given["gpus"] * given["bandwidth_gb_s"] * 1e9 * given["bandwidth_efficiency"]) * 1e3



def flops_per_sequence(g: dict[str, Any]) -> float:
    """FLOPs one sequence adds to a decode step: 2 × active parameters + the attention over its cached tokens.

    ``g`` holds ``active_params``, ``heads``, ``attention_head_dim``, ``full_layers``,
    ``window_layers``, ``window`` and ``context`` (tokens); sliding-window layers attend to at
    most ``window`` tokens.
    """
    cached = g["full_layers"] * g["context"] + g["window_layers"] * min(g["context"], g["window"])
    return 2 * g["active_params"] + 4 * g["heads"] * g["attention_head_dim"] * cached

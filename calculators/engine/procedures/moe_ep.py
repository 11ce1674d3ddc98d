"""Expert parallelism for the ``moe`` family (docs/architecture.md §12): the all-to-all and the expert matmuls.

With the experts spread over ``EP`` cards, each step's tokens travel to the
cards holding their experts and back: ``all_to_all_bytes`` = 2 × MoE layers ×
B × k × d_model × 2 B × (EP − 1) ÷ EP (dispatch and combine, bf16 activations,
the share of tokens whose expert lives elsewhere). Each expert then sees
``tokens_per_expert`` = B × k ÷ E tokens (uniform routing), so its matmul does
2 × tokens FLOPs per weight it reads: ``expert_flop_per_byte`` = 2 × B × k ÷ E
÷ (bits ÷ 8). EP is efficient when that reaches the card's ridge
(``ep_efficient`` 1), and is bandwidth-bound, wasting compute, when it does not.
"""

from __future__ import annotations

from sympy import Min, floor

from ..formula import Formula, Var
from ..formulas import product, ratio
from ..hf_config import ModelConfig
from ..serving_formulas import RIDGE
from ..step_model import ACTIVATION_BYTES
from .base import StepSpec, format_number
from .inputs import InputSpec

EP_BATCH = InputSpec("batch", "int", 64, "tokens in the step (decode batch)", minimum=1, maximum=1_000_000,
                     label="Decode batch")
EP_DEGREE = InputSpec("ep_degree", "int", 8, "cards the experts are spread over (expert parallelism)", minimum=1,
                      maximum=1024, unit="GPUs", label="Expert-parallel degree")

_B = Var("batch", "1", "tokens in the step")
_K = Var("experts_per_token", "1", "routed experts per token (top-k)")
_E = Var("experts", "1", "routed experts per MoE layer")

TOKENS_PER_EXPERT = Formula(
    "tokens_per_expert", "Tokens per expert per step", "1", (_B, _K, _E),
    lambda s: ratio(product(s["batch"], s["experts_per_token"]), s["experts"]),
)
ALL_TO_ALL_BYTES = Formula(
    "all_to_all_bytes", "All-to-all bytes per step", "B",
    (Var("moe_layers", "1", "mixture-of-experts layers"), _B, _K, Var("hidden_size", "1", "model width"),
     Var("activation_bytes", "B", "bytes per activation value"), Var("ep_degree", "GPUs", "expert-parallel cards")),
    lambda s: product(2, s["moe_layers"], s["batch"], s["experts_per_token"], s["hidden_size"],
                      s["activation_bytes"], ratio(s["ep_degree"] - 1, s["ep_degree"])),
)
EXPERT_INTENSITY = Formula(
    "expert_flop_per_byte", "Arithmetic intensity of an expert's matmul", "FLOP/byte",
    (Var("tokens_per_expert", "1", "tokens per expert"), Var("weight_bits", "bit", "bits per weight")),
    lambda s: ratio(product(2, s["tokens_per_expert"]), s["weight_bits"]),
)
EP_RIDGE = RIDGE  # the roofline's ridge point, one formula (quantities.py)
EP_EFFICIENT = Formula(
    "ep_efficient", "Expert matmuls reach the ridge (1) or not (0)", "1",
    (Var("expert_flop_per_byte", "FLOP/byte", "expert intensity"), Var("ridge_flop_per_byte", "FLOP/byte", "ridge")),
    lambda s: Min(1, floor(ratio(s["expert_flop_per_byte"], s["ridge_flop_per_byte"]))),
)
EP_FORMULAS = (TOKENS_PER_EXPERT, ALL_TO_ALL_BYTES, EXPERT_INTENSITY, EP_RIDGE, EP_EFFICIENT)

EP_SPECS = [
    StepSpec("tokens_per_expert", "Tokens per expert per step (B × k ÷ E)", TOKENS_PER_EXPERT),
    StepSpec("all_to_all_bytes", "All-to-all bytes per step (dispatch and combine)", ALL_TO_ALL_BYTES),
    StepSpec("expert_flop_per_byte", "Intensity of an expert's matmul (2 × tokens per weight byte)",
             EXPERT_INTENSITY, {"tokens_per_expert": "tokens_per_expert"}),
    StepSpec("ridge_flop_per_byte", "Ridge point of the card (dense peak ÷ bandwidth)", EP_RIDGE),
    StepSpec("ep_efficient", "EP efficient: the expert matmuls reach the ridge (1) or not (0)", EP_EFFICIENT,
             {"expert_flop_per_byte": "expert_flop_per_byte", "ridge_flop_per_byte": "ridge_flop_per_byte"},
             rounding="floor"),
]


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

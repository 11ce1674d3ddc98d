"""Whole-fleet cost for the ``disagg`` family (docs/architecture.md §12): both pools, occupancy and spares.

Cost per million output tokens of the whole fleet = (prefill cards + decode cards) ÷ occupancy,
rounded up, + spare cards, × the price per GPU-hour, ÷ the output tokens the load produces in that
hour. Beside it, the single-node figure the runbook quoted before: one decode replica's cards at full
occupancy over its own decode rate, with no prefill fleet, no headroom and no spares.
"""

from __future__ import annotations

from sympy import ceiling

from ..formula import Formula, Var
from ..formulas import product, ratio, total
from .base import StepSpec
from .cost import USD_PER_GPU_HOUR
from .fleet import OCCUPANCY
from .inputs import InputSpec

SPARE_GPUS = InputSpec("spare_gpus", "int", 8, "spare cards kept for failures and rollouts (a node)", minimum=0,
                       maximum=100_000, unit="GPUs", label="Spare GPUs")
COST_INPUTS = (USD_PER_GPU_HOUR, OCCUPANCY, SPARE_GPUS)

FLEET_GPUS = Formula(
    "fleet_gpus", "Cards billed for the whole fleet", "GPUs",
    (Var("prefill_gpus", "GPUs", "prefill pool"), Var("decode_gpus", "GPUs", "decode pool"),
     Var("occupancy", "1", "average fraction of each card busy"), Var("spare_gpus", "GPUs", "spare cards")),
    lambda s: total(ceiling(ratio(total(s["prefill_gpus"], s["decode_gpus"]), s["occupancy"])), s["spare_gpus"]),
)
FLEET_USD_PER_MTOK = Formula(
    "fleet_usd_per_mtok", "Whole-fleet cost per million output tokens", "USD/Mtok",
    (Var("fleet_gpus", "GPUs", "cards billed"), Var("usd_per_gpu_hour", "USD/h", "price per GPU-hour"),
     Var("rate", "req/s", "arrival rate"), Var("output_tokens", "tok", "output tokens per request")),
    lambda s: ratio(product(s["fleet_gpus"], s["usd_per_gpu_hour"]), product(s["rate"], s["output_tokens"])),
)
NODE_USD_PER_MTOK = Formula(
    "node_usd_per_mtok", "Single-node figure: one decode replica at full occupancy", "USD/Mtok",
    (Var("gpus", "GPUs", "cards per replica"), Var("usd_per_gpu_hour", "USD/h", "price per GPU-hour"),
     Var("decode_tok_s", "tok/s", "tokens per second of one decode replica")),
    lambda s: ratio(product(s["gpus"], s["usd_per_gpu_hour"]), s["decode_tok_s"]),
)
COST_FORMULAS = (FLEET_GPUS, FLEET_USD_PER_MTOK, NODE_USD_PER_MTOK)

COST_SPECS = [
    StepSpec("fleet_gpus", "Cards billed: both pools ÷ occupancy, rounded up, + spares", FLEET_GPUS,
             {"prefill_gpus": "prefill_gpus", "decode_gpus": "decode_gpus"}, rounding="ceil"),
    StepSpec("fleet_usd_per_mtok", "Whole-fleet cost per million output tokens", FLEET_USD_PER_MTOK,
             {"fleet_gpus": "fleet_gpus"}),
    StepSpec("node_usd_per_mtok", "Single-node figure (one decode replica, full occupancy)", NODE_USD_PER_MTOK),
]

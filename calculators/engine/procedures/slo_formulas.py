"""The ``slo`` family's formulas and its twelve steps (the step-time formulas are in :mod:`.slo_step`).

The replica's KV budget is the ladder's (cards × utilisation − weights − one
reserve per card); the batch is the smaller of what that budget holds and what
the TPOT target allows; the fleet is Little's law at full occupancy (request
rate × mean output tokens ÷ tokens per second per replica, rounded up).
"""

from __future__ import annotations

import sympy
from sympy import Max, Min, ceiling, floor

from ..formula import BYTE, SECOND, USD, Formula, Var
from ..formulas import memory as F
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from .base import StepSpec
from .kv import replication_spec
from .slo_step import BATCH_TPOT_LIMIT, BYTES_PER_STEP_MOE, TPOT_MS


class MaxOfLike(Max):
    """``max`` of quantities in one unit (two times).

    The unit check of :class:`~..formula.Formula` substitutes each variable's unit
    size and needs the dimension to cancel; sympy does not take a unit common to
    every argument outside a ``Max``, so this class does it when the units are
    substituted (``max(a·s, b·s)`` becomes ``s · max(a, b)``). It prints and
    evaluates as ``max``.
    """

    def __new__(cls, *args, **options):
        args = [sympy.sympify(arg) for arg in args]
        for unit in (BYTE, SECOND, USD):
            powers = {sympy.powsimp(arg).as_powers_dict().get(unit, 0) for arg in args}
            if len(powers) == 1 and 0 not in powers:
                power = powers.pop()
                return Max(*(sympy.powsimp(arg / unit**power) for arg in args)) * unit**power
        return super().__new__(cls, *args, **options)


REPLICA_KV_BUDGET_GIB = Formula(
    "replica_kv_budget_gib", "KV cache budget of the replica", "GiB",
    (Var("gpus", "GPUs", "cards in the replica"),
     Var("card_mib", "MiB", "memory per card"),
     Var("utilization", "1", "utilisation fraction"),
     Var("weights_gib", "GiB", "weights"),
     Var("reserve_gib", "GiB", "activation reserve per card")),
    lambda s: total(product(s["gpus"], s["card_mib"], s["utilization"]), -s["weights_gib"],
                    -product(s["gpus"], s["reserve_gib"])),
)

BATCH_MEMORY_LIMIT = Formula(
    "batch_memory_limit", "Sequences the KV budget holds", "users",
    (Var("replica_kv_budget_gib", "GiB", "KV cache budget"),
     Var("per_user_gib", "GiB", "KV cache per sequence")),
    lambda s: Max(0, floor(ratio(s["replica_kv_budget_gib"], s["per_user_gib"]))),
)

MAX_BATCH = Formula(
    "max_batch", "Largest batch", "users",
    (Var("batch_memory_limit", "users", "sequences the KV budget holds"),
     Var("batch_tpot_limit", "users", "sequences within the TPOT target")),
    lambda s: Min(s["batch_memory_limit"], s["batch_tpot_limit"]),
)

BYTES_PER_STEP = Formula(
    "bytes_per_step_gib", "Bytes read per decode step", "GiB",
    (Var("weights_gib", "GiB", "weights"),
     Var("max_batch", "users", "sequences in the batch"),
     Var("per_user_gib", "GiB", "KV cache per sequence")),
    lambda s: total(s["weights_gib"], product(s["max_batch"], s["per_user_gib"])),
)

TOKENS_PER_S = Formula(
    "tokens_per_s", "Tokens per second per replica", "tok/s",
    (Var("max_batch", "users", "sequences in the batch (one token each per step)"),
     Var("tpot_ms", "ms", "step time")),
    lambda s: ratio(s["max_batch"], s["tpot_ms"]),
)

REPLICAS = Formula(
    "replicas", "Replicas", "replicas",
    (Var("request_rate", "req/s", "mean arrival rate"),
     Var("output_tokens", "tok", "mean output tokens per request"),
     Var("tokens_per_s", "tok/s", "tokens per second per replica")),
    lambda s: ceiling(ratio(product(s["request_rate"], s["output_tokens"]), s["tokens_per_s"])),
)

NODES = Formula(
    "nodes", "Nodes", "nodes",
    (Var("replicas", "replicas", "replicas"),
     Var("gpus", "GPUs", "cards per replica"),
     Var("gpus_per_node", "GPUs", "cards per node")),
    lambda s: ceiling(ratio(product(s["replicas"], s["gpus"]), s["gpus_per_node"])),
)

FORMULAS = (REPLICA_KV_BUDGET_GIB, BATCH_MEMORY_LIMIT, BATCH_TPOT_LIMIT, MAX_BATCH, BYTES_PER_STEP, BYTES_PER_STEP_MOE,
            TPOT_MS, TOKENS_PER_S, REPLICAS, NODES)

STEP_KEYS = ("weights_gib", "replica_kv_budget_gib", "kv_replication", "per_user_gib", "batch_memory_limit",
             "batch_tpot_limit", "max_batch", "bytes_per_step_gib", "tpot_ms", "tokens_per_s", "replicas", "nodes")


def batch_limit_specs(cfg: ModelConfig, *, per_user_label: str, memory_label: str) -> list[StepSpec]:
    """The six steps slo and pareto share: weights, the replica's KV budget, K/V replication, the cache per
    sequence (its latent and sliding windows followed) and the two batch limits, memory and TPOT. The
    labels of the per-sequence cache and the memory limit are each family's own wording."""
    per_user = F.PER_USER_GIB_WINDOWED if cfg.window_layers else F.PER_USER_GIB
    return [
        StepSpec("weights_gib", "Weights", F.WEIGHTS_GIB),
        StepSpec("replica_kv_budget_gib", "KV cache budget (cards × utilisation − weights − reserves)",
                 REPLICA_KV_BUDGET_GIB, {"weights_gib": "weights_gib"}),
        replication_spec(cfg),
        StepSpec("per_user_gib", per_user_label, per_user, {"kv_replication": "kv_replication"}),
        StepSpec("batch_memory_limit", memory_label, BATCH_MEMORY_LIMIT,
                 {"replica_kv_budget_gib": "replica_kv_budget_gib", "per_user_gib": "per_user_gib"},
                 rounding="floor"),
        StepSpec("batch_tpot_limit", "Batch whose step meets the TPOT target", BATCH_TPOT_LIMIT,
                 {"per_user_gib": "per_user_gib"}, rounding="floor"),
    ]


def slo_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The twelve steps for a model (its cache per sequence follows its latent and sliding windows;
    a mixture of experts reads the experts its batch touches)."""
    step_bytes = BYTES_PER_STEP_MOE if cfg.is_moe else BYTES_PER_STEP
    return [
        *batch_limit_specs(cfg, per_user_label="KV cache per sequence at the context limit (replica-wide)",
                           memory_label="Batch the KV budget holds"),
        StepSpec("max_batch", "Largest batch (the smaller limit)", MAX_BATCH,
                 {"batch_memory_limit": "batch_memory_limit", "batch_tpot_limit": "batch_tpot_limit"},
                 rounding="floor"),
        StepSpec("bytes_per_step_gib", "Bytes read per step (weights + caches)", step_bytes,
                 {**({} if cfg.is_moe else {"weights_gib": "weights_gib"}), "max_batch": "max_batch",
                  "per_user_gib": "per_user_gib"}),
        StepSpec("tpot_ms", "Step time at that batch (TPOT: max(memory, compute) + all-reduces)", TPOT_MS,
                 {"bytes_per_step": "bytes_per_step_gib", "max_batch": "max_batch"}),
        StepSpec("tokens_per_s", "Tokens per second per replica", TOKENS_PER_S,
                 {"max_batch": "max_batch", "tpot_ms": "tpot_ms"}),
        StepSpec("replicas", "Replicas for the load (rounded up)", REPLICAS, {"tokens_per_s": "tokens_per_s"},
                 rounding="ceil"),
        StepSpec("nodes", "Nodes (rounded up)", NODES, {"replicas": "replicas"}, rounding="ceil"),
    ]

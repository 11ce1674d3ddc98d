"""Fleet sizing for a latency target: a replica's KV budget, the batch limits, the step and TPOT, replicas, nodes.

The ``slo`` family's formulas (and pareto's batch limits). The replica's KV budget is the ladder's (cards ×
utilisation − weights − one reserve per card); the batch is the smaller of what that budget holds and what the
TPOT target allows; the fleet is Little's law at full occupancy (request rate × mean output tokens ÷ tokens
per second per replica, rounded up).

slo's TPOT is the serving step: max(memory, compute) + communication, where
memory reads the weights (a mixture of experts: the experts the batch touches)
and every sequence's replica-wide cache, compute is 2 × active parameters plus
the attention FLOPs per sequence, and communication is two all-reduces per
layer when the replica is split. ``batch_tpot_limit`` is the largest batch
whose step meets the target (:func:`largest_batch_number`, printed as
``largest_batch`` of the step's terms as shares of the target).
"""

from __future__ import annotations

import sympy
from sympy import Max, Min, ceiling, floor

from ..formula import BYTE, SECOND, USD, Formula, Var
from . import product, ratio, total
from .serving import flops_per_sequence


def largest_batch_number(a0: float, a_experts: float, a1: float, c1: float, m0: float, m1: float, experts: float,
                  experts_per_token: float) -> int:
    """The largest whole batch ``B ≥ 0`` whose step fits a time target, every term a share of it.

    The step at batch ``B``, divided by the target, is ``max(a0 + a_experts × (1 − (1 − k/E)^B) +
    a1 × B, c1 × B) + m0 + m1 × B``: the weights every step reads (``a0``), the routed experts the
    batch touches (``a_experts`` for all ``E`` of them; 0 for a dense model), each sequence's cache
    (``a1``), each sequence's FLOPs (``c1``), the all-reduces' fixed latency (``m0``) and bytes per
    sequence (``m1``). It grows with ``B``, so the answer is found by doubling, then bisection.
    Returns 0 when not even one sequence fits. Never raises for finite, non-negative shares.
    """
    def fits(batch: int) -> bool:
        touched = 0.0
        if experts > 0:
            touched = a_experts * (1 - (1 - experts_per_token / experts) ** batch)
        return max(a0 + touched + a1 * batch, c1 * batch) + m0 + m1 * batch <= 1 + 1e-12

    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
        if high > 2**40:  # nothing per sequence: any batch fits; cap at a number no engine runs
            return low
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


class largest_batch(sympy.Function):
    """sympy face of :func:`largest_batch_number`: evaluates on numbers, prints by name and
    lambdifies through ``_imp_``, so the numeric and exact evaluations agree."""

    nargs = 8
    _imp_ = staticmethod(largest_batch_number)

    @classmethod
    def eval(cls, *args):
        if all(arg.is_Number for arg in args):
            return sympy.Integer(largest_batch_number(*(float(arg) for arg in args)))
        return None


def _v(name: str, unit: str, label: str) -> Var:
    return Var(name, unit, label)


_T = _v("tpot_target_ms", "ms", "TPOT target")
_N = _v("gpus", "GPUs", "cards in the replica")
_BW = _v("bandwidth_gb_s", "GB/s", "memory bandwidth per card")
_EFF = _v("bandwidth_efficiency", "1", "fraction of peak bandwidth achieved")
_BITS = _v("weight_bits", "bit", "bits per weight outside the routed experts")
_EXPERT_BITS = _v("expert_weight_bits", "bit", "bits per routed-expert parameter")
_ALWAYS = _v("always_read_params", "1", "parameters every step reads (all but the routed experts)")
_ROUTED = _v("routed_expert_params", "1", "parameters of all routed experts (0 for a dense model)")
_PER_USER = _v("per_user_gib", "GiB", "KV cache per sequence (replica-wide)")
_PEAK = _v("peak_tflops", "TFLOP/s", "dense peak per card")
_MFU = _v("mfu", "1", "fraction of dense peak achieved (MFU)")
_ACTIVE = _v("active_params", "1", "parameters used per token")
_HEADS = _v("heads", "1", "query heads (num_attention_heads)")
_HEAD_DIM = _v("attention_head_dim", "1", "values per query head in attention (MLA: absorbed)")
_CONTEXT = _v("context", "tok", "tokens in each sequence's cache")
_FULL = _v("full_layers", "1", "layers attending over the whole context")
_WINDOWED = _v("window_layers", "1", "layers with a sliding window")
_WINDOW = _v("window", "tok", "sliding window")
_ALLREDUCES = _v("allreduces", "1", "all-reduces per step (2 per layer when split, else 0)")
_LATENCY = _v("allreduce_latency_us", "us", "fixed cost of one all-reduce")
_HIDDEN = _v("hidden_size", "1", "model width (hidden_size)")
_ACT = _v("activation_bytes", "B", "bytes per activation value")
_LINK = _v("link_gb_s", "GB/s", "slowest link of the ring, per direction")
_E = _v("experts", "1", "routed experts per MoE layer (0 for a dense model)")
_K = _v("experts_per_token", "1", "routed experts per token")
_BATCH = _v("max_batch", "users", "sequences in the batch")




def _shares(s):
    """The step's terms as shares of the target (see :func:`largest_batch_number`)."""
    reading = product(s["gpus"], s["bandwidth_gb_s"], s["bandwidth_efficiency"], s["tpot_target_ms"])
    return (ratio(product(s["always_read_params"], s["weight_bits"]), reading),
            ratio(product(s["routed_expert_params"], s["expert_weight_bits"]), reading),
            ratio(s["per_user_gib"], reading),
            ratio(flops_per_sequence(s), product(s["gpus"], s["peak_tflops"], s["mfu"], s["tpot_target_ms"])),
            ratio(product(s["allreduces"], s["allreduce_latency_us"]), s["tpot_target_ms"]),
            ratio(product(s["allreduces"], 2, s["gpus"] - 1, s["hidden_size"], s["activation_bytes"]),
                  product(s["gpus"], s["link_gb_s"], s["tpot_target_ms"])),
            s["experts"], s["experts_per_token"])


BATCH_TPOT_LIMIT = Formula(
    "batch_tpot_limit",
    (_T, _N, _BW, _EFF, _ALWAYS, _ROUTED, _BITS, _EXPERT_BITS, _PER_USER, _PEAK, _MFU, _ACTIVE, _HEADS, _HEAD_DIM,
     _CONTEXT, _FULL, _WINDOWED, _WINDOW, _ALLREDUCES, _LATENCY, _HIDDEN, _ACT, _LINK, _E, _K),
    lambda s: largest_batch(*_shares(s)),
    label="Sequences a step can serve within the TPOT target",
)

# A mixture of experts reads its dense part and the routed experts the batch touches.
BYTES_PER_STEP_MOE = Formula(
    "bytes_per_step_gib",
    (_ALWAYS, _ROUTED, _BITS, _EXPERT_BITS, _E, _K, _BATCH, _PER_USER),
    lambda s: total(product(s["always_read_params"], s["weight_bits"]),
                    product(s["routed_expert_params"], s["expert_weight_bits"],
                            1 - (1 - ratio(s["experts_per_token"], s["experts"])) ** s["max_batch"]),
                    product(s["max_batch"], s["per_user_gib"])),
    label="Bytes read per decode step (the experts the batch touches)",
)


TPOT_MS = Formula(
    "tpot_ms",
    (_v("bytes_per_step", "GiB", "bytes read per step"), _N, _BW, _EFF, _BATCH, _ACTIVE, _HEADS, _HEAD_DIM, _CONTEXT,
     _FULL, _WINDOWED, _WINDOW, _PEAK, _MFU, _ALLREDUCES, _HIDDEN, _ACT, _LINK, _LATENCY),
    lambda s: total(
        sympy.Max(ratio(s["bytes_per_step"], product(s["gpus"], s["bandwidth_gb_s"], s["bandwidth_efficiency"])),
                  ratio(product(s["max_batch"], flops_per_sequence(s)),
                        product(s["gpus"], s["peak_tflops"], s["mfu"]))),
        product(s["allreduces"], total(
            ratio(product(2, s["gpus"] - 1, s["max_batch"], s["hidden_size"], s["activation_bytes"]),
                  product(s["gpus"], s["link_gb_s"])),
            s["allreduce_latency_us"]))),
    label="Step time (TPOT)",
)

SLO_STEP_FORMULAS = (BATCH_TPOT_LIMIT, BYTES_PER_STEP_MOE, TPOT_MS)


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
    "replica_kv_budget_gib",
    (Var("gpus", "GPUs", "cards in the replica"),
     Var("card_mib", "MiB", "memory per card"),
     Var("utilization", "1", "utilisation fraction"),
     Var("weights_gib", "GiB", "weights"),
     Var("reserve_gib", "GiB", "activation reserve per card")),
    lambda s: total(product(s["gpus"], s["card_mib"], s["utilization"]), -s["weights_gib"],
                    -product(s["gpus"], s["reserve_gib"])),
)

BATCH_MEMORY_LIMIT = Formula(
    "batch_memory_limit",
    (Var("replica_kv_budget_gib", "GiB", "KV cache budget"),
     Var("per_user_gib", "GiB", "KV cache per sequence")),
    lambda s: Max(0, floor(ratio(s["replica_kv_budget_gib"], s["per_user_gib"]))),
    label="Sequences the KV budget holds",
)

MAX_BATCH = Formula(
    "max_batch",
    (Var("batch_memory_limit", "users", "sequences the KV budget holds"),
     Var("batch_tpot_limit", "users", "sequences within the TPOT target")),
    lambda s: Min(s["batch_memory_limit"], s["batch_tpot_limit"]),
)

BYTES_PER_STEP = Formula(
    "bytes_per_step_gib",
    (Var("weights_gib", "GiB", "weights"),
     Var("max_batch", "users", "sequences in the batch"),
     Var("per_user_gib", "GiB", "KV cache per sequence")),
    lambda s: total(s["weights_gib"], product(s["max_batch"], s["per_user_gib"])),
    label="Bytes read per decode step",
)

TOKENS_PER_S = Formula(
    "tokens_per_s",
    (Var("max_batch", "users", "sequences in the batch (one token each per step)"),
     Var("tpot_ms", "ms", "step time")),
    lambda s: ratio(s["max_batch"], s["tpot_ms"]),
)

REPLICAS = Formula(
    "replicas",
    (Var("request_rate", "req/s", "mean arrival rate"),
     Var("output_tokens", "tok", "mean output tokens per request"),
     Var("tokens_per_s", "tok/s", "tokens per second per replica")),
    lambda s: ceiling(ratio(product(s["request_rate"], s["output_tokens"]), s["tokens_per_s"])),
)

NODES = Formula(
    "nodes",
    (Var("replicas", "replicas", "replicas"),
     Var("gpus", "GPUs", "cards per replica"),
     Var("gpus_per_node", "GPUs", "cards per node")),
    lambda s: ceiling(ratio(product(s["replicas"], s["gpus"]), s["gpus_per_node"])),
)

FORMULAS = (REPLICA_KV_BUDGET_GIB, BATCH_MEMORY_LIMIT, BATCH_TPOT_LIMIT, MAX_BATCH, BYTES_PER_STEP, BYTES_PER_STEP_MOE,
            TPOT_MS, TOKENS_PER_S, REPLICAS, NODES)

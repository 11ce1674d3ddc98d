"""The ``slo`` family's misconceptions and the wrong answers each produces (:data:`VARIANTS`).

Each variant re-evaluates one step with one classic slip: the peak for the
achieved rate, one card's bandwidth for the replica's, the cache read left out,
the 2:4 sparse TFLOP/s, GB taken for GiB, a limit or a reserve forgotten.
"""

from __future__ import annotations

from ..formula import whole_floor
from ..formulas import memory as F
from ..formulas.fleet import largest_batch_number as largest_batch
from ..misconceptions import MISCONCEPTIONS, MisconceptionInfo
from .step import GIB, flops_per_sequence

# Ids shared with the roofline and decode families: declared once, in misconceptions.py.
ROOFLINE_AS_EXPECTATION = MISCONCEPTIONS["roofline-as-expectation"]  # declared once (misconceptions.py)
ONE_CARD_BANDWIDTH = MisconceptionInfo(
    "one-card-bandwidth", "One card's bandwidth for the replica",
    "Under tensor parallelism each card reads its own shard of the weights and caches, so a replica of N "
    "cards reads N × the bandwidth (and computes on N × the FLOP/s).", "/runbook/11-multi-gpu/#tensor-parallel")
KV_READ_IGNORED = MISCONCEPTIONS["kv-read-ignored"]  # declared once (misconceptions.py)
CACHE_FIT_IGNORED = MisconceptionInfo(
    "cache-fit-ignored", "Batch sized by latency alone",
    "A batch is capped by the KV cache memory as well as by the TPOT target: take the smaller of the two "
    "limits and say which one binds.", "/runbook/14-capacity-planning/#batch-and-tpot")
TPOT_TARGET_IGNORED = MisconceptionInfo(
    "tpot-target-ignored", "Batch sized by memory alone",
    "Filling the KV budget can make each step slower than the TPOT target; take the smaller of the "
    "memory and latency limits and say which one binds.", "/runbook/14-capacity-planning/#batch-and-tpot")
PER_USER_RATE = MisconceptionInfo(
    "per-user-rate-for-replica", "One stream's speed quoted for the replica",
    "1 ÷ TPOT is what one user sees; each step emits a token for every sequence in the batch, so the replica "
    "produces batch ÷ TPOT tokens per second.", "/runbook/15-production/#tpot")
SPARSE_TFLOPS = MISCONCEPTIONS["sparse-tflops"]  # declared once (misconceptions.py)


def _comm_ms(g, batch: float) -> float:
    """The step's all-reduce time in ms (0 on one card)."""
    if not g["allreduces"]:
        return 0.0
    per_collective = 2 * (g["gpus"] - 1) / g["gpus"] * batch * g["hidden_size"] * g["activation_bytes"] / (
        g["link_gb_s"] * 1e9)
    return g["allreduces"] * (per_collective * 1e3 + g["allreduce_latency_us"] / 1e3)


def _readable_gib_per_ms(g, *, efficiency=None, bw_cards=None) -> float:
    cards = g["gpus"] if bw_cards is None else bw_cards
    efficiency = g["bandwidth_efficiency"] if efficiency is None else efficiency
    per_ms = cards * g["bandwidth_gb_s"] * 1e9 * efficiency / 1e3
    return per_ms / GIB


def _time_limit(g, s, *, efficiency=None, mfu=None, bw_cards=None, compute_cards=None, cache=True) -> float:
    """``batch_tpot_limit`` evaluated with one of the classic slips (the step of slo_step.py)."""
    target = g["tpot_target_ms"]
    reading = _readable_gib_per_ms(g, efficiency=efficiency, bw_cards=bw_cards) * target
    cards = g["gpus"] if compute_cards is None else compute_cards
    computing = cards * g["peak_tflops"] * 1e12 * (mfu or g["mfu"]) / 1e3 * target
    weights = lambda params: params * g["weight_bits"] / 8 / GIB  # noqa: E731 - GiB of some parameters
    one = _comm_ms(g, 1) - _comm_ms(g, 0)
    return largest_batch(weights(g["always_read_params"]) / reading, weights(g["routed_expert_params"]) / reading,
                         s["per_user_gib"] / reading if cache else 0.0, flops_per_sequence(g) / computing,
                         _comm_ms(g, 0) / target, one / target, g["experts"], g["experts_per_token"])


def _time_ms(g, s, *, bytes_gib=None, efficiency=None, mfu=None, bw_cards=None, compute_cards=None) -> float:
    """``tpot_ms`` evaluated with one of the classic slips."""
    bytes_gib = s["bytes_per_step_gib"] if bytes_gib is None else bytes_gib
    reading = bytes_gib / _readable_gib_per_ms(g, efficiency=efficiency, bw_cards=bw_cards)
    cards = g["gpus"] if compute_cards is None else compute_cards
    computing = (s["max_batch"] * flops_per_sequence(g)
                 / (cards * g["peak_tflops"] * 1e12 * (mfu or g["mfu"])) * 1e3)
    return max(reading, computing) + _comm_ms(g, s["max_batch"])


def _per_user(g, kv_bytes_per_token: float, *, windows: bool = True) -> float:
    """One sequence's cache at the context for a given per-token figure (GiB)."""
    values = {**g, "kv_bytes_per_token": kv_bytes_per_token}
    if windows and g["window_layers"]:
        return F.PER_USER_GIB_WINDOWED(values)
    return F.PER_USER_GIB(values)


def _per_user_query_heads(g, s):
    if g["kv_lora_rank"] or g["kv_heads"] == g["heads"]:
        return None
    return _per_user(g, F.KV_BYTES_PER_TOKEN({**g, "kv_heads": g["heads"]}))


def _per_user_missing_2(g, s):
    return None if g["kv_lora_rank"] else _per_user(g, g["kv_bytes_per_token"] / 2)


def _per_user_window_ignored(g, s):
    if not g["window_layers"] or g["context"] <= g["window"]:
        return None
    return _per_user(g, g["kv_bytes_per_token"], windows=False)


def _budget(g, s, *, utilization=True, reserve=True, card_gib=None):
    card = g["card_mib"] / 1024 if card_gib is None else card_gib
    usable = g["gpus"] * card * (g["utilization"] if utilization else 1)
    return usable - s["weights_gib"] - (g["gpus"] * g["reserve_gib"] if reserve else 0)




VARIANTS = {
    "replica_kv_budget_gib": (
        ("stopped-at-weights", lambda g, s: _budget(g, s, utilization=False, reserve=False)),
        ("skipped-activation-reserve", lambda g, s: _budget(g, s, reserve=False)),
        ("skipped-utilization", lambda g, s: _budget(g, s, utilization=False)),
    ),
    "per_user_gib": (
        ("query-heads-for-kv-heads", _per_user_query_heads),
        ("missing-kv-factor-2", _per_user_missing_2),
        ("bits-for-bytes", lambda g, s: _per_user(g, g["kv_bytes_per_token"] * 8)),
        ("window-ignored", _per_user_window_ignored),
    ),
    "batch_tpot_limit": (
        ("roofline-as-expectation", lambda g, s: [_time_limit(g, s, efficiency=1),
                                               _time_limit(g, s, efficiency=1, mfu=1)]),
        ("one-card-bandwidth", lambda g, s: [_time_limit(g, s, bw_cards=1),
                                             _time_limit(g, s, bw_cards=1, compute_cards=1)]),
        ("kv-read-ignored", lambda g, s: _time_limit(g, s, cache=False)),
    ),
    "max_batch": (
        ("cache-fit-ignored", lambda g, s: s["batch_tpot_limit"]),
        ("tpot-target-ignored", lambda g, s: s["batch_memory_limit"]),
    ),
    "bytes_per_step_gib": (("kv-read-ignored", lambda g, s: s["weights_gib"]),),
    "tpot_ms": (
        ("roofline-as-expectation", lambda g, s: [_time_ms(g, s, efficiency=1), _time_ms(g, s, efficiency=1, mfu=1)]),
        ("one-card-bandwidth", lambda g, s: [_time_ms(g, s, bw_cards=1), _time_ms(g, s, bw_cards=1, compute_cards=1)]),
        ("kv-read-ignored", lambda g, s: _time_ms(g, s, bytes_gib=s["weights_gib"])),
        ("comm-ignored", lambda g, s: _time_ms(g, s) - _comm_ms(g, s["max_batch"]) if g["allreduces"] else None),
    ),
    "tokens_per_s": (("per-user-rate-for-replica", lambda g, s: 1e3 / s["tpot_ms"]),),
    "replicas": (("rounded-nodes-down", lambda g, s: whole_floor(
        g["request_rate"] * g["output_tokens"] / s["tokens_per_s"])),),
    "nodes": (("rounded-nodes-down", lambda g, s: whole_floor(s["replicas"] * g["gpus"] / g["gpus_per_node"])),),
}

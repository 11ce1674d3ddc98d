"""What fleet, cost and transfer mistakes change: replicas and nodes, the price per token, tensor-parallel degrees,
KV transfers and swaps.

Step values for the registry (:mod:`.`): each takes the given values ``g`` and the earlier steps ``s`` and returns
what a candidate holding the mistake types at that step, or ``None`` where it cannot occur in this problem.
"""

from __future__ import annotations

from ..formula import whole_ceil, whole_floor
from ..procedures.disagg import KV_TRANSFER_BYTES, KV_TRANSFER_MS
from ..procedures.preempt import SWAP_MS_PER_TOKEN
from ..procedures.tp import buyable_degree

SECONDS_PER_HOUR = 3600

# --- a fleet (replicas, GPUs, nodes) ---


def _raw_replicas(g, s, occupancy=True) -> float:
    return s["concurrency"] / (g["users_per_replica"] * (g["occupancy"] if occupancy else 1))


def replicas_floor(g, s):
    """Replicas rounded down."""
    return whole_floor(_raw_replicas(g, s)) + g["spares"]


def replicas_full(g, s):
    """Replicas at full occupancy."""
    return whole_ceil(_raw_replicas(g, s, occupancy=False)) + g["spares"]


def gpus_floor(g, s):
    """Replicas floored, or the fractional GPU count floored (4.7 replicas × 2 → 9 GPUs)."""
    spare_gpus = g["spares"] * g["gpus_per_replica"]
    raw = _raw_replicas(g, s)
    return [whole_floor(raw) * g["gpus_per_replica"] + spare_gpus,
            whole_floor(raw * g["gpus_per_replica"]) + spare_gpus]


def gpus_full(g, s):
    """GPUs at full occupancy."""
    return replicas_full(g, s) * g["gpus_per_replica"]


def nodes_full(g, s):
    """Nodes at full occupancy."""
    return whole_ceil(gpus_full(g, s) / g["gpus_per_node"])


def slo_replicas_floor(g, s):
    """The slo family's replicas rounded down."""
    return whole_floor(g["request_rate"] * g["output_tokens"] / s["tokens_per_s"])


def nodes_of_min_gpus_floor(g, s):
    """Tp's nodes rounded down, from the minimum cards or from the degree."""
    per_node = g["gpus_per_node"]
    return [whole_floor(s["min_gpus"] / per_node), whole_floor(s["tp_degree"] / per_node)]


def degree_not_buyable(g, s):
    """The minimum card count taken as the degree."""
    return s["min_gpus"]


def degree_heads_ignored(g, s):
    """The next buyable degree with the heads ignored (one the heads may not split over)."""
    return buyable_degree(s["min_gpus"], g["gpus_per_node"])


# --- the cost of a token ---

def tokens_busy(g, s):
    """Tokens per hour at 100 % busy."""
    return g["tokens_per_s"] * SECONDS_PER_HOUR


def tokens_per_gpu_rate(g, s):
    """The fleet's rate taken as one GPU's and multiplied by the GPUs."""
    return g["tokens_per_s"] * g["busy_fraction"] * SECONDS_PER_HOUR * g["gpus"]


def tokens_per_second(g, s):
    """Tokens per second for tokens per hour."""
    return g["tokens_per_s"] * g["busy_fraction"]


def cost_busy(g, s):
    """The price per million tokens at 100 % busy."""
    return s["usd_per_hour"] / tokens_busy(g, s) * 1e6


def cost_one_gpu(g, s):
    """One GPU's price against the fleet's tokens."""
    return g["usd_per_gpu_hour"] / s["tokens_per_hour"] * 1e6


def cost_per_second(g, s):
    """The price per million tokens with hours and seconds mixed."""
    per_hour = s["usd_per_hour"] / s["tokens_per_hour"] * 1e6
    return [per_hour * SECONDS_PER_HOUR, per_hour / SECONDS_PER_HOUR]


def price_one_gpu(g, s):
    """The fleet's price per hour as one GPU's."""
    return g["usd_per_gpu_hour"]


# --- moving a cache: swap and transfer ---

def _swap_with(g, s, **changes) -> float:
    return SWAP_MS_PER_TOKEN({"kv_bytes_per_token": s["kv_bytes_per_token"], "kv_replication": s["kv_replication"],
                              "gpus": g["gpus"], "pcie_gb_s": g["pcie_gb_s"], **changes})


def swap_both_ways(g, s):
    """A swap over both PCIe directions."""
    return _swap_with(g, s, pcie_gb_s=2 * g["pcie_gb_s"])


def swap_in_bits(g, s):
    """A swap sized in bits (or its link in bits)."""
    return [_swap_with(g, s) * 8, _swap_with(g, s) / 8]


def swap_unreplicated(g, s):
    """A swap with the copies across the replica left out."""
    return _swap_with(g, s, kv_replication=1) if s["kv_replication"] > 1 else None


def swap_request_both_ways(g, s):
    """A whole sequence's swap over both PCIe directions."""
    return 2 * g["context"] * _swap_with(g, s, pcie_gb_s=2 * g["pcie_gb_s"])


def transfer_in_bits(g, s):
    """A KV transfer sized in bits (or its link in bits)."""
    one = KV_TRANSFER_MS({"kv_transfer_bytes": s["kv_transfer_bytes"], "gpus": g["gpus"],
                          "network_gb_s": g["network_gb_s"]})
    return [one * 8, one / 8]


def transfer_over_one_link(g, s):
    """The replica's whole cache shipped over a single card's link."""
    if g["gpus"] <= 1:
        return None
    return KV_TRANSFER_MS({"kv_transfer_bytes": s["kv_transfer_bytes"], "gpus": 1, "network_gb_s": g["network_gb_s"]})


def transfer_replicated(g, s):
    """The transfer carrying every copy of the cache."""
    if g["kv_replication"] <= 1:
        return None
    return KV_TRANSFER_BYTES({**g, "kv_bytes_per_token": s["kv_bytes_per_token"]}) * g["kv_replication"]

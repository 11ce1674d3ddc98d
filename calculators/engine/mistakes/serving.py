"""What serving and fleet mistakes change: the roofline, a decode step, prefill, a batch under a TPOT target,
speculation; replicas and nodes, the price per token, tensor-parallel degrees, KV transfers and swaps.

Step values for the registry (:mod:`.`): each takes the given values ``g`` and the earlier steps ``s`` and returns
what a candidate holding the mistake types at that step (a list where the slip has two readings), or ``None`` where
it cannot occur in this problem.
"""

from __future__ import annotations

from ..formula import whole_ceil, whole_floor
from ..formulas import serving as S
from ..formulas.fleet import largest_batch_number as largest_batch
from ..procedures.compute import flops_per_sequence
from ..procedures.disagg import KV_TRANSFER_BYTES, KV_TRANSFER_MS
from ..procedures.moe import ACTIVE_BYTES_PER_TOKEN, ACTIVE_BYTES_PER_TOKEN_MOE, FLOPS_PER_TOKEN
from ..procedures.pareto import power_of_two_at_most
from ..procedures.preempt import SWAP_MS_PER_TOKEN
from ..procedures.prefill import LINEAR_FLOPS, delivered, time_ms
from ..procedures.roofline import DECODE_INTENSITY, PREFILL_INTENSITY
from ..procedures.tp import buyable_degree
from ..units import GIB, GIB_PER_GB
from .memory import changed

# --- input overrides ---

def sparse(g):
    """The 2:4-sparse peak for the dense one."""
    return changed(g, peak_tflops=g["sparse_tflops"]) if g["sparse_tflops"] else None


def n_not_2n(g):
    """A forward pass taken as N FLOPs per token, not 2N: the parameter term halved where FLOPs are counted."""
    key = "params" if "params" in g else "active_params"
    return changed(g, **{key: g[key] / 2}) if key in g else None


def ms_as_s(key: str):
    """A time in ms read as seconds, or one in seconds read as ms (a list of both)."""
    def perturb(g):
        if not g[key]:
            return None
        found = [changed(g, **{key: g[key] * factor}) for factor in (1000.0, 0.001)]
        return [one for one in found if one is not None] or None
    return perturb


def bandwidth_gb_as_gib(g):
    """A bandwidth in GB/s read as GiB/s (7 % too fast)."""
    return changed(g, bandwidth_gb_s=g["bandwidth_gb_s"] * GIB_PER_GB) if g["bandwidth_gb_s"] else None


def card_bandwidth_gb_as_gib(g):
    """One card's bandwidth in GB/s read as GiB/s (7 % too fast), where a step reads the card's figure (decode's
    memory time) rather than the replica's ``bandwidth_gb_s``."""
    return changed(g, card_bandwidth=g["card_bandwidth"] * GIB_PER_GB) if g["card_bandwidth"] else None


def moe_dense_active(g):
    """A mixture of experts' arithmetic intensity taken as if every parameter were active for every token, where
    it is compared with the card's ridge: active ← total parameters (the roofline), or under expert parallelism
    experts ← experts per token (each expert sees the whole batch, not B × k ÷ E)."""
    if "experts_per_token" in g and g.get("experts", 0) > g["experts_per_token"] > 0:
        return changed(g, experts=g["experts_per_token"])
    if "active_params" in g and g.get("total_params", 0) > g["active_params"]:
        return changed(g, active_params=g["total_params"])
    return None


# --- the roofline ---


def sparse_verdict(intensity_key: str):
    """A bound verdict against the ridge the 2:4-sparse peak gives."""
    def value(g, s):
        if not g["sparse_tflops"]:
            return None
        ridge = S.RIDGE({"peak_tflops": g["sparse_tflops"], "bandwidth": g["bandwidth"]})
        return min(1, s[intensity_key] // ridge)
    return value


def decode_called_compute_bound(g, s):
    """The one wrong verdict on a memory-bound decode: 'compute-bound'."""
    return 1 if s["decode_flop_per_byte"] < s["ridge_flop_per_byte"] else None


def prefill_called_memory_bound(g, s):
    """The one wrong verdict on a compute-bound prefill: 'memory-bound'."""
    return 0 if s["prefill_flop_per_byte"] >= s["ridge_flop_per_byte"] else None


def decode_as_prefill_intensity(g, s):
    """Decode's intensity computed as prefill's."""
    return PREFILL_INTENSITY(g)


def prefill_as_decode_intensity(g, s):
    """Prefill's intensity computed as decode's."""
    return DECODE_INTENSITY(g)


def decode_intensity_bits(g, s):
    """Decode's intensity with the bytes counted in bits."""
    return DECODE_INTENSITY(g) / 8


def prefill_intensity_bits(g, s):
    """Prefill's intensity with the bytes counted in bits."""
    return PREFILL_INTENSITY(g) / 8


def decode_intensity_no_cache(g, s):
    """The cache read left out: with the attention FLOPs counted, or the weights-only figure outright."""
    if not g["context"]:
        return None
    return [DECODE_INTENSITY({**g, "kv_bytes_per_token": 0}), DECODE_INTENSITY({**g, "context": 0})]


# --- a decode step ---

def _step_weights(g, **changes) -> float:
    values = {**g, **changes}
    return (S.STEP_WEIGHT_BYTES_MOE if g["experts"] else S.STEP_WEIGHT_BYTES)(values)


def step_weights_in_bits(g, s):
    """The weights read per step counted in bits."""
    return _step_weights(g) * 8


def step_weights_nominal_4bit(g, s):
    """The weights read per step at 4.0 bits."""
    if g["weights_dtype_bits_nominal"] != 4 or g["weight_bits"] == 4:
        return None
    return _step_weights(g, weight_bits=4)


def experts_all_read(g, s):
    """Every expert counted as read by the batch."""
    if not g["experts"]:
        return None
    if "experts_touched" in g and g["experts_touched"] >= g["experts"] * (1 - 1e-9):
        return None
    return S.STEP_WEIGHT_BYTES_MOE({**g, "experts_touched": g["experts"]})


def experts_top_k_read(g, s):
    """Only the top-k experts counted as read by a batch."""
    batch = s["batch"] if "batch" in s else g["batch"]
    if not g["experts"] or batch <= 1:
        return None
    return S.STEP_WEIGHT_BYTES_MOE({**g, "experts_touched": g["experts_per_token"]})


def bytes_weights_only(g, s):
    """Bytes per step with the cache read left out."""
    return s["weight_bytes_per_step"] if s["kv_bytes_per_step"] > 0 else None


def ceiling_weights_only(g, s):
    """The decode ceiling with the cache read left out."""
    if s["kv_bytes_per_step"] <= 0:
        return None
    return S.CEILING_TOK_S({"batch": g["batch"], "bandwidth_gb_s": s["bandwidth_gb_s"],
                            "bytes_per_step": s["weight_bytes_per_step"]})


def ceiling_from_flops(g, s):
    """The compute roof for the memory roof: the replica's peak ÷ 2N per token."""
    return g["gpus"] * g["peak_tflops"] * 1e12 / (2 * g["active_params"])


def ceiling_one_card(g, s):
    """The decode ceiling on one card's bandwidth."""
    if g["gpus"] <= 1:
        return None
    return S.CEILING_TOK_S({"batch": g["batch"], "bandwidth_gb_s": s["bandwidth_gb_s"] / g["gpus"],
                            "bytes_per_step": s["bytes_per_step"]})


def bandwidth_one_card(g, s):
    """The replica's bandwidth quoted as one card's."""
    return s["bandwidth_gb_s"] / g["gpus"] if g["gpus"] > 1 else None


def peak_as_realistic(g, s):
    """The ceiling quoted as the realistic rate."""
    return s["ceiling_tok_s"]


def rate_per_user(g, s):
    """One sequence's rate quoted for the replica."""
    batch = s["batch"] if "batch" in s else g["batch"]
    return s["tok_s_per_user"] if batch > 1 else None


def memory_ms_one_card(g, s):
    """The memory time on one card's bandwidth."""
    return S.MEMORY_MS({**g, "gpus": 1, "bytes_per_step": s["bytes_per_step"]}) if g["gpus"] > 1 else None


def step_without_comm(g, s):
    """The step without its all-reduces."""
    return max(s["memory_ms"], s["compute_ms"]) if s["comm_ms"] > 0 else None


def per_replica_for_card(g, s):
    """A replica's rate quoted per card."""
    return s["tok_s_per_user"] * s["batch"] if g["gpus"] > 1 else None


def grid_from_tpot(g, s):
    """The grid batch from the TPOT limit alone."""
    return float(power_of_two_at_most(s["batch_tpot_limit"]))


def grid_from_memory(g, s):
    """The grid batch from the memory limit alone."""
    return float(power_of_two_at_most(s["batch_memory_limit"]))


# --- prefill ---

def delivered_at_peak(g, s):
    """The compute delivered at the whole peak."""
    return delivered(g, mfu=False)


def prefill_at_peak(g, s):
    """The prefill time at the whole peak."""
    return time_ms(s["prefill_flops"], delivered(g, mfu=False))


def prefill_linear_only(g, s):
    """Prefill FLOPs without the attention term."""
    return s["linear_flops"]


def prefill_ms_linear_only(g, s):
    """The prefill time without the attention term."""
    return time_ms(s["linear_flops"], s["effective_flop_s"])


def ttft_without_queue(g, s):
    """TTFT as the prefill alone."""
    return s["prefill_ms"] if g["queue_ms"] > 0 else None


def _prefix_linear(g) -> float:
    return LINEAR_FLOPS({"params": g["params"], "prompt_tokens": g["prefix_tokens"]})


def prefix_linear_only(g, s):
    """A prefix's prefill FLOPs without the attention term."""
    return _prefix_linear(g)


def saved_every_request(g, s):
    """The prefix's whole prefill saved on every request, hits or not."""
    return s["prefix_flops"]


def saved_linear_only(g, s):
    """The saving without the attention term."""
    return g["hit_rate"] * _prefix_linear(g)


def ttft_saved_every_request(g, s):
    """The TTFT saved on every request."""
    return time_ms(s["prefix_flops"], s["effective_flop_s"])


def ttft_saved_at_peak(g, s):
    """The TTFT saved at the whole peak."""
    return time_ms(s["flops_saved_per_request"], delivered(g, mfu=False))


# --- a batch under a TPOT target (slo) ---

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
    return cards * g["bandwidth_gb_s"] * 1e9 * efficiency / 1e3 / GIB


def _time_limit(g, s, *, efficiency=None, mfu=None, bw_cards=None, compute_cards=None, cache=True) -> float:
    """``batch_tpot_limit`` evaluated with one of the classic slips."""
    target = g["tpot_target_ms"]
    reading = _readable_gib_per_ms(g, efficiency=efficiency, bw_cards=bw_cards) * target
    cards = g["gpus"] if compute_cards is None else compute_cards
    computing = cards * g["peak_tflops"] * 1e12 * (mfu or g["mfu"]) / 1e3 * target
    weights = lambda params: params * g["weight_bits"] / 8 / GIB  # noqa: E731 - GiB of some parameters
    one = _comm_ms(g, 1) - _comm_ms(g, 0)
    return largest_batch(weights(g["always_read_params"]) / reading, weights(g["routed_expert_params"]) / reading,
                         s["per_user_gib"] / reading if cache else 0.0, flops_per_sequence(g) / computing,
                         _comm_ms(g, 0) / target, one / target, g["experts"], g["experts_per_token"])


def _time_ms(g, s, *, bytes_gib=None, efficiency=None, mfu=None, bw_cards=None, compute_cards=None,
             memory=True) -> float:
    """``tpot_ms`` evaluated with one of the classic slips (``memory=False``: from the FLOPs alone)."""
    bytes_gib = s["bytes_per_step_gib"] if bytes_gib is None else bytes_gib
    reading = bytes_gib / _readable_gib_per_ms(g, efficiency=efficiency, bw_cards=bw_cards) if memory else 0.0
    cards = g["gpus"] if compute_cards is None else compute_cards
    computing = (s["max_batch"] * flops_per_sequence(g)
                 / (cards * g["peak_tflops"] * 1e12 * (mfu or g["mfu"])) * 1e3)
    return max(reading, computing) + _comm_ms(g, s["max_batch"])


def limit_at_peak(g, s):
    """The TPOT limit at the whole peak bandwidth (and FLOP/s)."""
    return [_time_limit(g, s, efficiency=1), _time_limit(g, s, efficiency=1, mfu=1)]


def limit_one_card(g, s):
    """The TPOT limit on one card's bandwidth (and FLOP/s)."""
    return [_time_limit(g, s, bw_cards=1), _time_limit(g, s, bw_cards=1, compute_cards=1)]


def limit_without_cache(g, s):
    """The TPOT limit with the cache read left out."""
    return _time_limit(g, s, cache=False)


def batch_from_tpot(g, s):
    """The batch from the TPOT limit alone."""
    return s["batch_tpot_limit"]


def batch_from_memory(g, s):
    """The batch from the memory limit alone."""
    return s["batch_memory_limit"]


def weights_for_step(g, s):
    """Bytes per step as the weights alone."""
    return s["weights_gib"]


def tpot_at_peak(g, s):
    """TPOT at the whole peak bandwidth (and FLOP/s)."""
    return [_time_ms(g, s, efficiency=1), _time_ms(g, s, efficiency=1, mfu=1)]


def tpot_one_card(g, s):
    """TPOT on one card's bandwidth (and FLOP/s)."""
    return [_time_ms(g, s, bw_cards=1), _time_ms(g, s, bw_cards=1, compute_cards=1)]


def tpot_without_cache(g, s):
    """TPOT with the cache read left out."""
    return _time_ms(g, s, bytes_gib=s["weights_gib"])


def tpot_without_comm(g, s):
    """TPOT without the all-reduces."""
    return _time_ms(g, s) - _comm_ms(g, s["max_batch"]) if g["allreduces"] else None


def tpot_from_flops(g, s):
    """TPOT from the FLOPs alone (at the MFU, or at the whole peak): the memory read left out."""
    return [_time_ms(g, s, memory=False), _time_ms(g, s, memory=False, mfu=1)]


def step_from_flops(g, s):
    """A decode step timed by its FLOPs alone: the memory read left out."""
    return s["compute_ms"] + s["comm_ms"] if s["memory_ms"] > s["compute_ms"] else None


def tokens_one_stream(g, s):
    """One stream's 1 ÷ TPOT for the replica's rate."""
    return 1e3 / s["tpot_ms"]


# --- mixtures of experts ---

def bytes_all_experts(g, s):
    """Bytes per token from the total parameters (every routed expert at its own width)."""
    if g.get("routed_expert_params"):
        return ACTIVE_BYTES_PER_TOKEN_MOE({"active_params": s["total_params"],
                                           "active_expert_params": g["routed_expert_params"],
                                           "weight_bits": g["weight_bits"],
                                           "expert_weight_bits": g["expert_weight_bits"]})
    return ACTIVE_BYTES_PER_TOKEN({"active_params": s["total_params"], "weight_bits": g["weight_bits"]})


def bytes_in_bits(g, s):
    """Bytes per token counted in bits."""
    if g.get("active_expert_params"):
        return ACTIVE_BYTES_PER_TOKEN_MOE({**g, "active_params": s["active_params"]}) * 8
    return s["active_params"] * g["weight_bits"]


def flops_all_experts(g, s):
    """FLOPs per token from the total parameters."""
    return FLOPS_PER_TOKEN({"active_params": s["total_params"]})


# --- speculative decoding ---

def linear_tokens(g, s):
    """Expected tokens as γ·α or 1 + γ·α."""
    return [g["gamma"] * g["alpha"], 1 + g["gamma"] * g["alpha"]]


def linear_speedup(g, s):
    """The speed-up from the linear expectation."""
    return [value / (1 + g["gamma"] * g["draft_cost"]) for value in linear_tokens(g, s)]


def no_bonus(g, s):
    """Expected tokens without the target's own token."""
    alpha, gamma = g["alpha"], g["gamma"]
    expected = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    return [expected - 1, (1 - alpha ** gamma) / (1 - alpha)]


def speedup_without_draft(g, s):
    """The speed-up as the expected tokens."""
    return s["expected_tokens"]


def speedup_no_plus_one(g, s):
    """The speed-up with the target's pass dropped from the cost."""
    return s["expected_tokens"] / (g["gamma"] * g["draft_cost"]) if g["gamma"] * g["draft_cost"] > 0 else None


# --- the simulated drills ---

def sim_weights_only(g, s):
    """A decode step from the weights alone."""
    return g["weight_bytes"] / (g["bandwidth_gb_s"] * 1e9 * g["bandwidth_efficiency"]) * 1000


def sim_prefill_ignored(g, s):
    """TTFT at low load as a weights read."""
    return g["weights_read_ms"]


def sim_little_on_ttft(g, s):
    """Little's law on the mean TTFT, not the time in the system."""
    return g["rate_req_s"] * g["ttft_mean_ms"] / 1000


def sim_mean_for_p99(g, s):
    """The mean TTFT quoted for the p99."""
    return g["ttft_mean_ms"]


def sim_p99_without_prefill(g, s):
    """The p99 with the prefill taken off."""
    return g["simulated_ttft_p99_ms"] - s["ttft_low_load_ms"]


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

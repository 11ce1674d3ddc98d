"""Every quantity the calculator families compute, declared once (docs/architecture.md §11).

A :class:`Quantity` has its canonical key, its unit (one of :mod:`.units`'
vocabulary), a label, its physical bounds and the formula that computes it.
Some quantities have several *forms* of that one formula — the same relation
written for a model with sliding windows, an MLA latent or routed experts, or
fed from an earlier step instead of from the inputs (weights in GiB from the
parameters or from the bytes) — and each form is listed; a form is a
:class:`~.formula.Formula` named ``"module:NAME"`` (resolved lazily, so this
module imports no family). ``tests/engine/test_quantities.py`` fails when a
family steps through a key that is not declared here, in another unit, or with
a formula that is not one of its forms, and when one formula serves two keys.

Older keys stay readable: :data:`ALIASES` maps a key that named a quantity
before (``weight_gib``) to the canonical one (``weights_gib``) in every family,
:data:`FAMILY_ALIASES` one that a single family used (slo's ``bytes_per_step``
was in GiB, decode's is in bytes). :func:`canonical_key` reads both; the
results' ``step()``/``values``, the grader and the pages go through it.

Inputs are quantities too (:data:`INPUTS`): a tuning input's default (bandwidth
efficiency, MFU, all-reduce latency, memory utilisation, reserve, block size …)
is assigned on its quantity, with its source, and nowhere else: the families'
:class:`~.procedures.inputs.InputSpec` s, the serving step's
:class:`~.step_model.Replica` and the simulator read it through
:func:`default`, and ``tests/engine/test_defaults.py`` fails on a default
assigned anywhere else or a docstring or ``docs/`` sentence that states it.

Bounds (docs/architecture.md §11): ``fraction`` lies in [0, 1]; ``flag`` is 0 or 1;
``positive`` is above 0; ``nonnegative`` is 0 or more (times, sizes, counts);
``any`` has no sign (a budget, being what is left over, may be negative). A ``flag`` names its ``verdict``: the
kind of words (:data:`.units.VERDICT_WORDS`) it is answered in besides 1 and 0 (``bound``: compute-bound or
memory-bound; ``yes/no``).
``at_most`` names other steps (or given values) of the same problem a value may not exceed (usable
memory ≤ card memory, a batch ≤ what the KV budget holds, a rate ≤ its ceiling, a verify step's expected
tokens ≤ γ + 1).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cached_property

from .units import verdict_phrase

BOUND_KINDS = ("fraction", "flag", "positive", "nonnegative", "any")


@dataclass(frozen=True)
class Quantity:
    """One physical quantity: ``key`` (canonical), ``unit``, ``label``, ``bounds`` (a
    :data:`BOUND_KINDS` name), ``forms`` (``"module:NAME"`` references to its formula's forms,
    relative to ``calculators.engine``) and ``at_most`` (step keys bounding it from above).

    An input quantity has no forms; it may have a ``default`` with its ``source``, the inclusive
    ``minimum``/``maximum`` a typed value must keep (``exclusive_minimum``: above the minimum), and
    ``aliases`` (older input names read as this one). A ``flag`` quantity's ``verdict`` is the kind of words it
    reads (a key of :data:`.units.VERDICT_WORDS`)."""

    key: str
    unit: str
    label: str
    bounds: str
    forms: tuple[str, ...]
    at_most: tuple[str, ...] = ()
    default: float | None = None
    source: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    aliases: tuple[str, ...] = ()
    verdict: str = ""

    @cached_property
    def formulas(self) -> tuple:
        """The :class:`~.formula.Formula` objects of :attr:`forms` (a name may hold a dict of them)."""
        found: list = []
        for ref in self.forms:
            module, _, name = ref.partition(":")
            value = getattr(importlib.import_module(f"calculators.engine.{module}"), name)
            found.extend(value.values() if isinstance(value, dict) else [value])
        return tuple(found)

    def violation(self, value: float) -> str | None:
        """The sentence a value outside this quantity's own bounds breaks, or ``None``."""
        if self.bounds == "fraction" and not -1e-12 <= value <= 1 + 1e-9:
            return "a fraction lies between 0 and 1"
        if self.bounds == "flag" and value not in (0, 1):
            return f"this step is a verdict: {verdict_phrase(self.verdict)}" if self.verdict else \
                "this step is a yes/no verdict: 1 or 0"
        if self.bounds == "positive" and value <= 0:
            return "this quantity is always positive"
        if self.bounds == "nonnegative" and value < 0:
            return "this quantity cannot be negative"
        return None


def _q(key, unit, label, bounds, *forms, at_most=(), verdict=""):
    return Quantity(key, unit, label, bounds, tuple(forms), tuple(at_most), verdict=verdict)


_F, _S = "formulas.memory", "formulas.serving"
_P = "procedures."

QUANTITIES: dict[str, Quantity] = {q.key: q for q in (
    # --- memory: the ladder, weights, KV cache -------------------------------------------------------
    _q("card_gib", "GiB", "Card memory", "positive", f"{_F}:CARD_GIB"),
    _q("usable_gib", "GiB", "Usable memory", "nonnegative", f"{_F}:USABLE_GIB", at_most=("card_gib",)),
    _q("weights_gib", "GiB", "Weights", "positive", f"{_F}:WEIGHTS_GIB", f"{_F}:WEIGHTS_GIB_MIXED", f"{_F}:WEIGHT_GIB"),
    _q("kv_budget_gib", "GiB", "KV cache budget", "any", f"{_F}:KV_BUDGET_GIB", at_most=("usable_gib",)),
    _q("kv_bytes_per_token", "B", "KV cache per token", "positive",
       f"{_F}:KV_BYTES_PER_TOKEN", f"{_F}:KV_BYTES_PER_TOKEN_MLA", f"{_F}:KV_BYTES_PER_TOKEN_SPARSE"),
    _q("per_user_gib", "GiB", "KV cache per user", "positive", f"{_F}:PER_USER_GIB", f"{_F}:PER_USER_GIB_WINDOWED"),
    _q("users_worst_case", "users", "Users, worst case", "nonnegative", f"{_F}:USERS_WORST_CASE"),
    _q("users_paged", "users", "Users, paged", "nonnegative", f"{_F}:USERS_PAGED", f"{_F}:USERS_PAGED_WINDOWED"),
    _q("total_params", "1", "Parameters", "positive", f"{_F}:TOTAL_PARAMS"),
    _q("active_params", "1", "Parameters used per token", "positive", f"{_F}:ACTIVE_PARAMS",
       at_most=("total_params",)),
    _q("weight_bytes", "B", "Weight memory in bytes", "positive", f"{_F}:WEIGHT_BYTES", f"{_F}:WEIGHT_BYTES_MIXED"),
    _q("weights_load_s", "s", "Weight load time", "positive", f"{_F}:WEIGHTS_LOAD_S"),
    _q("kv_replication", "1", "Copies of each K/V head across the replica", "positive",
       f"{_S}:KV_REPLICATION", f"{_S}:KV_REPLICATION_MLA"),
    _q("usable_per_gpu_gib", "GiB", "Usable memory per card", "nonnegative", f"{_P}tp:USABLE_PER_GPU_GIB"),
    _q("ep_weights_per_gpu_gib", "GiB", "Weights per card, experts split", "positive",
       f"{_P}moe:EP_WEIGHTS_PER_GPU_GIB"),
    _q("room_per_gpu_gib", "GiB", "Room per card", "any", f"{_P}tp:ROOM_PER_GPU_GIB",
       at_most=("usable_per_gpu_gib",)),
    _q("replica_kv_budget_gib", "GiB", "KV cache budget of the replica", "any",
       "formulas.fleet:REPLICA_KV_BUDGET_GIB"),
    _q("pinned_gib", "GiB", "KV cache pinned by cached prefixes", "nonnegative",
       f"{_P}prefix:PINNED", f"{_P}prefix:PINNED_WINDOWED"),
    _q("adapter_params", "1", "Adapter parameters", "positive", "formulas.lora:ADAPTER_PARAMS"),
    _q("params_per_layer", "1", "Adapter parameters per layer", "positive", "formulas.lora:PARAMS_PER_LAYER"),
    _q("adapter_gib", "GiB", "Memory per adapter", "positive", "formulas.lora:ADAPTER_GIB"),
    _q("spare_gib", "GiB", "Memory for adapters", "any",
       "formulas.lora:SPARE_FROM_BUDGET", "formulas.lora:SPARE_FROM_LADDER",
       "formulas.lora:SPARE_FROM_LADDER_MOE"),
    _q("adapters_fit", "1", "Adapters that fit", "nonnegative", "formulas.lora:ADAPTERS_FIT"),
    # --- one serving step (DESIGN §12) -----------------------------------------------------------------
    _q("weight_bytes_per_step", "B", "Weights read per step", "positive",
       f"{_S}:STEP_WEIGHT_BYTES", f"{_S}:STEP_WEIGHT_BYTES_MOE", f"{_P}pareto:WEIGHT_BYTES_AT_BATCH_MOE"),
    _q("kv_bytes_per_step", "B", "KV cache read per step", "nonnegative",
       f"{_S}:STEP_KV_BYTES", f"{_S}:STEP_KV_BYTES_WINDOWED", f"{_S}:STEP_KV_BYTES_SPARSE"),
    _q("bytes_per_step", "B", "Bytes read per step", "positive", f"{_S}:STEP_BYTES"),
    _q("bytes_per_step_gib", "GiB", "Bytes read per step, in GiB", "positive",
       "formulas.fleet:BYTES_PER_STEP", "formulas.fleet:BYTES_PER_STEP_MOE"),
    _q("bandwidth_gb_s", "GB/s", "Memory bandwidth of the replica", "positive", f"{_P}decode:BANDWIDTH"),
    _q("ceiling_tok_s", "tok/s", "Decode ceiling", "positive", f"{_S}:CEILING_TOK_S"),
    _q("realistic_low_tok_s", "tok/s", "Realistic decode rate, low end", "positive", f"{_P}decode:REALISTIC_LOW",
       at_most=("ceiling_tok_s",)),
    _q("realistic_high_tok_s", "tok/s", "Realistic decode rate, high end", "positive", f"{_P}decode:REALISTIC_HIGH",
       at_most=("ceiling_tok_s",)),
    _q("mbu", "1", "Memory-bandwidth utilisation", "fraction", f"{_P}decode:MBU"),
    _q("flops_per_step", "FLOP", "FLOPs per step", "positive", f"{_S}:STEP_FLOPS", f"{_S}:STEP_FLOPS_WINDOWED",
       f"{_S}:STEP_FLOPS_SPARSE"),
    _q("memory_ms", "ms", "Memory time of a step", "positive", f"{_S}:MEMORY_MS"),
    _q("compute_ms", "ms", "Compute time of a step", "positive", f"{_S}:COMPUTE_MS"),
    _q("comm_ms", "ms", "Communication time of a step", "nonnegative", f"{_S}:COMM_MS"),
    _q("step_ms", "ms", "Step time", "positive", f"{_S}:STEP_MS"),
    _q("tok_s_per_user", "tok/s", "Tokens per second per sequence", "positive", f"{_S}:TOK_S_PER_USER",
       at_most=("ceiling_tok_s",)),
    _q("tok_s_per_replica", "tok/s", "Tokens per second per replica", "positive", f"{_S}:TOK_S_PER_REPLICA",
       at_most=("ceiling_tok_s",)),
    # the throughput–interactivity curve's point (pareto)
    _q("batch", "users", "Grid batch a TPOT target marks", "nonnegative", f"{_P}pareto:GRID_BATCH",
       at_most=("batch_memory_limit", "batch_tpot_limit")),
    _q("tok_s_per_card", "tok/s", "Tokens per second per card", "positive", f"{_P}pareto:TOK_S_PER_CARD"),
    # --- roofline and mixture of experts -------------------------------------------------------------
    _q("ridge_flop_per_byte", "FLOP/byte", "Ridge point", "positive", f"{_S}:RIDGE"),
    _q("decode_flop_per_byte", "FLOP/byte", "Arithmetic intensity of a decode step", "positive",
       f"{_P}roofline:DECODE_INTENSITY", f"{_P}roofline:DECODE_INTENSITY_MOE"),
    _q("prefill_flop_per_byte", "FLOP/byte", "Arithmetic intensity of prefill", "positive",
       f"{_P}roofline:PREFILL_INTENSITY", f"{_P}roofline:PREFILL_INTENSITY_MOE"),
    _q("decode_bound", "1", "Decode verdict: compute- or memory-bound", "flag", f"{_P}roofline:DECODE_BOUND",
       verdict="bound"),
    _q("prefill_bound", "1", "Prefill verdict: compute- or memory-bound", "flag", f"{_P}roofline:PREFILL_BOUND",
       verdict="bound"),
    _q("batch_at_ridge", "users", "Batch at the ridge", "nonnegative", f"{_P}roofline:BATCH_AT_RIDGE",
       f"{_P}roofline:BATCH_AT_RIDGE_MOE"),
    _q("ridge_reachable", "1", "Some batch reaches the ridge: yes or no", "flag",
       f"{_P}roofline:RIDGE_REACHABLE", verdict="yes/no"),
    _q("active_bytes_per_token", "B", "Weight bytes read per token", "positive", f"{_P}moe:ACTIVE_BYTES_PER_TOKEN",
       f"{_P}moe:ACTIVE_BYTES_PER_TOKEN_MOE"),
    _q("flops_per_token", "FLOP", "Operations per token", "positive", f"{_P}moe:FLOPS_PER_TOKEN"),
    _q("saving_ratio", "1", "Operations saved per token (total ÷ active)", "positive", f"{_P}moe:SAVING_RATIO"),
    _q("tokens_per_expert", "tok", "Tokens per expert per step", "nonnegative", f"{_P}moe:TOKENS_PER_EXPERT"),
    _q("all_to_all_bytes", "B", "All-to-all bytes per step", "nonnegative", f"{_P}moe:ALL_TO_ALL_BYTES"),
    _q("expert_flop_per_byte", "FLOP/byte", "Intensity of an expert's matmul", "nonnegative",
       f"{_P}moe:EXPERT_INTENSITY"),
    _q("ep_efficient", "1", "Expert parallelism efficient (1) or not (0)", "flag", f"{_P}moe:EP_EFFICIENT",
       verdict="yes/no"),
    # --- prefill, prefix caching, disaggregation, preemption -------------------------------------------
    _q("linear_flops", "FLOP", "Linear term of prefill", "positive", f"{_P}prefill:LINEAR_FLOPS"),
    _q("attention_flops", "FLOP", "Attention term of prefill", "nonnegative", f"{_P}prefill:ATTENTION_FLOPS"),
    # Two conventions, each stated where it is used (DESIGN §12): the prefill family's (all N, no causal
    # halving) and the serving step's chunk (after cached tokens, windows capped).
    _q("prefill_flops", "FLOP", "Prefill FLOPs", "positive",
       f"{_P}prefill:PREFILL_FLOPS", f"{_S}:PREFILL_CHUNK_FLOPS",
       f"{_S}:PREFILL_CHUNK_FLOPS_SPARSE"),
    _q("effective_flop_s", "FLOP/s", "Compute delivered", "positive", f"{_P}prefill:EFFECTIVE_FLOP_S"),
    _q("prefill_ms", "ms", "Prefill time", "positive", f"{_P}prefill:PREFILL_MS", f"{_P}disagg:PREFILL_MS"),
    _q("ttft_ms", "ms", "Time to first token", "positive", f"{_P}prefill:TTFT_MS", f"{_P}disagg:TTFT_MS"),
    _q("causal_prefill_ms", "ms", "Prefill time with causal masking", "positive", f"{_P}prefill:CAUSAL_PREFILL_MS"),
    _q("crossover_tokens", "tok", "Prompt length where attention equals the linear term", "positive",
       f"{_P}prefill:CROSSOVER"),
    _q("prefix_flops", "FLOP", "Prefill FLOPs of the prefix", "nonnegative", f"{_P}prefix:PREFIX_FLOPS"),
    _q("flops_saved_per_request", "FLOP", "FLOPs saved per request", "nonnegative", f"{_P}prefix:FLOPS_SAVED",
       at_most=("prefix_flops",)),
    _q("ttft_saved_ms", "ms", "TTFT saved per request", "nonnegative", f"{_P}prefix:TTFT_SAVED"),
    _q("kv_transfer_bytes", "B", "KV cache sent per request", "nonnegative", f"{_P}disagg:KV_TRANSFER_BYTES"),
    _q("kv_transfer_ms", "ms", "KV transfer time", "nonnegative", f"{_P}disagg:KV_TRANSFER_MS"),
    _q("transfer_share", "1", "Transfer share of the TTFT", "fraction", f"{_P}disagg:TRANSFER_SHARE"),
    _q("prefill_gpus", "GPUs", "Prefill pool", "nonnegative", f"{_P}disagg:PREFILL_GPUS"),
    _q("decode_replicas", "replicas", "Decode replicas", "nonnegative", f"{_P}disagg:DECODE_REPLICAS"),
    _q("decode_gpus", "GPUs", "Decode pool", "nonnegative", f"{_P}disagg:DECODE_GPUS"),
    _q("pool_ratio", "1", "Prefill cards per decode card", "nonnegative", f"{_P}disagg:POOL_RATIO"),
    _q("chunk_ms", "ms", "One prefill chunk's time", "nonnegative", f"{_P}disagg:CHUNK_MS"),
    _q("disagg_pays", "1", "Disaggregation pays (1) or not (0)", "flag", f"{_P}disagg:DISAGG_PAYS",
       verdict="yes/no"),
    _q("prefill_nodes", "nodes", "Prefill pool in whole nodes", "nonnegative", f"{_P}disagg:PREFILL_NODES"),
    _q("decode_nodes", "nodes", "Decode pool in whole nodes", "nonnegative", f"{_P}disagg:DECODE_NODES"),
    _q("fleet_gpus", "GPUs", "Cards billed", "nonnegative", f"{_P}disagg:FLEET_GPUS"),
    _q("fleet_usd_per_mtok", "USD/Mtok", "Whole-fleet cost per million output tokens", "nonnegative",
       f"{_P}disagg:FLEET_USD_PER_MTOK"),
    _q("node_usd_per_mtok", "USD/Mtok", "Single-node cost per million output tokens", "nonnegative",
       f"{_P}disagg:NODE_USD_PER_MTOK"),
    _q("recompute_flops_per_token", "FLOP", "FLOPs to recompute one token", "positive",
       f"{_P}preempt:RECOMPUTE_FLOPS_PER_TOKEN"),
    _q("recompute_ms_per_token", "ms", "Recompute per token", "positive", f"{_P}preempt:RECOMPUTE_MS_PER_TOKEN"),
    _q("recompute_ms_per_request", "ms", "Recompute per request", "positive", f"{_P}preempt:RECOMPUTE_MS_PER_REQUEST"),
    _q("swap_ms_per_token", "ms", "Swap per token", "positive", f"{_P}preempt:SWAP_MS_PER_TOKEN"),
    _q("swap_ms_per_request", "ms", "Swap per request", "positive", f"{_P}preempt:SWAP_MS_PER_REQUEST"),
    _q("recompute_to_swap_ratio", "1", "Recompute ÷ swap, per token", "positive", f"{_P}preempt:RATIO"),
    # --- planning: SLOs, fleets, tensor parallelism, cost ---------------------------------------------
    _q("batch_memory_limit", "users", "Batch the KV budget holds", "nonnegative",
       "formulas.fleet:BATCH_MEMORY_LIMIT"),
    _q("batch_tpot_limit", "users", "Batch whose step meets the TPOT target", "nonnegative",
       "formulas.fleet:BATCH_TPOT_LIMIT"),
    _q("max_batch", "users", "Largest batch", "nonnegative", "formulas.fleet:MAX_BATCH",
       at_most=("batch_memory_limit", "batch_tpot_limit")),
    _q("tpot_ms", "ms", "Step time at that batch (TPOT)", "positive", "formulas.fleet:TPOT_MS"),
    _q("tokens_per_s", "tok/s", "Tokens per second per replica", "nonnegative", "formulas.fleet:TOKENS_PER_S"),
    _q("replicas", "replicas", "Replicas", "nonnegative", "formulas.fleet:REPLICAS", f"{_P}fleet:REPLICAS"),
    _q("nodes", "nodes", "Nodes", "nonnegative", "formulas.fleet:NODES", f"{_P}fleet:NODES", f"{_P}tp:NODES"),
    _q("concurrency", "users", "Requests in flight", "nonnegative", f"{_P}fleet:CONCURRENCY"),
    _q("gpus", "GPUs", "GPUs", "nonnegative", f"{_P}fleet:GPUS"),
    _q("min_gpus", "GPUs", "Cards that hold the weights and one user", "positive", f"{_P}tp:MIN_GPUS"),
    _q("tp_degree", "GPUs", "Tensor-parallel degree", "positive", f"{_P}tp:TP_DEGREE"),
    _q("tokens_per_hour", "tok", "Tokens per hour", "nonnegative", f"{_P}cost:TOKENS_PER_HOUR"),
    _q("usd_per_hour", "USD/h", "Fleet cost per hour", "nonnegative", f"{_P}cost:USD_PER_HOUR"),
    _q("usd_per_million_tokens", "USD/Mtok", "Cost per million tokens", "nonnegative",
       f"{_P}cost:USD_PER_MILLION_TOKENS"),
    _q("expected_tokens", "tok", "Expected tokens per verify step", "positive", f"{_P}spec:EXPECTED_TOKENS",
       at_most=("draft_tokens_plus_one",)),
    _q("speedup", "1", "Speed-up bound over plain decoding", "positive", f"{_P}spec:SPEEDUP"),
    # --- number formats and rotary positions -------------------------------------------------------------
    _q("exponent_bits", "1", "Exponent bits", "nonnegative", f"{_P}formats:EXPONENT_BITS"),
    _q("mantissa_bits", "1", "Mantissa bits", "nonnegative", f"{_P}formats:MANTISSA_BITS",
       f"{_P}formats:MANTISSA_BITS_INT"),
    _q("total_bits", "1", "Total bits", "positive", f"{_P}formats:TOTAL_BITS"),
    _q("max_normal", "1", "Largest normal value", "positive", f"{_P}formats:MAX_INT", f"{_P}formats:MAX_NORMAL_E4M3",
       f"{_P}formats:MAX_NORMAL_IEEE", f"{_P}formats:MAX_NORMAL_NO_SPECIALS"),
    _q("min_normal", "1", "Smallest positive normal value", "positive", f"{_P}formats:MIN_INT",
       f"{_P}formats:MIN_NORMAL"),
    _q("epsilon", "1", "Machine epsilon", "positive", f"{_P}formats:EPSILON"),
    _q("block_size", "1", "Elements sharing one scale", "positive", f"{_P}formats:BLOCK_SIZE"),
    _q("scale_bits", "1", "Bits of the shared scale", "nonnegative", f"{_P}formats:SCALE_BITS"),
    _q("effective_bits", "1", "Effective bits per value", "positive", f"{_P}formats:EFFECTIVE_BITS"),
    # the simulated drills (calculators/sim/drills.py): step-model steps, then values read from a stored sweep
    _q("decode_step_batch_ms", "ms", "Decode step at a batch of 64", "positive", f"{_S}:DECODE_STEP_BATCH"),
    _q("ttft_low_load_ms", "ms", "TTFT at low load", "positive", f"{_S}:TTFT_LOW_LOAD"),
    _q("requests_in_system", "requests", "Requests in the system", "nonnegative",
       f"{_S}:REQUESTS_IN_SYSTEM"),
    _q("knee_req_s", "req/s", "The knee", "positive", f"{_S}:KNEE"),
    _q("ttft_p99_ms", "ms", "p99 TTFT", "positive", f"{_S}:TTFT_P99"),
    _q("tpot_crossing_batch", "requests", "Batch where TPOT crosses the target", "positive",
       f"{_S}:CROSSING"),
    _q("kv_cache_tokens", "tok", "Tokens the KV cache holds", "positive", f"{_S}:KV_TOKENS"),
    _q("full_cache_requests", "requests", "Requests the cache holds whole", "nonnegative",
       f"{_S}:FULL_CACHE"),
    _q("preemption_rate_req_s", "req/s", "Rate where preemption begins", "positive", f"{_S}:PREEMPT_RATE"),
    _q("bands", "1", "Frequency bands per head", "positive", "formulas.rope:BANDS"),
    _q("shortest_wavelength_tok", "tok", "Shortest wavelength", "positive", "formulas.rope:SHORTEST_WAVELENGTH"),
    _q("longest_wavelength_tok", "tok", "Longest wavelength", "positive", "formulas.rope:LONGEST_WAVELENGTH"),
    _q("scaled_longest_wavelength_tok", "tok", "Longest wavelength, positions scaled", "positive",
       "formulas.rope:SCALED_LONGEST_WAVELENGTH"),
    _q("bands_longer_than_context", "1", "Bands longer than the context", "nonnegative",
       "formulas.rope:BANDS_LONGER_THAN_CONTEXT", at_most=("bands",)),
)}

def _input(key, unit, label, bounds, default=None, source="", minimum=None, maximum=None, exclusive_minimum=False,
           aliases=()):
    return Quantity(key, unit, label, bounds, (), (), default, source, minimum, maximum, exclusive_minimum,
                    tuple(aliases))


#: A share of a peak or of a card: at least 1 % (no measured engine runs below it, and a share near zero turns
#: a time into a division by almost nothing: 1e-320 printed "inf ms") and at most the whole.
_FRACTION = {"minimum": 0.01, "maximum": 1}

#: The inputs with a default, each declared once with the source of its default (docs/architecture.md §11, §12).
INPUTS: dict[str, Quantity] = {q.key: q for q in (
    _input("bandwidth_efficiency", "1", "Bandwidth efficiency", "fraction", 0.75,
           "the middle of the 65–85 % of peak HBM bandwidth that measured decode kernels reach "
           "(docs/architecture.md §12's convention)", **_FRACTION),
    _input("mfu", "1", "MFU", "fraction", 0.5,
           "decode's share of the dense peak FLOP/s (docs/architecture.md §12's convention)", **_FRACTION),
    _input("prefill_mfu", "1", "Prefill MFU", "fraction", 0.4,
           "prefill's share of the dense peak FLOP/s (docs/architecture.md §12's convention)", **_FRACTION),
    _input("allreduce_latency_us", "us", "All-reduce latency", "nonnegative", 10.0,
           "the fixed cost of one NCCL all-reduce inside an NVLink node, about 10 µs (docs/architecture.md §12)",
           minimum=0, maximum=10_000),
    _input("bandwidth_efficiency_large_batch", "1", "Bandwidth efficiency at large batch", "fraction", 0.75,
           "the same convention as the batch-1 bandwidth efficiency until a card's calibration row says "
           "otherwise (docs/architecture.md §12)", **_FRACTION),
    _input("step_overhead_ms", "ms", "Step overhead", "nonnegative", 0.0,
           "none: the roofline's convention; a card's calibration row carries its measured launch and "
           "scheduling cost (docs/architecture.md §12)", minimum=0, maximum=1_000),
    _input("allreduce_latency_per_tp_doubling_us", "us", "All-reduce latency per TP doubling", "nonnegative",
           0.0, "none: the latency of docs/architecture.md §12's convention does not grow; a card's calibration row "
           "carries what each doubling of the tensor-parallel degree adds to one all-reduce's fixed cost "
           "(calibration.allreduce_latency_at)", minimum=0, maximum=10_000),
    _input("utilization", "1", "Memory utilisation", "fraction", 0.90,
           "vLLM's gpu_memory_utilization default: the share of card memory the engine may use", **_FRACTION,
           aliases=("memory_utilization",)),
    # Not memory: the share of each billed hour a fleet works (cost); ``utilization`` was its name there.
    _input("busy_fraction", "1", "Busy fraction of each hour", "fraction", 1.0,
           "a fleet quoted as busy every hour it is billed, the cheapest cost per token (docs/architecture.md §12)",
           **_FRACTION, aliases=("utilization",)),
    _input("reserve_gib", "GiB", "Activation reserve", "nonnegative", 3.0,
           "activations and the CUDA graphs of one card at the reference stack (docs/architecture.md §2)",
           minimum=0, maximum=10_000),
    _input("block_size", "tok", "KV block size", "positive", 16, "vLLM's default block_size (paged attention)",
           minimum=1, maximum=4096),
    _input("avg_tokens", "tok", "Average conversation", "positive", 2300,
           "the reference stack's average conversation (docs/architecture.md §2)", minimum=1, maximum=10_000_000),
)}


def default(key: str, *, gpu: str | None = None, precision: str = "bf16", engine: str = "",
            end: str = "value") -> float:
    """The default of the input quantity ``key`` (:data:`INPUTS`); with ``gpu`` (a catalog id) and
    ``precision`` (a weight format or precision family), the calibration table's value for that card
    when it has a row (:mod:`.calibration`; ``end`` picks ``"value"``, ``"low"`` or ``"high"``), else the
    quantity's own default. Raises ``KeyError`` for a key with none."""
    value = INPUTS[key].default
    if value is None:
        raise KeyError(key)
    if gpu is not None:
        from .calibration import KEYS, default_calibration

        if key in KEYS:
            band = default_calibration().band(key, gpu, precision, engine)
            if band is not None:
                return band.pick(end)
    return value


#: Keys that named a quantity before, in every family: old key → canonical key.
ALIASES: dict[str, str] = {"weight_gib": "weights_gib"}

#: Keys one family used for a quantity another family names differently: (family, old key) → canonical.
FAMILY_ALIASES: dict[tuple[str, str], str] = {("slo", "bytes_per_step"): "bytes_per_step_gib"}


def canonical_key(key: str, family: str | None = None) -> str:
    """The canonical key for ``key`` as typed (an alias of ``family``'s or of every family's), or ``key``."""
    if family is not None and (family, key) in FAMILY_ALIASES:
        return FAMILY_ALIASES[(family, key)]
    return ALIASES.get(key, key)


def aliases_of(key: str, family: str | None = None) -> tuple[str, ...]:
    """The older keys that also name ``key`` (in ``family``, when given)."""
    found = [old for old, new in ALIASES.items() if new == key]
    found += [old for (fam, old), new in FAMILY_ALIASES.items() if new == key and fam == family]
    return tuple(found)


def quantity(key: str, family: str | None = None) -> Quantity | None:
    """The :class:`Quantity` a key (canonical or an alias) names, or ``None``."""
    return QUANTITIES.get(canonical_key(key, family))

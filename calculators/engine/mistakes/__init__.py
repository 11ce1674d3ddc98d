"""The one registry of mistakes (DESIGN §11): every classic mistake the grader names, declared once, in order.

A :class:`Mistake` has an ``id``, its ``words`` (a short title and a one-line explanation), a ``link`` to the runbook
chapter or errata entry that teaches it, the quantities it ``needs`` and the ``change`` it makes — one or more of:

* :class:`Override` — an input overridden (K/V heads ← query heads, utilisation ← 1, dense ← sparse TFLOP/s, the
  bytes per value ← bits …), tried in every problem whose given values hold the quantities it ``needs``;
* :class:`UnitSlip` — a step in one unit typed (and carried on) in its sibling (GB ↔ GiB, ms ↔ s, GB/s ↔ GiB/s,
  GiB ↔ MiB and B ↔ KiB: the binary prefix 1,024× off);
* :class:`RoundingSlip` — a count the step rounds up (GPUs, replicas, nodes: its formula's ceiling) rounded down;
* :class:`AtStep` — rarely, a mistake in one quantity's own formula, declared here on that quantity and tried in
  every family that computes it and the quantities it ``needs``.

The grader (:mod:`..grader`) re-evaluates a family's own steps with each change, so every step downstream of
the change is named too. Where one typed value matches several mistakes at the same distance, the one declared first
here wins: the shared mistakes of the foundation, then those the families added, then those added with the
perturbation engine (existing ids first). A second record with the same id fails at import. What each change
computes lives in the topic modules beside this one (:mod:`.memory`, :mod:`.serving`).

Sources: the errata register of the runbook map (``shared/seeds/000``) — GB/GiB mixing (52 GB ÷ 1 GiB), utilisation
and reserve skipped (60 users), nominal 4-bit widths (6.5 GB vs 7.9 GB for a 13B), ladders stopped at the weights
line, worst case and paged counts quoted for each other — and the chapters' formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ..units import BINARY_STEP, GIB, GIB_PER_GB
from . import memory as M
from . import serving as SV

__all__ = [
    "GIB",
    "GIB_PER_GB",
    "MISCONCEPTIONS",
    "MISTAKES",
    "AtStep",
    "Mistake",
    "Override",
    "PrefixSlip",
    "RoundingSlip",
    "UnitSlip",
    "at_step",
    "order_of",
]

StepValue = Callable[[Mapping[str, float], Mapping[str, float]], "float | list[float] | None"]


@dataclass(frozen=True)
class Override:
    """An input override: ``perturb(given)`` returns the changed given values (a list of copies where the slip has
    several readings), or ``None`` where it cannot occur in this problem. Tried where the given values hold every
    quantity in ``needs`` and the problem computes every one of ``where`` (the steps the slip shows in)."""

    perturb: Callable[[Mapping[str, float]], "dict | list[dict] | None"]
    needs: tuple[str, ...] = ()
    where: tuple[str, ...] = ()


@dataclass(frozen=True)
class UnitSlip:
    """A step in one of ``units`` typed in its sibling: its value × each of ``factors``, carried downstream; with
    ``reading``, also an earlier step in one of ``units`` read in its sibling by the step that reads it."""

    units: tuple[str, ...]
    factors: tuple[float, ...]
    reading: bool = False


@dataclass(frozen=True)
class PrefixSlip:
    """A value typed with a byte prefix of one system whose number is the answer in the other: ``32 MB`` where the
    answer is 32 MiB (a MiB is 1.048576 MB), ``52 GiB`` where it is 52 GB. The typed unit is the evidence, so the
    grader checks it on the text as typed (:func:`.units.prefix_partner`) before the perturbations."""


@dataclass(frozen=True)
class RoundingSlip:
    """A count its formula rounds up (a ceiling) rounded down instead, carried downstream."""


@dataclass(frozen=True)
class AtStep:
    """A mistake in quantity ``quantity``'s own formula: ``value(given, steps)`` is what a candidate holding it types
    there (a list where it has several readings; ``None`` where it cannot occur). Tried in a family that computes
    the quantity and every one of ``needs`` (given values or steps); with ``local``, it belongs to that step alone
    (not carried downstream)."""

    quantity: str
    value: StepValue
    needs: tuple[str, ...] = ()
    local: bool = False


Change = Override | UnitSlip | PrefixSlip | RoundingSlip | AtStep


@dataclass(frozen=True)
class Mistake:
    """A named classic mistake: ``id``, ``words`` (title, one-line explanation), ``link`` (a site path), the
    quantities it ``needs`` in every problem it is tried in, and its ``change`` (:data:`Change` s)."""

    id: str
    words: tuple[str, str]
    link: str
    needs: tuple[str, ...] = ()
    change: tuple[Change, ...] = ()

    @property
    def title(self) -> str:
        """The short title ("Query heads used for K/V heads")."""
        return self.words[0]

    @property
    def explanation(self) -> str:
        """The one-line explanation shown with the verdict."""
        return self.words[1]


def _over(perturb, *needs: str, where: tuple[str, ...] = ()) -> Override:
    return Override(perturb, tuple(needs), where)


def _at(quantity: str, value: StepValue, *needs: str, local: bool = False) -> AtStep:
    return AtStep(quantity, value, tuple(needs), local)


# What the ladder's shortened budgets read, a replica's (slo), and the output head's miscount.
_LADDER = ("card_gib", "weights_gib", "utilization", "gpus", "reserve_gib")
_REPLICA = ("card_mib", "weights_gib", "utilization", "gpus", "reserve_gib")
_TIED = ("vocab_size", "hidden_size", "embedding_copies")

MISTAKES: tuple[Mistake, ...] = (
    # --- a specific sizing mistake that a shared one (a floor, a skipped utilisation) can coincide with ---
    Mistake("weights-only-sizing", ("Cards sized for the weights alone",
                    "A replica that holds the weights and no KV cache serves nobody: size the cards for the weights "
                    "plus at least one user at the context limit."),
            "/runbook/11-multi-gpu/#tensor-parallel",
            change=(
                _at("min_gpus", M.min_gpus_weights_only, "weights_gib", "per_user_gib", "room_per_gpu_gib"),
            )),
    # --- shared mistakes, older than the perturbation engine ---
    Mistake("query-heads-for-kv-heads", ("Query heads used for K/V heads",
                    "The cache stores one K and one V per K/V head (num_key_value_heads); under GQA or MQA that is "
                    "fewer than the query heads."),
            "/runbook/06-kv-cache/#formula",
            change=(
                _over(M.query_heads, "heads", "kv_heads"),
                _at("kv_bytes_per_token", M.kv_query_heads, "heads", "kv_heads", "kv_lora_rank", "layers", "head_dim",
                    "kv_bytes"),
            )),
    Mistake("missing-kv-factor-2", ("K and V counted once",
                    "Each layer caches a key and a value vector per K/V head: the formula starts with 2."),
            "/runbook/06-kv-cache/#formula",
            change=(
                _over(M.kv_once, "kv_bytes", "kv_heads"),
                _at("kv_bytes_per_token", M.kv_missing_2, "kv_lora_rank", "layers", "kv_heads", "head_dim",
                    "kv_bytes"),
            )),
    Mistake("bits-for-bytes", ("Bits used where bytes belong",
                    "bf16 is 16 bits but 2 bytes per value; divide bits by 8 before multiplying into bytes."),
            "/runbook/06-kv-cache/#formula",
            change=(
                _over(M.kv_bits, "kv_bytes"),
                _over(M.weight_bits_as_bytes, "weight_bits"),
                _at("kv_bytes_per_token", M.kv_in_bits, "kv_lora_rank", "layers", "kv_heads", "head_dim", "kv_bytes"),
                _at("weights_gib", M.weights_gib_in_bits, "total_params", "weight_bits"),
                _at("weight_bytes", M.weight_bytes_bits, "total_params", "weight_bits"),
                _at("weight_bytes_per_step", SV.step_weights_in_bits, "experts", "weight_bits"),
                _at("decode_flop_per_byte", SV.decode_intensity_bits, "context"),
                _at("prefill_flop_per_byte", SV.prefill_intensity_bits, "prompt_tokens"),
                _at("active_bytes_per_token", SV.bytes_in_bits, "active_params", "weight_bits"),
                _at("adapter_gib", M.adapter_bits_for_bytes, "adapter_params", "adapter_bits"),
            )),
    Mistake("gb-gib-mix", ("Decimal and binary units mixed",
                    "A decimal GB is 10^9 bytes and a GiB is 2^30 (a MB 10^6, a MiB 2^20); mixing them is a 7 % error"
                    " (5 % at MB). Run the ladder in GiB."),
            "/errata/#gb-gib-mix",
            change=(
                PrefixSlip(),
                UnitSlip(("GiB", "GB"), (GIB_PER_GB, 1 / GIB_PER_GB), reading=True),
                UnitSlip(("GB/s",), (GIB_PER_GB, 1 / GIB_PER_GB), reading=True),
                _over(M.card_gb_as_gib, "card_mib"),
                _over(SV.bandwidth_gb_as_gib, "bandwidth_gb_s"),
                _over(SV.card_bandwidth_gb_as_gib, "card_bandwidth"),
            )),
    Mistake("skipped-utilization", ("Utilisation fraction skipped",
                    "No engine uses the whole card (vLLM defaults to 0.90); skipping it over-promises by about a "
                    "tenth."),
            "/errata/#two-user-counts",
            change=(
                _over(lambda g: M.changed(g, utilization=1), "utilization"),
                _at("usable_gib", M.usable_skipped, "card_gib"),
                _at("kv_budget_gib", M.short_ladder("budget", utilization=False, reserve=True), *_LADDER),
                _at("users_worst_case", M.short_ladder("worst", utilization=False, reserve=True), *_LADDER,
                    "per_user_gib"),
                _at("users_paged", M.short_ladder("paged", utilization=False, reserve=True), *_LADDER, "avg_tokens",
                    "block_size"),
                _at("replica_kv_budget_gib", M.replica_budget(utilization=False), *_REPLICA),
                _at("usable_per_gpu_gib", M.usable_full_card, "card_mib"),
                _at("room_per_gpu_gib", M.room_no_utilization, "card_mib", "reserve_gib"),
                _at("min_gpus", M.min_gpus_no_utilization, "card_mib", "reserve_gib", "weights_gib", "per_user_gib"),
            )),
    Mistake("skipped-activation-reserve", ("Activation reserve skipped",
                    "Attention workspace, CUDA graphs and the logits buffer need gigabytes before any cache; without "
                    "the reserve the server dies on its first busy batch."),
            "/errata/#two-user-counts",
            change=(
                _over(lambda g: M.changed(g, reserve_gib=0), "reserve_gib"),
                _at("kv_budget_gib", M.short_ladder("budget", utilization=True, reserve=False), *_LADDER),
                _at("users_worst_case", M.short_ladder("worst", utilization=True, reserve=False), *_LADDER,
                    "per_user_gib"),
                _at("users_paged", M.short_ladder("paged", utilization=True, reserve=False), *_LADDER, "avg_tokens",
                    "block_size"),
                _at("replica_kv_budget_gib", M.replica_budget(reserve=False), *_REPLICA),
                _at("room_per_gpu_gib", M.room_no_reserve, "usable_per_gpu_gib"),
                _at("min_gpus", M.min_gpus_no_reserve, "usable_per_gpu_gib", "weights_gib", "per_user_gib"),
            )),
    Mistake("nominal-4bit", ("Nominal 4-bit width",
                    "4-bit formats store block scales and keep some tensors wider: size them at the effective width "
                    "(about 4.5–4.8 bits), not 4.0."),
            "/errata/#nominal-4bit",
            change=(
                _over(M.weights_nominal_4bit, "weight_bits", "weights_dtype_bits_nominal"),
                _over(M.kv_nominal_4bit, "kv_bytes"),
                _at("kv_bytes_per_token", M.kv_per_token_nominal_4bit, "kv_lora_rank", "layers", "kv_heads",
                    "head_dim", "kv_bytes"),
                _at("weights_gib", M.weights_nominal_4bit_gib, "total_params", "weight_bits",
                    "weights_dtype_bits_nominal"),
                _at("weight_bytes", M.weight_bytes_nominal, "total_params", "weight_bits",
                    "weights_dtype_bits_nominal"),
                _at("weight_bytes_per_step", SV.step_weights_nominal_4bit, "experts", "weight_bits",
                    "weights_dtype_bits_nominal"),
                _at("effective_bits", M.block_nominal_bits, "total_bits"),
            )),
    Mistake("mixed-checkpoint-one-width", ("A mixed checkpoint charged one width",
                    "gpt-oss stores only its routed experts' weight matrices in MXFP4 (4.25 bits); attention, the "
                    "router, the embeddings and the head stay bf16. Charge each part its own width, not 4.25 bits "
                    "for every parameter."),
            "/errata/#gpt-oss-weights",
            change=(
                _over(M.mixed_checkpoint_one_width, "weight_bits", "expert_weight_bits"),
            )),
    Mistake("stopped-at-weights", ("Ladder stopped at the weights line",
                    "Subtracting the weights from the raw card and stopping skips the utilisation and the reserve; "
                    "'fits' is not 'serves'. Finish all eight steps."),
            "/errata/#stopped-at-weights",
            change=(
                _over(lambda g: M.changed(g, utilization=1, reserve_gib=0), "utilization", "reserve_gib"),
                _at("kv_budget_gib", M.short_ladder("budget", utilization=False, reserve=False), *_LADDER),
                _at("users_worst_case", M.short_ladder("worst", utilization=False, reserve=False), *_LADDER,
                    "per_user_gib"),
                _at("users_paged", M.short_ladder("paged", utilization=False, reserve=False), *_LADDER, "avg_tokens",
                    "block_size"),
                _at("replica_kv_budget_gib", M.replica_budget(utilization=False, reserve=False), *_REPLICA),
            )),
    Mistake("worst-case-vs-paged", ("Worst-case and paged counts swapped",
                    "Worst case charges every user the full context limit; paged charges the average conversation in "
                    "whole blocks. Say which one you quote."),
            "/runbook/06-kv-cache/#worst-case-and-paged",
            change=(
                _at("users_worst_case", M.worst_as_paged, "kv_budget_gib", "avg_tokens", "block_size",
                    "window_layers", local=True),
                _at("users_paged", M.paged_as_worst, "kv_budget_gib", "per_user_gib", local=True),
            )),
    Mistake("forgot-tied-embeddings", ("Tied embeddings miscounted",
                    "With tie_word_embeddings the output head reuses the embedding matrix (count it once); without it"
                    " the head is a second vocab × hidden matrix."),
            "/runbook/02-forward-pass/#parameter-count",
            change=(
                _over(M.tied, "embedding_copies"),
                _at("weights_gib", M.weights_tied, *_TIED, "total_params", "weight_bits"),
                _at("total_params", M.total_params_tied, *_TIED, "layers"),
                _at("weight_bytes", M.weight_bytes_tied, *_TIED, "total_params", "weight_bits"),
            )),
    Mistake("window-ignored", ("Sliding window ignored",
                    "A sliding-window layer keeps at most its window of tokens, however long the context."),
            "/runbook/07-attention-variants/#sliding-window",
            change=(
                _over(M.window_ignored, "window_layers", "layers", "full_layers"),
                _at("per_user_gib", M.per_user_window_ignored, "window_layers", "context", "window",
                    "kv_bytes_per_token"),
                _at("users_worst_case", M.users_window_ignored("worst"), "window_layers", "context", "window",
                    "kv_budget_gib", "kv_bytes_per_token"),
                _at("users_paged", M.users_window_ignored("paged"), "window_layers", "avg_tokens", "block_size",
                    "window", "kv_budget_gib", "kv_bytes_per_token"),
                _at("pinned_gib", M.pinned_window_ignored, "window_layers", "prefix_tokens", "window",
                    "kv_bytes_per_token"),
            )),
    Mistake("latent-as-heads", ("Latent cache sized as heads",
                    "MLA caches one compressed latent (kv_lora_rank) plus a shared rotary key per layer, not K and V "
                    "for every head."),
            "/runbook/07-attention-variants/#mla",
            change=(
                _at("kv_bytes_per_token", M.kv_latent_as_heads, "kv_lora_rank", "heads", "layers", "kv_bytes",
                    "hidden_size"),
            )),
    Mistake("sparse-tflops", ("2:4-sparsity TFLOP/s used",
                    "Datasheets headline the 2:4 structured-sparsity figure, twice the dense one; dense inference "
                    "never reaches it, so it doubles the ridge point, halves every compute time and inflates every "
                    "batch derived from it."),
            "/errata/#sparse-tflops",
            change=(
                _over(SV.sparse, "sparse_tflops", "peak_tflops"),
                _at("decode_bound", SV.sparse_verdict("decode_flop_per_byte"), "sparse_tflops", "bandwidth",
                    "decode_flop_per_byte"),
                _at("prefill_bound", SV.sparse_verdict("prefill_flop_per_byte"), "sparse_tflops", "bandwidth",
                    "prefill_flop_per_byte"),
            )),
    Mistake("roofline-as-expectation", ("Roofline quoted as an expectation",
                    "Peak bandwidth and peak FLOP/s are bounds: kernels reach about 65–85 % of peak bandwidth in "
                    "decode and 35–50 % of peak FLOP/s (MFU) in prefill. Quote the derated range, not the ceiling."),
            "/errata/#roofline-as-expectation",
            change=(
                _at("realistic_low_tok_s", SV.peak_as_realistic, "ceiling_tok_s", local=True),
                _at("realistic_high_tok_s", SV.peak_as_realistic, "ceiling_tok_s", local=True),
                _at("effective_flop_s", SV.delivered_at_peak, "peak_tflops", "gpus", "mfu", local=True),
                _at("prefill_ms", SV.prefill_at_peak, "prefill_flops", "peak_tflops", "gpus", "mfu", local=True),
                _at("ttft_saved_ms", SV.ttft_saved_at_peak, "flops_saved_per_request", "peak_tflops", "gpus", "mfu",
                    local=True),
                _at("batch_tpot_limit", SV.limit_at_peak, "tpot_target_ms", "per_user_gib", "always_read_params",
                    local=True),
                _at("tpot_ms", SV.tpot_at_peak, "tpot_target_ms", "max_batch", "bytes_per_step_gib", local=True),
            )),
    Mistake("kv-read-ignored", ("KV cache read left out",
                    "Each decode step reads every sequence's whole KV cache as well as the weights; at long contexts "
                    "or large batches that read rivals or outweighs the weights."),
            "/runbook/05-prefill-and-decode/#decode-ceiling",
            change=(
                _at("bytes_per_step", SV.bytes_weights_only, "weight_bytes_per_step", "kv_bytes_per_step"),
                _at("ceiling_tok_s", SV.ceiling_weights_only, "kv_bytes_per_step", "batch", "bandwidth_gb_s",
                    "weight_bytes_per_step"),
                _at("decode_flop_per_byte", SV.decode_intensity_no_cache, "context", "kv_bytes_per_token"),
                _at("batch_tpot_limit", SV.limit_without_cache, "tpot_target_ms", "per_user_gib",
                    "always_read_params"),
                _at("bytes_per_step_gib", SV.weights_for_step, "weights_gib"),
                _at("tpot_ms", SV.tpot_without_cache, "tpot_target_ms", "max_batch", "weights_gib"),
            )),
    Mistake("rounded-nodes-down", ("Rounded down instead of up",
                    "Replicas, GPUs and nodes are bought whole: a fraction of a replica serves no one and 9 GPUs is "
                    "two nodes of 8, so every count rounds up."),
            "/errata/#moe-nine-gpus",
            change=(
                RoundingSlip(),
                _at("gpus", SV.gpus_floor, "concurrency", "users_per_replica", "occupancy", "spares",
                    "gpus_per_replica"),
                _at("nodes", SV.nodes_of_min_gpus_floor, "min_gpus", "tp_degree", "gpus_per_node"),
            )),
    # --- a family's own mistakes, older than the perturbation engine ---
    Mistake("kv-replication-ignored", ("K/V replication ignored",
                    "A K/V head cannot be split across cards: on more cards than K/V heads each head is copied, and "
                    "an MLA latent is kept whole on every card, so each user's cache costs that many times more "
                    "memory."),
            "/errata/#kv-replication",
            change=(
                _over(M.replication_ignored_override, "kv_replication"),
                _at("kv_replication", M.replication_ignored, "kv_replication"),
                _at("per_user_gib", M.per_user_unreplicated, "kv_replication", "kv_bytes_per_token", "window_layers",
                    "context"),
                _at("users_worst_case", M.users_unreplicated("worst"), "kv_replication", "kv_bytes_per_token",
                    "kv_budget_gib", "per_user_gib", "window_layers", "context"),
                _at("users_paged", M.users_unreplicated("paged"), "kv_replication", "kv_bytes_per_token",
                    "kv_budget_gib", "avg_tokens", "block_size", "window_layers"),
                _at("kv_bytes_per_step", M.kv_step_unreplicated, "kv_replication", "batch", "window_layers"),
                _at("swap_ms_per_token", SV.swap_unreplicated, "kv_replication", "kv_bytes_per_token", "gpus",
                    "pcie_gb_s"),
            )),
    Mistake("prefill-decode-swap", ("Prefill and decode swapped",
                    "Decode reads every weight to make one token per sequence, so it is memory-bound until the batch "
                    "is large; prefill pushes the whole prompt through each weight it reads, so it is compute-bound."),
            "/runbook/04-gpu-roofline/#arithmetic-intensity",
            change=(
                _at("decode_flop_per_byte", SV.decode_as_prefill_intensity, "prompt_tokens", "context"),
                _at("prefill_flop_per_byte", SV.prefill_as_decode_intensity, "prompt_tokens", "context"),
                _at("decode_bound", SV.decode_called_compute_bound, "decode_flop_per_byte", "ridge_flop_per_byte"),
                _at("prefill_bound", SV.prefill_called_memory_bound, "prefill_flop_per_byte", "ridge_flop_per_byte"),
            )),
    Mistake("per-user-rate-for-replica", ("One stream's speed quoted for the replica",
                    "1 ÷ TPOT is what one user sees; each step emits a token for every sequence in the batch, so the "
                    "replica produces batch ÷ TPOT tokens per second."),
            "/runbook/15-production/#tpot",
            change=(
                _at("tok_s_per_replica", SV.rate_per_user, "tok_s_per_user", "batch", local=True),
                _at("tokens_per_s", SV.tokens_one_stream, "tpot_ms", local=True),
                _at("tok_s_per_card", SV.rate_per_user, "tok_s_per_user", "batch", local=True),
            )),
    Mistake("comm-ignored", ("All-reduces left out",
                    "Tensor parallelism adds two all-reduces per layer to every step; their fixed latency does not "
                    "shrink with more cards, so the step is max(memory, compute) plus communication."),
            "/errata/#slo-step",
            change=(
                _at("step_ms", SV.step_without_comm, "memory_ms", "compute_ms", "comm_ms"),
                _at("tpot_ms", SV.tpot_without_comm, "allreduces", "max_batch", "bytes_per_step_gib",
                    "tpot_target_ms"),
            )),
    Mistake("experts-all-read", ("Every expert counted as read",
                    "A batch of B tokens routed top-k of E touches about E × (1 − (1 − k/E)^B) experts per layer, not"
                    " all E until the batch is large."),
            "/runbook/11-multi-gpu/#mixture-of-experts",
            change=(
                _at("weight_bytes_per_step", SV.experts_all_read, "experts", "experts_per_token", "weight_bits"),
            )),
    Mistake("experts-top-k-read", ("Only top-k experts counted for a batch",
                    "Each token of a batch picks its own k experts: a batch reads the union, E × (1 − (1 − k/E)^B) "
                    "per layer, far more than k once B grows."),
            "/runbook/11-multi-gpu/#mixture-of-experts",
            change=(
                _at("weight_bytes_per_step", SV.experts_top_k_read, "experts", "experts_per_token", "batch",
                    "weight_bits"),
            )),
    Mistake("attention-term-ignored", ("Attention term left out",
                    "2 × N × L counts only the weight multiplications; scoring every token against every other grows "
                    "as L², and past the crossover length it is the larger term."),
            "/runbook/05-prefill-and-decode/#crossover",
            change=(
                _at("prefill_flops", SV.prefill_linear_only, "linear_flops"),
                _at("prefill_ms", SV.prefill_ms_linear_only, "linear_flops", "effective_flop_s"),
                _at("prefix_flops", SV.prefix_linear_only, "params", "prefix_tokens"),
                _at("flops_saved_per_request", SV.saved_linear_only, "params", "prefix_tokens", "hit_rate"),
            )),
    Mistake("ttft-without-queue", ("Queue wait left out of TTFT",
                    "Time to first token is the wait for admission plus the prefill; under load the wait is often the"
                    " larger part."),
            "/runbook/03-journey-of-a-token/#ttft",
            change=(
                _at("ttft_ms", SV.ttft_without_queue, "prefill_ms", "queue_ms"),
            )),
    Mistake("hit-rate-ignored", ("Hit rate left out",
                    "Only the requests that find the prefix cached skip its prefill; averaged over all requests the "
                    "saving is the hit rate times the prefix's prefill."),
            "/runbook/10-paged-memory-and-prefix-caching/#prefix-caching",
            change=(
                _at("flops_saved_per_request", SV.saved_every_request, "prefix_flops"),
                _at("ttft_saved_ms", SV.ttft_saved_every_request, "prefix_flops", "effective_flop_s"),
            )),
    Mistake("one-card-bandwidth", ("One card's bandwidth for the replica",
                    "Under tensor parallelism each card reads its own shard of the weights and caches, so a replica "
                    "of N cards reads N × the bandwidth (and computes on N × the FLOP/s)."),
            "/runbook/11-multi-gpu/#tensor-parallel",
            change=(
                _at("batch_tpot_limit", SV.limit_one_card, "tpot_target_ms", "per_user_gib", "always_read_params"),
                _at("tpot_ms", SV.tpot_one_card, "tpot_target_ms", "max_batch", "bytes_per_step_gib"),
                _at("memory_ms", SV.memory_ms_one_card, "gpus", "bytes_per_step", "bandwidth_gb_s"),
                _at("bandwidth_gb_s", SV.bandwidth_one_card, "gpus"),
                _at("ceiling_tok_s", SV.ceiling_one_card, "gpus", "batch", "bandwidth_gb_s", "bytes_per_step"),
            )),
    Mistake("cache-fit-ignored", ("Batch sized by latency alone",
                    "A batch is capped by the KV cache memory as well as by the TPOT target: take the smaller of the "
                    "two limits and say which one binds."),
            "/runbook/14-capacity-planning/#batch-and-tpot",
            change=(
                _at("max_batch", SV.batch_from_tpot, "batch_tpot_limit"),
                _at("batch", SV.grid_from_tpot, "batch_tpot_limit"),
            )),
    Mistake("tpot-target-ignored", ("Batch sized by memory alone",
                    "Filling the KV budget can make each step slower than the TPOT target; take the smaller of the "
                    "memory and latency limits and say which one binds."),
            "/runbook/14-capacity-planning/#batch-and-tpot",
            change=(
                _at("max_batch", SV.batch_from_memory, "batch_memory_limit"),
                _at("batch", SV.grid_from_memory, "batch_memory_limit"),
            )),
    Mistake("per-replica-for-per-card", ("Replica rate quoted per card",
                    "The curve's y is tok/s per card: a replica of t cards makes batch ÷ step tokens per second, and "
                    "each card earns a t-th of it, so a larger degree must more than double its batch to pay."),
            "/runbook/05-prefill-and-decode/#throughput-interactivity",
            change=(
                _at("tok_s_per_card", SV.per_replica_for_card, "tok_s_per_user", "batch", "gpus"),
            )),
    Mistake("pcie-bidirectional", ("Both directions of PCIe counted",
                    "A PCIe Gen5 x16 link carries 64 GB/s each way; the 128 GB/s on the datasheet adds the two "
                    "directions, and a swap moves its bytes one way at a time."),
            "/errata/#swap-versus-recompute",
            change=(
                _at("swap_ms_per_token", SV.swap_both_ways, "pcie_gb_s", "kv_bytes_per_token", "kv_replication"),
                _at("swap_ms_per_request", SV.swap_request_both_ways, "pcie_gb_s", "kv_bytes_per_token",
                    "kv_replication", "context"),
            )),
    Mistake("transfer-one-link", ("The whole cache sent over one card's link",
                    "Each card of the prefill replica holds its shard of the cache and has its own network "
                    "interface, so t cards send the request's cache over t links at once: bytes ÷ (t × link)."),
            "/errata/#disagg-transfer-per-card",
            change=(
                _at("kv_transfer_ms", SV.transfer_over_one_link, "kv_transfer_bytes", "gpus", "network_gb_s"),
            )),
    Mistake("transfer-bits-for-bytes", ("Transfer sized in bits for bytes",
                    "Link speeds are often quoted in gigabits (a 400 Gb/s NIC is 50 GB/s); a transfer of B bytes over"
                    " G GB/s takes B ÷ G seconds, not 8 × that or ÷ 8."),
            "/errata/#swap-versus-recompute",
            change=(
                _at("swap_ms_per_token", SV.swap_in_bits, "pcie_gb_s", "kv_bytes_per_token", "kv_replication"),
                _at("kv_transfer_ms", SV.transfer_in_bits, "kv_transfer_bytes", "network_gb_s"),
            )),
    Mistake("transfer-replicated", ("Replicated cache sent over the network",
                    "The transfer carries one copy of the prompt's cache; the decode replica copies K/V heads across "
                    "its own cards after it arrives."),
            "/errata/#kv-replication",
            change=(
                _at("kv_transfer_bytes", SV.transfer_replicated, "kv_replication", "kv_bytes_per_token",
                    "prompt_tokens"),
            )),
    Mistake("occupancy-ignored", ("Sized at full occupancy",
                    "Dividing by a replica's whole capacity leaves no headroom: queues and tail latency blow up long "
                    "before every slot is busy, so divide by capacity × the target occupancy."),
            "/runbook/14-capacity-planning/#littles-law",
            change=(
                _at("replicas", SV.replicas_full, "concurrency", "users_per_replica", "occupancy", "spares"),
                _at("gpus", SV.gpus_full, "concurrency", "users_per_replica", "occupancy", "spares",
                    "gpus_per_replica"),
                _at("nodes", SV.nodes_full, "concurrency", "users_per_replica", "occupancy", "spares",
                    "gpus_per_replica", "gpus_per_node"),
            )),
    Mistake("acceptance-as-tokens", ("Acceptance rate multiplied by the draft length",
                    "A draft token only counts if every token before it was accepted, so the expectation is the "
                    "geometric sum 1 + α + … + α^γ, not γ·α or 1 + γ·α."),
            "/runbook/13-speculative-and-constrained/#expected-tokens",
            change=(
                _at("expected_tokens", SV.linear_tokens, "gamma", "alpha"),
                _at("speedup", SV.linear_speedup, "gamma", "alpha", "draft_cost"),
            )),
    Mistake("draft-cost-ignored", ("Draft cost ignored",
                    "Each step also runs the draft γ times; the speed-up is E ÷ (1 + γ·c), not E."),
            "/runbook/13-speculative-and-constrained/#speed-up",
            change=(
                _at("speedup", SV.speedup_without_draft, "expected_tokens"),
            )),
    Mistake("bonus-token-forgotten", ("The target's own token left out",
                    "Every verify pass emits one token of the target's own (a correction or a bonus) besides the "
                    "accepted drafts, so the series runs to α^γ and E is at least 1."),
            "/runbook/13-speculative-and-constrained/#expected-tokens",
            change=(
                _at("expected_tokens", SV.no_bonus, "gamma", "alpha"),
            )),
    Mistake("utilization-ignored", ("Cost quoted at 100 % busy",
                    "The fleet is billed every hour but works only part of it: divide the hour's bill by the tokens "
                    "it really produced, or the cost per token comes out too low by the idle share."),
            "/errata/#checked-cost-per-million",
            change=(
                _at("tokens_per_hour", SV.tokens_busy, "tokens_per_s", "usd_per_gpu_hour"),
                _at("usd_per_million_tokens", SV.cost_busy, "tokens_per_s", "usd_per_hour"),
            )),
    Mistake("per-gpu-not-fleet", ("One GPU's price against the fleet's tokens",
                    "The price is per GPU-hour and the throughput is the whole fleet's: multiply the price by the "
                    "GPUs (or divide the tokens by them) before dividing one by the other."),
            "/errata/#checked-cost-per-million",
            change=(
                _at("usd_per_hour", SV.price_one_gpu, "usd_per_gpu_hour"),
                _at("tokens_per_hour", SV.tokens_per_gpu_rate, "tokens_per_s", "busy_fraction", "gpus",
                    "usd_per_gpu_hour"),
                _at("usd_per_million_tokens", SV.cost_one_gpu, "usd_per_gpu_hour", "tokens_per_hour"),
            )),
    Mistake("hour-second-mix", ("Hours and seconds mixed",
                    "A price per hour divided by tokens per second is off by 3,600: turn the rate into tokens per "
                    "hour first."),
            "/errata/#checked-cost-per-million",
            change=(
                _at("tokens_per_hour", SV.tokens_per_second, "tokens_per_s", "busy_fraction", "usd_per_gpu_hour"),
                _at("usd_per_million_tokens", SV.cost_per_second, "usd_per_hour", "tokens_per_hour"),
            )),
    Mistake("decode-weights-only", ("Decode step from the weights alone",
                    "Every decode step reads each running sequence's KV cache as well as the weights; at long "
                    "contexts or large batches the cache read outweighs them."),
            "/runbook/05-prefill-and-decode/#decode-ceiling",
            change=(
                _at("decode_step_batch_ms", SV.sim_weights_only, "weight_bytes", "bandwidth_gb_s",
                    "bandwidth_efficiency"),
            )),
    Mistake("prefill-ignored", ("Prefill left out of TTFT",
                    "The first token comes out of the step that prefills the whole prompt; TTFT is that step plus any"
                    " wait, never the wait or a decode step alone."),
            "/runbook/15-production/#ttft",
            change=(
                _at("ttft_low_load_ms", SV.sim_prefill_ignored, "weights_read_ms"),
                _at("ttft_p99_ms", SV.sim_p99_without_prefill, "simulated_ttft_p99_ms", "ttft_low_load_ms"),
            )),
    Mistake("mean-for-p99", ("The mean quoted for the p99",
                    "Queueing stretches the tail far more than the middle: near the knee a p99 is several times the "
                    "mean."),
            "/runbook/15-production/#percentiles",
            change=(
                _at("ttft_p99_ms", SV.sim_mean_for_p99, "ttft_mean_ms"),
            )),
    Mistake("littles-law-wrong-latency", ("Little's law on the wrong latency",
                    "Requests in the system = arrival rate × the whole time a request stays (end to end), not its "
                    "TTFT."),
            "/runbook/14-capacity-planning/#littles-law",
            change=(
                _at("requests_in_system", SV.sim_little_on_ttft, "rate_req_s", "ttft_mean_ms"),
            )),
    Mistake("bf16-fp16-swap", ("bf16 and fp16 swapped",
                    "Both are 16 bits, but bf16 spends 8 on the exponent (fp32's range, 7 mantissa bits) and fp16 "
                    "spends 5 (max 65,504, 10 mantissa bits): one's range or precision was given for the other."),
            "/runbook/09-number-formats/#bf16-and-fp16",
            change=(
                _at("exponent_bits", M.swapped("exponent_bits"), "width", "exponent_field"),
                _at("mantissa_bits", M.swapped("mantissa_bits"), "width", "exponent_field"),
                _at("max_normal", M.swapped("max_normal"), "width", "exponent_field"),
                _at("min_normal", M.swapped("min_normal"), "width", "exponent_field"),
                _at("epsilon", M.swapped("epsilon"), "width", "exponent_field"),
            )),
    Mistake("e4m3-ieee-max", ("E4M3 read as an IEEE layout",
                    "OCP E4M3 has no infinities: its top exponent code holds numbers, so the largest is 448, not the "
                    "240 an IEEE-style layout would give."),
            "/runbook/09-number-formats/#fp8",
            change=(
                _at("max_normal", M.e4m3_ieee, "finite_only", "mantissa_bits", "exponent_bits"),
            )),
    Mistake("unit-roundoff-for-epsilon", ("Unit roundoff given for epsilon",
                    "Machine epsilon is the gap between 1 and the next value, 2^−m; half of it (2^−(m+1)) is the "
                    "worst rounding error of round-to-nearest, a different quantity."),
            "/runbook/09-number-formats/#epsilon",
            change=(
                _at("epsilon", M.unit_roundoff, "is_int", "mantissa_bits"),
            )),
    Mistake("epsilon-as-min-normal", ("Epsilon and the smallest normal confused",
                    "Epsilon is relative precision (set by the mantissa); the smallest normal is the bottom of the "
                    "range (set by the exponent). They answer different questions."),
            "/runbook/09-number-formats/#epsilon",
            change=(
                _at("min_normal", M.min_normal_is_epsilon, "is_int", "mantissa_bits"),
                _at("epsilon", M.epsilon_is_min_normal, "is_int", "min_normal"),
            )),
    Mistake("non-buyable-degree", ("Card count that no engine splits over",
                    "Engines shard each layer evenly over a power of two inside a node (1, 2, 4, 8) and over whole "
                    "nodes beyond it; 9 or 10 cards is not a configuration. Round up to the next degree."),
            "/errata/#moe-nine-gpus",
            change=(
                _at("tp_degree", SV.degree_not_buyable, "min_gpus"),
            )),
    Mistake("moe-saves-memory", ("Memory sized from the active parameters",
                    "Any token may be routed to any expert, so every expert stays resident: size memory from the "
                    "total parameters. MoE saves operations, not memory."),
            "/runbook/11-multi-gpu/#mixture-of-experts",
            change=(
                _at("weights_gib", M.weights_from_active, "active_params", "weight_bits"),
            )),
    Mistake("moe-all-experts-per-token", ("Every expert charged to every token",
                    "A token runs only the experts its router picks (plus any shared ones): its operations, and at "
                    "batch 1 its weight reads, come from the active parameters."),
            "/runbook/11-multi-gpu/#mixture-of-experts",
            change=(
                _over(M.total_for_active, "total_params", "active_params", where=("recompute_ms_per_token",)),
                _at("active_params", M.active_is_total, "total_params"),
                _at("active_bytes_per_token", SV.bytes_all_experts, "total_params", "weight_bits"),
                _at("flops_per_token", SV.flops_all_experts, "total_params"),
            )),
    Mistake("hidden-size-for-head-dim", ("Model width used for the head dimension",
                    "RoPE rotates each head's query and key separately: the bands come from head_dim (or MLA's "
                    "qk_rope_head_dim), not hidden_size."),
            "/runbook/08-rope-and-long-context/#frequency-bands",
            change=(
                _at("bands", M.hidden_bands, "hidden_size", "rotary_dim", "rope_theta"),
            )),
    Mistake("pairs-not-dims", ("Dimensions counted as bands",
                    "Each band rotates a pair of values, so d values make d/2 bands."),
            "/runbook/08-rope-and-long-context/#frequency-bands",
            change=(
                _at("bands", M.dims_as_bands, "rotary_dim", "rope_theta"),
            )),
    Mistake("longest-band-as-theta", ("Last band's exponent taken as 1",
                    "Bands run i = 0 … d/2 − 1, so the slowest turns rope_theta^(−(d−2)/d) per token; 2π × rope_theta"
                    " overshoots by rope_theta^(2/d)."),
            "/runbook/08-rope-and-long-context/#frequency-bands",
            change=(
                _at("longest_wavelength_tok", M.longest_as_theta, "rope_theta"),
            )),
    Mistake("wavelength-without-2pi", ("Radians taken for tokens",
                    "θ_i is an angle per token; one full turn is 2π radians, so the wavelength is 2π ÷ θ_i tokens."),
            "/runbook/08-rope-and-long-context/#frequency-bands",
            change=(
                _at("shortest_wavelength_tok", M.shortest_without_2pi, "rope_theta"),
                _at("longest_wavelength_tok", M.longest_without_2pi, "rope_theta", "rotary_dim"),
            )),
    Mistake("rope-single-rotation", ("RoPE taken as one rotation",
                    "RoPE turns its pairs at geometrically spaced rates; only the fastest has a 2π-token wavelength. "
                    "The slowest turns far more slowly than that."),
            "/errata/#rope-single-rotation",
            change=(
                _at("longest_wavelength_tok", M.single_rotation, "rope_theta"),
            )),
    Mistake("extended-context-for-original", ("Bands counted against the extended context",
                    "The bands to interpolate are the ones that never turned once during training: count against the "
                    "original context, not the extended one or the config's extended max_position_embeddings."),
            "/runbook/08-rope-and-long-context/#context-extension",
            change=(
                _at("bands_longer_than_context", M.extended_context, "bands", "context", "scaling_factor",
                    "max_position_embeddings", "rope_theta"),
            )),
    Mistake("scaling-shrinks-wavelength", ("Scaling taken to shorten wavelengths",
                    "Dividing positions by s slows every rotation by s, so wavelengths grow by s; they do not shrink."),
            "/runbook/08-rope-and-long-context/#context-extension",
            change=(
                _at("scaled_longest_wavelength_tok", M.scaled_shorter, "longest_wavelength_tok", "scaling_factor"),
            )),
    Mistake("lora-square-projections", ("k and v taken as square",
                    "Under GQA or MQA the k and v projections output K/V heads × head_dim, narrower than hidden_size:"
                    " read each matrix's shape from the config."),
            "/runbook/12-engines/#lora-adapters",
            change=(
                _at("params_per_layer", M.lora_per_layer_square, "preset", "q_width", "kv_width", "hidden_size"),
                _at("adapter_params", M.lora_params_square, "preset", "q_width", "kv_width", "hidden_size", "layers"),
            )),
    Mistake("lora-full-matrix", ("Adapter sized as the full matrix",
                    "An adapter stores two thin factors, r × (d_in + d_out) values, not the d_in × d_out update they "
                    "multiply out to."),
            "/runbook/12-engines/#lora-adapters",
            change=(
                _at("params_per_layer", M.lora_per_layer_full, "preset", "q_width", "kv_width", "hidden_size"),
                _at("adapter_params", M.lora_params_full, "preset", "q_width", "kv_width", "hidden_size", "layers"),
            )),
    Mistake("lora-one-layer", ("One layer's adapter taken for the whole",
                    "The targets are adapted in every decoder layer: multiply the per-layer count by "
                    "num_hidden_layers."),
            "/runbook/12-engines/#lora-adapters",
            change=(
                _at("adapter_params", M.lora_one_layer, "params_per_layer", "preset"),
            )),
    # --- added with the perturbation engine (DESIGN §11: existing ids first) ---
    Mistake("ms-s-mix", ("Milliseconds and seconds mixed",
                    "A time in ms used as seconds (or the reverse) is off by 1,000: convert before dividing or "
                    "multiplying."),
            "/runbook/14-capacity-planning/#batch-and-tpot",
            change=(
                UnitSlip(("ms", "s"), (1000.0, 0.001)),
                _over(SV.ms_as_s("tpot_target_ms"), "tpot_target_ms"),
                _over(SV.ms_as_s("queue_ms"), "queue_ms"),
            )),
    Mistake("prefill-n-not-2n", ("N FLOPs per token, not 2N",
                    "Each parameter costs a multiply and an add per token: a forward pass is 2 × N FLOPs per token, "
                    "not M."),
            "/runbook/05-prefill-and-decode/#two-shapes",
            change=(
                _over(SV.n_not_2n, "peak_tflops"),
            )),
    Mistake("littles-law-ms-s", ("Little's law with milliseconds as seconds",
                    "Requests in flight = arrival rate × time in system, both in seconds: a latency in ms read as "
                    "seconds multiplies the concurrency by 1,000."),
            "/runbook/14-capacity-planning/#littles-law",
            change=(
                _over(SV.ms_as_s("latency_s"), "latency_s"),
                _over(SV.ms_as_s("e2e_s"), "e2e_s"),
            )),
    Mistake("ceiling-from-flops", ("Decode ceiling taken from the FLOPs",
                    "At small batches decode is memory-bound: the ceiling is bandwidth ÷ bytes per step, not peak "
                    "FLOP/s ÷ 2N, which is several times higher."),
            "/runbook/05-prefill-and-decode/#decode-ceiling",
            change=(
                _at("ceiling_tok_s", SV.ceiling_from_flops, "gpus", "peak_tflops", "active_params"),
                _at("step_ms", SV.step_from_flops, "memory_ms", "compute_ms", "comm_ms"),
                _at("tpot_ms", SV.tpot_from_flops, "tpot_target_ms", "max_batch", "bytes_per_step_gib"),
            )),
    Mistake("spec-no-plus-one", ("The target's pass dropped from the cost",
                    "Each verify step runs the target once as well as the draft γ times: the cost is 1 + γ·c target "
                    "passes, not γ·c."),
            "/runbook/13-speculative-and-constrained/#speed-up",
            change=(
                _at("speedup", SV.speedup_no_plus_one, "expected_tokens", "gamma", "draft_cost"),
            )),
    Mistake("lora-rank-once", ("Rank counted for one factor only",
                    "An adapter stores two factors, A (r × d_in) and B (d_out × r): r × (d_in + d_out) values per "
                    "matrix, not r × d_in."),
            "/runbook/12-engines/#lora-memory",
            change=(
                _at("params_per_layer", M.lora_one_factor, "q_width", "rank", "preset", "hidden_size", "kv_width"),
            )),
    Mistake("moe-ridge-as-dense-active", ("Experts batched like a dense model",
                    "A dense model's decode reaches the ridge at a batch of about ridge ÷ 2 tokens per weight; each "
                    "expert sees only B × k ÷ E of the batch, so the expert matmuls need E ÷ k times the batch."),
            "/runbook/11-multi-gpu/#tokens-per-expert",
            change=(
                _over(SV.moe_dense_active, "bandwidth", "peak_tflops"),
            )),
    Mistake("fp16-subnormal-for-normal", ("Smallest subnormal given for the smallest normal",
                    "Subnormals reach below the smallest normal by the mantissa's 2^−m (fp16: 2^−24 vs 2^−14), at "
                    "reduced precision; the smallest normal is 2^(1 − bias)."),
            "/runbook/09-number-formats/#epsilon",
            change=(
                _at("min_normal", M.subnormal_for_normal, "is_int", "mantissa_bits"),
            )),
    Mistake("int4-unsigned", ("int4 read as unsigned",
                    "Weight int4 is signed two's complement: −8 … 7, not 0 … 15."),
            "/runbook/09-number-formats/#int8-and-int4",
            change=(
                _at("max_normal", M.int_unsigned_max, "is_int", "width"),
                _at("min_normal", M.int_unsigned_min, "is_int"),
            )),
    Mistake("partial-rotary-ignored", ("Partial rotary ignored",
                    "With partial_rotary_factor below 1 only that share of each head is rotated: the bands come from "
                    "the rotated dimensions, not the whole head_dim."),
            "/runbook/08-rope-and-long-context/#frequency-bands",
            change=(
                _over(lambda g: M.changed(g, rotary_dim=g["head_dim"]), "rotary_dim", "head_dim"),
            )),
    Mistake("distinct-prefixes-ignored", ("One prefix counted for all",
                    "Each distinct cached prefix pins its own KV blocks: multiply one prefix's cache by the number of"
                    " distinct prefixes kept."),
            "/runbook/10-paged-memory-and-prefix-caching/#prefix-caching",
            change=(
                _over(lambda g: M.changed(g, distinct_prefixes=1), "distinct_prefixes"),
            )),
    Mistake("tp-not-dividing-heads", ("Degree that does not divide the heads",
                    "Tensor parallelism splits attention by heads: the degree must divide the query heads (and divide"
                    " or be a multiple of the K/V heads), so round up to the next such degree."),
            "/runbook/11-multi-gpu/#tensor-parallel",
            change=(
                _at("tp_degree", SV.degree_heads_ignored, "min_gpus", "gpus_per_node"),
            )),
    Mistake("sparse-indexer-left-out", ("The sparse-attention indexer's key cache left out",
                    "DeepSeek Sparse Attention keeps, beside each layer's MLA latent, one indexer key per token (fp8 "
                    "with an fp32 scale per 128 values) so its indexer can score every cached token: that key is in "
                    "the KV cache too."),
            "/runbook/07-attention-variants/#mla",
            change=(
                _over(M.indexer_left_out, "index_head_dim", "index_topk"),
            )),
    Mistake("binary-prefix-slip", ("Binary prefix slipped (1,024× off)",
                    "A GiB is 1,024 MiB and a KiB is 1,024 B: a MiB number typed where GiB is asked (or a KiB number "
                    "where bytes are) is 1,024 times too large (too small); convert before typing."),
            "/runbook/06-kv-cache/#formula",
            change=(
                UnitSlip(("GiB", "B"), (float(BINARY_STEP), 1 / BINARY_STEP)),
            )),
    Mistake("other-precision-width", ("Bytes per parameter of another precision",
                    "Each precision stores its own width per parameter: fp32 4 bytes, bf16 and fp16 2, fp8 and int8 1, "
                    "a 4-bit format about half a byte with its scales. Take the width of the precision the problem "
                    "names."),
            "/runbook/09-number-formats/#int8-and-int4",
            change=(
                _over(M.other_precision_width, "weight_bits"),
            )),
    Mistake("one-card-memory", ("One card's memory for the replica",
                    "A replica of N cards in tensor parallel holds N × each card's memory: the weights and the cache "
                    "are sharded across all of them, so size the replica on every card, not one."),
            "/runbook/11-multi-gpu/#tensor-parallel",
            change=(
                _at("card_gib", M.card_for_replica, "gpus", "card_mib"),
            )),
    Mistake("tp-degree-for-copies", ("TP degree taken for the copies",
                    "Each K/V head is copied only when the replica has more cards than K/V heads: the copies are "
                    "max(1, cards ÷ K/V heads), not the number of cards (an MLA latent alone is kept on every card)."),
            "/errata/#kv-replication",
            change=(
                _at("kv_replication", M.replication_as_degree, "gpus", "kv_replication"),
            )),
)

def _index(mistakes: tuple[Mistake, ...]) -> dict[str, Mistake]:
    found: dict[str, Mistake] = {}
    for mistake in mistakes:
        if mistake.id in found:
            raise ValueError(f"Mistake '{mistake.id}' is declared twice; declare it once in the registry.")
        found[mistake.id] = mistake
    return found


#: Every mistake by id, in registry (precedence) order.
MISCONCEPTIONS: dict[str, Mistake] = _index(MISTAKES)
_ORDER = {mistake.id: place for place, mistake in enumerate(MISTAKES)}
_AT_STEP: dict[str, list[tuple[Mistake, AtStep]]] = {}
for _mistake in MISTAKES:
    for _change in _mistake.change:
        if isinstance(_change, AtStep):
            _AT_STEP.setdefault(_change.quantity, []).append((_mistake, _change))


#: Where the mistakes added with the perturbation engine start: at equal distance an existing id is named first.
ADDED_FROM = next(place for place, mistake in enumerate(MISTAKES) if mistake.id == "ms-s-mix")


def order_of(mistake_id: str) -> int:
    """A mistake's place in the registry: the lower, the earlier it is named where values coincide."""
    return _ORDER[mistake_id]


def at_step(quantity: str) -> list[tuple[Mistake, AtStep]]:
    """The (mistake, change) pairs declared on ``quantity``'s own formula, in registry order."""
    return _AT_STEP.get(quantity, [])


def declared_on(quantities) -> set[str]:
    """The ids of the mistakes declared on the own formula of any of ``quantities`` (step keys)."""
    return {mistake.id for quantity in quantities for mistake, _ in at_step(quantity)}


def check_unique(mistakes: tuple[Mistake, ...]) -> dict[str, Mistake]:
    """``mistakes`` by id; raises ``ValueError`` when an id is declared twice (the registry is checked so at
    import)."""
    return _index(mistakes)

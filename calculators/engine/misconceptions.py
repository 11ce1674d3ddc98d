"""Named misconceptions: the classic wrong variants of each step, evaluated like the step.

Each :class:`MisconceptionInfo` has an id, a one-line explanation and a link to
the runbook chapter or errata entry that teaches it. :data:`VARIANTS` attaches
wrong-variant functions to step keys, so every family that has a step of that
key (``kv_bytes_per_token`` in ``kv`` and ``ladder``, ``weights_gib`` …) and
every generated problem gets them. A variant takes the problem's ``given``
values and the values of earlier steps (the right ones, or the candidate's own)
and returns the value a candidate holding that misconception would type, or
``None`` when it does not apply to this problem (no windows, not int4, …).

Sources: the errata register of the runbook map (``shared/seeds/000``) — GB/GiB
mixing (52 GB ÷ 1 GiB), utilisation and reserve skipped (60 users), nominal
4-bit widths (6.5 GB vs 7.9 GB for a 13B), ladders stopped at the weights line,
worst case and paged counts quoted for each other — and the cache formula's
factors (K and V, K/V heads not query heads, bytes not bits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

from . import formulas as F

GIB = 2**30
GB = 10**9
GIB_PER_GB = GIB / GB  # 1.073741824


@dataclass(frozen=True)
class MisconceptionInfo:
    """A named classic mistake: id, short title, one-line explanation, link (site path)."""

    id: str
    title: str
    explanation: str
    link: str


MISCONCEPTIONS: dict[str, MisconceptionInfo] = {m.id: m for m in (
    MisconceptionInfo(
        "query-heads-for-kv-heads", "Query heads used for K/V heads",
        "The cache stores one K and one V per K/V head (num_key_value_heads); under GQA or MQA that is "
        "fewer than the query heads.", "/runbook/06-kv-cache/#formula"),
    MisconceptionInfo(
        "missing-kv-factor-2", "K and V counted once",
        "Each layer caches a key and a value vector per K/V head: the formula starts with 2.",
        "/runbook/06-kv-cache/#formula"),
    MisconceptionInfo(
        "bits-for-bytes", "Bits used where bytes belong",
        "bf16 is 16 bits but 2 bytes per value; divide bits by 8 before multiplying into bytes.",
        "/runbook/06-kv-cache/#formula"),
    MisconceptionInfo(
        "gb-gib-mix", "GB and GiB mixed",
        "A decimal GB is 10^9 bytes and a GiB is 2^30; mixing them is a 7 % error. Run the ladder in GiB.",
        "/errata/#gb-gib-mix"),
    MisconceptionInfo(
        "skipped-utilization", "Utilisation fraction skipped",
        "No engine uses the whole card (vLLM defaults to 0.90); skipping it over-promises by about a tenth.",
        "/errata/#two-user-counts"),
    MisconceptionInfo(
        "skipped-activation-reserve", "Activation reserve skipped",
        "Attention workspace, CUDA graphs and the logits buffer need gigabytes before any cache; "
        "without the reserve the server dies on its first busy batch.", "/errata/#two-user-counts"),
    MisconceptionInfo(
        "nominal-4bit", "Nominal 4-bit width",
        "4-bit formats store block scales and keep some tensors wider: size them at the effective width "
        "(about 4.5–4.8 bits), not 4.0.", "/errata/#nominal-4bit"),
    MisconceptionInfo(
        "stopped-at-weights", "Ladder stopped at the weights line",
        "Subtracting the weights from the raw card and stopping skips the utilisation and the reserve; "
        "'fits' is not 'serves'. Finish all eight steps.", "/errata/#stopped-at-weights"),
    MisconceptionInfo(
        "worst-case-vs-paged", "Worst-case and paged counts swapped",
        "Worst case charges every user the full context limit; paged charges the average conversation "
        "in whole blocks. Say which one you quote.", "/runbook/06-kv-cache/#worst-case-and-paged"),
    MisconceptionInfo(
        "forgot-tied-embeddings", "Tied embeddings miscounted",
        "With tie_word_embeddings the output head reuses the embedding matrix (count it once); without it "
        "the head is a second vocab × hidden matrix.", "/runbook/02-forward-pass/#parameter-count"),
    MisconceptionInfo(
        "window-ignored", "Sliding window ignored",
        "A sliding-window layer keeps at most its window of tokens, however long the context.",
        "/runbook/07-attention-variants/#sliding-window"),
    MisconceptionInfo(
        "latent-as-heads", "Latent cache sized as heads",
        "MLA caches one compressed latent (kv_lora_rank) plus a shared rotary key per layer, not K and V "
        "for every head.", "/runbook/07-attention-variants/#mla"),
    # Shared by several families (each declared here once; a family lists the same object).
    MisconceptionInfo(
        "sparse-tflops", "2:4-sparsity TFLOP/s used",
        "Datasheets headline the 2:4 structured-sparsity figure, twice the dense one; dense inference never "
        "reaches it, so it doubles the ridge point, halves every compute time and inflates every batch "
        "derived from it.", "/errata/#sparse-tflops"),
    MisconceptionInfo(
        "roofline-as-expectation", "Roofline quoted as an expectation",
        "Peak bandwidth and peak FLOP/s are bounds: kernels reach about 65–85 % of peak bandwidth in decode "
        "and 35–50 % of peak FLOP/s (MFU) in prefill. Quote the derated range, not the ceiling.",
        "/errata/#roofline-as-expectation"),
    MisconceptionInfo(
        "kv-read-ignored", "KV cache read left out",
        "Each decode step reads every sequence's whole KV cache as well as the weights; at long contexts or "
        "large batches that read rivals or outweighs the weights.",
        "/runbook/05-prefill-and-decode/#decode-ceiling"),
    MisconceptionInfo(
        "rounded-nodes-down", "Rounded down instead of up",
        "Replicas, GPUs and nodes are bought whole: a fraction of a replica serves no one and 9 GPUs is "
        "two nodes of 8, so every count rounds up.", "/errata/#moe-nine-gpus"),
    # Perturbations that reach many families (perturbations.py).
    MisconceptionInfo(
        "ms-s-mix", "Milliseconds and seconds mixed",
        "A time in ms used as seconds (or the reverse) is off by 1,000: convert before dividing or "
        "multiplying.", "/runbook/14-capacity-planning/#batch-and-tpot"),
    MisconceptionInfo(
        "prefill-n-not-2n", "N FLOPs per token, not 2N",
        "Each parameter costs a multiply and an add per token: a forward pass is 2 × N FLOPs per token, "
        "not N.", "/runbook/05-prefill-and-decode/#two-shapes"),
    MisconceptionInfo(
        "littles-law-ms-s", "Little's law with milliseconds as seconds",
        "Requests in flight = arrival rate × time in system, both in seconds: a latency in ms read as seconds "
        "multiplies the concurrency by 1,000.", "/runbook/14-capacity-planning/#littles-law"),
    MisconceptionInfo(
        "ceiling-from-flops", "Decode ceiling taken from the FLOPs",
        "At small batches decode is memory-bound: the ceiling is bandwidth ÷ bytes per step, not peak FLOP/s "
        "÷ 2N, which is several times higher.", "/runbook/05-prefill-and-decode/#decode-ceiling"),
    MisconceptionInfo(
        "spec-no-plus-one", "The target's pass dropped from the cost",
        "Each verify step runs the target once as well as the draft γ times: the cost is 1 + γ·c target "
        "passes, not γ·c.", "/runbook/13-speculative-and-constrained/#speed-up"),
    MisconceptionInfo(
        "lora-rank-once", "Rank counted for one factor only",
        "An adapter stores two factors, A (r × d_in) and B (d_out × r): r × (d_in + d_out) values per "
        "matrix, not r × d_in.", "/runbook/12-engines/#lora-memory"),
    MisconceptionInfo(
        "moe-ridge-as-dense-active", "Experts batched like a dense model",
        "A dense model's decode reaches the ridge at a batch of about ridge ÷ 2 tokens per weight; each "
        "expert sees only B × k ÷ E of the batch, so the expert matmuls need E ÷ k times the batch.",
        "/runbook/11-multi-gpu/#tokens-per-expert"),
    MisconceptionInfo(
        "fp16-subnormal-for-normal", "Smallest subnormal given for the smallest normal",
        "Subnormals reach below the smallest normal by the mantissa's 2^−m (fp16: 2^−24 vs 2^−14), at "
        "reduced precision; the smallest normal is 2^(1 − bias).", "/runbook/09-number-formats/#epsilon"),
    MisconceptionInfo(
        "int4-unsigned", "int4 read as unsigned",
        "Weight int4 is signed two's complement: −8 … 7, not 0 … 15.", "/runbook/09-number-formats/#int8-and-int4"),
    MisconceptionInfo(
        "partial-rotary-ignored", "Partial rotary ignored",
        "With partial_rotary_factor below 1 only that share of each head is rotated: the bands come from the "
        "rotated dimensions, not the whole head_dim.", "/runbook/08-rope-and-long-context/#frequency-bands"),
    MisconceptionInfo(
        "distinct-prefixes-ignored", "One prefix counted for all",
        "Each distinct cached prefix pins its own KV blocks: multiply one prefix's cache by the number of "
        "distinct prefixes kept.", "/runbook/10-paged-memory-and-prefix-caching/#prefix-caching"),
    MisconceptionInfo(
        "tp-not-dividing-heads", "Degree that does not divide the heads",
        "Tensor parallelism splits attention by heads: the degree must divide the query heads (and divide or "
        "be a multiple of the K/V heads), so round up to the next such degree.",
        "/runbook/11-multi-gpu/#tensor-parallel"),
)}


#: Ids added with the perturbation engine (docs/architecture.md §11): where a typed value matches one of these and an
#: older id, the older id wins.
ADDED_IN_V2 = frozenset({
    "ms-s-mix", "prefill-n-not-2n", "littles-law-ms-s", "ceiling-from-flops", "spec-no-plus-one", "lora-rank-once",
    "moe-ridge-as-dense-active", "fp16-subnormal-for-normal", "int4-unsigned", "partial-rotary-ignored",
    "distinct-prefixes-ignored", "tp-not-dividing-heads"})


def register(info: MisconceptionInfo) -> None:
    """Add a family's misconception to the one registry. Raises ``ValueError`` when the id is already
    declared by another record (each id is declared once; a family reuses a shared one by listing it)."""
    existing = MISCONCEPTIONS.get(info.id)
    if existing is not None and existing is not info:
        raise ValueError(f"Misconception '{info.id}' is declared twice; declare it once and reuse it.")
    MISCONCEPTIONS[info.id] = info

Variant = Callable[[Mapping[str, float], Mapping[str, float]], "float | list[float] | None"]


def _kv_query_heads(g, s):
    if g["kv_lora_rank"] or g["kv_heads"] == g["heads"]:
        return None
    return F.KV_BYTES_PER_TOKEN({**g, "kv_heads": g["heads"]})


def _kv_missing_2(g, s):
    if g["kv_lora_rank"]:
        return None
    return F.KV_BYTES_PER_TOKEN(g) / 2


def _kv_bits(g, s):
    return _kv_per_token(g) * 8


def _kv_per_token(g):
    return F.KV_BYTES_PER_TOKEN_MLA(g) if g["kv_lora_rank"] else F.KV_BYTES_PER_TOKEN(g)


def _kv_nominal_4bit(g, s):
    """An FP4 cache (nvfp4 0.5625, mxfp4 0.53125 bytes per value) sized at a bare half byte."""
    if not 0.5 < g["kv_bytes"] < 0.6:
        return None
    return _kv_per_token({**g, "kv_bytes": 0.5})


def _kv_latent_as_heads(g, s):
    if not g["kv_lora_rank"]:
        return None
    per_head_k_and_v = g["qk_nope_head_dim"] + g["qk_rope_head_dim"] + g["v_head_dim"]
    return [g["layers"] * g["heads"] * per_head_k_and_v * g["kv_bytes"],
            F.KV_BYTES_PER_TOKEN({**g, "kv_heads": g["heads"], "head_dim": g["hidden_size"] / g["heads"]})]


def _per_token(g, s) -> float:
    """KV bytes per token: an earlier step where the family has one (ladder, kv, tp), else its given (slo)."""
    return s["kv_bytes_per_token"] if "kv_bytes_per_token" in s else g["kv_bytes_per_token"]


def _per_user_window_ignored(g, s):
    if not g["window_layers"] or g["context"] <= g["window"]:
        return None
    return F.PER_USER_GIB({"kv_bytes_per_token": _per_token(g, s), "context": g["context"],
                           "kv_replication": g.get("kv_replication", 1)})


def _per_user_gb(g, s):
    return s["per_user_gib"] * GIB_PER_GB if "per_user_gib" in s else None


def _card_gb(g, s):
    """The card in decimal GB (85.52 for the H100), or its marketed GB figure taken as GiB (80)."""
    return [g["gpus"] * g["card_mib"] * 2**20 / GB, g["gpus"] * g["card_marketed_gb"]]


def _usable_skipped(g, s):
    return s["card_gib"]


def _weights_values(g, s) -> dict:
    """The parameters and bits the weights are sized from: the ladder has the parameters among its inputs,
    the weights family as an earlier step."""
    return {"total_params": s["total_params"] if "total_params" in s else g["total_params"],
            "weight_bits": g["weight_bits"]}


def _weights_gib(g, s) -> float:
    return F.WEIGHTS_GIB(_weights_values(g, s))


def _weights_gb(g, s):
    """Weights in decimal GB typed as GiB, or the GiB figure read as GB and converted."""
    return [_weights_gib(g, s) * GIB_PER_GB, _weights_gib(g, s) / GIB_PER_GB]


def _weights_nominal_4bit(g, s):
    if g.get("weights_dtype_bits_nominal") != 4 or g["weight_bits"] == 4:
        return None
    return F.WEIGHTS_GIB({**_weights_values(g, s), "weight_bits": 4})


def _weights_bits_for_bytes(g, s):
    return _weights_gib(g, s) * 8


def _tied_delta(g) -> float:
    """Parameters a candidate adds (tied model) or drops (untied) by miscounting the output head.
    Raises ``KeyError`` in a family that does not resolve the vocabulary (the variant does not apply)."""
    embedding = g["vocab_size"] * g["hidden_size"]
    return embedding if g["embedding_copies"] == 1 else -embedding


def _weights_tied(g, s):
    if "vocab_size" not in g:
        return None  # a family that does not resolve the vocabulary (its output head) cannot hold this slip
    values = _weights_values(g, s)
    return F.WEIGHTS_GIB({**values, "total_params": values["total_params"] + _tied_delta(g)})


def _budget(g, s, *, utilization=True, reserve=True):
    usable = s["card_gib"] * (g["utilization"] if utilization else 1)
    return usable - s["weights_gib"] - (g["gpus"] * g["reserve_gib"] if reserve else 0)


def _users(budget_gib: float, per_user_gib: float) -> float | None:
    if per_user_gib <= 0:
        return None
    return max(0, math.floor(budget_gib / per_user_gib))


def _paged_gib(g, s):
    tokens = math.ceil(g["avg_tokens"] / g["block_size"]) * g["block_size"]
    if g["window_layers"]:
        tokens = (g["full_layers"] * tokens + g["window_layers"] * min(tokens, g["window"])) / g["layers"]
    return _per_token(g, s) * tokens * g.get("kv_replication", 1) / GIB


def _short_ladder(which: str, *, utilization: bool, reserve: bool) -> Variant:
    """A ladder that skipped the utilisation and/or the reserve, read at ``which`` step:
    ``budget`` (the KV budget), ``worst`` or ``paged`` (the user counts that follow)."""
    def variant(g, s):
        budget = _budget(g, s, utilization=utilization, reserve=reserve)
        if which == "budget":
            return budget
        return _users(budget, s["per_user_gib"] if which == "worst" else _paged_gib(g, s))
    return variant


def _skipped_reserve(which):
    return _short_ladder(which, utilization=True, reserve=False)


def _skipped_utilization(which):
    return _short_ladder(which, utilization=False, reserve=True)


def _stopped_at_weights(which):
    return _short_ladder(which, utilization=False, reserve=False)


def _users_gb_mix(g, s):
    budget, per_user = s["kv_budget_gib"], s["per_user_gib"]
    return [_users(budget * GIB_PER_GB, per_user), _users(budget, per_user * GIB_PER_GB)]


def _worst_as_paged(g, s):
    return _users(s["kv_budget_gib"], _paged_gib(g, s))


def _paged_as_worst(g, s):
    return _users(s["kv_budget_gib"], s["per_user_gib"])


def _users_window_ignored(which):
    def variant(g, s):
        if not g["window_layers"]:
            return None
        tokens = g["context"] if which == "worst" else math.ceil(g["avg_tokens"] / g["block_size"]) * g["block_size"]
        if tokens <= g["window"]:
            return None
        return _users(s["kv_budget_gib"], _per_token(g, s) * tokens * g.get("kv_replication", 1) / GIB)
    return variant


def _total_params_tied(g, s):
    if "vocab_size" not in g:
        return None
    return F.TOTAL_PARAMS(g) + _tied_delta(g)


def _weight_bytes_nominal(g, s):
    if g.get("weights_dtype_bits_nominal") != 4 or g["weight_bits"] == 4:
        return None
    return F.WEIGHT_BYTES({"total_params": s["total_params"], "weight_bits": 4})


def _weight_bytes_bits(g, s):
    return s["total_params"] * g["weight_bits"]


def _weight_bytes_tied(g, s):
    if "vocab_size" not in g:
        return None
    return F.WEIGHT_BYTES({"total_params": s["total_params"] + _tied_delta(g),
                           "weight_bits": g["weight_bits"]})




VARIANTS: dict[str, tuple[tuple[str, Variant], ...]] = {
    "kv_bytes_per_token": (
        ("query-heads-for-kv-heads", _kv_query_heads),
        ("missing-kv-factor-2", _kv_missing_2),
        ("bits-for-bytes", _kv_bits),
        ("latent-as-heads", _kv_latent_as_heads),
        ("nominal-4bit", _kv_nominal_4bit),
    ),
    "per_user_gib": (
        ("window-ignored", _per_user_window_ignored),
        ("gb-gib-mix", lambda g, s: F.PER_USER_GIB(
            {"kv_bytes_per_token": _per_token(g, s), "context": g["context"],
             "kv_replication": g.get("kv_replication", 1)}) * GIB_PER_GB
            if not g["window_layers"] else None),
    ),
    "card_gib": (("gb-gib-mix", _card_gb),),
    "usable_gib": (("skipped-utilization", _usable_skipped),),
    "weights_gib": (
        ("gb-gib-mix", _weights_gb),
        ("nominal-4bit", _weights_nominal_4bit),
        ("bits-for-bytes", _weights_bits_for_bytes),
        ("forgot-tied-embeddings", _weights_tied),
    ),
    "kv_budget_gib": (
        ("stopped-at-weights", _stopped_at_weights("budget")),
        ("skipped-activation-reserve", _skipped_reserve("budget")),
        ("skipped-utilization", _skipped_utilization("budget")),
    ),
    "users_worst_case": (
        ("worst-case-vs-paged", _worst_as_paged),
        ("stopped-at-weights", _stopped_at_weights("worst")),
        ("skipped-activation-reserve", _skipped_reserve("worst")),
        ("skipped-utilization", _skipped_utilization("worst")),
        ("window-ignored", _users_window_ignored("worst")),
        ("gb-gib-mix", _users_gb_mix),
    ),
    "users_paged": (
        ("worst-case-vs-paged", _paged_as_worst),
        ("stopped-at-weights", _stopped_at_weights("paged")),
        ("skipped-activation-reserve", _skipped_reserve("paged")),
        ("skipped-utilization", _skipped_utilization("paged")),
        ("window-ignored", _users_window_ignored("paged")),
    ),
    "total_params": (("forgot-tied-embeddings", _total_params_tied),),
    "weight_bytes": (
        ("nominal-4bit", _weight_bytes_nominal),
        ("bits-for-bytes", _weight_bytes_bits),
        ("forgot-tied-embeddings", _weight_bytes_tied),
    ),
}


def variants_for(step_key: str) -> tuple[tuple[str, Variant], ...]:
    """The (misconception id, variant) pairs that apply to a step key."""
    return VARIANTS.get(step_key, ())

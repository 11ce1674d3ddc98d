"""Named misconceptions: the one registry of classic mistakes (id, title, explanation, link).

Each :class:`MisconceptionInfo` has an id, a one-line explanation and a link to
the runbook chapter or errata entry that teaches it; :func:`register` adds a
family's own, and an id declared twice fails at import. What each mistake
changes is elsewhere: input changes and unit slips in
:mod:`.perturbation_registry`, the ladder's shared per-step variants in
:mod:`.step_variants`, a family's own in its module.

Sources: the errata register of the runbook map (``shared/seeds/000``) — GB/GiB
mixing (52 GB ÷ 1 GiB), utilisation and reserve skipped (60 users), nominal
4-bit widths (6.5 GB vs 7.9 GB for a 13B), ladders stopped at the weights line,
worst case and paged counts quoted for each other — and the cache formula's
factors (K and V, K/V heads not query heads, bytes not bits).
"""

from __future__ import annotations

from dataclasses import dataclass

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

"""The serving model's formulas (docs/architecture.md §12), each written once as a sympy relation with units.

One step of one replica: ``t`` cards in tensor parallel decode a batch of
``B`` sequences holding ``c`` tokens each on average. These formulas are what
the families (``decode``, ``roofline``, ``slo``, ``tp`` …) show and grade;
:mod:`.step_model` composes and lambdifies the same relations once for the
simulator's hot path, and ``tests/engine/test_step_model.py`` proves the two
agree.

Conventions (docs/architecture.md §12): K/V heads are never split across cards, so a
degree above the K/V head count replicates them (``r = max(1, t ÷ kv_heads)``;
an MLA latent is replicated on every card, ``r = t``); a mixture of experts
reads the experts its batch touches, ``E × (1 − (1 − k/E)^T)`` per MoE layer
for ``T`` tokens routed uniformly to top-``k`` of ``E``; attention costs
``4 × layers × q_heads × head_dim`` FLOPs per cached token per sequence; two
ring all-reduces of the activations per layer under tensor parallelism.
"""

from __future__ import annotations

from sympy import Max, Min, floor

from ..formula import Formula, Var
from . import WINDOW_VARS, product, ratio, total

_T = Var("gpus", "GPUs", "cards in the replica (tensor-parallel degree)")
_BATCH = Var("batch", "1", "sequences decoding in the step")
_CONTEXT = Var("context", "tok", "tokens in each sequence's cache (average)")
_R = Var("kv_replication", "1", "copies of each K/V head across the replica")
_KVPT = Var("kv_bytes_per_token", "B", "KV cache per token, every layer full")

# --- replication -------------------------------------------------------------------------------

KV_REPLICATION = Formula(
    "kv_replication",
    (_T, Var("kv_heads", "1", "K/V heads per layer (num_key_value_heads)")),
    lambda s: Max(1, ratio(s["gpus"], s["kv_heads"])),
    label="K/V head copies across the replica",
)

# An MLA latent is one vector per token shared by every head: each card of a
# tensor-parallel attention keeps the whole latent.
KV_REPLICATION_MLA = Formula(
    "kv_replication",
    (_T,),
    lambda s: s["gpus"],
    label="Latent cache copies across the replica (MLA)",
)

# --- bytes read per step -------------------------------------------------------------------------

EXPERTS_TOUCHED = Formula(
    "experts_touched",
    (Var("experts", "1", "routed experts per MoE layer (E)"),
     Var("experts_per_token", "1", "routed experts per token (top-k)"),
     Var("step_tokens", "tok", "tokens in the step")),
    lambda s: product(s["experts"], 1 - (1 - ratio(s["experts_per_token"], s["experts"])) ** s["step_tokens"]),
    label="Experts a step reads per MoE layer", unit="1",
)

STEP_WEIGHT_BYTES = Formula(
    "weight_bytes_per_step",
    (Var("params_read", "1", "parameters the step uses"), Var("weight_bits", "bit", "bits per weight")),
    lambda s: product(s["params_read"], s["weight_bits"]),
)

STEP_WEIGHT_BYTES_MOE = Formula(
    "weight_bytes_per_step",
    (Var("always_read_params", "1", "parameters every token uses (all but the routed experts)"),
     Var("moe_layers", "1", "mixture-of-experts layers"),
     Var("experts_touched", "1", "experts a step reads per MoE layer"),
     Var("expert_params", "1", "parameters of one routed expert"),
     Var("weight_bits", "bit", "bits per weight outside the routed experts"),
     Var("expert_weight_bits", "bit", "bits per routed-expert parameter")),
    lambda s: total(product(s["always_read_params"], s["weight_bits"]),
                    product(s["moe_layers"], s["experts_touched"], s["expert_params"], s["expert_weight_bits"])),
    label="Weights read per step (the experts the batch touches)",
)

STEP_KV_BYTES = Formula(
    "kv_bytes_per_step",
    (_BATCH, _CONTEXT, _KVPT, _R),
    lambda s: product(s["batch"], s["context"], s["kv_bytes_per_token"], s["kv_replication"]),
)

STEP_KV_BYTES_WINDOWED = Formula(
    "kv_bytes_per_step",
    (_BATCH, _CONTEXT, _KVPT, _R, *WINDOW_VARS),
    lambda s: product(s["batch"], ratio(product(s["kv_bytes_per_token"],
                                                total(product(s["full_layers"], s["context"]),
                                                      product(s["window_layers"], Min(s["context"], s["window"])))),
                                        s["layers"]), s["kv_replication"]),
    label="KV cache read per step (sliding windows applied)",
)

# DeepSeek Sparse Attention (DeepSeek-V3.2): attention reads the latent of at most index_topk cached tokens per
# sequence, chosen by an indexer that reads every cached token's indexer key (docs/architecture.md §12).
_SPARSE_VARS = (Var("index_topk", "tok", "tokens sparse attention attends to (index_topk)"),
                Var("layers", "1", "layers (num_hidden_layers)"))
STEP_KV_BYTES_SPARSE = Formula(
    "kv_bytes_per_step",
    (_BATCH, _CONTEXT, _R, Var("latent_bytes_per_token", "B", "MLA latent cached per token, every layer"),
     Var("indexer_bytes_per_token", "B", "indexer keys cached per token, every layer"), *_SPARSE_VARS),
    lambda s: product(s["batch"], total(product(s["latent_bytes_per_token"], Min(s["context"], s["index_topk"])),
                                        product(s["indexer_bytes_per_token"], s["context"])), s["kv_replication"]),
    label="KV cache read per step (sparse attention: top-k latents, every indexer key)",
)

STEP_BYTES = Formula(
    "bytes_per_step",
    (Var("weight_bytes_per_step", "B", "weights read"), Var("kv_bytes_per_step", "B", "KV cache read")),
    lambda s: total(s["weight_bytes_per_step"], s["kv_bytes_per_step"]),
)

MEMORY_MS = Formula(
    "memory_ms",
    (Var("bytes_per_step", "B", "bytes read per step"), _T,
     Var("card_bandwidth", "GB/s", "bandwidth per card"),
     Var("bandwidth_efficiency", "1", "fraction of peak bandwidth reached")),
    lambda s: ratio(s["bytes_per_step"], product(s["gpus"], s["card_bandwidth"], s["bandwidth_efficiency"])),
    label="Memory time per step",
)

# --- FLOPs per step ---------------------------------------------------------------------------------

_HEAD = Var("attention_head_dim", "1", "values per query head in the attention product (MLA: absorbed)")
_Q = Var("heads", "1", "query heads per layer (num_attention_heads)")
_N = Var("active_params", "1", "parameters one token uses")

STEP_FLOPS = Formula(
    "flops_per_step",
    (_N, _BATCH, Var("layers", "1", "layers (num_hidden_layers)"), _Q, _HEAD, _CONTEXT),
    lambda s: total(product(2, s["active_params"], s["batch"]),
                    product(4, s["layers"], s["heads"], s["attention_head_dim"], s["context"], s["batch"])),
    label="FLOPs per decode step",
)

STEP_FLOPS_WINDOWED = Formula(
    "flops_per_step",
    (_N, _BATCH, _Q, _HEAD, _CONTEXT, *WINDOW_VARS),
    lambda s: total(product(2, s["active_params"], s["batch"]),
                    product(4, s["heads"], s["attention_head_dim"],
                            total(product(s["full_layers"], s["context"]),
                                  product(s["window_layers"], Min(s["context"], s["window"]))), s["batch"])),
    label="FLOPs per decode step (sliding windows applied)",
)

# The indexer scores each cached token with one dot product per index head: 2 × index_n_heads × index_head_dim FLOPs
# per cached token per layer (16,384 on DeepSeek-V3.2; the head-weighted sum of the scores, 2 × index_n_heads more,
# is left out as softmax is in attention's 4 × heads × head_dim). Attention itself covers min(context, index_topk).
STEP_FLOPS_SPARSE = Formula(
    "flops_per_step",
    (_N, _BATCH, _Q, _HEAD, _CONTEXT, Var("index_n_heads", "1", "indexer heads (index_n_heads)"),
     Var("index_head_dim", "1", "width of an indexer head (index_head_dim)"), *_SPARSE_VARS),
    lambda s: total(product(2, s["active_params"], s["batch"]),
                    product(s["layers"], total(product(4, s["heads"], s["attention_head_dim"],
                                                       Min(s["context"], s["index_topk"])),
                                               product(2, s["index_n_heads"], s["index_head_dim"], s["context"])),
                            s["batch"])),
    label="FLOPs per decode step (sparse attention: top-k attention, every token indexed)",
)


def step_forms(window_layers: float, index_topk: float = 0) -> tuple[Formula, Formula]:
    """The forms of ``kv_bytes_per_step`` and ``flops_per_step`` for a model: sparse attention's (``index_topk``
    > 0), sliding windows' (``window_layers`` > 0), or every layer full."""
    if index_topk:
        return STEP_KV_BYTES_SPARSE, STEP_FLOPS_SPARSE
    if window_layers:
        return STEP_KV_BYTES_WINDOWED, STEP_FLOPS_WINDOWED
    return STEP_KV_BYTES, STEP_FLOPS


def flops_per_sequence(s):
    """FLOPs one sequence adds to a decode step, as an expression over ``s`` (another formula's symbols by
    variable name): :data:`STEP_FLOPS_WINDOWED` at a batch of one, 2 × active parameters + the attention
    over its cached tokens (sliding-window layers attend to at most ``window``). Derived, never retyped."""
    expr = STEP_FLOPS_WINDOWED.expr
    return expr.xreplace({symbol: 1 if symbol.name == "batch" else s[symbol.name] for symbol in expr.free_symbols})


# A prompt chunk of p new tokens after c0 cached ones: every new token attends
# over all c0 + p (no causal halving, the prefill family's convention).
PREFILL_CHUNK_FLOPS = Formula(
    "prefill_flops",
    (_N, Var("chunk_tokens", "tok", "new tokens in the chunk (p)"),
     Var("cached_tokens", "tok", "tokens already cached before the chunk (c0)"), _Q, _HEAD, *WINDOW_VARS),
    lambda s: total(product(2, s["active_params"], s["chunk_tokens"]),
                    product(4, s["heads"], s["attention_head_dim"], s["chunk_tokens"],
                            total(product(s["full_layers"], s["cached_tokens"] + s["chunk_tokens"]),
                                  product(s["window_layers"],
                                          Min(s["cached_tokens"] + s["chunk_tokens"], s["window"]))))),
    label="FLOPs of a prefill chunk",
)

# The same chunk under sparse attention: each new token is indexed against all c0 + p tokens and attends to at most
# index_topk of them.
PREFILL_CHUNK_FLOPS_SPARSE = Formula(
    "prefill_flops",
    (_N, Var("chunk_tokens", "tok", "new tokens in the chunk (p)"),
     Var("cached_tokens", "tok", "tokens already cached before the chunk (c0)"), _Q, _HEAD,
     Var("index_n_heads", "1", "indexer heads (index_n_heads)"),
     Var("index_head_dim", "1", "width of an indexer head (index_head_dim)"), *_SPARSE_VARS),
    lambda s: total(product(2, s["active_params"], s["chunk_tokens"]),
                    product(s["layers"], s["chunk_tokens"],
                            total(product(4, s["heads"], s["attention_head_dim"],
                                          Min(s["cached_tokens"] + s["chunk_tokens"], s["index_topk"])),
                                  product(2, s["index_n_heads"], s["index_head_dim"],
                                          s["cached_tokens"] + s["chunk_tokens"])))),
    label="FLOPs of a prefill chunk (sparse attention)",
)

_PEAK = Var("peak_tflops", "TFLOP/s", "dense peak per card at the compute precision")

COMPUTE_MS = Formula(
    "compute_ms",
    (Var("flops_per_step", "FLOP", "FLOPs per step"), _T, _PEAK, Var("mfu", "1", "model FLOPs utilisation")),
    lambda s: ratio(s["flops_per_step"], product(s["gpus"], s["peak_tflops"], s["mfu"])),
    label="Compute time per step",
)

COMPUTE_MS_WITH_PREFILL = Formula(
    "compute_ms",
    (Var("prefill_flops", "FLOP", "FLOPs of the step's prefill chunks"),
     Var("flops_per_step", "FLOP", "FLOPs of the step's decoders"), _T, _PEAK,
     Var("prefill_mfu", "1", "model FLOPs utilisation of prefill"),
     Var("mfu", "1", "model FLOPs utilisation of decode")),
    lambda s: total(ratio(s["prefill_flops"], product(s["gpus"], s["peak_tflops"], s["prefill_mfu"])),
                    ratio(s["flops_per_step"], product(s["gpus"], s["peak_tflops"], s["mfu"]))),
    label="Compute time of a step with prefill",
)

# --- communication and the step -----------------------------------------------------------------

COMM_MS = Formula(
    "comm_ms",
    (Var("allreduces", "1", "all-reduces per step (2 per layer when split over cards, else 0)"), _T,
     Var("step_tokens", "tok", "tokens in the step"),
     Var("hidden_size", "1", "model width (hidden_size)"),
     Var("activation_bytes", "B", "bytes per activation value (bf16: 2)"),
     Var("link_gb_s", "GB/s", "slowest link of the ring, per card per direction"),
     Var("allreduce_latency_us", "us", "fixed cost of one collective")),
    lambda s: product(s["allreduces"], total(
        ratio(product(2, s["gpus"] - 1, s["step_tokens"], s["hidden_size"], s["activation_bytes"]),
              product(s["gpus"], s["link_gb_s"])),
        s["allreduce_latency_us"])),
    label="Tensor-parallel all-reduce time per step",
)

STEP_MS = Formula(
    "step_ms",
    (Var("memory_ms", "ms", "memory time"), Var("compute_ms", "ms", "compute time"),
     Var("comm_ms", "ms", "communication time")),
    lambda s: total(Max(s["memory_ms"], s["compute_ms"]), s["comm_ms"]),
)

TOK_S_PER_USER = Formula(
    "tok_s_per_user",
    (Var("step_ms", "ms", "step time"),),
    lambda s: ratio(1, s["step_ms"]),
    label="Tokens per second per user",
)

TOK_S_PER_REPLICA = Formula(
    "tok_s_per_replica",
    (_BATCH, Var("step_ms", "ms", "step time")),
    lambda s: ratio(s["batch"], s["step_ms"]),
)

CEILING_TOK_S = Formula(
    "ceiling_tok_s",
    (_BATCH, Var("bandwidth_gb_s", "GB/s", "memory bandwidth of the replica"),
     Var("bytes_per_step", "B", "bytes read per step")),
    lambda s: ratio(product(s["batch"], s["bandwidth_gb_s"]), s["bytes_per_step"]),
    label="Decode ceiling (peak bandwidth, no compute, no communication)",
)

SERVING_FORMULAS = (
    KV_REPLICATION, KV_REPLICATION_MLA, EXPERTS_TOUCHED, STEP_WEIGHT_BYTES, STEP_WEIGHT_BYTES_MOE, STEP_KV_BYTES,
    STEP_KV_BYTES_WINDOWED, STEP_KV_BYTES_SPARSE, STEP_BYTES, MEMORY_MS, STEP_FLOPS, STEP_FLOPS_WINDOWED,
    STEP_FLOPS_SPARSE, PREFILL_CHUNK_FLOPS, PREFILL_CHUNK_FLOPS_SPARSE,
    COMPUTE_MS, COMPUTE_MS_WITH_PREFILL, COMM_MS, STEP_MS, TOK_S_PER_USER, TOK_S_PER_REPLICA, CEILING_TOK_S,
)


# The ridge point of a card: the arithmetic intensity (FLOP per byte) where its dense peak and its memory
# bandwidth take equal time (roofline and moe both step through it).
RIDGE = Formula(
    "ridge_flop_per_byte",
    (Var("peak_tflops", "TFLOP/s", "dense peak throughput at the compute precision"),
     Var("bandwidth", "GB/s", "memory bandwidth")),
    lambda s: ratio(s["peak_tflops"], s["bandwidth"]),
)


# --- the simulated drills' steps (calculators/sim/drills.py) ---------------------------------------------
# The step-model steps they start from, then the values read from a stored sweep of the simulator.

_BW = (Var("bandwidth_gb_s", "GB/s", "card bandwidth"), Var("bandwidth_efficiency", "1", "share of it a step gets"))
DECODE_STEP_BATCH = Formula(
    "decode_step_batch_ms",
    (Var("weight_bytes", "B", "weights"), Var("batch", "1", "sequences decoding"),
     Var("mean_context", "tok", "tokens a decoding sequence holds"),
     Var("kv_bytes_per_token", "B", "KV cache per token"), *_BW),
    lambda s: ratio(total(s["weight_bytes"], product(s["batch"], s["mean_context"], s["kv_bytes_per_token"])),
                    product(s["bandwidth_gb_s"], s["bandwidth_efficiency"])),
)
TTFT_LOW_LOAD = Formula(
    "ttft_low_load_ms",
    (Var("prefill_compute_ms", "ms", "the prompt's prefill FLOPs ÷ (peak × prefill MFU)"),
     Var("weights_read_ms", "ms", "the weights' read")),
    lambda s: Max(s["prefill_compute_ms"], s["weights_read_ms"]),
)
REQUESTS_IN_SYSTEM = Formula(
    "requests_in_system",
    (Var("rate_req_s", "req/s", "arrival rate"), Var("e2e_s", "s", "mean end-to-end latency")),
    lambda s: product(s["rate_req_s"], s["e2e_s"]),
    label="Requests in the system (Little's law)",
)
# The knee drill's knee: where goodput ÷ rate crosses the share the knee keeps, linear between the highest swept
# rate keeping it and the next swept rate (calculators/sim/results.py, knee_bracket).
KNEE = Formula("knee_req_s",
               (Var("kept_rate_req_s", "req/s", "the highest swept rate whose goodput ÷ rate keeps the share"),
                Var("kept_share", "1", "goodput ÷ rate there"),
                Var("knee_share", "1", "the share of its rate a knee's goodput keeps"),
                Var("lost_share", "1", "goodput ÷ rate at the next swept rate"),
                Var("lost_rate_req_s", "req/s", "the next swept rate")),
               lambda s: total(s["kept_rate_req_s"],
                               product(ratio(total(s["kept_share"], -s["knee_share"]),
                                             total(s["kept_share"], -s["lost_share"])),
                                       total(s["lost_rate_req_s"], -s["kept_rate_req_s"]))))
TTFT_P99 = Formula("ttft_p99_ms", (Var("simulated_ttft_p99_ms", "ms", "simulated p99 TTFT"),),
                   lambda s: s["simulated_ttft_p99_ms"])
CROSSING = Formula("tpot_crossing_batch",
                   (Var("simulated_crossing_batch", "requests", "running sequences where mean TPOT = target"),),
                   lambda s: s["simulated_crossing_batch"])
# The ladder's KV budget in whole blocks: ⌊budget ÷ (KV per token × block)⌋ × block.
KV_TOKENS = Formula("kv_cache_tokens",
                    (Var("kv_budget_gib", "GiB", "KV cache budget"),
                     Var("kv_bytes_per_token", "B", "KV cache per token"), Var("block_tokens", "tok", "block size")),
                    lambda s: product(floor(ratio(s["kv_budget_gib"],
                                                  product(s["kv_bytes_per_token"], s["block_tokens"]))),
                                      s["block_tokens"]))
FULL_CACHE = Formula("full_cache_requests",
                     (Var("kv_cache_tokens", "tok", "tokens the cache holds"),
                      Var("request_tokens", "tok", "prompt + output"), Var("one_request", "requests", "one request")),
                     lambda s: product(floor(ratio(s["kv_cache_tokens"], s["request_tokens"])), s["one_request"]))
PREEMPT_RATE = Formula("preemption_rate_req_s",
                       (Var("simulated_preemption_req_s", "req/s", "lowest swept rate with a preemption"),),
                       lambda s: s["simulated_preemption_req_s"])
SIM_DRILL_FORMULAS = (DECODE_STEP_BATCH, TTFT_LOW_LOAD, REQUESTS_IN_SYSTEM, KNEE, TTFT_P99, CROSSING, KV_TOKENS,
                      FULL_CACHE, PREEMPT_RATE)

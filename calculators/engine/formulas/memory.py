"""Memory: the KV cache, parameters, weights and the capacity ladder's formulas, each written once.

The six formulas of docs/architecture.md §9 in the form the capacity ladder and the
``params``, ``weights`` and ``kv`` families use them. Each is a
:class:`~..formula.Formula`: a physical relation whose variables carry units, so
its conversions (÷ 8 bits per byte, ÷ 2^30 bytes per GiB) are derived rather
than typed. Sources of the relations: the KV cache holds one key and one value
vector per K/V head per layer per token (formula 1); weight bytes are
parameters × bits ÷ 8 (formula 2); the ladder's user count is formula 3.
"""

from __future__ import annotations

import sympy
from sympy import Max, ceiling, floor

from ..catalog import weight_widths
from ..formula import Formula, Var
from ..hf_config import ModelConfig, mlp_params, param_breakdown
from . import WINDOW_VARS, product, ratio, total, windowed_cache

# --- KV cache (formula 1) -------------------------------------------------

KV_BYTES_PER_TOKEN = Formula(
    "kv_bytes_per_token",
    (Var("layers", "1", "layers (num_hidden_layers)"),
     Var("kv_heads", "1", "K/V heads per layer (num_key_value_heads)"),
     Var("head_dim", "1", "values per head (head_dim)"),
     Var("kv_bytes", "B", "bytes per cached value")),
    lambda s: product(2, s["layers"], s["kv_heads"], s["head_dim"], s["kv_bytes"]),
)

KV_BYTES_PER_TOKEN_MLA = Formula(
    "kv_bytes_per_token",
    (Var("layers", "1", "layers (num_hidden_layers)"),
     Var("kv_lora_rank", "1", "width of the cached K/V latent (kv_lora_rank)"),
     Var("qk_rope_head_dim", "1", "width of the shared rotary key (qk_rope_head_dim)"),
     Var("kv_bytes", "B", "bytes per cached value")),
    lambda s: product(s["layers"], s["kv_lora_rank"] + s["qk_rope_head_dim"], s["kv_bytes"]),
    label="KV cache per token (latent)",
)

# DeepSeek-V3.2's sparse attention caches, beside the MLA latent, one indexer key per token per layer: index_head_dim
# values in fp8 (1 B) plus an fp32 scale (4 B) per 128 values, as DeepSeek's reference inference/model.py keeps them
# (k_cache float8_e4m3fn, k_scale_cache float32 per block_size 128) whatever the latent's precision.
INDEX_KEY_BYTES = 1 + sympy.Rational(4, 128)

KV_BYTES_PER_TOKEN_SPARSE = Formula(
    "kv_bytes_per_token",
    (Var("layers", "1", "layers (num_hidden_layers)"),
     Var("kv_lora_rank", "1", "width of the cached K/V latent (kv_lora_rank)"),
     Var("qk_rope_head_dim", "1", "width of the shared rotary key (qk_rope_head_dim)"),
     Var("kv_bytes", "B", "bytes per cached value"),
     Var("index_head_dim", "1", "width of the indexer's cached key (index_head_dim)"),
     Var("index_key_bytes", "B", "bytes per cached indexer value (fp8 and an fp32 scale per 128: 1 + 4/128)")),
    lambda s: product(s["layers"], total(product(s["kv_lora_rank"] + s["qk_rope_head_dim"], s["kv_bytes"]),
                                         product(s["index_head_dim"], s["index_key_bytes"]))),
    label="KV cache per token (latent and indexer keys)",
)



def kv_per_token_form(kv_lora_rank: float, index_topk: float = 0) -> Formula:
    """The form of ``kv_bytes_per_token`` for an attention kind: K and V per K/V head, an MLA latent, or a latent
    and the sparse attention's indexer keys (``index_topk`` > 0)."""
    if kv_lora_rank:
        return KV_BYTES_PER_TOKEN_SPARSE if index_topk else KV_BYTES_PER_TOKEN_MLA
    return KV_BYTES_PER_TOKEN


# Replica-wide: a K/V head is never split across cards, so under a tensor-parallel
# degree above the K/V head count (or any degree, for an MLA latent) each user's
# cache is kept kv_replication times (docs/architecture.md §12; 1 on one card).
_replication = Var("kv_replication", "1", "copies of each K/V head across the replica")

PER_USER_GIB = Formula(
    "per_user_gib",
    (Var("kv_bytes_per_token", "B", "KV cache per token"),
     Var("context", "tok", "tokens per user"), _replication),
    lambda s: product(s["kv_bytes_per_token"], s["context"], s["kv_replication"]),
)

# A windowed layer keeps at most ``window`` tokens; full layers keep them all.
PER_USER_GIB_WINDOWED = Formula(
    "per_user_gib",
    (Var("kv_bytes_per_token", "B", "KV cache per token, every layer full"),
     Var("context", "tok", "tokens per user"), _replication, *WINDOW_VARS),
    lambda s: product(windowed_cache(s, s["context"]), s["kv_replication"]),
    label="KV cache per user (sliding windows applied)",
)

# --- Parameters and weights (formula 2) -------------------------------------

TOTAL_PARAMS = Formula(
    "total_params",
    (Var("embedding_copies", "1", "embedding matrices (1 if tied, 2 if not)"),
     Var("vocab_size", "1", "vocabulary (vocab_size)"),
     Var("hidden_size", "1", "model width (hidden_size)"),
     Var("layers", "1", "layers (num_hidden_layers)"),
     Var("attention_per_layer", "1", "attention parameters per layer"),
     Var("mlp_layers", "1", "layers with this MLP"),
     Var("mlp_per_layer", "1", "MLP parameters per layer (every expert and the router)"),
     Var("other_params", "1", "norms, and dense leading layers of a mixture of experts")),
    lambda s: total(product(s["embedding_copies"], s["vocab_size"], s["hidden_size"]),
                    product(s["layers"], s["attention_per_layer"]),
                    product(s["mlp_layers"], s["mlp_per_layer"]),
                    s["other_params"]),
)

ACTIVE_PARAMS = Formula(
    "active_params",
    (Var("total_params", "1", "parameters"),
     Var("mlp_layers", "1", "mixture-of-experts layers"),
     Var("idle_experts", "1", "routed experts a token skips (experts − experts per token)"),
     Var("expert_params", "1", "parameters of one expert")),
    lambda s: total(s["total_params"], -product(s["mlp_layers"], s["idle_experts"], s["expert_params"])),
)

WEIGHT_BYTES = Formula(
    "weight_bytes",
    (Var("total_params", "1", "parameters"), Var("weight_bits", "bit", "bits per parameter")),
    lambda s: product(s["total_params"], s["weight_bits"]),
)

# A mixture of experts: its routed experts and the rest, each at its own width (:func:`~..catalog.weight_widths`:
# equal for a uniform precision; gpt-oss's checkpoint keeps MXFP4 experts beside bf16 attention, router,
# embeddings and head).
_MIXED_VARS = (Var("total_params", "1", "parameters"),
               Var("routed_expert_params", "1", "parameters of all routed experts"),
               Var("weight_bits", "bit", "bits per parameter outside the routed experts"),
               Var("expert_weight_bits", "bit", "bits per routed-expert parameter"))


def _mixed(s):
    return total(product(s["total_params"] - s["routed_expert_params"], s["weight_bits"]),
                 product(s["routed_expert_params"], s["expert_weight_bits"]))


WEIGHT_BYTES_MIXED = Formula("weight_bytes", _MIXED_VARS, _mixed,
                             label="Weight memory in bytes (routed experts a term of their own)")

WEIGHT_GIB = Formula(
    "weights_gib",
    (Var("weight_bytes", "B", "weight memory in bytes"),),
    lambda s: s["weight_bytes"],
    label="Weight memory in GiB",
)

# A cold start's weight loading: the checkpoint's bytes over the bandwidth of the slowest link they cross
# (the loader reading storage, the host link, the network), one rate a procedure names with its source.
WEIGHTS_LOAD_S = Formula(
    "weights_load_s",
    (Var("weight_bytes", "B", "weight memory in bytes"),
     Var("load_gb_s", "GB/s", "bandwidth the weights are loaded at")),
    lambda s: ratio(s["weight_bytes"], s["load_gb_s"]),
    label="Time to load the weights (bytes ÷ loading bandwidth)",
)

# --- The capacity ladder (formula 3) -----------------------------------------

CARD_GIB = Formula(
    "card_gib",
    (Var("gpus", "GPUs", "cards in the replica"), Var("card_mib", "MiB", "memory per card")),
    lambda s: product(s["gpus"], s["card_mib"]),
)

USABLE_GIB = Formula(
    "usable_gib",
    (Var("card_gib", "GiB", "card memory"), Var("utilization", "1", "utilisation fraction")),
    lambda s: product(s["card_gib"], s["utilization"]),
)

WEIGHTS_GIB = Formula(
    "weights_gib",
    (Var("total_params", "1", "parameters"), Var("weight_bits", "bit", "bits per parameter")),
    lambda s: product(s["total_params"], s["weight_bits"]),
)

WEIGHTS_GIB_MIXED = Formula("weights_gib", _MIXED_VARS, _mixed, label="Weights (routed experts a term of their own)")


def weights_given(cfg: ModelConfig, dtype: str, bits: float | None = None) -> dict[str, float]:
    """The values every weight-memory form reads for ``cfg`` at ``dtype`` (``bits`` overriding its width):
    ``total_params``, ``routed_expert_params`` (0 for a dense model) and the two widths of
    :func:`~..catalog.weight_widths`. Raises :class:`~..errors.InputError` for an unknown precision."""
    widths = weight_widths(cfg, dtype, bits)
    return {"total_params": param_breakdown(cfg).total, "routed_expert_params": routed_expert_params(cfg),
            "weight_bits": widths.weight_bits, "expert_weight_bits": widths.expert_weight_bits}


def routed_expert_params(cfg: ModelConfig) -> int:
    """Parameters of every routed expert of ``cfg`` (MoE layers × experts × one expert; 0 for a dense model)."""
    if not cfg.is_moe:
        return 0
    return (cfg.layers - cfg.dense_layers) * cfg.num_experts * mlp_params(cfg, cfg.moe_intermediate_size)


def weights_form(moe: bool, *, gib: bool = False) -> Formula:
    """The weight-memory form: a mixture of experts' (``moe``: its routed experts a term of their own, at
    ``expert_weight_bits``) or one width for every parameter; in bytes, or in GiB (``gib``)."""
    if gib:
        return WEIGHTS_GIB_MIXED if moe else WEIGHTS_GIB
    return WEIGHT_BYTES_MIXED if moe else WEIGHT_BYTES


def weight_bytes(cfg: ModelConfig, dtype: str, bits: float | None = None) -> float:
    """Bytes of ``cfg``'s weights at ``dtype`` (``bits`` overriding its width): the one way weight memory is
    computed outside a family's steps (:func:`weights_form` on :func:`weights_given`)."""
    given = weights_given(cfg, dtype, bits)
    return weights_form(cfg.is_moe)(given)


KV_BUDGET_GIB = Formula(
    "kv_budget_gib",
    (Var("usable_gib", "GiB", "usable memory"),
     Var("weights_gib", "GiB", "weights"),
     Var("gpus", "GPUs", "cards in the replica"),
     Var("reserve_gib", "GiB", "activation reserve per card")),
    lambda s: total(s["usable_gib"], -s["weights_gib"], -product(s["gpus"], s["reserve_gib"])),
)

USERS_WORST_CASE = Formula(
    "users_worst_case",
    (Var("kv_budget_gib", "GiB", "KV cache budget"), Var("per_user_gib", "GiB", "KV cache per user")),
    lambda s: Max(0, floor(ratio(s["kv_budget_gib"], s["per_user_gib"]))),
)


def _paged_tokens(s):
    """Tokens a paged user occupies: the conversation rounded up to whole blocks."""
    return product(ceiling(ratio(s["avg_tokens"], s["block_size"])), s["block_size"])


USERS_PAGED = Formula(
    "users_paged",
    (Var("kv_budget_gib", "GiB", "KV cache budget"),
     Var("kv_bytes_per_token", "B", "KV cache per token"),
     Var("avg_tokens", "tok", "average conversation"),
     Var("block_size", "tok", "tokens per KV block"), _replication),
    lambda s: Max(0, floor(ratio(s["kv_budget_gib"], product(s["kv_bytes_per_token"], _paged_tokens(s),
                                                              s["kv_replication"])))),
)

USERS_PAGED_WINDOWED = Formula(
    "users_paged",
    (Var("kv_budget_gib", "GiB", "KV cache budget"),
     Var("kv_bytes_per_token", "B", "KV cache per token, every layer full"),
     Var("avg_tokens", "tok", "average conversation"),
     Var("block_size", "tok", "tokens per KV block"), _replication, *WINDOW_VARS),
    lambda s: Max(0, floor(ratio(s["kv_budget_gib"], product(windowed_cache(s, _paged_tokens(s)),
                                                              s["kv_replication"])))),
    label="Users, paged (sliding windows applied)",
)

# Paged memory of one average user, quoted beside the paged count (0.281 GiB for
# the reference stack).
PAGED_USER_GIB = Formula(
    "paged_user_gib",
    (Var("kv_bytes_per_token", "B", "KV cache per token"),
     Var("avg_tokens", "tok", "average conversation"),
     Var("block_size", "tok", "tokens per KV block"), _replication),
    lambda s: product(s["kv_bytes_per_token"], _paged_tokens(s), s["kv_replication"]),
    label="KV cache per average user, paged", unit="GiB",
)

ALL_FORMULAS = (
    KV_BYTES_PER_TOKEN, KV_BYTES_PER_TOKEN_MLA, KV_BYTES_PER_TOKEN_SPARSE, PER_USER_GIB, PER_USER_GIB_WINDOWED,
    TOTAL_PARAMS, ACTIVE_PARAMS, WEIGHT_BYTES, WEIGHT_BYTES_MIXED, WEIGHT_GIB, WEIGHTS_LOAD_S,
    CARD_GIB, USABLE_GIB, WEIGHTS_GIB, WEIGHTS_GIB_MIXED, KV_BUDGET_GIB, USERS_WORST_CASE, USERS_PAGED,
    USERS_PAGED_WINDOWED, PAGED_USER_GIB,
)

__all__ = [f"{name}" for name in dir() if name.isupper()]
del sympy

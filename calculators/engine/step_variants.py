"""The shared per-step variants of the memory ladder's steps (:data:`VARIANTS`), by step key.

A variant takes the problem's ``given`` values and the values of earlier steps (the right ones, or the
candidate's own) and returns the value a candidate holding that misconception would type, or ``None``
when it does not apply to this problem (no windows, not int4, …). Every family with a step of that key
(``kv_bytes_per_token`` in ``kv`` and ``ladder``, ``weights_gib`` …) gets them; unit slips (GB ↔ GiB)
and input changes are generic perturbations (:mod:`.perturbation_registry`), not variants. The ids and
their wording are in :mod:`.misconceptions`.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

from .formulas import memory as F
from .misconceptions import GIB

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






def _usable_skipped(g, s):
    return s["card_gib"]


def _weights_values(g, s) -> dict:
    """The parameters and bits the weights are sized from: the ladder has the parameters among its inputs,
    the weights family as an earlier step."""
    return {"total_params": s["total_params"] if "total_params" in s else g["total_params"],
            "weight_bits": g["weight_bits"]}


def _weights_gib(g, s) -> float:
    return F.WEIGHTS_GIB(_weights_values(g, s))




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
    "per_user_gib": (("window-ignored", _per_user_window_ignored),),
    "usable_gib": (("skipped-utilization", _usable_skipped),),
    "weights_gib": (
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

"""What memory and number-format mistakes change: the KV cache, the weights, the ladder, K/V copies, adapters and
prefixes; a format's range, epsilon and width; RoPE's bands and wavelengths.

The changes the registry (:mod:`.`) names for memory quantities. An *override* takes the problem's given values and
returns them changed (or a list of changed copies, or ``None`` where the mistake cannot occur in this problem); a
*step value* takes the given values ``g`` and the earlier steps ``s`` (the right ones, or the candidate's own) and
returns what a candidate holding the mistake types at that step. Each reads only the quantities its registry entry
``needs``.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..catalog import DEFAULT_WEIGHT_BITS
from ..formulas import memory as F
from ..formulas import serving as S
from ..formulas.lora import PARAMS_PER_LAYER, PRESETS
from ..formulas.rope import BANDS_LONGER_THAN_CONTEXT
from ..procedures.formats import FORMATS, MAX_NORMAL_IEEE, NumberFormat, format_values
from ..procedures.prefix import PINNED
from ..units import GIB, GIB_PER_GB


def changed(g: Mapping[str, float], **changes: float) -> dict | None:
    """``g`` with ``changes``, or ``None`` when a key is missing or nothing changes."""
    if any(key not in g for key in changes) or all(g[key] == value for key, value in changes.items()):
        return None
    return {**g, **changes}


# --- input overrides ---

def query_heads(g):
    """K/V heads ← query heads (not for an MLA latent)."""
    return None if g.get("kv_lora_rank") else changed(g, kv_heads=g["heads"])


def kv_once(g):
    """K and V counted once: the bytes per cached value halved (not for an MLA latent)."""
    return None if g.get("kv_lora_rank") else changed(g, kv_bytes=g["kv_bytes"] / 2)


def kv_bits(g):
    """The cache's bits per value used as bytes."""
    return changed(g, kv_bytes=g["kv_bytes"] * 8)


def kv_nominal_4bit(g):
    """An NVFP4 (0.5625 B) or MXFP4 (0.53125 B) cache sized at a bare half byte per value."""
    return changed(g, kv_bytes=0.5) if 0.5 < g["kv_bytes"] < 0.6 else None


def _both_widths(g, width_of) -> dict:
    """The changes that give the weights (and the routed experts, when ``g`` has their own width) ``width_of``
    their width."""
    changes = {"weight_bits": width_of(g["weight_bits"])}
    if "expert_weight_bits" in g:
        changes["expert_weight_bits"] = width_of(g["expert_weight_bits"])
    return changes


def weight_bits_as_bytes(g):
    """The weights' bits per parameter used as bytes."""
    return changed(g, **_both_widths(g, lambda bits: bits * 8))


def other_precision_width(g):
    """The weights sized at another precision's width (:data:`~...catalog.DEFAULT_WEIGHT_BITS`: 32, 16, 8, 4.5 or
    4.25 bits per parameter, bf16's 2 bytes for fp8's 1): a list of the problem's values at each width but its own
    (a bare 4.0 is the nominal 4-bit slip, not another precision).
    Not for a checkpoint whose routed experts keep their own width (charging it one width is its own slip)."""
    if g.get("expert_weight_bits", g["weight_bits"]) != g["weight_bits"]:
        return None
    found = [changed(g, **_both_widths(g, lambda bits, width=width: width))
             for width in sorted(set(DEFAULT_WEIGHT_BITS.values()), reverse=True) if width != g["weight_bits"]]
    return [one for one in found if one is not None] or None


def card_for_replica(g, s):
    """Card memory quoted for one card of a replica of several: the card's MiB in GiB, not the replica's."""
    return g["card_mib"] / 1024 if g["gpus"] > 1 else None


def weights_nominal_4bit(g):
    """A 4-bit weight format sized at 4.0 bits, its block scales forgotten (a checkpoint that keeps only its
    routed experts in the format: those experts at 4.0 bits)."""
    if g["weights_dtype_bits_nominal"] != 4:
        return None
    if g.get("expert_weight_bits", g["weight_bits"]) != g["weight_bits"]:
        return changed(g, expert_weight_bits=4)
    return changed(g, **_both_widths(g, lambda bits: 4))


def mixed_checkpoint_one_width(g):
    """A checkpoint whose routed experts alone are in a block format (gpt-oss's MXFP4) charged that width for
    every parameter, its bf16 attention, router, embeddings and head included."""
    if "expert_weight_bits" not in g or g["expert_weight_bits"] == g["weight_bits"]:
        return None
    return changed(g, weight_bits=g["expert_weight_bits"])


def window_ignored(g):
    """Every sliding-window layer counted as full attention (a no-op when the context fits the window)."""
    if not g["window_layers"]:
        return None
    if "context" in g and g.get("window") and g["context"] <= g["window"]:
        return None
    return changed(g, window_layers=0, full_layers=g["layers"])


def tied(g):
    """The output head counted once too often (tied) or too few times (untied)."""
    return changed(g, embedding_copies=3 - g["embedding_copies"])


def card_gb_as_gib(g):
    """The card in decimal GB (85.52 for an H100), or its marketed GB figure (80), read as GiB."""
    found = [changed(g, card_mib=g["card_mib"] * GIB_PER_GB)]
    if g.get("card_marketed_gb"):
        found.append(changed(g, card_mib=g["card_marketed_gb"] * 1024))
    return [one for one in found if one is not None] or None


def total_for_active(g):
    """A mixture of experts' total parameters used where a token runs only the active ones."""
    if not g["total_params"] > g["active_params"]:
        return None
    return changed(g, active_params=g["total_params"])


def rederive(found: dict, original: Mapping[str, float]) -> dict:
    """Values a family resolved from inputs an override changed, derived again from the change (the KV cache per
    token, the parameter count)."""
    kv_parts = ("layers", "kv_heads", "head_dim", "kv_bytes", "kv_lora_rank", "qk_rope_head_dim", "index_head_dim")
    if "kv_bytes_per_token" in found and any(found.get(k) != original.get(k) for k in kv_parts):
        try:
            per_token = F.kv_per_token_form(found.get("kv_lora_rank", 0), found.get("index_topk", 0))(found)
        except Exception:  # noqa: BLE001 - a family without the parts keeps its value
            per_token = None
        if per_token is not None:
            found["kv_bytes_per_token"] = per_token
    if "total_params" in found and found.get("embedding_copies") != original.get("embedding_copies") \
            and "vocab_size" in original:
        delta = (found["embedding_copies"] - original["embedding_copies"]) * original["vocab_size"] * original[
            "hidden_size"]
        found["total_params"] = original["total_params"] + delta
        if "active_params" in found:
            found["active_params"] = original["active_params"] + delta
    return found


# --- the KV cache per token ---

def _kv_per_token(g):
    return F.kv_per_token_form(g["kv_lora_rank"], g.get("index_topk", 0))(g)


def kv_query_heads(g, s):
    """The cache per token with query heads for K/V heads."""
    if g["kv_lora_rank"] or g["kv_heads"] == g["heads"]:
        return None
    return F.KV_BYTES_PER_TOKEN({**g, "kv_heads": g["heads"]})


def kv_missing_2(g, s):
    """The cache per token without the factor 2 for K and V."""
    return None if g["kv_lora_rank"] else F.KV_BYTES_PER_TOKEN(g) / 2


def kv_in_bits(g, s):
    """The cache per token in bits."""
    return _kv_per_token(g) * 8


def kv_latent_as_heads(g, s):
    """An MLA latent sized as K and V for every head."""
    if not g["kv_lora_rank"]:
        return None
    per_head_k_and_v = g["qk_nope_head_dim"] + g["qk_rope_head_dim"] + g["v_head_dim"]
    return [g["layers"] * g["heads"] * per_head_k_and_v * g["kv_bytes"],
            F.KV_BYTES_PER_TOKEN({**g, "kv_heads": g["heads"], "head_dim": g["hidden_size"] / g["heads"]})]


def kv_per_token_nominal_4bit(g, s):
    """An FP4 cache per token at a bare half byte per value."""
    return _kv_per_token({**g, "kv_bytes": 0.5}) if 0.5 < g["kv_bytes"] < 0.6 else None


def _per_token(g, s) -> float:
    """KV bytes per token: an earlier step where the family has one (ladder, kv, tp), else its given (slo)."""
    return s["kv_bytes_per_token"] if "kv_bytes_per_token" in s else g["kv_bytes_per_token"]


# --- one user's cache ---

def _per_user(g, kv_bytes_per_token: float, *, windows: bool = True, replication: float | None = None) -> float:
    """One sequence's cache at the context for a per-token figure (GiB), across the replica's copies."""
    copies = g.get("kv_replication", 1) if replication is None else replication
    values = {**g, "kv_bytes_per_token": kv_bytes_per_token, "kv_replication": copies}
    if windows and g["window_layers"]:
        return F.PER_USER_GIB_WINDOWED(values)
    return F.PER_USER_GIB(values)


def per_user_window_ignored(g, s):
    """One user's cache with every window layer counted as full."""
    if not g["window_layers"] or g["context"] <= g["window"]:
        return None
    return _per_user(g, _per_token(g, s), windows=False)





def per_user_unreplicated(g, s):
    """One user's cache on one card's worth of K/V heads: the copies across the replica left out."""
    if g["kv_replication"] <= 1:
        return None
    return _per_user(g, _per_token(g, s), replication=1)


def replication_ignored(g, s):
    """No copies of a K/V head across the replica: 1."""
    return 1 if g["kv_replication"] > 1 else None


def replication_as_degree(g, s):
    """The copies taken as the TP degree (the number of cards), where they differ."""
    return g["gpus"] if g["gpus"] != g["kv_replication"] else None


def kv_step_unreplicated(g, s):
    """A step's cache read with the copies left out."""
    if g["kv_replication"] <= 1:
        return None
    batch = s["batch"] if "batch" in s else g["batch"]
    formula, _ = S.step_forms(g["window_layers"], g.get("index_topk", 0))
    return formula({**g, "batch": batch, "kv_replication": 1})


def pinned_window_ignored(g, s):
    """The prefixes' pinned cache with every window layer counted as full."""
    if not g["window_layers"] or g["prefix_tokens"] <= g["window"]:
        return None
    return PINNED({**g, "kv_bytes_per_token": s["kv_bytes_per_token"]})


# --- the ladder ---

def usable_skipped(g, s):
    """Usable memory taken as the whole card."""
    return s["card_gib"]


def _weights_values(g, s) -> dict:
    """The parameters and bits the weights are sized from: the ladder has the parameters among its inputs,
    the weights family as an earlier step (a mixture of experts' routed experts at their own width)."""
    return {"total_params": s["total_params"] if "total_params" in s else g["total_params"],
            "weight_bits": g["weight_bits"], "routed_expert_params": g.get("routed_expert_params", 0),
            "expert_weight_bits": g.get("expert_weight_bits", g["weight_bits"])}


def _weights_gib(values: dict) -> float:
    return F.weights_form(values["routed_expert_params"] > 0, gib=True)(values)


def weights_nominal_4bit_gib(g, s):
    """The weights at 4.0 bits."""
    if g["weights_dtype_bits_nominal"] != 4 or g["weight_bits"] == 4:
        return None
    return F.WEIGHTS_GIB({**_weights_values(g, s), "weight_bits": 4})


def weights_gib_in_bits(g, s):
    """The weights in Gib (bits) for GiB."""
    return _weights_gib(_weights_values(g, s)) * 8


def _tied_delta(g) -> float:
    """Parameters a candidate adds (tied model) or drops (untied) by miscounting the output head."""
    embedding = g["vocab_size"] * g["hidden_size"]
    return embedding if g["embedding_copies"] == 1 else -embedding


def weights_tied(g, s):
    """The weights with the output head miscounted."""
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


def short_ladder(which: str, *, utilization: bool, reserve: bool):
    """A ladder that skipped the utilisation and/or the reserve, read at ``which`` step: ``budget`` (the KV
    budget), ``worst`` or ``paged`` (the user counts that follow)."""
    def value(g, s):
        budget = _budget(g, s, utilization=utilization, reserve=reserve)
        if which == "budget":
            return budget
        return _users(budget, s["per_user_gib"] if which == "worst" else _paged_gib(g, s))
    return value


def replica_budget(*, utilization=True, reserve=True):
    """A replica's KV budget (slo) with the utilisation and/or the reserve skipped."""
    def value(g, s):
        usable = g["gpus"] * g["card_mib"] / 1024 * (g["utilization"] if utilization else 1)
        return usable - s["weights_gib"] - (g["gpus"] * g["reserve_gib"] if reserve else 0)
    return value


def worst_as_paged(g, s):
    """The paged count quoted as the worst case."""
    return _users(s["kv_budget_gib"], _paged_gib(g, s))


def paged_as_worst(g, s):
    """The worst-case count quoted as the paged one."""
    return _users(s["kv_budget_gib"], s["per_user_gib"])


def users_window_ignored(which: str):
    """A user count with every window layer counted as full."""
    def value(g, s):
        if not g["window_layers"]:
            return None
        tokens = g["context"] if which == "worst" else math.ceil(g["avg_tokens"] / g["block_size"]) * g["block_size"]
        if tokens <= g["window"]:
            return None
        return _users(s["kv_budget_gib"], _per_token(g, s) * tokens * g.get("kv_replication", 1) / GIB)
    return value


def users_unreplicated(which: str):
    """A user count with each user's cache counted once across the replica."""
    def value(g, s):
        if g["kv_replication"] <= 1:
            return None
        if which == "worst":
            per_user = _per_user(g, _per_token(g, s), replication=1)
            return max(0, math.floor(s["kv_budget_gib"] / per_user)) if per_user > 0 else None
        formula = F.USERS_PAGED_WINDOWED if g["window_layers"] else F.USERS_PAGED
        return formula({**g, "kv_budget_gib": s["kv_budget_gib"], "kv_bytes_per_token": _per_token(g, s),
                        "kv_replication": 1})
    return value


# --- parameters and weight bytes ---

def total_params_tied(g, s):
    """The parameter count with the output head miscounted."""
    return F.TOTAL_PARAMS(g) + _tied_delta(g)


def weight_bytes_nominal(g, s):
    """The weight bytes at 4.0 bits."""
    if g["weights_dtype_bits_nominal"] != 4 or g["weight_bits"] == 4:
        return None
    return F.WEIGHT_BYTES({"total_params": s["total_params"], "weight_bits": 4})


def weight_bytes_bits(g, s):
    """The weight bytes counted in bits."""
    return _weights_gib({**_weights_values(g, s), "total_params": s["total_params"]}) * 2**30 * 8


def weight_bytes_tied(g, s):
    """The weight bytes with the output head miscounted."""
    return F.WEIGHT_BYTES({"total_params": s["total_params"] + _tied_delta(g), "weight_bits": g["weight_bits"]})


def weights_from_active(g, s):
    """A mixture of experts' memory sized from the active parameters."""
    active = s["active_params"] if "active_params" in s else g["active_params"]
    return F.WEIGHTS_GIB({"total_params": active, "weight_bits": g["weight_bits"]})


def active_is_total(g, s):
    """The total parameters quoted as those a token uses."""
    return s["total_params"]


# --- tensor parallelism's cards ---

def _cards(weights: float, per_user: float, room: float) -> float | None:
    return math.ceil((weights + per_user) / room) if room > 0 else None


def min_gpus_no_reserve(g, s):
    """Cards sized on usable memory with no reserve."""
    return _cards(s["weights_gib"], s["per_user_gib"], s["usable_per_gpu_gib"])


def min_gpus_no_utilization(g, s):
    """Cards sized on the whole card less the reserve."""
    return _cards(s["weights_gib"], s["per_user_gib"], g["card_mib"] / 1024 - g["reserve_gib"])


def min_gpus_weights_only(g, s):
    """Cards sized for the weights alone."""
    return None if s["per_user_gib"] <= 0 else _cards(s["weights_gib"], 0, s["room_per_gpu_gib"])


def room_no_reserve(g, s):
    """Room per card with no reserve: usable memory."""
    return s["usable_per_gpu_gib"]


def room_no_utilization(g, s):
    """Room per card from the whole card."""
    return g["card_mib"] / 1024 - g["reserve_gib"]


def usable_full_card(g, s):
    """Usable memory per card taken as the whole card."""
    return g["card_mib"] / 1024


# --- adapters ---

def lora_one_factor(g, s):
    """LoRA parameters per layer with each adapted matrix counted as one factor: A (r × d_in) only, or B (r × d_out)
    only — not r × (d_in + d_out). The matrices are the lora family's presets (0 q and v, 1 q, k, v and o, 2 those
    and the MLP's)."""
    h, q, kv, m = g["hidden_size"], g["q_width"], g["kv_width"], g.get("mlp_width", 0)
    shapes = [(h, q), (h, kv)] if g["preset"] == 0 else [(h, q), (h, kv), (h, kv), (q, h)]
    if g["preset"] == 2:
        mlp = [(h, m), (h, m), (m, h)] if g["mlp_matrices"] == 3 else [(h, m), (m, h)]
        shapes += mlp * int(g["experts"])
    return [g["rank"] * sum(d_in for d_in, _ in shapes), g["rank"] * sum(d_out for _, d_out in shapes)]


def lora_per_layer_square(g, s):
    """Per-layer adapter parameters with k and v as square as q."""
    square = {**g, "q_width": g["hidden_size"], "kv_width": g["hidden_size"]}
    return PARAMS_PER_LAYER[PRESETS[int(g["preset"])]](square)


def lora_per_layer_full(g, s):
    """Per-layer adapter parameters as the full d_in × d_out updates."""
    preset = PRESETS[int(g["preset"])]
    h, q, kv = g["hidden_size"], g["q_width"], g["kv_width"]
    full = h * q + h * kv if preset == "qv" else h * q + 2 * h * kv + q * h
    if preset == "all":
        full += g["experts"] * g["mlp_matrices"] * h * g["mlp_width"]
    return full


def lora_params_square(g, s):
    """Adapter parameters with k and v square."""
    return lora_per_layer_square(g, s) * g["layers"]


def lora_params_full(g, s):
    """Adapter parameters as full matrices."""
    return lora_per_layer_full(g, s) * g["layers"]


def lora_one_layer(g, s):
    """One layer's adapter parameters for the model's."""
    return s["params_per_layer"]


def adapter_bits_for_bytes(g, s):
    """The adapter's memory counted in bits."""
    return s["adapter_params"] * g["adapter_bits"] / GIB


def indexer_left_out(g):
    """Sparse attention's indexer keys left out of the cache (the MLA latent alone), where the model has an indexer:
    ``index_head_dim`` ← 0, with the indexer's bytes per token where the problem carries them."""
    if not g.get("index_topk") or not g.get("index_head_dim"):
        return None
    changes = {"index_head_dim": 0.0}
    if g.get("indexer_bytes_per_token"):
        changes["indexer_bytes_per_token"] = 0.0
    return changed(g, **changes)


def replication_ignored_override(g):
    """One copy of each user's cache across the replica."""
    return changed(g, kv_replication=1)


# --- number formats ---


def _partner(g) -> NumberFormat | None:
    """fp16 for a bf16 problem and bf16 for an fp16 one; ``None`` otherwise."""
    layout = (g["width"], g["exponent_field"])
    if layout == (16, 8):
        return FORMATS["fp16"]
    if layout == (16, 5):
        return FORMATS["bf16"]
    return None


def swapped(key: str):
    """The partner 16-bit format's value of ``key``."""
    def value(g, s):
        partner = _partner(g)
        return None if partner is None else format_values(partner)[key]
    return value


def e4m3_ieee(g, s):
    """E4M3's largest value with the top exponent code kept for specials."""
    if not (g["finite_only"] or g.get("no_specials")):
        return None
    return MAX_NORMAL_IEEE({"mantissa_bits": s["mantissa_bits"], "exponent_bits": s["exponent_bits"]})


def unit_roundoff(g, s):
    """Half an epsilon."""
    return None if g["is_int"] else 2.0 ** (-s["mantissa_bits"] - 1)


def epsilon_is_min_normal(g, s):
    """The smallest normal given for epsilon."""
    return None if g["is_int"] else s["min_normal"]


def min_normal_is_epsilon(g, s):
    """Epsilon given for the smallest normal."""
    return None if g["is_int"] else 2.0 ** -s["mantissa_bits"]


def int_unsigned_max(g, s):
    """An integer's largest value read unsigned."""
    return 2 ** g["width"] - 1 if g["is_int"] else None


def int_unsigned_min(g, s):
    """An integer's smallest value read unsigned."""
    return 0 if g["is_int"] else None


def subnormal_for_normal(g, s):
    """The smallest subnormal, 2^(1 − bias) × 2^−m: fp16's 2^−24 for its 2^−14."""
    return s["min_normal"] * 2 ** -s["mantissa_bits"] if not g["is_int"] and s["mantissa_bits"] > 0 else None


def block_nominal_bits(g, s):
    """A block format's nominal bits, the shared scale forgotten."""
    return s["total_bits"] if g.get("block_values") else None


# --- RoPE ---

def _bands_longer(bands: float, context: float, theta: float) -> float:
    return BANDS_LONGER_THAN_CONTEXT({"bands": bands, "context": context, "rope_theta": theta})


def hidden_bands(g, s):
    """Bands from hidden_size."""
    return g["hidden_size"] / 2


def dims_as_bands(g, s):
    """Rotated dimensions counted as bands."""
    return g["rotary_dim"]


def longest_as_theta(g, s):
    """The slowest band's wavelength as 2π × rope_theta."""
    return 2 * math.pi * g["rope_theta"]


def shortest_without_2pi(g, s):
    """The fastest wavelength without 2π."""
    return 1.0


def longest_without_2pi(g, s):
    """The slowest wavelength without 2π."""
    return g["rope_theta"] ** ((g["rotary_dim"] - 2) / g["rotary_dim"])


def single_rotation(g, s):
    """RoPE as one rotation: every wavelength 2π."""
    return 2 * math.pi


def extended_context(g, s):
    """Bands counted against the extended context."""
    contexts = {g["context"] * g["scaling_factor"], g["max_position_embeddings"]} - {g["context"], 0}
    return [_bands_longer(s["bands"], context, g["rope_theta"]) for context in sorted(contexts)] or None


def scaled_shorter(g, s):
    """Scaling taken to shorten the wavelength."""
    return s["longest_wavelength_tok"] / g["scaling_factor"]

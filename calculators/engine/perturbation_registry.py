"""The registry of misconceptions as perturbations (docs/architecture.md §11): what each one changes.

A classic mistake changes one thing. :data:`GIVEN_PERTURBATIONS` are changes to a
problem's inputs (K/V heads ← query heads, utilisation ← 1, dense ← sparse
TFLOP/s …): ``perturb(given)`` returns the changed given (or a list of them), or
``None`` where the mistake cannot occur in this problem. :data:`UNIT_SLIPS` are a
step typed in its sibling unit (GB ↔ GiB, ms ↔ s). :func:`rederive` derives again
the values a family resolved from inputs a perturbation changed (the KV cache per
token, the parameter count). :mod:`.perturbations` re-evaluates the family's own
steps with each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from .formulas import memory as F
from .misconceptions import GIB_PER_GB

#: Ids whose variant belongs to one step: the mistake is in reading that step, not in a value that flows on.
LOCAL = frozenset({"worst-case-vs-paged", "per-user-rate-for-replica", "roofline-as-expectation"})

# Unit slips: a step in one of these units typed in its sibling (and carried on).
#: Units in which an earlier step's value, read by a later step, is also tried in its sibling unit at that step
#: (a budget in GiB divided by a per-user figure taken in GB): the slip belongs to the reading step.
INPUT_SLIP_UNITS = frozenset({"GiB", "GB"})

UNIT_SLIPS: dict[str, tuple[str, tuple[float, ...]]] = {
    "GiB": ("gb-gib-mix", (GIB_PER_GB, 1 / GIB_PER_GB)),
    "GB": ("gb-gib-mix", (GIB_PER_GB, 1 / GIB_PER_GB)),
    "ms": ("ms-s-mix", (1000.0, 0.001)),
    "s": ("ms-s-mix", (1000.0, 0.001)),
}


def _changed(g: Mapping[str, float], **changes: float) -> dict | None:
    """``g`` with ``changes``, or ``None`` when a key is missing or nothing changes."""
    if any(key not in g for key in changes) or all(g[key] == value for key, value in changes.items()):
        return None
    return {**g, **changes}


def _memory(g, **changes):
    """A change to the memory ladder's utilisation or reserve, in a family that sizes card memory (in the
    cost family ``utilization`` is a share of time, another quantity)."""
    return _changed(g, **changes) if "card_mib" in g else None


def _query_heads(g):
    if g.get("kv_lora_rank") or "heads" not in g:
        return None
    return _changed(g, kv_heads=g["heads"])


def _kv_once(g):
    if g.get("kv_lora_rank") or "kv_bytes" not in g or "kv_heads" not in g:
        return None
    return _changed(g, kv_bytes=g["kv_bytes"] / 2)


def _kv_bits(g):
    return _changed(g, kv_bytes=g["kv_bytes"] * 8) if "kv_bytes" in g else None


def _weight_bits_as_bytes(g):
    return _changed(g, weight_bits=g["weight_bits"] * 8) if "weight_bits" in g else None


def _nominal_4bit(g):
    if g.get("weights_dtype_bits_nominal") != 4:
        return None
    return _changed(g, weight_bits=4)


def _sparse(g):
    if not g.get("sparse_tflops") or "peak_tflops" not in g:
        return None
    return _changed(g, peak_tflops=g["sparse_tflops"])


def _window_ignored(g):
    if not g.get("window_layers") or "layers" not in g:
        return None
    if "context" in g and g.get("window") and g["context"] <= g["window"]:
        return None
    return _changed(g, window_layers=0, full_layers=g["layers"])


def _tied(g):
    if "embedding_copies" not in g:
        return None
    return _changed(g, embedding_copies=3 - g["embedding_copies"])


def _replication_ignored(g):
    return _changed(g, kv_replication=1) if "kv_replication" in g else None


def _n_not_2n(g):
    """A forward pass taken as N FLOPs per token, not 2N: the parameter term halved where FLOPs are counted."""
    for key in ("params", "active_params"):
        if key in g and ("peak_tflops" in g):
            return _changed(g, **{key: g[key] / 2})
    return None


def _latency_ms_as_s(g):
    return [changed for factor in (1000.0, 0.001)
            if (changed := _changed(g, latency_s=g["latency_s"] * factor)) is not None] if "latency_s" in g else None


def _target_ms_as_s(g):
    found = []
    for key in ("tpot_target_ms", "queue_ms"):
        if key in g and g[key]:
            found += [_changed(g, **{key: g[key] * factor}) for factor in (1000.0, 0.001)]
    return [f for f in found if f is not None] or None


def _card_gb_as_gib(g):
    """The card in decimal GB (85.52 for an H100), or its marketed GB figure (80), read as GiB, in a family
    that sizes card memory."""
    if "card_mib" not in g:
        return None
    found = [_changed(g, card_mib=g["card_mib"] * GIB_PER_GB)]
    if g.get("card_marketed_gb"):
        found.append(_changed(g, card_mib=g["card_marketed_gb"] * 1024))
    return [one for one in found if one is not None] or None


def _bandwidth_gb_as_gib(g):
    """A bandwidth in GB/s read as GiB/s (7 % too fast), where a family turns bytes in GiB into a time."""
    key = "bandwidth_gb_s"
    return _changed(g, **{key: g[key] * GIB_PER_GB}) if g.get(key) else None


def _moe_dense_active(g):
    """A mixture of experts' arithmetic intensity taken as if every parameter were active for every token, in
    a family that compares it with the card's ridge (peak ÷ bandwidth): in the roofline, active ← total
    parameters (decode's 2 × B FLOPs per weight byte read, the dense batch at the ridge); under expert
    parallelism, experts ← experts per token (each expert sees the whole batch, not B × k ÷ E)."""
    if "bandwidth" not in g or "peak_tflops" not in g:
        return None
    if "experts_per_token" in g and g.get("experts", 0) > g["experts_per_token"] > 0:
        return _changed(g, experts=g["experts_per_token"])
    if "active_params" in g and g.get("total_params", 0) > g["active_params"]:
        return _changed(g, active_params=g["total_params"])
    return None


@dataclass(frozen=True)
class GivenPerturbation:
    """A misconception as a change to the problem's inputs: ``perturb(given)`` returns the changed
    given (or a list of them), or ``None`` where it does not apply."""

    id: str
    perturb: Callable[[Mapping[str, float]], "dict | list[dict] | None"]


GIVEN_PERTURBATIONS: tuple[GivenPerturbation, ...] = (
    GivenPerturbation("query-heads-for-kv-heads", _query_heads),
    GivenPerturbation("missing-kv-factor-2", _kv_once),
    GivenPerturbation("bits-for-bytes", _kv_bits),
    GivenPerturbation("bits-for-bytes", _weight_bits_as_bytes),
    GivenPerturbation("skipped-utilization", lambda g: _memory(g, utilization=1)),
    GivenPerturbation("skipped-activation-reserve", lambda g: _memory(g, reserve_gib=0)),
    GivenPerturbation("stopped-at-weights", lambda g: _memory(g, utilization=1, reserve_gib=0)),
    GivenPerturbation("nominal-4bit", _nominal_4bit),
    GivenPerturbation("forgot-tied-embeddings", _tied),
    GivenPerturbation("window-ignored", _window_ignored),
    GivenPerturbation("sparse-tflops", _sparse),
    GivenPerturbation("kv-replication-ignored", _replication_ignored),
    GivenPerturbation("prefill-n-not-2n", _n_not_2n),
    GivenPerturbation("littles-law-ms-s", _latency_ms_as_s),
    GivenPerturbation("ms-s-mix", _target_ms_as_s),
    GivenPerturbation("distinct-prefixes-ignored", lambda g: _changed(g, distinct_prefixes=1)),
    GivenPerturbation("partial-rotary-ignored",
                      lambda g: _changed(g, rotary_dim=g["head_dim"]) if "head_dim" in g else None),
    GivenPerturbation("moe-ridge-as-dense-active", _moe_dense_active),
    GivenPerturbation("gb-gib-mix", _card_gb_as_gib),
    GivenPerturbation("gb-gib-mix", _bandwidth_gb_as_gib),
)


def _lora_one_factor(g, s):
    """LoRA parameters per layer with each adapted matrix counted as one factor: A (r × d_in) only, or
    B (r × d_out) only — not r × (d_in + d_out). The matrices are the lora family's presets (its ``preset``
    index: 0 q and v, 1 q, k, v and o, 2 those and the MLP's); ``None`` outside that family."""
    if "q_width" not in g or "rank" not in g or "preset" not in g:
        return None
    h, q, kv, m = g["hidden_size"], g["q_width"], g["kv_width"], g.get("mlp_width", 0)
    shapes = [(h, q), (h, kv)] if g["preset"] == 0 else [(h, q), (h, kv), (h, kv), (q, h)]
    if g["preset"] == 2:
        mlp = [(h, m), (h, m), (m, h)] if g["mlp_matrices"] == 3 else [(h, m), (m, h)]
        shapes += mlp * int(g["experts"])
    return [g["rank"] * sum(d_in for d_in, _ in shapes), g["rank"] * sum(d_out for _, d_out in shapes)]


#: Perturbations of one step's value, by step key, in any family that has the step (and carried downstream
#: like every chain): where the mistake is in the step's own formula rather than in an input.
STEP_PERTURBATIONS: dict[str, tuple[tuple[str, Callable], ...]] = {
    "params_per_layer": (("lora-rank-once", _lora_one_factor),),
}


def rederive(changed: dict, original: Mapping[str, float]) -> dict:
    """Values the family resolved from inputs a perturbation changed, derived again from the change."""
    kv_parts = ("layers", "kv_heads", "head_dim", "kv_bytes", "kv_lora_rank", "qk_rope_head_dim")
    if "kv_bytes_per_token" in changed and any(changed.get(k) != original.get(k) for k in kv_parts):
        try:
            per_token = (F.KV_BYTES_PER_TOKEN_MLA(changed) if changed.get("kv_lora_rank")
                         else F.KV_BYTES_PER_TOKEN(changed))
        except Exception:  # noqa: BLE001 - a family without the parts keeps its value
            per_token = None
        if per_token is not None:
            changed["kv_bytes_per_token"] = per_token
    if "total_params" in changed and changed.get("embedding_copies") != original.get("embedding_copies"):
        delta = (changed["embedding_copies"] - original["embedding_copies"]) * original["vocab_size"] * original[
            "hidden_size"]
        changed["total_params"] = original["total_params"] + delta
        if "active_params" in changed:
            changed["active_params"] = original["active_params"] + delta
    return changed

"""Misconceptions as perturbations of a family's own steps (docs/architecture.md §11).

A classic mistake changes one thing — an input swapped or overridden (K/V heads
← query heads, utilisation ← 1, dense ← sparse TFLOP/s …), one step's value
(a per-step variant of :mod:`.misconceptions` or of the family), or a unit
(GB ↔ GiB, ms ↔ s) — and everything computed after it follows. A
:class:`Chain` is that change applied to one problem: the family's own steps
re-evaluated in order with it, so every step downstream of the perturbed
variable carries the misconception's name, in every family whose steps it
reaches. :func:`chains` builds them once per graded submission;
:func:`candidates` reads, for one step, the value each chain gives both on the
right earlier values and on the candidate's own (a slip carried forward is
still named).

Given-level perturbations are :data:`GIVEN_PERTURBATIONS`; a value the family
resolved from the changed inputs (the KV cache per token, the parameter count)
is derived again (:func:`_rederive`). Per-step variants come from
:func:`.procedures.variants_for`; those in :data:`LOCAL` belong to their step
only (worst case and paged swapped) and do not propagate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Mapping

from . import formulas as F
from .misconceptions import ADDED_IN_V2, GIB_PER_GB, MISCONCEPTIONS

#: Ids whose variant belongs to one step: the mistake is in reading that step, not in a value that flows on.
LOCAL = frozenset({"worst-case-vs-paged", "per-user-rate-for-replica", "roofline-as-expectation"})

# Unit slips: a step in one of these units typed in its sibling (and carried on).
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
)


def _rederive(changed: dict, original: Mapping[str, float]) -> dict:
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


@dataclass
class Chain:
    """One perturbation applied to one problem: misconception ``id``, the changed ``given``, the step
    ``start`` index it takes effect at, an ``override`` of that step's value (``None`` for a change of
    inputs), and ``values`` — every step re-evaluated on the right earlier values (NaN where undefined)."""

    id: str
    given: Mapping[str, float]
    start: int
    override: Callable | None = None
    override_key: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    local: bool = False
    changed: frozenset = frozenset()
    rank: tuple = ()


def _safe(evaluate: Callable[[], float]) -> float:
    try:
        value = float(evaluate())
    except (ZeroDivisionError, OverflowError, ValueError, KeyError, TypeError):
        return math.nan
    except Exception:  # noqa: BLE001 - an InputError from a formula missing a value: undefined here
        return math.nan
    return value if math.isfinite(value) else math.nan


def _run_chain(chain: Chain, specs, right: Mapping[str, float]) -> Chain:
    values: dict[str, float] = {}
    for index, spec in enumerate(specs):
        if index < chain.start:
            values[spec.key] = right[spec.key]
        elif index == chain.start and (override := chain.override) is not None:
            values[spec.key] = _safe(lambda: override(chain.given, {**right, **values}))
        elif chain.local:
            break
        else:
            values[spec.key] = _safe(lambda: spec.evaluate(chain.given, values))
    chain.values = values
    return chain


def _variant_overrides(variant, value_index):
    def override(g, s):
        produced = variant(g, s)
        produced = produced if isinstance(produced, list) else [produced]
        if value_index >= len(produced) or produced[value_index] is None:
            raise ValueError("variant does not apply")
        return produced[value_index]
    return override


def chains(result, variants_for) -> list[Chain]:
    """Every perturbation of ``result``'s problem, each re-evaluated through the family's steps.

    ``variants_for(family, step_key)`` lists a step's (id, variant) pairs. Variants that raise
    ``KeyError`` on this problem are a bug and are raised, not skipped (a variant that does not
    apply returns ``None``).
    """
    specs, given, right = result.specs, result.given, result.values
    found: list[Chain] = []
    for perturbation in GIVEN_PERTURBATIONS:
        changed = perturbation.perturb(given)
        for one in changed if isinstance(changed, list) else [changed]:
            if one is not None:
                derived = _rederive(dict(one), given)
                found.append(Chain(perturbation.id, derived, 0,
                                   changed=frozenset(k for k, v in derived.items() if given.get(k) != v)))
    for index, spec in enumerate(specs):
        for misconception_id, variant in variants_for(result.family, spec.key):
            try:
                produced = variant(given, right)
            except (ZeroDivisionError, OverflowError, ValueError):
                continue  # degenerate on this problem (a zero context divides)
            produced = produced if isinstance(produced, list) else [produced]
            for value_index, value in enumerate(produced):
                if value is not None:
                    found.append(Chain(misconception_id, given, index, _variant_overrides(variant, value_index),
                                       spec.key, local=misconception_id in LOCAL))
        slip = UNIT_SLIPS.get(spec.unit)
        if slip:
            slip_id, factors = slip
            for factor in factors:
                found.append(Chain(slip_id, given, index,
                                   (lambda spec_, f: lambda g, s: spec_.evaluate(g, s) * f)(spec, factor), spec.key))
    for position, chain in enumerate(found):
        # Own ids first, then shared, then v2's; at one step, in the order the step lists its variants.
        own, added, order = _rank(result.family, chain.id)
        chain.rank = (own, added, position if chain.override is not None else len(found), order)
    found.sort(key=lambda chain: chain.rank)
    return [_run_chain(chain, specs, right) for chain in found]


@lru_cache(maxsize=4096)
def _rank(family: str, misconception_id: str) -> tuple:
    """Precedence among misconceptions a typed value matches at equal distance (docs/architecture.md §11): the
    family's own ids, then the shared ones, then those added with this engine; within each, the order
    of the registry."""
    from .procedures import FAMILIES  # the registry is complete once the families are discovered

    record = FAMILIES.get(family)
    own = misconception_id in (record.variants if record else {}) or any(
        info.id == misconception_id for info in (record.misconceptions if record else ()))
    own = own or any(misconception_id == pair[0] for pairs in (record.variants.values() if record else ())
                     for pair in pairs)
    order = list(MISCONCEPTIONS).index(misconception_id) if misconception_id in MISCONCEPTIONS else len(MISCONCEPTIONS)
    return (0 if own else 1, 1 if misconception_id in ADDED_IN_V2 else 0, order)


def _refuted(chain: Chain, index: int, specs, right: Mapping[str, float], own: Mapping[str, float]) -> bool:
    """Whether the candidate typed the right value at an earlier step this chain changes (so they did
    not make this slip there)."""
    for spec in specs[chain.start:index]:
        typed, wrong, correct = own.get(spec.key), chain.values.get(spec.key), right[spec.key]
        if typed is None or wrong is None or math.isnan(wrong) or _close(wrong, correct):
            continue
        if _close(typed, correct):
            return True
    return False


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.005 * abs(b) if b else abs(a) < 1e-9


def candidates(chain_list: list[Chain], index: int, spec, own: Mapping[str, float], specs=(), right=None,
               verdict_step: bool = False):
    """(id, value) pairs a candidate holding each chain's misconception would type at step ``index``:
    on the right earlier values, then on ``own`` (the candidate's readable earlier values, each
    in place of the chain's). The nearest cause comes first — a slip made at this step, then an input
    this step reads itself, then one carried from upstream (unless the candidate's own right answer
    upstream rules it out, or the step is a yes/no verdict) — then the precedence of :func:`_rank`.
    ``specs`` and ``right`` are the problem's steps and right values."""
    direct = {var.name for var in spec.formula.variables if var.name not in spec.from_steps}
    found = []
    for chain in chain_list:
        if index < chain.start or spec.key not in chain.values:
            continue
        if chain.override is not None and index == chain.start:
            near = 0  # a slip made at this very step
        elif chain.changed & direct:
            near = 1  # an input this step reads itself
        elif verdict_step or _refuted(chain, index, specs, right, own):
            continue  # a yes/no verdict is not explained by a far cause; nor is a chain the candidate's own
            # right answer upstream rules out
        else:
            near = 2
        found.append(((near, chain.rank), chain.id, chain.values[spec.key]))
        if not own:
            continue
        mixed = {**chain.values, **{k: v for k, v in own.items() if k != spec.key}}
        if index == chain.start and (override := chain.override) is not None:
            found.append(((near, chain.rank), chain.id, _safe(lambda: override(chain.given, mixed))))
        elif index > chain.start or chain.override is None:
            found.append(((near, chain.rank), chain.id, _safe(lambda: spec.evaluate(chain.given, mixed))))
    found.sort(key=lambda item: item[0])
    return [(misconception_id, value) for _, misconception_id, value in found]

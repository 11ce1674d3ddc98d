"""The engine's formulas, grouped by topic, each a sympy relation with a unit on every variable.

- :mod:`.memory` — the KV cache, parameters, weights and the capacity ladder;
- :mod:`.serving` — the serving model's step (docs/architecture.md §12): bytes, FLOPs, times, the batch a
  TPOT target allows, the fleet, and the simulated drills' steps;
- :mod:`.fleet` — sizing a fleet for a latency target: the replica's KV budget, the batch limits, TPOT,
  replicas and nodes;
- :mod:`.rope` — rotary position embeddings' bands and wavelengths;
- :mod:`.lora` — adapters' parameters and what fits beside the cache.

A family's formulas that no other family shares stay in its module (``procedures/<family>.py``). This module
holds the helpers every formula is built with: products, ratios and sums kept in their written order, and
the variables a sliding window adds.
"""

from __future__ import annotations

from sympy import Add, Min, Mul, Pow

from ..formula import Var


def product(*factors):
    """A product that keeps its factors in the order written (for display)."""
    return Mul(*factors, evaluate=False)


def ratio(numerator, denominator):
    """``numerator ÷ denominator`` kept as written (the denominator is not split up)."""
    return Mul(numerator, Pow(denominator, -1, evaluate=False), evaluate=False)


def total(*terms):
    """A sum that keeps its terms in the order written."""
    return Add(*terms, evaluate=False)


# The variables a sliding-window formula adds.
WINDOW_VARS = (
    Var("full_layers", "1", "layers attending over the whole context"),
    Var("window_layers", "1", "layers with a sliding window"),
    Var("window", "tok", "sliding window (sliding_window)"),
    Var("layers", "1", "layers (num_hidden_layers)"),
)


def windowed_cache(s, tokens):
    """Bytes per token × tokens kept, when windowed layers keep at most ``window`` tokens:
    kv × (full × tokens + windowed × min(tokens, window)) ÷ layers."""
    kept = total(product(s["full_layers"], tokens), product(s["window_layers"], Min(tokens, s["window"])))
    return ratio(product(s["kv_bytes_per_token"], kept), s["layers"])

"""The degree a tensor-parallel replica can be bought in: whole nodes or a power of two in one, splitting the heads."""

from __future__ import annotations

import math

import sympy

# --- the buyable degree ------------------------------------------------------------------------

def buyable_degree(cards: float, per_node: float) -> int:
    """The smallest tensor-parallel degree of at least ``cards`` (a count of GPUs).

    Inside a node of ``per_node`` cards (a power of two) the degrees are the
    powers of two up to ``per_node``; beyond it, whole nodes (multiples of
    ``per_node``). Engines shard each layer evenly over the degree, and a
    degree of 3, 5 or 9 is neither a split they support nor a machine anyone
    sells. Returns an ``int``; never raises for positive numbers.
    """
    needed = max(1, math.ceil(cards))
    node = max(1, int(per_node))
    if needed > node:
        return node * math.ceil(needed / node)
    degree = 1
    while degree < needed:
        degree *= 2
    return min(degree, node)


def splits_heads(degree: int, heads: int, kv_heads: int) -> bool:
    """The degree rule (docs/architecture.md §12): ``degree`` divides the query heads, and divides the K/V
    heads or is a multiple of them."""
    return heads % degree == 0 and (kv_heads % degree == 0 or degree % kv_heads == 0)


def head_splitting_degree(cards: float, per_node: float, heads: float, kv_heads: float) -> int:
    """The smallest buyable degree (:func:`buyable_degree`) of at least ``cards`` that also obeys
    the degree rule for ``heads`` query and ``kv_heads`` K/V heads; when no degree up to 64 nodes
    does (Falcon-7B's 71 heads), the plain buyable degree, which the notes then flag."""
    first = buyable_degree(cards, per_node)
    node = max(1, int(per_node))
    for degree in _degree_ladder(node, 64 * node):
        if degree >= first and splits_heads(degree, int(heads), int(kv_heads)):
            return degree
    return first


class next_tp_degree(sympy.Function):
    """sympy face of :func:`head_splitting_degree`: evaluates on numbers, prints by name, and
    lambdifies through ``_imp_`` (so the numeric evaluator and the exact one agree)."""

    nargs = 4
    _imp_ = staticmethod(head_splitting_degree)

    @classmethod
    def eval(cls, cards, per_node, heads, kv_heads):
        if all(arg.is_Number for arg in (cards, per_node, heads, kv_heads)):
            return sympy.Integer(head_splitting_degree(float(cards), float(per_node), float(heads),
                                                       float(kv_heads)))
        return None

    def _latex(self, printer):
        args = ", ".join(printer._print(arg) for arg in self.args)
        return r"\operatorname{next\_tp\_degree}\left(" + args + r"\right)"

def _degree_ladder(per_node: int, up_to: int):
    """Buyable degrees in order, up to ``up_to`` cards."""
    degree = 1
    while degree <= min(per_node, up_to):
        yield degree
        degree *= 2
    degree = 2 * per_node
    while degree <= up_to:
        yield degree
        degree += per_node

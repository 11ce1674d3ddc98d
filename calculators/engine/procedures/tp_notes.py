"""The tp family's notes: how the heads split, how many users fit, whether a proposed card count works."""

from __future__ import annotations

import math
from typing import Any

from ..catalog import Catalog
from ..hf_config import ModelConfig
from .base import format_number
from .inputs import input_or_default
from .tp_degree import _degree_ladder, buyable_degree


def head_notes(cfg: ModelConfig, degree: int, per_node: int) -> list[str]:
    """Sentences on how ``degree`` splits the attention heads and the K/V heads.

    Engines such as vLLM shard attention by whole heads: the query heads must
    divide evenly over the cards, and the K/V heads must either divide evenly
    or be replicated a whole number of times.
    """
    if degree == 1:
        return []
    notes = []
    if cfg.heads % degree:
        better = next((d for d in _degree_ladder(per_node, 64 * per_node)
                       if d > degree and cfg.heads % d == 0), None)
        where = (f"the next degree that splits them is {better}" if better else
                 "no larger buyable degree splits them either: split the layers across cards (pipeline "
                 "parallel) instead")
        notes.append(f"{cfg.heads} query heads do not divide evenly over {degree} cards: engines shard "
                     f"attention by whole heads and refuse this degree; {where}.")
    if cfg.kv_lora_rank:
        notes.append(f"MLA caches one latent per token that every head shares, so tensor parallelism does not "
                     f"split it: each of the {degree} cards keeps the whole latent of the users it serves "
                     f"(unless the engine runs attention data-parallel).")
    elif cfg.kv_heads < degree:
        if degree % cfg.kv_heads:
            notes.append(f"{cfg.kv_heads} K/V heads cannot be replicated evenly over {degree} cards.")
        else:
            notes.append(f"Only {cfg.kv_heads} K/V head{'s' if cfg.kv_heads > 1 else ''} for {degree} cards: "
                         f"each is replicated on {degree // cfg.kv_heads} cards.")
    elif cfg.kv_heads % degree:
        notes.append(f"{cfg.kv_heads} K/V heads do not divide evenly over {degree} cards.")
    return notes


def users_note(room: float, per_user: float, copies: float, degree: int, gpu_name: str, context: int) -> str:
    """The users the chosen degree serves: the KV budget over one user's replica-wide cache
    (``copies`` = the K/V replication already counted in ``per_user``)."""
    if per_user <= 0:
        return "Context 0: the cards are sized for the weights alone, before any KV cache."
    users = math.floor(room / per_user)
    text = (f"At {degree} × {gpu_name} the KV budget is {format_number(room, 'GiB')}: {users:,} "
            f"user{'s' if users != 1 else ''} at the {context:,}-token limit.")
    if copies > 1:
        text += (f" Each user's cache is kept {copies:g} times across the cards, so one user takes "
                 f"{format_number(per_user, 'GiB')}; pooling it as if it were stored once would promise "
                 f"{math.floor(room / (per_user / copies)):,}.")
    return text


def proposal_notes(proposed: int | None, degree: int, per_node: int, gpu_name: str) -> list[str]:
    """What to say about a proposed card count, compared with the minimum degree."""
    if proposed is None:
        return []
    if proposed < degree:
        return [f"The proposed {proposed} × {gpu_name} cannot hold the weights and one user: the minimum is "
                f"{degree}."]
    notes = []
    if buyable_degree(proposed, per_node) != proposed:
        notes.append(f"The proposed {proposed} cards are not a tensor-parallel degree an engine splits over "
                     f"(powers of two up to {per_node}, then whole nodes of {per_node}); "
                     f"{buyable_degree(proposed, per_node)} is the next one.")
    if degree == 1 and proposed > 1:
        notes.insert(0, f"Over-engineering tell: the model fits on one {gpu_name}, yet {proposed} cards are "
                        f"proposed. Splitting it adds an all-reduce to every layer and a failure domain "
                        f"{proposed} cards wide; the gains (the weights stored once, more bandwidth per token) "
                        f"are worth it only for a stated latency target. Otherwise run {proposed} replicas of "
                        f"one card.")
    elif proposed > degree:
        notes.append(f"The proposed {proposed} cards are more than the {degree} needed: the extra memory "
                     f"goes to KV cache (more users), at the price of more cross-card traffic per layer.")
    return notes


def degree_words(per_node: int) -> str:
    """The buyable degrees in words: ``1, 2, 4, 8, then 16, 24, 32 …`` for eight-card nodes."""
    inside = ", ".join(str(d) for d in _degree_ladder(per_node, per_node))
    beyond = ", ".join(str(per_node * k) for k in (2, 3, 4))
    return f"{inside}, then whole nodes: {beyond} …"


def describe_tp(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in an interviewer's words."""
    gpu = catalog.gpu(inputs["gpu"]).name
    model = inputs.get("model", "the pasted model")
    if inputs.get("params_b"):
        model = f"a {inputs['params_b']:g}-billion-parameter model (cache shaped like {model}'s)"
    dtype = inputs.get("weights_dtype", "bf16")
    bits = inputs.get("weights_bits")
    weights = f"{dtype} weights" + (f" at {bits:g} bits each" if bits else "")
    context = inputs.get("context", 8192)
    user = (f"one user holding a full {context:,}-token context ({inputs.get('kv_dtype', 'bf16')} KV cache)"
            if context else "no KV cache at all (weights only)")
    return (f"You must place {model} with {weights} on {gpu} cards, {inputs.get('gpus_per_node', 8)} to a "
            f"node. The serving engine may fill {input_or_default(inputs, 'utilization') * 100:g} % of each card and "
            f"sets aside {input_or_default(inputs, 'reserve_gib'):g} GiB per card for activations. The replica "
            f"must hold "
            f"the weights plus {user}. How many cards does that take, what is the smallest tensor-parallel "
            f"degree an engine will actually split over ({degree_words(inputs.get('gpus_per_node', 8))}), and "
            f"how many nodes is that?")

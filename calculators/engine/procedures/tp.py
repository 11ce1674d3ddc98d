"""The ``tp`` family: the smallest tensor-parallel degree whose cards hold the model.

A replica split N ways pools N × utilisation × card, pays N activation
reserves and holds one copy of the weights, exactly as the capacity ladder
(:mod:`.ladder`) counts it. The family asks the ladder's question backwards:
the fewest cards whose budget holds the weights *and* one user's KV cache at
the context limit,

    N × (card × utilisation − reserve) − weights ≥ per-user cache,

then rounds N up to a degree an engine supports and a buyer can order: 1, 2,
4 or 8 inside a node (powers of two up to the node's size), then whole nodes
(16, 24, 32 … for eight-card nodes).

Steps: ``weights_gib``, ``kv_bytes_per_token``, ``per_user_gib`` (the ladder's
formulas), ``usable_per_gpu_gib`` (one card × utilisation), ``room_per_gpu_gib``
(that less the card's activation reserve), ``min_gpus`` (the raw count,
⌈(weights + one user) ÷ room per card⌉), ``tp_degree`` (that
count rounded up to a buyable degree) and ``nodes``. The notes check that the
degree splits the attention heads evenly, say when K/V heads are replicated,
and name the over-engineering tell when a model that fits one card is split.

A model may be given by parameter count (``params_b``, in billions) so that
the runbook's 700B example is computable: 700e9 bytes at fp8 = 651.93 GiB
against 8 × 79.65 × 0.90 = 573.47 GiB on a full node of H100s.
"""

from __future__ import annotations

import math
from typing import Any

import sympy
from sympy import ceiling

from ..catalog import NOMINAL_BITS, Catalog, Gpu, weight_bits
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import memory as F
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from ..step_model import Replica, check_degree, kv_replication, step_ms
from .base import (
    KV_DTYPES_DRAWN,
    POWER_OF_TWO,
    Family,
    Offline,
    Plan,
    StepSpec,
    computing_gpus,
    draw_context,
    evaluate,
    evaluate_steps,
    format_number,
    gpu_supports,
    widths_given,
    widths_notes,
)
from .inputs import (
    GPU,
    KV_DTYPE,
    MODEL,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    input_or_default,
    resolve_model,
)
from .kv import kv_given, kv_notes, kv_per_token_spec, per_user_spec, replication_spec
from .params import params_given

# --- The degree a tensor-parallel replica can be bought in: whole nodes or a power of two in one, splitting …

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


# --- What tensor parallelism's all-reduces cost per step, and when a bigger degree stops paying.

# Degrees compared for "when does a bigger one stop paying": powers of two to 64.
DEGREES_COMPARED = (1, 2, 4, 8, 16, 32, 64)


def _replica(cfg: ModelConfig, gpu: Gpu, degree: int, weights_dtype: str, kv_dtype: str,
             weights_bits: float | None) -> Replica | None:
    try:
        check_degree(cfg, degree)
        return Replica(cfg, gpu, degree, weights_dtype, kv_dtype, weights_bits)
    except InputError:
        return None


def comm_notes(cfg: ModelConfig, gpu: Gpu, degree: int, weights_dtype: str, kv_dtype: str,
               weights_bits: float | None, per_node: int) -> tuple[dict, list[str]]:
    """(extra values, sentences) on the all-reduce cost at ``degree`` and the degree past which
    a single stream's step (batch 1, empty cache) no longer falls. ``extra`` holds ``comm_ms``
    and ``step_ms`` at the degree (ms) and ``fastest_degree`` (cards); empty when the step
    cannot be costed (a link with no figure on record, a degree the heads refuse)."""
    replica = _replica(cfg, gpu, degree, weights_dtype, kv_dtype, weights_bits)
    if replica is None:
        return {}, []
    notes = []
    here = step_ms(replica, decode_batch=1, decode_context_tokens=0)
    link, kind = replica.link
    if degree > 1 and link is not None:  # a ring without a link on record was refused when the replica was made
        notes.append(
            f"All-reduces: 2 per layer × {cfg.layers} layers = {2 * cfg.layers} per step, each moving "
            f"{cfg.hidden_size:,} × 2 B per token over {kind} ({format_number(link, 'GB/s')} per direction). "
            f"At batch 1 they cost {here.comm_ms:.3f} ms of a {here.step_ms:.3f} ms step (memory "
            f"{here.memory_ms:.3f} ms at {replica.bandwidth_efficiency:.0%} of peak bandwidth); "
            f"{_larger_part(replica, here.comm_ms)}.")
    steps = {degree: here.step_ms} if degree in DEGREES_COMPARED else {}  # the settled degree, costed once
    for candidate in DEGREES_COMPARED:
        other = _replica(cfg, gpu, candidate, weights_dtype, kv_dtype, weights_bits) if candidate > degree else None
        if other is not None:
            steps[candidate] = step_ms(other, decode_batch=1, decode_context_tokens=0).step_ms
    if not steps:
        return {"comm_ms": here.comm_ms, "step_ms": here.step_ms}, notes
    fastest = min(steps, key=lambda candidate: steps[candidate])
    if fastest == max(steps) and fastest > degree:
        notes.append(f"A single stream's step keeps falling through {fastest} cards, the largest degree compared "
                     f"({steps[degree]:.3f} → {steps[fastest]:.3f} ms), but ever more slowly: the all-reduces' "
                     f"fixed latency stays while the memory time halves.")
    elif fastest > degree:
        notes.append(f"A single stream's step keeps falling up to {fastest} cards "
                     f"({steps[degree]:.3f} → {steps[fastest]:.3f} ms); beyond that the all-reduces cost more "
                     f"than the halved memory time saves, so a bigger degree stops paying.")
    elif len(steps) > 1:
        bigger = min(d for d in steps if d > degree)
        notes.append(f"A bigger degree does not pay for latency: at {bigger} cards a single stream's step is "
                     f"{steps[bigger]:.3f} ms against {steps[degree]:.3f} ms here, because the all-reduces "
                     f"cost more than the halved memory time saves.")
    return {"comm_ms": here.comm_ms, "step_ms": here.step_ms, "fastest_degree": fastest}, notes


def _larger_part(replica: Replica, comm_ms: float) -> str:
    """Which part of the all-reduce time dominates: the fixed latency or the bytes."""
    latency_ms = 2 * replica.model.layers * replica.allreduce_latency_us / 1000
    if latency_ms >= comm_ms / 2:
        return (f"the {replica.allreduce_latency_us:g} µs fixed cost per collective ({latency_ms:.3f} ms in all), "
                f"not the bytes, is most of it")
    return f"the bytes, not the {replica.allreduce_latency_us:g} µs fixed cost per collective, are most of it"


# --- The tp family's notes: how the heads split, how many users fit, whether a proposed card count works.

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


PARAMS_B = InputSpec(
    "params_b", "float", None,
    "parameters in billions, replacing the model's own count (the model still gives the KV cache and "
    "the heads)", minimum=0, maximum=100_000, exclusive_minimum=True, label="Parameters (billions)")
TP_CONTEXT = InputSpec("context", "int", 8192, "context limit of the one user who must fit, tokens "
                       "(0 sizes the weights alone)", minimum=0, maximum=10_000_000, unit="tok", label="Context limit")
GPUS_PER_NODE = InputSpec("gpus_per_node", "int", 8, "cards per node (a power of two: 8 for an HGX or "
                          "DGX board)", minimum=1, maximum=64, unit="GPUs", label="GPUs per node")
PROPOSED_GPUS = InputSpec("proposed_gpus", "int", None, "a proposed number of cards to check against the "
                          "minimum", minimum=1, maximum=4096, unit="GPUs", label="Proposed GPUs")

INPUTS = (MODEL, PARAMS_B, GPU, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, TP_CONTEXT, UTILIZATION, RESERVE_GIB,
          GPUS_PER_NODE, PROPOSED_GPUS)

STEP_KEYS = ("weights_gib", "kv_bytes_per_token", "kv_replication", "per_user_gib", "usable_per_gpu_gib",
             "room_per_gpu_gib", "min_gpus", "tp_degree", "nodes")


# --- formulas ----------------------------------------------------------------------------------

USABLE_PER_GPU_GIB = Formula(
    "usable_per_gpu_gib",
    (Var("card_mib", "MiB", "memory per card (driver-reported total)"),
     Var("utilization", "1", "utilisation fraction")),
    lambda s: product(s["card_mib"], s["utilization"]),
)

ROOM_PER_GPU_GIB = Formula(
    "room_per_gpu_gib",
    (Var("usable_per_gpu_gib", "GiB", "usable memory per card"),
     Var("reserve_gib", "GiB", "activation reserve per card")),
    lambda s: total(s["usable_per_gpu_gib"], -s["reserve_gib"]),
    label="Room per card for weights and cache",
)

MIN_GPUS = Formula(
    "min_gpus",
    (Var("weights_gib", "GiB", "weights"),
     Var("per_user_gib", "GiB", "KV cache of one user at the context limit"),
     Var("room_per_gpu_gib", "GiB", "room per card after the reserve")),
    lambda s: ceiling(ratio(total(s["weights_gib"], s["per_user_gib"]), s["room_per_gpu_gib"])),
)

TP_DEGREE = Formula(
    "tp_degree",
    (Var("min_gpus", "GPUs", "cards needed"), Var("gpus_per_node", "GPUs", "cards per node"),
     Var("heads", "1", "query heads (num_attention_heads)"),
     Var("kv_heads", "1", "K/V heads (num_key_value_heads)")),
    lambda s: next_tp_degree(s["min_gpus"], s["gpus_per_node"], s["heads"], s["kv_heads"]),
)

NODES = Formula(
    "nodes",
    (Var("tp_degree", "GPUs", "tensor-parallel degree"), Var("gpus_per_node", "GPUs", "cards per node")),
    lambda s: ceiling(ratio(s["tp_degree"], s["gpus_per_node"])),
)

ALL_FORMULAS = (USABLE_PER_GPU_GIB, ROOM_PER_GPU_GIB, MIN_GPUS, TP_DEGREE, NODES)


def tp_specs(cfg: ModelConfig, given: dict[str, float]) -> list[StepSpec]:
    """The eight steps for a model (the KV formulas depend on its attention, the weights' on whether ``given``
    holds routed experts: none for a model given by its parameter count)."""
    return [
        StepSpec(F.weights_form(given["routed_expert_params"] > 0, gib=True)),
        kv_per_token_spec(cfg),
        replication_spec(cfg),
        per_user_spec(cfg, "KV cache of one user at the context limit (replica-wide)", replication_step=True),
        # Tight: the marketed 80 GB × 0.90 = 72 is 0.45 % off an H100's 71.68 — a misconception, not rounding.
        StepSpec(USABLE_PER_GPU_GIB,
                 tolerance=0.001,
                 label="Usable memory per card (× utilisation)"),
        StepSpec(ROOM_PER_GPU_GIB,
                 {"usable_per_gpu_gib": "usable_per_gpu_gib"},
                 label="Room per card (after the activation reserve)"),
        StepSpec(MIN_GPUS,
                 {"weights_gib": "weights_gib", "per_user_gib": "per_user_gib",
                  "room_per_gpu_gib": "room_per_gpu_gib"}, rounding="ceil"),
        StepSpec(TP_DEGREE, {"min_gpus": "min_gpus"},
                 rounding="ceil",
                 label="Tensor-parallel degree (a buyable split)"),
        StepSpec(NODES, {"tp_degree": "tp_degree"}, rounding="ceil"),
    ]


# --- notes -------------------------------------------------------------------------------------

# --- the procedure -----------------------------------------------------------------------------

def plan_tp(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """The smallest tensor-parallel degree whose cards hold the weights and one user's KV cache.

    ``raw`` holds ``model`` (catalog id) or ``config``, optionally ``params_b``
    (parameters in billions, replacing the model's count for the weights),
    ``gpu``, ``weights_dtype``/``weights_bits``, ``kv_dtype``, ``context``
    (tokens; 0 sizes the weights alone), ``utilization`` (fraction),
    ``reserve_gib`` (GiB per card), ``gpus_per_node`` (a power of two) and
    ``proposed_gpus`` (cards, optional). Card memory is the driver-reported
    total of ``gpus.json``. ``result.extra`` holds ``heads_divisible``,
    ``users_at_degree`` and ``over_engineered``. Raises
    :class:`~..errors.EngineError` subclasses on bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    per_node = inputs["gpus_per_node"]
    if per_node & (per_node - 1):
        raise InputError(POWER_OF_TWO.format(name="gpus_per_node", value=per_node), field="gpus_per_node")
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    by_count = inputs["params_b"] is not None
    widths = widths_given(cfg, inputs)
    if by_count:  # a count has no experts to tell apart: one width for all of it
        widths = {**widths, "weight_bits": weight_bits(inputs["weights_dtype"], inputs["weights_bits"])}
        widths["expert_weight_bits"] = widths["weight_bits"]
    bits = widths["weight_bits"]
    given = {
        # A model given by count has no embedding table to miscount: leave its parts out.
        **({} if by_count else params_given(cfg)),
        **kv_given(cfg, inputs["kv_dtype"]),
        **F.weights_given(cfg, inputs["weights_dtype"], inputs["weights_bits"]),
        **widths,
        **({"total_params": inputs["params_b"] * 1e9, "routed_expert_params": 0} if by_count else {}),
        "card_mib": gpu.memory_mib,
        "card_marketed_gb": gpu.marketed_gb,
        "utilization": inputs["utilization"],
        "reserve_gib": inputs["reserve_gib"],
        "context": inputs["context"],
        "gpus_per_node": per_node,
    }
    usable = USABLE_PER_GPU_GIB(given)
    if usable <= inputs["reserve_gib"]:
        raise InputError(f"The {format_number(inputs['reserve_gib'], 'GiB')} reserve leaves nothing of the "
                         f"{format_number(usable, 'GiB')} usable on one {gpu.name}.", field="reserve_gib")
    specs = tp_specs(cfg, given)
    given, values = _settle_degree(cfg, specs, given)
    degree, weights, per_user = int(values["tp_degree"]), values["weights_gib"], values["per_user_gib"]

    notes = proposal_notes(inputs["proposed_gpus"], degree, per_node, gpu.name) + [gpu.memory_note]
    if by_count:
        notes.append(f"Weights from params_b: {inputs['params_b']:g} billion parameters × {bits:g} bits = "
                     f"{given['total_params'] * bits / 8 / 1e9:,.1f} GB = {format_number(weights, 'GiB')}; the "
                     f"KV cache and the heads come from {model_name}'s config.")
    notes += widths_notes(cfg, inputs) if not by_count else []
    if bits != NOMINAL_BITS[inputs["weights_dtype"]] and bits == given["expert_weight_bits"]:
        notes.append(f"{inputs['weights_dtype']} weights are charged {bits:g} bits each, not the nominal "
                     f"{NOMINAL_BITS[inputs['weights_dtype']]}.")
    if degree > per_node:
        node_usable = per_node * usable
        node_room = per_node * (usable - inputs["reserve_gib"])
        after = f", {format_number(node_room, 'GiB')} after the reserves" if inputs["reserve_gib"] else ""
        notes.append(
            f"A full node of {per_node} × {gpu.name} gives {per_node} × {format_number(usable, 'GiB')} = "
            f"{format_number(node_usable, 'GiB')} usable{after}: short of the "
            f"{format_number(weights + per_user, 'GiB')} of weights and one user, so the replica spans "
            f"{int(values['nodes'])} nodes. Across nodes, deployments usually keep tensor parallelism inside "
            f"each node's NVLink domain and split the layers between nodes (pipeline parallel); the card "
            f"count is the same.")
    room = degree * (usable - inputs["reserve_gib"]) - weights
    users = math.floor(room / per_user) if per_user > 0 else None
    notes.append(users_note(room, per_user, given["kv_replication"], degree, gpu.name, inputs["context"]))
    notes += head_notes(cfg, degree, per_node)
    comm = comm_notes(cfg, gpu, degree, inputs["weights_dtype"], inputs["kv_dtype"], inputs["weights_bits"],
                      per_node) if not by_count else ({}, [])
    notes += comm[1]
    notes += kv_notes(cfg) + list(cfg.notes)
    extra = {
        "heads_divisible": cfg.heads % degree == 0,
        "users_at_degree": users,
        "over_engineered": degree == 1 and (inputs["proposed_gpus"] or 1) > 1,
        "model_name": model_name,
        **comm[0],
    }
    return Plan("tp", inputs, specs, given, notes, extra)


def _settle_degree(cfg: ModelConfig, specs: list[StepSpec], given: dict) -> tuple[dict, dict]:
    """Evaluate the steps at the degree they choose: a degree above the K/V head count replicates
    each user's cache, which can call for a larger degree still, so iterate to the fixed point
    (the degree only grows, over a finite ladder)."""
    degree = 1
    while True:
        at = {**given, "gpus": degree, "kv_replication": kv_replication(cfg, degree)}
        values = evaluate_steps(specs, at)
        chosen = int(values["tp_degree"])
        if chosen <= degree or not splits_heads(chosen, cfg.heads, cfg.kv_heads):
            return at, values
        degree = chosen


# --- problems ----------------------------------------------------------------------------------

WEIGHT_DTYPES_DRAWN = ("bf16", "bf16", "fp8", "int8", "int4")
MAX_DEGREE_DRAWN = 32
MULTI_CARD_SHARE = 0.8
MAX_DRAWS = 300


def generate_tp(rng, catalog: Catalog) -> dict:
    """A tensor-parallel sizing problem on a catalog model and card.

    Eight times in ten the answer needs more than one card (at most
    :data:`MAX_DEGREE_DRAWN`, four nodes); otherwise it fits on one, which is
    the over-engineering question turned round. Deterministic for a given
    ``rng``; on a catalog pinned to a stack that is always the other kind, the first
    draw of that kind; ``RuntimeError`` when :data:`MAX_DRAWS` draws give no problem.
    """
    want_split = rng.random() < MULTI_CARD_SHARE
    models, gpus = sorted(catalog.models), sorted(computing_gpus(catalog))
    other = None
    for _ in range(MAX_DRAWS):
        model, gpu = rng.choice(models), rng.choice(gpus)
        weights = rng.choice(WEIGHT_DTYPES_DRAWN)
        if not gpu_supports(catalog, gpu, weights):
            weights = "int8"
        inputs = {"model": model, "gpu": gpu, "weights_dtype": weights,
                  "kv_dtype": rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, gpu, "fp8") else "bf16",
                  "context": draw_context(rng, catalog, model),
                  "utilization": rng.choice((0.85, 0.88, 0.9, 0.9, 0.92, 0.95)),
                  "reserve_gib": rng.choice((1.0, 2.0, 3.0, 3.0, 4.0)), "gpus_per_node": rng.choice((8, 8, 8, 4))}
        degree = evaluate(plan_tp(inputs, catalog)).values["tp_degree"]
        config = catalog.model(model).config
        if not splits_heads(int(degree), config.heads, config.kv_heads):
            continue  # no degree an engine accepts (Falcon-7B's 71 heads beyond one card): not a fair problem
        if degree <= MAX_DEGREE_DRAWN and (degree > 1) == want_split:
            return inputs
        if degree <= MAX_DEGREE_DRAWN:  # the other kind: kept for a catalog pinned to a stack that is always it
            other = other or inputs
    if other is not None:
        return other
    raise RuntimeError("No tensor-parallel problem could be drawn from the catalog.")


TP_RUBRIC = (
    "Sizes the split for the weights and at least one user, not the weights alone",
    "Rounds to a degree the heads divide and the inference engine supports, then to whole nodes",
    "Counts K/V replication past the K/V head count",
    "Keeps the tensor-parallel group inside one NVLink domain and names the all-reduce cost",
)


FAMILIES = (
    Family("tp", "Tensor-parallel degree",
           "The fewest cards, rounded to a degree an engine supports and to whole nodes, that hold the "
           "weights and one user's KV cache.",
           INPUTS, plan_tp, generate=generate_tp,
           order=110, describe=describe_tp,
           headlines=("tp_degree", "nodes"), chapter="11-multi-gpu", difficulty=3, rubric=TP_RUBRIC,
           offline=Offline(checks=({"kind": "power_of_two", "name": "gpus_per_node", "message": POWER_OF_TWO},),
                           settled=("gpus", "kv_replication"))),
)

"""The capacity ladder: how many users one replica serves (formula 3).

Eight steps, in this order (docs/architecture.md §10): ``card_gib``, ``usable_gib`` (×
utilisation), ``weights_gib``, ``kv_budget_gib`` (after the activation reserve),
``kv_bytes_per_token``, ``per_user_gib`` (at the context limit),
``users_worst_case`` and ``users_paged`` (the average conversation rounded up to
whole KV blocks). A replica of N cards (tensor parallel) pools N × utilisation
× card, pays N reserves, and holds one copy of the weights; ``per_user_gib`` is
one user's replica-wide cache, × the K/V replication N needs (docs/architecture.md §12: a
K/V head is never split, so 16 cards over 8 K/V heads keep every head twice). With ``pp``
pipeline stages (docs/architecture.md §12) the replica is ``gpus × pp`` cards: each stage of
``gpus`` cards holds layers ÷ pp of the weights and of every user's cache, so the pool, the
reserves and the one copy of the weights are those of ``gpus × pp`` cards while the K/V
replication is the tensor-parallel degree's (16 H100s as TP 8 × PP 2 keep every head once, and
serve twice the users at a long context of TP 16's); a ``pp`` that does not divide the layers is
an input error (field ``pp``). When
nothing fits, the result says by how much and which tensor-parallel degree (1, 2, 4
or 8) would serve at least one user.
"""

from __future__ import annotations

from typing import Any

import sympy

from ..catalog import NOMINAL_BITS, Catalog, article
from ..formulas import memory as F
from ..step_model import check_stages, kv_replication
from .base import (
    DEGREE_RULE,
    KV_DTYPES_DRAWN,
    Family,
    Offline,
    Plan,
    Result,
    StepSpec,
    draw_context,
    draw_gpu,
    draw_model,
    draw_weights_dtype,
    evaluate,
    evaluate_steps,
    format_number,
    gpu_supports,
    weights_phrase,
    widths_given,
    widths_notes,
)
from .inputs import (
    AVG_TOKENS,
    BLOCK_SIZE,
    CONTEXT,
    GPU,
    GPUS,
    KV_DTYPE,
    MODEL,
    PP,
    RESERVE_GIB,
    UTILIZATION,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)
from .kv import (
    fp4_cache_note,
    kv_given,
    kv_notes,
    kv_per_token_spec,
    per_user_spec,
    replication_notes,
    valid_degree,
    window_note,
)
from .params import params_given

INPUTS = (MODEL, GPU, GPUS, PP, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, CONTEXT, UTILIZATION, RESERVE_GIB,
          AVG_TOKENS, BLOCK_SIZE)

STEP_KEYS = ("card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token",
             "per_user_gib", "users_worst_case", "users_paged")

# The K/V replication of a replica of ``gpus`` cards in ``pp`` stages (the offline export's rule: its ``gpus`` is the
# replica's cards, the given number the card and budget steps read): the tensor-parallel degree's, gpus ÷ pp
# (step_model.kv_replication).
_CARDS, _STAGES = sympy.Symbol("gpus"), sympy.Symbol("pp")
STAGED_REPLICATION = sympy.Piecewise(
    (_CARDS / _STAGES, sympy.StrictGreaterThan(sympy.Symbol("kv_lora_rank"), 0)),
    (sympy.Max(1, _CARDS / _STAGES / sympy.Symbol("kv_heads")), True))

# Tensor-parallel degrees engines support on one node.
TP_DEGREES = (1, 2, 4, 8)


def ladder_specs(cfg) -> list[StepSpec]:
    """The eight steps for a model (the KV and paged formulas depend on its attention, the weights' on its
    routed experts)."""
    paged = F.USERS_PAGED_WINDOWED if cfg.window_layers else F.USERS_PAGED
    return [
        # Tight: the marketed 80 (0.44 % off an H100's 79.65 GiB) is a misconception, not rounding.
        StepSpec(F.CARD_GIB, tolerance=0.001),
        StepSpec(F.USABLE_GIB, {"card_gib": "card_gib"}, label="Usable memory (× utilisation)"),
        StepSpec(F.weights_form(cfg.is_moe, gib=True)),
        StepSpec(F.KV_BUDGET_GIB,
                 {"usable_gib": "usable_gib", "weights_gib": "weights_gib"},
                 label="KV cache budget (after the activation reserve)"),
        kv_per_token_spec(cfg),
        per_user_spec(cfg, "KV cache per user at the context limit"),
        StepSpec(F.USERS_WORST_CASE,
                 {"kv_budget_gib": "kv_budget_gib", "per_user_gib": "per_user_gib"}, rounding="floor",
                 label="Users, worst case (every user at the limit)"),
        StepSpec(paged,
                 {"kv_budget_gib": "kv_budget_gib", "kv_bytes_per_token": "kv_bytes_per_token"},
                 rounding="floor",
                 label="Users, paged (average conversation in whole blocks)"),
    ]


# The alert a replica that cannot serve one user at the context limit gets: what does not fit, then the smallest
# degree that would (a pipeline-parallel replica's degree is a stage's). The offline calculator fills the same
# templates (runbook/export ships them as the family's ``not_fitting`` extra; static/js/offline-calculator.js).
NOT_FITTING = {
    "weights": "The weights and reserve do not fit: {short} short of {usable} usable.",
    "user": "The weights fit, but the {left} left cannot hold one user's {per_user} at the context limit.",
    "no_degree": "Even {degree} × {gpu} cannot serve one user at the context limit.",
    "degree": "The smallest tensor-parallel degree that serves at least one user at the context limit is "
              "{degree} × {gpu}.",
    "stages": " a stage, in {pp} pipeline stages.",
}


def smallest_tp_degree(specs: list[StepSpec], given: dict[str, float], cfg, pp: int = 1) -> int | None:
    """The smallest degree in :data:`TP_DEGREES` that obeys the degree rule and whose replica (of ``pp``
    pipeline stages of that many cards) serves at least one user at the context limit (its cache
    replicated as that degree needs), or ``None`` if even eight cards a stage do not."""
    for degree in TP_DEGREES:
        if not valid_degree(cfg, degree):
            continue
        at_degree = {**given, "gpus": degree * pp, "kv_replication": kv_replication(cfg, degree)}
        if evaluate_steps(specs, at_degree)["users_worst_case"] >= 1:
            return degree
    return None


def plan_ladder(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Run the capacity ladder on ``raw`` inputs (snake-case names of :data:`INPUTS`).

    Missing inputs take the reference stack's values (Llama-3.1-8B, bf16, one
    H100 SXM, 8,192 tokens, 0.90, 3 GiB, 2,300 tokens, 16-token blocks, one pipeline stage), which
    give 53 users worst case and 191 paged. ``pp`` stages of ``gpus`` cards make a replica of
    ``gpus × pp`` cards (the ``gpus`` of the card and budget steps), its K/V replication the
    tensor-parallel ``gpus``'s. Card memory is the driver-reported
    total from ``gpus.json`` (81,559 MiB for the H100 SXM). ``result.extra``
    holds ``fits``, ``shortfall_gib``, ``min_tp_degree``, ``paged_user_gib`` and
    ``model_name``. Raises
    :class:`~..errors.EngineError` subclasses on bad input, an
    :class:`~..errors.InputError` naming ``pp`` when it does not divide the model's layers.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    check_stages(cfg, inputs["pp"])
    cards = inputs["gpus"] * inputs["pp"]
    gpu = catalog.gpu(inputs["gpu"])
    given = {
        **params_given(cfg),
        **kv_given(cfg, inputs["kv_dtype"], inputs["gpus"]),
        **F.weights_given(cfg, inputs["weights_dtype"], inputs["weights_bits"]),
        **widths_given(cfg, inputs),
        "gpus": cards,
        "card_mib": gpu.memory_mib,
        "card_marketed_gb": gpu.marketed_gb,
        "utilization": inputs["utilization"],
        "reserve_gib": inputs["reserve_gib"],
        "context": inputs["context"],
        # No conversation outlives the context limit, so paged never counts fewer users than worst case.
        "avg_tokens": min(inputs["avg_tokens"], inputs["context"]),
        "block_size": inputs["block_size"],
    }
    bits = given["weight_bits"]
    specs = ladder_specs(cfg)

    def finish(result: Result) -> None:
        values = result.values

        notes = [gpu.memory_note, *fp4_cache_note(inputs["kv_dtype"], gpu)]
        if inputs["pp"] > 1:
            notes.append(f"{inputs['pp']} pipeline stages of {inputs['gpus']} × {gpu.name}: a replica of {cards} "
                         f"cards (the GPUs in the card and budget steps), each stage holding "
                         f"{cfg.layers // inputs['pp']} of the {cfg.layers} layers' weights and cache; the K/V "
                         f"replication is the tensor-parallel degree's, {inputs['gpus']}.")
        if inputs["avg_tokens"] > inputs["context"]:
            notes.append(f"The average conversation ({inputs['avg_tokens']:,} tokens) is longer than the context "
                         f"limit; no conversation can outgrow the limit, so the paged count uses "
                         f"{inputs['context']:,} tokens.")
        notes += window_note(cfg, inputs["context"])
        notes += widths_notes(cfg, inputs)
        if bits != NOMINAL_BITS[inputs["weights_dtype"]] and bits == given["expert_weight_bits"]:
            notes.append(f"{inputs['weights_dtype']} weights are charged {bits:g} bits each, not the nominal "
                         f"{NOMINAL_BITS[inputs['weights_dtype']]}.")
        notes += kv_notes(cfg) + replication_notes(cfg, inputs["gpus"]) + list(cfg.notes)
        paged_gib = F.PAGED_USER_GIB(given | {"kv_bytes_per_token": values["kv_bytes_per_token"]})
        conversation = int(given["avg_tokens"])
        blocks = -(-conversation // inputs["block_size"])
        notes.append(
            f"Paged: an average conversation of {conversation:,} tokens takes {blocks:,} blocks of "
            f"{inputs['block_size']} ({blocks * inputs['block_size']:,} tokens), "
            f"{paged_gib:.3f} GiB before any window. Quote the worst case for what you can "
            f"guarantee and the paged count for what you will observe."
        )

        budget = values["kv_budget_gib"]
        fits = values["users_worst_case"] >= 1
        extra = {"fits": fits, "shortfall_gib": 0.0, "min_tp_degree": inputs["gpus"] if fits else None,
                 "paged_user_gib": paged_gib, "model_name": model_name}
        if not fits:
            degree = smallest_tp_degree(specs, given, cfg, inputs["pp"])
            extra["min_tp_degree"] = degree
            if budget < 0:
                extra["shortfall_gib"] = -budget
                what = NOT_FITTING["weights"].format(short=format_number(-budget, "GiB"),
                                                     usable=format_number(values["usable_gib"], "GiB"))
            else:
                extra["shortfall_gib"] = values["per_user_gib"] - budget
                what = NOT_FITTING["user"].format(left=format_number(budget, "GiB"),
                                                  per_user=format_number(values["per_user_gib"], "GiB"))
            if degree is None:
                where = NOT_FITTING["no_degree"].format(degree=TP_DEGREES[-1], gpu=gpu.name)
            else:
                where = NOT_FITTING["degree"].format(degree=degree, gpu=gpu.name)
            if inputs["pp"] > 1:
                where = where.rstrip(".") + NOT_FITTING["stages"].format(pp=inputs["pp"])
            notes.insert(0, f"{what} {where}")
        result.notes.extend(notes)
        result.extra.update(extra)

    return Plan("ladder", inputs, specs, given, [], {"model_name": model_name}, finish=finish)


NON_FITTING_SHARE = 0.1
MAX_DRAWS = 200


def _draw_candidate(rng, catalog: Catalog) -> dict:
    model, gpu = draw_model(rng, catalog), draw_gpu(rng, catalog)
    weights = draw_weights_dtype(rng, catalog, gpu)
    context = draw_context(rng, catalog, model)
    return {
        "model": model,
        "gpu": gpu,
        "gpus": 1,
        "weights_dtype": weights,
        "kv_dtype": rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, gpu, "fp8") else "bf16",
        "context": context,
        "utilization": rng.choice((0.85, 0.88, 0.9, 0.9, 0.92, 0.95)),
        "reserve_gib": rng.choice((1.0, 1.5, 2.0, 2.5, 3.0, 4.0)),
        "avg_tokens": rng.randrange(300, max(301, context * 2 // 3), 50),
        "block_size": rng.choice((16, 16, 32)),
    }


def generate_ladder(rng, catalog: Catalog) -> dict:
    """A ladder problem: fitting (at the smallest TP degree that serves a user) 9 times
    in 10, deliberately not fitting the tenth time.

    Deterministic for a given ``rng``; raises ``RuntimeError`` when :data:`MAX_DRAWS` draws give
    no such problem."""
    want_fit = rng.random() >= NON_FITTING_SHARE
    other = None  # the first draw of the other kind, for a catalog pinned to a stack that is always one kind
    for _ in range(MAX_DRAWS):
        inputs = _draw_candidate(rng, catalog)
        result = evaluate(plan_ladder(inputs, catalog))
        degree = result.extra["min_tp_degree"]
        if want_fit:
            if degree is None:
                other = other or inputs
                continue
            inputs["gpus"] = degree
            return inputs
        if not result.extra["fits"]:
            return inputs
        other = other or {**inputs, "gpus": degree or 1}
    if other is not None:
        return other
    raise RuntimeError("No ladder problem could be drawn from the catalog.")


def describe_ladder(inputs: dict, catalog: Catalog) -> str:
    """A ladder problem in the words an interviewer would use."""
    gpu = catalog.gpu(inputs["gpu"]).name
    cards = f"one {gpu}" if inputs["gpus"] == 1 else f"a replica of {inputs['gpus']} × {gpu} (tensor parallel)"
    if inputs.get("pp", 1) > 1:
        cards = f"{inputs['pp']} pipeline stages, each {cards.removeprefix('a replica of ')}"
    cache = f"{article(inputs['kv_dtype'])} {inputs['kv_dtype']} KV cache"
    return (
        f"Serve {inputs['model']} with {weights_phrase(inputs)} and {cache} on {cards}. "
        f"The engine may use {inputs['utilization'] * 100:g} % of each card's memory and keeps "
        f"{inputs['reserve_gib']:g} GiB per card for activations. Each user may hold up to {inputs['context']:,} "
        f"tokens; a typical conversation is {inputs['avg_tokens']:,} tokens, stored in blocks of "
        f"{inputs['block_size']} tokens. Work the whole ladder: how many users does the replica serve, worst case "
        f"and paged? If nothing fits, the user counts are 0."
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
LADDER_RUBRIC = (
    "Starts from the memory the driver reports, in GiB, not the marketed decimal GB",
    "Multiplies by the utilisation fraction before subtracting anything",
    "Subtracts the weights at their stated precision and the activation reserve per card",
    "Computes KV bytes per token from the K/V heads (not the query heads) and bytes per value (not bits), "
    "with any K/V replication across the cards",
    "Charges each user the full context for the worst case, and the average conversation in whole blocks "
    "for the paged count",
    "Floors each user count once, from the budget, and says which count is the guarantee and which the "
    "observation",
)


FAMILIES = (
    Family("ladder", "Capacity ladder",
           "How many users one replica serves: card, utilisation, weights, reserve, KV cache.",
           INPUTS, plan_ladder, generate=generate_ladder, order=10, describe=describe_ladder,
           headlines=("users_worst_case", "users_paged"), chapter="06-kv-cache",
           roles=("architect", "engineer", "manager"), rubric=LADDER_RUBRIC,
           offline=Offline(adapters={"avg_tokens": sympy.Min(sympy.Symbol("avg_tokens"), sympy.Symbol("context")),
                                     "gpus": sympy.Symbol("gpus") * sympy.Symbol("pp")},
                           derived={"kv_replication": STAGED_REPLICATION},
                           checks=(DEGREE_RULE,), alert="ladder", givens=("avg_tokens", "block_size"),
                           extras={"paged_user_gib": F.PAGED_USER_GIB, "tp_degrees": list(TP_DEGREES),
                                   "not_fitting": NOT_FITTING})),
)

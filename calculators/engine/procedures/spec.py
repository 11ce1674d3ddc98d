"""The ``spec`` family: speculative decoding's expected tokens per step and its speed-up bound.

A draft model proposes γ tokens; one target forward pass scores all γ + 1
positions at once and keeps the longest prefix it agrees with, plus one token
of its own (the correction at the first rejection, or a bonus token when every
draft survives). With a constant, independent per-token acceptance rate α:

* ``expected_tokens`` E = (1 − α^(γ+1)) ÷ (1 − α) tokens per verify step (the
  geometric sum 1 + α + … + α^γ);
* ``speedup`` = E ÷ (1 + γ·c), where c is one draft pass as a fraction of a
  target pass: a step costs γ draft passes and one target pass, and yields E
  tokens where plain decoding yields 1.

Both are the expectation and the walltime bound of Leviathan, Kalman and Matias,
"Fast Inference from Transformers via Speculative Decoding" (ICML 2023). The
bound assumes the target pass costs the same for γ + 1 positions as for one,
which holds while decode is bandwidth-bound (small batches).
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from sympy import Pow, Symbol

from ..catalog import Catalog
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..hf_config import param_breakdown
from .base import Family, Offline, Plan, Result, StepSpec, evaluate_steps, format_number
from .inputs import InputSpec, catalog_or_default, clean_inputs

# α stops short of 1: at α = 1 the closed form is 0/0 (its limit is γ + 1, every draft accepted).
MAX_ALPHA = 0.99
MAX_GAMMA = 32

ALPHA = InputSpec("alpha", "float", 0.8, "per-token acceptance rate α (0 to 0.99)", minimum=0, maximum=MAX_ALPHA,
                  label="Acceptance rate α")
GAMMA = InputSpec("gamma", "int", 4, "draft tokens proposed per verify step γ", minimum=1, maximum=MAX_GAMMA,
                  unit="tok", label="Draft tokens γ")
DRAFT_COST = InputSpec("draft_cost", "float", 0.05, "one draft forward pass as a fraction c of a target pass",
                       minimum=0, maximum=1, label="Draft cost c")
INPUTS = (ALPHA, GAMMA, DRAFT_COST)
STEP_KEYS = ("expected_tokens", "speedup")

EXPECTED_TOKENS = Formula(
    "expected_tokens",
    (Var("alpha", "1", "per-token acceptance rate α"), Var("gamma", "tok", "draft tokens per step γ")),
    lambda s: ratio(total(1, -Pow(s["alpha"], total(s["gamma"], 1))), total(1, -s["alpha"])),
)

SPEEDUP = Formula(
    "speedup",
    (Var("expected_tokens", "tok", "expected tokens per verify step"),
     Var("gamma", "tok", "draft tokens per step γ"),
     Var("draft_cost", "1", "draft pass as a fraction c of a target pass")),
    lambda s: ratio(s["expected_tokens"], total(1, product(s["gamma"], s["draft_cost"]))),
)

ALL_FORMULAS = (EXPECTED_TOKENS, SPEEDUP)

SPECS = [
    StepSpec(EXPECTED_TOKENS,
             label="Expected tokens per verify step (accepted drafts + the target's own)"),
    StepSpec(SPEEDUP,
             {"expected_tokens": "expected_tokens"},
             label="Speed-up bound over plain decoding (E ÷ (1 + γ·c))"),
]


def best_gamma(alpha: float, draft_cost: float) -> tuple[int, float]:
    """The γ in 1 … :data:`MAX_GAMMA` that maximises the speed-up bound, and that bound."""
    best = (1, 0.0)
    for gamma in range(1, MAX_GAMMA + 1):
        value = evaluate_steps(SPECS, {"alpha": alpha, "gamma": gamma, "draft_cost": draft_cost})["speedup"]
        if value > best[1] * (1 + 1e-12):
            best = (gamma, value)
    return best


def spec_notes(inputs: dict[str, Any], values: Mapping[str, float], best: int, best_value: float) -> list[str]:
    """Conventions, limits and the batch-size caveat, in sentences; ``best`` and ``best_value`` are
    :func:`best_gamma`'s."""
    alpha, gamma, cost = inputs["alpha"], inputs["gamma"], inputs["draft_cost"]
    notes = [
        f"E counts every token a verify step emits: the drafts accepted before the first rejection plus the "
        f"one token the target pass always adds, so 1 ≤ E ≤ γ + 1 = {gamma + 1}.",
        f"The formula assumes each draft token is accepted independently with the same rate α. As α → 1 it "
        f"becomes 0/0 and E tends to its ceiling γ + 1, so α is capped at {MAX_ALPHA}; in practice acceptance "
        f"also falls along a draft, and measured E comes out lower.",
        "The speed-up is a bound: a step costs γ draft passes at c each plus one target pass, and the target "
        "pass is charged the same for γ + 1 positions as for one. Sampling and rejection overhead are ignored.",
        "It helps at small batch: a decode step there is bandwidth-bound, its time spent reading weights and "
        "KV cache, and scoring γ + 1 positions reads the same bytes as scoring one, so verification is nearly "
        "free. It hurts at large batch: the step is already compute-bound (the batch has pushed arithmetic "
        "intensity past the ridge point), so every extra position costs real FLOPs and every rejected draft is "
        "wasted work.",
        f"For α = {alpha:g} and c = {cost:g}, γ = {best} gives the largest bound, "
        f"{format_number(best_value, '1')}×.",
    ]
    if values["speedup"] < 1:
        notes.insert(0, f"With these numbers speculation is slower than plain decoding: "
                        f"{format_number(values['speedup'], '1')}× is below 1.")
    notes.append('The expectation and the bound are those of Leviathan, Kalman and Matias, "Fast Inference from '
                 'Transformers via Speculative Decoding" (ICML 2023).')
    return notes


def plan_spec(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Expected tokens per verify step (tok) and the speed-up bound (1).

    ``raw`` holds ``alpha`` (0 to 0.99), ``gamma`` (whole tokens, 1 to 32) and
    ``draft_cost`` (0 to 1, a fraction of a target forward pass); missing ones
    default to 0.8, 4 and 0.05. Raises :class:`~..errors.InputError` out of bounds.
    ``result.extra`` holds ``best_gamma`` and ``best_speedup``.
    """
    try:
        inputs = clean_inputs(INPUTS, raw, catalog_or_default(catalog))
    except InputError as exc:
        if exc.field == "alpha" and "at most" in str(exc):
            raise InputError(f"alpha must be at most {MAX_ALPHA}, not {raw.get('alpha')!r}: at α = 1 every draft "
                             f"is accepted, E is exactly γ + 1 and the formula divides 0 by 0.",
                             field="alpha") from None
        raise
    given = {"alpha": inputs["alpha"], "gamma": inputs["gamma"], "draft_cost": inputs["draft_cost"],
             "draft_tokens_plus_one": inputs["gamma"] + 1}  # the bound on E: every draft accepted, plus the target's
    best, best_value = best_gamma(inputs["alpha"], inputs["draft_cost"])

    def finish(result: Result) -> None:
        result.notes.extend(spec_notes(inputs, result.values, best, best_value))

    return Plan("spec", inputs, list(SPECS), given, [], {"best_gamma": best, "best_speedup": best_value},
                finish=finish)


# --- problems --------------------------------------------------------------------------------------

ALPHAS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
GAMMAS = (2, 3, 4, 5, 6, 8)


def draft_pairs(catalog: Catalog) -> list[tuple[str, str, float]]:
    """(draft id, target id, cost) for dense catalog models sharing a family and a vocabulary.

    The cost of one draft pass is taken as the ratio of parameter counts: at
    batch 1 a decode pass is bandwidth-bound, so its time follows the bytes of
    weights read. Rounded to two decimals, as one would quote it.
    """
    dense = [m for m in catalog.models.values() if not m.config.is_moe]
    pairs = []
    for draft in dense:
        for target in dense:
            same_tokenizer = (draft.family == target.family and draft.config.vocab_size == target.config.vocab_size)
            if draft.id == target.id or not same_tokenizer:
                continue
            small, large = param_breakdown(draft.config).total, param_breakdown(target.config).total
            if small * 1.5 <= large:
                pairs.append((draft.id, target.id, round(small / large, 2)))
    return sorted(pairs)


def generate_spec(rng: random.Random, catalog: Catalog) -> dict:
    """A spec problem: α and γ from realistic ranges; c from a real draft/target pair of the catalog."""
    pairs = draft_pairs(catalog)
    cost = rng.choice(pairs)[2] if pairs else rng.choice((0.02, 0.05, 0.1))
    return {"alpha": rng.choice(ALPHAS), "gamma": rng.choice(GAMMAS), "draft_cost": max(cost, 0.01)}


def describe_spec(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in the words an interviewer would use."""
    return (f"A draft model proposes γ = {inputs['gamma']} tokens per step, and the target model accepts each "
            f"draft token with probability α = {inputs['alpha']:g}, independently. One draft forward pass costs "
            f"c = {inputs['draft_cost']:g} of a target pass (about its share of the weights, since decode at batch 1 "
            f"is bandwidth-bound). How many tokens does one verify step yield on average, and what is the best "
            f"speed-up over plain decoding you could expect?")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
SPEC_RUBRIC = (
    "Sums 1 + α + … + α^γ, counting the target's own token",
    "Charges the draft's cost per drafted token in the speed-up",
    "Chooses γ from acceptance and draft cost rather than maximising it",
    "Says the bound holds only while the verify step is memory-bound",
)


FAMILIES = (
    Family("spec", "Speculative decoding",
           "Expected tokens per verify step and the speed-up bound, from the acceptance rate, the draft "
           "length and the draft's cost.",
           INPUTS, plan_spec, generate=generate_spec,
           order=80, describe=describe_spec,
           headlines=("speedup", "expected_tokens"), chapter="13-speculative-and-constrained", rubric=SPEC_RUBRIC,
           # The bound γ + 1 the grader reads (given, read by no step): the offline page computes it from γ too.
           offline=Offline(adapters={"draft_tokens_plus_one": Symbol("gamma") + 1})),
)

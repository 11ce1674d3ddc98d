"""The ``cost`` family: dollars per million tokens from a GPU price and a throughput.

Steps, in order: ``usd_per_hour`` (price per GPU-hour × GPUs: the whole fleet
is billed every hour, busy or not), ``tokens_per_hour`` (the fleet's tokens
per second while busy × the fraction of the hour it is busy × 3,600 s) and
``usd_per_million_tokens`` (an hour's bill ÷ an hour's tokens, per 10^6
tokens). A half-idle fleet pays the same bill for half the tokens, so the
utilisation divides straight into the cost per token.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..formula import Formula, Var
from ..formulas import product, ratio
from .base import Family, Plan, Result, StepSpec, format_number
from .inputs import InputSpec, catalog_or_default, clean_inputs, with_aliases

SECONDS_PER_HOUR = 3600

# --- formulas ------------------------------------------------------------------------------------

USD_PER_HOUR = Formula(
    "usd_per_hour",
    (Var("usd_per_gpu_hour", "USD/h", "price of one GPU for an hour"),
     Var("gpus", "GPUs", "GPUs billed")),
    lambda s: product(s["usd_per_gpu_hour"], s["gpus"]),
)

TOKENS_PER_HOUR = Formula(
    "tokens_per_hour",
    (Var("tokens_per_s", "tok/s", "the fleet's tokens per second while busy"),
     Var("busy_fraction", "1", "fraction of the hour the fleet is busy"),
     Var("hour", "h", "one hour")),
    lambda s: product(s["tokens_per_s"], s["busy_fraction"], s["hour"]),
)

USD_PER_MILLION_TOKENS = Formula(
    "usd_per_million_tokens",
    (Var("usd_per_hour", "USD/h", "fleet cost per hour"),
     Var("hour", "h", "one hour"),
     Var("tokens_per_hour", "tok", "tokens produced in that hour")),
    lambda s: ratio(product(s["usd_per_hour"], s["hour"]), s["tokens_per_hour"]),
)

FORMULAS = (USD_PER_HOUR, TOKENS_PER_HOUR, USD_PER_MILLION_TOKENS)

SPECS = [
    StepSpec(USD_PER_HOUR, label="Fleet cost per hour (price × GPUs)"),
    StepSpec(TOKENS_PER_HOUR, label="Tokens per hour (busy rate × utilisation × 3,600 s)"),
    StepSpec(USD_PER_MILLION_TOKENS,
             {"usd_per_hour": "usd_per_hour", "tokens_per_hour": "tokens_per_hour"}),
]
STEP_KEYS = tuple(spec.key for spec in SPECS)

# --- inputs --------------------------------------------------------------------------------------

USD_PER_GPU_HOUR = InputSpec("usd_per_gpu_hour", "float", 3.0, "price of one GPU for one hour, USD", minimum=0,
                             exclusive_minimum=True, maximum=1000, unit="USD/h", label="Price per GPU-hour")
FLEET_GPUS = InputSpec("gpus", "int", 8, "GPUs in the fleet, every one billed every hour", minimum=1,
                       maximum=1_000_000, unit="GPUs", label="GPUs in the fleet")
TOKENS_PER_S = InputSpec("tokens_per_s", "float", 10_000.0, "tokens per second the whole fleet produces while "
                         "busy", minimum=0, exclusive_minimum=True, maximum=1e10, unit="tok/s",
                         label="Fleet tokens per second")
BUSY_FRACTION = InputSpec.of("busy_fraction", "float", "fraction of each hour the fleet does useful work (idle "
                             "time is billed too); not a memory fraction")

INPUTS = (USD_PER_GPU_HOUR, FLEET_GPUS, TOKENS_PER_S, BUSY_FRACTION)


def _notes(inputs: dict[str, Any], values: dict[str, float]) -> list[str]:
    utilization = inputs["busy_fraction"]
    busy_cost = values["usd_per_million_tokens"] * utilization
    notes = [
        f"tokens_per_s is the whole fleet's rate while busy ({format_number(inputs['tokens_per_s'], 'tok/s')} "
        f"across {inputs['gpus']:,} GPUs, {format_number(inputs['tokens_per_s'] / inputs['gpus'], 'tok/s')} "
        f"each); the price is per GPU-hour, so the bill is price × GPUs.",
    ]
    if utilization < 1:
        notes.append(
            f"Utilisation {utilization:g}: the fleet is busy {utilization:.0%} of each hour and billed for all of "
            f"it, so a token costs {1 / utilization:.3g} × the fully busy "
            f"{format_number(busy_cost, 'USD/Mtok')}. Idle capacity is usually a bigger line than any kernel "
            f"speed-up.")
    else:
        notes.append("Utilisation 1: quoted as if the fleet were busy every second it is billed, the cheapest "
                     "the cost per token can get; a half-idle fleet pays double per token.")
    notes.append("Tokens here are the ones you bill for (usually output tokens); say which you count, since "
                 "prompt tokens are cheaper to produce than generated ones.")
    return notes


def plan_cost(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Fleet cost per hour (USD/h), tokens per hour and cost per million tokens (USD/Mtok).

    ``raw`` holds ``usd_per_gpu_hour``, ``gpus`` (the fleet), ``tokens_per_s``
    (the fleet's rate while busy) and ``busy_fraction`` (fraction of the hour
    busy; ``utilization``, its older name, is read too); missing ones take the defaults (the busy
    fraction's is its quantity's, :data:`..quantities.INPUTS`). Raises :class:`~..errors.InputError`
    for a value out of bounds.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    given = {name: float(inputs[name]) for name in ("usd_per_gpu_hour", "gpus", "tokens_per_s", "busy_fraction")}
    given["hour"] = 1.0

    def finish(result: Result) -> None:
        result.notes.extend(_notes(inputs, result.values))

    return Plan("cost", inputs, SPECS, given, [], finish=finish)


# --- problems ------------------------------------------------------------------------------------

GPUS_DRAWN = (1, 2, 4, 8, 8, 16, 32, 64)
UTILIZATION_DRAWN = (0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9, 1.0)


def generate_cost(rng, catalog: Catalog) -> dict:
    """A cost problem: $1.50–12.00 per GPU-hour (to the cent), 1–64 GPUs, 300–5,000 tok/s per GPU
    while busy (in hundreds), busy 30–100 % of the hour."""
    gpus = rng.choice(GPUS_DRAWN)
    return {
        "usd_per_gpu_hour": rng.randint(150, 1200) / 100,
        "gpus": gpus,
        "tokens_per_s": float(rng.randint(3, 50) * 100 * gpus),
        "busy_fraction": rng.choice(UTILIZATION_DRAWN),
    }


def describe_cost(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    named = with_aliases(INPUTS, inputs)
    i = {spec.name: named.get(spec.name, spec.default) for spec in INPUTS}
    busy = (f"It is busy {i['busy_fraction']:.0%} of each hour and idle the rest, billed all the same."
            if i["busy_fraction"] < 1 else "Assume it is busy every hour it is billed.")
    return (
        f"A fleet of {i['gpus']:,} GPU{'s' if i['gpus'] != 1 else ''} rents at "
        f"{format_number(i['usd_per_gpu_hour'], 'USD/h')} per GPU. While busy, the whole fleet produces "
        f"{i['tokens_per_s']:,.0f} tokens per second. {busy} What does the fleet cost per hour, how many "
        f"tokens does it produce in an hour, and what does a million tokens cost?"
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
COST_RUBRIC = (
    "Multiplies price per GPU-hour by every card billed",
    "Converts tokens per second to tokens per hour and applies utilisation",
    "States which tokens are billed (output or all)",
    "Prices the whole fleet, prefill and spares included, not one node",
)


FAMILIES = (
    Family("cost", "Cost per million tokens",
           "Dollars per million tokens from the price per GPU-hour, the fleet's throughput and its utilisation.",
           INPUTS, plan_cost, generate=generate_cost, order=90,
           describe=describe_cost,
           headlines=("usd_per_million_tokens", "usd_per_hour"), chapter="14-capacity-planning",
           roles=("architect", "manager"), rubric=COST_RUBRIC),
)

"""What every calculator family shares: named steps, their evaluation and their JSON.

A family's ``plan()`` resolves its inputs (a model config, a GPU, precisions …)
into ``given``: plain numbers keyed by formula variable name. It then lists its
:class:`StepSpec` s in order. A step's formula takes some variables from
``given`` and the rest from earlier steps (``from_steps``); that is what lets
the grader re-evaluate a step on a candidate's own earlier values (error carried
forward) with exactly the code that computed the right answer.

The two halves are separate (docs/architecture.md §11): ``plan()`` returns a
:class:`Plan` (inputs, steps, given numbers, notes: data, no arithmetic yet),
and :func:`evaluate` turns a plan into a :class:`Result`, evaluating each step once.
:meth:`Family.plan` gives the plan alone, which is how the offline export
reads every family's resolution as data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import InputError
from ..formula import Formula
from ..quantities import canonical_key
from ..unit_table import BARE_OPERAND_UNITS, RECORDS, SINGULAR, WHOLE_UNITS  # noqa: F401  (re-exported)

# Integer steps: how a fractional count is rounded (users floor, GPUs and nodes ceil).
FLOOR = "floor"
CEIL = "ceil"


@dataclass(frozen=True)
class StepSpec:
    """One named step of a procedure.

    ``from_steps`` maps formula variables to the keys of earlier steps whose
    values feed them; the others come from ``given``. ``rounding`` marks an
    integer step (its formula already floors or ceils; the grader then wants
    the whole number exactly). ``tolerance`` is the relative tolerance for a
    correct answer. Named misconceptions attach by step key
    (:mod:`..misconceptions`).
    """

    key: str
    label: str
    formula: Formula
    from_steps: Mapping[str, str] = field(default_factory=dict)
    rounding: str | None = None
    tolerance: float = 0.005

    @property
    def unit(self) -> str:
        """The step's unit (the formula's result unit)."""
        return self.formula.unit

    def values(self, given: Mapping[str, float], steps: Mapping[str, float]) -> dict[str, float]:
        """The formula's variables bound from ``given`` and earlier ``steps``."""
        bound = {}
        for var in self.formula.variables:
            source = self.from_steps.get(var.name)
            bound[var.name] = steps[source] if source else given[var.name]
        return bound

    def evaluate(self, given: Mapping[str, float], steps: Mapping[str, float]) -> float:
        """The step's value from ``given`` and the (possibly candidate's) earlier ``steps``."""
        return self.formula(self.values(given, steps))


@dataclass
class Step:
    """A computed step: value in ``unit`` (full precision) and its worked substitution."""

    key: str
    label: str
    value: float
    unit: str
    formula: Formula
    substituted: str

    def to_json(self) -> dict[str, Any]:
        """The step in the ``calc --json`` shape of docs/architecture.md §10."""
        value = self.value
        if self.unit in WHOLE_UNITS and float(value).is_integer():
            value = int(value)
        return {
            "key": self.key,
            "label": self.label,
            "value": value,
            "unit": self.unit,
            "formula": f"{self.key} = {self.formula.text}",
            "substituted": self.substituted,
        }


class StepValues(dict):
    """Step values by canonical key; reading an alias of a key (docs/architecture.md §11) gives its value.
    Iteration and ``keys()`` list the canonical keys only."""

    def __init__(self, family: str, values: Mapping[str, float]):
        super().__init__(values)
        self.family = family

    def __missing__(self, key: str) -> float:
        canonical = canonical_key(key, self.family)
        if canonical != key and dict.__contains__(self, canonical):
            return dict.__getitem__(self, canonical)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (
            isinstance(key, str) and dict.__contains__(self, canonical_key(key, self.family)))

    def get(self, key: str, default=None):
        """Like ``dict.get``, aliases included."""
        return self[key] if key in self else default


@dataclass
class Result:
    """The outcome of a procedure: its inputs as given, its steps in order, and notes."""

    family: str
    inputs: dict[str, Any]
    steps: list[Step]
    notes: list[str]
    specs: list[StepSpec]
    given: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)

    def step(self, key: str) -> Step:
        """The step with this key (canonical, or an older alias such as ``weight_gib``);
        ``KeyError`` if the family has none."""
        key = canonical_key(key, self.family)
        for step in self.steps:
            if step.key == key:
                return step
        raise KeyError(key)

    @property
    def values(self) -> "StepValues":
        """Step values by canonical key (an older alias reads too: ``values["weight_gib"]``)."""
        return StepValues(self.family, {step.key: step.value for step in self.steps})

    def to_json(self) -> dict[str, Any]:
        """``{"family", "inputs", "steps", "notes"}`` as docs/architecture.md §10 specifies."""
        return {
            "family": self.family,
            "inputs": self.inputs,
            "steps": [step.to_json() for step in self.steps],
            "notes": list(self.notes),
        }




#: How a bare number shows (the ``plain`` and ``tokens`` styles, bare operands): e-notation from
#: ``scientific_from`` (fp32's 3.403e38, not 39 digits), no decimals from ``whole_from``, and four
#: significant figures (``digits``) unless up to ``exact_digits`` show a value below one exactly
#: (2^−7 = 0.0078125). The offline calculator reads the same rule (runbook/export).
PLAIN_RULE = {"scientific_from": 1e15, "whole_from": 1000, "digits": 4, "exact_digits": 6}


def _plain_number(value: float) -> str:
    rule = PLAIN_RULE
    if abs(value) >= rule["scientific_from"]:
        return f"{value:.{rule['digits']}g}".replace("e+", "e")
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= rule["whole_from"]:
        return f"{value:,.0f}"
    exact = f"{value:.{rule['exact_digits']}g}"
    return exact if abs(value) < 1 and float(exact) == value else f"{value:.{rule['digits']}g}"


def format_operand(value: float, unit: str) -> str:
    """A formula operand in a worked substitution: counts bare, quantities with their unit."""
    if unit in BARE_OPERAND_UNITS:
        return _plain_number(value)
    return format_number(value, unit)


def format_number(value: float, unit: str) -> str:
    """A value with its unit, rounded for display by the unit's rule in :mod:`..unit_table`
    (docs/architecture.md §10); full precision stays in JSON. A unit outside the table falls back to
    :func:`..units.format_quantity`."""
    from ..units import format_quantity  # imported late: units is a sibling module

    record = RECORDS.get(unit)
    if record is None:
        return format_quantity(value, unit)
    if record.style == "plain":
        return _plain_number(value)
    if record.singular and value == 1:
        return f"1 {record.singular}"
    if record.style == "tokens":
        return f"{_plain_number(value)} {unit}"
    if record.style == "bit":
        return f"{value:g} {unit}"
    if record.small_below and 0 < abs(value) < record.small_below and (
            not record.small_if_hidden
            or abs(round(value, record.decimals) - value) > 0.001 * abs(value)):
        # Below the threshold, fixed decimals can hide the value (0.28125 GiB → 0.28, an intensity of
        # 0.276 → 0.3): show significant figures so it can be typed back.
        return f"{value:.{record.small_digits}g} {unit}"
    if record.style == "mib":
        return f"{value:,.0f} {unit}" if float(value).is_integer() else f"{value:,.1f} {unit}"
    return format_quantity(value, unit)


def evaluate_steps(specs: list[StepSpec], given: Mapping[str, float],
                   overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """Evaluate ``specs`` in order; ``overrides`` replaces a step's value for the
    steps after it (the grader passes a candidate's own values here)."""
    values: dict[str, float] = {}
    for spec in specs:
        values[spec.key] = spec.evaluate(given, values)
        if overrides and spec.key in overrides and overrides[spec.key] is not None:
            values[spec.key] = overrides[spec.key]
    return values


@dataclass
class Plan:
    """What a family's ``plan()`` resolves its inputs into, before any step is evaluated.

    ``inputs`` are the cleaned inputs; ``specs`` the steps in order; ``given``
    the plain numbers the formulas read, keyed by variable name (in each
    variable's unit); ``notes`` the sentences known before evaluation;
    ``extra`` anything the pages read besides the steps. ``finish``, when set,
    writes what reads the evaluated steps (notes, page extras) into the
    :class:`Result`, once, after :func:`evaluate` has evaluated every step.
    ``checks`` maps a step key to a refusal :func:`evaluate` makes right after that
    step (it reads the values so far and raises :class:`InputError` for a stack
    that cannot serve, before a later step divides by what it found); the offline
    export states the same refusals on the family's record (``Offline.checks``).
    """

    family: str
    inputs: dict[str, Any]
    specs: list[StepSpec]
    given: dict[str, float]
    notes: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    finish: Callable[["Result"], None] | None = None
    checks: Mapping[str, Callable[[Mapping[str, float]], None]] = field(default_factory=dict)


def evaluate(plan: Plan) -> Result:
    """Evaluate every step of ``plan`` once, build the :class:`Result` with worked substitutions, then let
    the plan's ``finish`` write its notes from that one evaluation.

    Raises :class:`InputError` when a step overflows (inputs far outside any real stack) or one of the
    plan's ``checks`` refuses the values so far, and what the plan's ``finish`` raises."""
    values: dict[str, float] = {}
    steps = []
    for spec in plan.specs:
        bound = spec.values(plan.given, values)
        value = spec.formula(bound)
        if math.isnan(value) or math.isinf(value):
            raise InputError(f"These inputs make {spec.label.lower()} overflow; use realistic sizes.")
        values[spec.key] = value
        if spec.key in plan.checks:
            plan.checks[spec.key](values)
        substituted = (f"{spec.formula.substituted(bound, format_operand)} = "
                       f"{format_number(value, spec.unit)}")
        steps.append(Step(spec.key, spec.label, value, spec.unit, spec.formula, substituted))
    result = Result(plan.family, plan.inputs, steps, list(plan.notes), plan.specs, dict(plan.given),
                    dict(plan.extra))
    if plan.finish is not None:
        plan.finish(result)
    return result

"""Reading a family's resolution as data: its plans (``Family.plan``) at chosen inputs.

The offline export tabulates each given number over the choices it was seen to depend on and probes
the typed numbers for the rest; this module runs the plans and picks the inputs it probes with.
"""

from __future__ import annotations

import math
import random
from typing import Any

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import EngineError
from calculators.engine.procedures import Family, StepSpec
from calculators.engine.procedures.inputs import InputSpec

from .tables import ABSENT, PRESENCE_PREFIX, PRESENT

DISCRETE_KINDS = ("model", "gpu", "choice")
NUMBER_KINDS = ("int", "float")
TP_DEGREES_CHECKED = (1, 2, 4, 8, 16)


class Observer:
    """Resolves one family's plans on chosen inputs (no step evaluated), caching them."""

    def __init__(self, family: Family):
        self.family = family
        self.specs = {spec.name: spec for spec in family.inputs}
        self._cache: dict[tuple, tuple[list[StepSpec], dict] | None] = {}
        self.errors: dict[tuple, str] = {}

    def error(self, raw: dict[str, Any]) -> str:
        """The procedure's message for inputs :meth:`observe` found rejected."""
        return self.errors.get(tuple(sorted(raw.items())), "These inputs give no result.")

    def observe(self, raw: dict[str, Any]) -> tuple[list[StepSpec], dict] | None:
        """``(specs, given)`` of the plan for ``raw``, or ``None`` when the procedure rejects these inputs."""
        key = tuple(sorted(raw.items()))
        if key not in self._cache:
            try:
                plan = self.family.plan(dict(raw), None)
                outcome: tuple[list[StepSpec], dict] | None = (list(plan.specs), dict(plan.given))
            except (EngineError, ArithmeticError, ValueError) as exc:
                outcome = None
                self.errors[key] = str(exc)
            self._cache[key] = outcome
        return self._cache[key]


def dimensions(family: Family) -> list[tuple[str, tuple[str, ...]]]:
    """The choices a family's resolution can branch on: catalog picks, choices, filled-or-blank numbers."""
    catalog = default_catalog()
    dims = []
    for spec in family.inputs:
        if spec.kind == "model":
            dims.append((spec.name, tuple(catalog.models)))
        elif spec.kind == "gpu":
            dims.append((spec.name, tuple(catalog.gpus)))
        elif spec.kind == "choice":
            dims.append((spec.name, tuple(spec.choices)))
        elif spec.default is None:
            dims.append((PRESENCE_PREFIX + spec.name, (ABSENT, PRESENT)))
    return dims


def numeric_candidates(spec: InputSpec) -> list[float]:
    """Valid values of a number input other than its default, most typical first."""
    low = spec.minimum if spec.minimum is not None else 0.0
    high = spec.maximum if spec.maximum is not None else 1e6
    base = spec.default if spec.default not in (None, 0) else None
    raw = ([base * 2, base * 0.8, base * 4, base * 0.5, base * 1.1] if base is not None else []) + \
          [low + (min(high, low + 100) - low) * 0.37, 2, 4, 8, 0.5, 0.3, 16, 1]
    found = []
    for value in raw:
        value = round(value) if spec.kind == "int" else float(value)
        if value < low or value > high or (spec.exclusive_minimum and value == low):
            continue
        if value != spec.default and value not in found:
            found.append(value)
    return found


def random_number(rng: random.Random, spec: InputSpec) -> float:
    """A valid value for the self-check: a probe value half the time, else the default scaled at random."""
    if spec.name == "gpus":  # a tensor-parallel degree: most others break the degree rule (step_model)
        return rng.choice(TP_DEGREES_CHECKED)
    candidates = numeric_candidates(spec) + ([spec.default] if spec.default is not None else [])
    base = spec.default or (candidates[0] if candidates else 1)
    if rng.random() < 0.5 or not candidates:
        return rng.choice(candidates) if candidates else base
    value = base * rng.uniform(0.3, 3)
    value = round(value) if spec.kind == "int" else value
    low = spec.minimum if spec.minimum is not None else -math.inf
    high = spec.maximum if spec.maximum is not None else math.inf
    valid = low < value <= high or (value == low and not spec.exclusive_minimum)
    return value if valid else rng.choice(candidates)

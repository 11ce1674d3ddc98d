"""The engine's calculator families: each a procedure with named steps (docs/architecture.md §10).

:data:`ENGINE_FAMILIES` maps a family's slug to its :class:`Family` (title, inputs,
procedure, problem generator) for every family the engine
computes alone. Every module of this package that defines ``FAMILIES`` is
discovered here, so a new family is one new module. The whole registry, the
simulated drills included, is :data:`calculators.families.FAMILIES`: the
``calc`` command, the pages, the grader's callers and the API go through it.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Family, Result, Step, StepSpec, discover, evaluate_steps
from .inputs import InputSpec


def _discover() -> dict[str, Family]:
    found: list[Family] = []
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        found.extend(getattr(module, "FAMILIES", ()))
    return discover(found)


ENGINE_FAMILIES: dict[str, Family] = _discover()

__all__ = ["ENGINE_FAMILIES", "Family", "InputSpec", "Result", "Step", "StepSpec", "evaluate_steps"]

"""The calculator families: each a procedure with named steps (docs/architecture.md §10).

:data:`FAMILIES` maps a family's slug to its :class:`Family` (title, inputs,
procedure, problem generator, misconception variants). Every module of this
package that defines ``FAMILIES`` is discovered here, so a new family is one new
module. The ``calc`` command, the pages, the grader and the API all go through
this mapping.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..misconceptions import register
from ..step_variants import VARIANTS
from .base import Result, Step, StepSpec, evaluate_steps
from .family import Family
from .inputs import InputSpec


def _discover() -> dict[str, Family]:
    found: list[Family] = []
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        found.extend(getattr(module, "FAMILIES", ()))
    families = {}
    for family in sorted(found, key=lambda f: (f.order, f.slug)):
        if family.slug in families:
            raise ValueError(f"Two calculator families are called '{family.slug}'.")
        families[family.slug] = family
        for info in family.misconceptions:
            register(info)  # a second record for one id fails here, at import
    return families


FAMILIES: dict[str, Family] = _discover()


def variants_for(family: str, step_key: str):
    """The (misconception id, variant) pairs of a family's step: its own, then the shared ones."""
    own = FAMILIES[family].variants.get(step_key, ()) if family in FAMILIES else ()
    return tuple(own) + tuple(VARIANTS.get(step_key, ()))


def input_label(name: str) -> str:
    """The form label of the input ``name`` as the families declare it (the first family's, in page
    order), or the name in words when no family has that input."""
    for family in FAMILIES.values():
        for spec in family.inputs:
            if spec.name == name and spec.label:
                return spec.label
    return name.replace("_", " ").capitalize()


__all__ = ["FAMILIES", "Family", "InputSpec", "Result", "Step", "StepSpec", "evaluate_steps", "input_label",
           "variants_for"]

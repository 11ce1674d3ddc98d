"""Every calculator family in one registry: the engine's and the simulated drills' (docs/architecture.md §11).

Pure Python (no Django): the engine's families (:data:`calculators.engine.procedures.ENGINE_FAMILIES`) and
the drills graded against the serving simulator (:mod:`calculators.sim.drills`), in page order. The engine
never imports this module or the simulator; the ``calc`` and ``grade`` commands, the pages, the API, the
bank and the export read the families here, and hand the grader the record of the family it grades.
"""

from __future__ import annotations

from calculators.engine.procedures import ENGINE_FAMILIES, Family
from calculators.engine.procedures.base import discover
from calculators.sim.drills import FAMILIES as SIMULATED_DRILLS

FAMILIES: dict[str, Family] = discover([*ENGINE_FAMILIES.values(), *SIMULATED_DRILLS])


def input_label(name: str) -> str:
    """The form label of the input ``name`` as the families declare it (the first family's, in page
    order), or the name in words when no family has that input."""
    for family in FAMILIES.values():
        for spec in family.inputs:
            if spec.name == name and spec.label:
                return spec.label
    return name.replace("_", " ").capitalize()

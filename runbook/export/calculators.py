"""Calculator families as data for the offline driver (``static/js/offline-calculator.js``).

A family's ``plan()`` resolves the typed inputs into a :class:`~calculators.engine.procedures.base.Plan`
(``given``: plain numbers keyed by formula variable, a model's layers, a card's MiB, the bits of a
precision …, and the steps), then evaluates it. The evaluation is printed to JavaScript from the very
sympy expressions the Python engine lambdifies (:mod:`.tables`). The resolution is not re-implemented:
its plans are read as data (``Family.plan``, :mod:`.observe`), and

* every given number that follows a catalog choice (model, GPU, a precision, whether an optional
  number is filled) is tabulated over exactly the choices it was seen to depend on;
* every given number that follows a typed number is found by probing: it is that number
  (``context``), a multiple of it (``params_b`` × 10⁹), or one of the few adapters the family's
  record states as sympy (:class:`~calculators.engine.procedures.base.Offline`, the ladder's
  ``min(avg_tokens, context)``) — anything else stops the export (:class:`ExportError`) rather than
  ship a calculator that disagrees;
* the step list is tabulated the same way (it depends on the model's attention, or on whether a
  budget was typed).

The refusals a procedure makes in plain Python, its degree loop and its page's extras are on the
family's record too (``Family.offline``), so a new family needs nothing here; a record whose
``offline`` is ``None`` (the simulated drills, whose numbers come from the serving simulator) is left out
(:func:`left_out`), and the exported pages say so. Finally
:func:`build_programs` checks itself: on random inputs it assembles ``given`` and the steps from the
tables exactly as the driver will and compares them with the procedure's plans; a mismatch raises
:class:`ExportError`.
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Iterator

import sympy

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import AnswerError
from calculators.engine.formula import Formula
from calculators.engine.procedures import Family, StepSpec
from calculators.engine.procedures.base import PLAIN_RULE
from calculators.engine.procedures.inputs import InputSpec
from calculators.engine.units import display_table, get_unit, quantity_rule
from calculators.families import FAMILIES

from .observe import DISCRETE_KINDS, NUMBER_KINDS, Observer, dimensions, numeric_candidates, random_number
from .tables import (  # noqa: F401  (ExportError, FormulaTable, FamilyProgram and assemble are this module's API)
    ABSENT,
    DERIVED,
    PRESENCE_PREFIX,
    PRESENT,
    ExportError,
    FamilyProgram,
    FormulaTable,
    assemble,
    is_number,
    same,
)

DISPLAY_TABLE = display_table()  # the engine's unit records, shipped to the offline driver
# The head counts the degree rule reads, tabulated for every family that checks it.
DEGREE_GIVENS = {"heads", "kv_heads", "kv_lora_rank"}
VERIFY_SAMPLES = 60
# Choices that decide a given number or the steps together, probed pairwise: a checkpoint's native format
# (gpt-oss's MXFP4 experts beside bf16 attention) gives each part its own width only for that model at that
# precision (calculators.engine.catalog.weight_widths); a mixture of experts given by its parameter count (tp's
# params_b) has no experts to tell apart.
JOINT_CHOICES = (("model", "weights_dtype"), ("model", PRESENCE_PREFIX + "params_b"))
RESCUE_TRIES = 200


class _Builder:
    """Observes one family's procedure and turns what it saw into a checked :class:`FamilyProgram`."""

    def __init__(self, family: Family, table: FormulaTable):
        if family.offline is None:
            raise ExportError(f"{family.slug}: its numbers come from the serving simulator; the offline "
                              f"export leaves it out, so a chapter cannot embed it.")
        self.family = family
        self.offline = family.offline
        self.table = table
        self.observer = Observer(family)
        self.dims = dimensions(family)
        self.dim_values = dict(self.dims)
        self.numbers = [s for s in family.inputs if s.kind in NUMBER_KINDS]
        self.present_value: dict[str, float] = {}

    # --- raw inputs for a point -------------------------------------------------------------

    def raw_for(self, point: dict[str, str], numbers: dict[str, float] | None = None) -> dict[str, Any]:
        """Procedure inputs: ``point`` picks the choices and which optional numbers are filled."""
        raw: dict[str, Any] = {}
        for spec in self.family.inputs:
            if spec.kind in DISCRETE_KINDS:
                raw[spec.name] = point.get(spec.name, spec.default)
            elif spec.default is None:
                if point.get(PRESENCE_PREFIX + spec.name, ABSENT) == PRESENT:
                    raw[spec.name] = self.present_value[spec.name]
            else:
                raw[spec.name] = spec.default
        for name, value in (numbers or {}).items():
            if name in raw:
                raw[name] = value
        return raw

    def choose_present_values(self) -> None:
        """A typical filled value for each optional number: the first the procedure accepts."""
        for spec in self.numbers:
            if spec.default is not None:
                continue
            for value in numeric_candidates(spec):
                self.present_value[spec.name] = value
                if self.observer.observe(self.raw_for({PRESENCE_PREFIX + spec.name: PRESENT})):
                    break
            else:
                raise ExportError(f"{self.family.slug}: no value of {spec.name} is accepted at the defaults.")

    # --- which typed numbers feed which given number -----------------------------------------

    def numeric_map(self, pattern: dict[str, str]) -> dict[str, sympy.Expr]:
        """Given keys that follow the typed numbers (under this filled/blank pattern), as sympy."""
        raw = self.raw_for(pattern)
        base = self.observer.observe(raw)
        if base is None:
            return {}
        base_signature = _signature(base[0])
        depends: dict[str, list[tuple[str, float, float]]] = {}
        present = [s for s in self.numbers if s.name in raw]
        for spec in present:
            for probe in numeric_candidates(spec)[:3]:
                if probe == raw[spec.name]:
                    continue
                seen = self.observer.observe({**raw, spec.name: probe})
                if seen is None:
                    continue
                if _signature(seen[0]) != base_signature:
                    raise ExportError(f"{self.family.slug}: the steps change with the number {spec.name}; "
                                      f"the offline driver cannot follow that.")
                for key, value in seen[1].items():
                    if not same(value, base[1].get(key)):
                        depends.setdefault(key, []).append((spec.name, probe, value))
        exprs: dict[str, sympy.Expr] = {}
        for key, expr in self.offline.adapters.items():
            if {s.name for s in expr.free_symbols} <= set(raw):
                exprs[key] = expr
        for key, seen in depends.items():
            if key in exprs or key in DERIVED or key in self.offline.settled:
                continue
            names = {name for name, _, _ in seen}
            if len(names) != 1:
                raise ExportError(f"{self.family.slug}: given {key} follows {sorted(names)} together; "
                                  f"state it in the family's Offline(adapters=...).")
            name = names.pop()
            points = [(raw[name], base[1][key])] + [(probe, value) for _, probe, value in seen]
            if all(same(value, probe) for probe, value in points):
                exprs[key] = sympy.Symbol(name)
                continue
            ratios = {value / probe for probe, value in points if is_number(value) and probe}
            if len(points) >= 2 and all(is_number(v) for _, v in points) and \
                    all(same(r, next(iter(ratios))) for r in ratios):
                exprs[key] = sympy.nsimplify(next(iter(ratios)), rational=True) * sympy.Symbol(name)
                continue
            raise ExportError(f"{self.family.slug}: given {key} follows {name} in a way the driver cannot "
                              f"infer; state it in the family's Offline(adapters=...).")
        return exprs

    # --- which choices feed which given number ------------------------------------------------

    def build(self) -> FamilyProgram:
        """Probe the numbers, find each given number's choices, tabulate, then :meth:`verify`.

        Raises :class:`ExportError` when the resolution cannot be reproduced exactly."""
        self.choose_present_values()
        presence_dims = [name for name, values in self.dims if name.startswith(PRESENCE_PREFIX)]
        patterns = {}
        for flags in itertools.product((ABSENT, PRESENT), repeat=len(presence_dims)):
            pattern = dict(zip(presence_dims, flags))
            patterns[flags] = self.numeric_map(pattern)

        base = self.observer.observe(self.raw_for({}))
        if base is None:
            raise ExportError(f"{self.family.slug}: the procedure rejects its own defaults.")
        given_deps: dict[str, set[str]] = {}
        step_deps: set[str] = set()
        base_given = base[1]
        for name, values in self.dims:
            for value in values:
                seen = self.observer.observe(self.raw_for({name: value}))
                if seen is None:
                    continue
                if _signature(seen[0]) != _signature(base[0]):
                    step_deps.add(name)
                for key in set(seen[1]) | set(base_given):
                    if not same(seen[1].get(key), base_given.get(key)):
                        given_deps.setdefault(key, set()).add(name)
        self.probe_joint(base, given_deps, step_deps)
        order = [name for name, _ in self.dims]
        missing = 0

        def pattern_of(point: dict[str, str]) -> tuple[str, ...]:
            return tuple(point.get(name, ABSENT) for name in presence_dims)

        def cells(deps: list[str]) -> Iterator[tuple[str, dict[str, str], tuple | str]]:
            for combo in itertools.product(*(self.dim_values[d] for d in deps)):
                point = dict(zip(deps, combo))
                yield "|".join(combo), point, self.observe_somewhere(point)

        steps_deps = [d for d in order if d in step_deps]
        step_cells = {}
        used: set[str] = set()
        for combo, _, seen in cells(steps_deps):
            if isinstance(seen, str):
                step_cells[combo] = {"error": seen}
                missing += 1
                continue
            step_cells[combo] = [self._step_json(spec) for spec in seen[0]]
            for spec in seen[0]:
                used |= {v.name for v in spec.formula.variables if v.name not in spec.from_steps}

        def given_entry(key: str) -> dict:
            deps = [d for d in order if d in given_deps.get(key, set())]
            key_cells: dict[str, Any] = {}
            for combo, point, seen in cells(deps):
                exprs = patterns.get(pattern_of(point), {})
                if key in exprs:
                    key_cells[combo] = {"expr": self.table.expression(self.family.slug, key, exprs[key])}
                elif not isinstance(seen, str) and key in seen[1]:
                    key_cells[combo] = seen[1][key]
                elif isinstance(seen, str):
                    key_cells[combo] = {"error": seen}
            return {"deps": deps, "cells": key_cells}

        offline = self.offline
        settled = offline.settled
        if any(check["kind"] == "degree_rule" for check in offline.checks):
            used |= DEGREE_GIVENS & set(base_given)
        derived = {**DERIVED, **offline.derived}  # the family's own rule for a derived number first
        for key in used & set(derived):  # the tabulated numbers a derived one reads
            used |= {sym.name for sym in derived[key].free_symbols} & set(base_given)
        given = {key: given_entry(key) for key in sorted(used) if key not in derived and key not in settled}
        for key in sorted(used & set(derived)):
            if key not in settled:
                given[key] = {"deps": [], "derived": True,
                              "cells": {"": {"expr": self.table.expression(self.family.slug, key, derived[key])}}}
        for key in sorted(used & set(settled)):
            given[key] = {"deps": [], "cells": {}}  # set by the driver's degree loop
        missing += sum(1 for entry in given.values() for cell in entry["cells"].values()
                       if isinstance(cell, dict) and "error" in cell)

        program = FamilyProgram(self.family.slug, [_input_json(s) for s in self.family.inputs], given,
                                {"deps": steps_deps, "cells": step_cells}, None,
                                checks=[dict(check) for check in offline.checks], missing=missing)
        if settled:
            program.extras["settle"] = {"keys": list(settled), "replication": self.table.expression(
                self.family.slug, "kv_replication", DERIVED["kv_replication"])}
        # The page's hand-written branch (the ladder's does-not-fit alert), the driver's extra data (the
        # pareto curve's degrees) and given numbers no step reads: from the family's record.
        program.alert = offline.alert
        program.extras.update({key: self.table.formula(value) if isinstance(value, Formula) else value
                               for key, value in offline.extras.items()})
        for key in offline.givens:
            program.given.setdefault(key, given_entry(key))
        program.verified = self.verify(program)
        return program

    def probe_joint(self, base: tuple, given_deps: dict[str, set[str]], step_deps: set[str]) -> None:
        """Find what two choices decide together (:data:`JOINT_CHOICES`): at every pair of their values, a given
        number or a step list that differs from what its single-choice dependencies predict depends on both."""
        for first, second in JOINT_CHOICES:
            if first not in self.dim_values or second not in self.dim_values:
                continue
            alone = {(name, value): self.observer.observe(self.raw_for({name: value}))
                     for name in (first, second) for value in self.dim_values[name]}

            def predicted(deps: set[str], a: str, b: str) -> tuple | None:
                if first in deps and second in deps:
                    return None  # tabulated over both already
                if first in deps:
                    return alone[(first, a)]
                if second in deps:
                    return alone[(second, b)]
                return base

            for a in self.dim_values[first]:
                for b in self.dim_values[second]:
                    seen = self.observer.observe(self.raw_for({first: a, second: b}))
                    if seen is None:
                        continue
                    expected = predicted(step_deps, a, b)
                    if expected is not None and _signature(seen[0]) != _signature(expected[0]):
                        step_deps.update((first, second))
                    for key, value in seen[1].items():
                        expected = predicted(given_deps.get(key, set()), a, b)
                        if expected is not None and not same(value, expected[1].get(key)):
                            given_deps.setdefault(key, set()).update((first, second))

    def observe_somewhere(self, point: dict[str, str]) -> tuple | str:
        """``(specs, given)`` for these choices at the defaults or, if the procedure rejects those,
        with the first single other choice changed that it accepts, else at the first of some seeded other
        numbers and other choices it accepts (a tabulated value
        depends only on its own choices; :meth:`verify` checks that); else the procedure's message."""
        raw = self.raw_for(point)
        seen = self.observer.observe(raw)
        if seen is not None:
            return seen
        # One other choice changed first (a card quoted only at fp8/fp4 computes at the defaults once the
        # precision is one it has), then everything else drawn at random.
        for name, values in self.dims:
            if name in point:
                continue
            for value in values:
                rescued = self.observer.observe(self.raw_for({**point, name: value}))
                if rescued is not None:
                    return rescued
        rng = random.Random(f"rescue-{self.family.slug}-{sorted(point.items())}")
        for _ in range(RESCUE_TRIES):
            others = {name: rng.choice(values) for name, values in self.dims if name not in point}
            numbers = {spec.name: rng.choice(numeric_candidates(spec)) for spec in self.numbers}
            rescued = self.observer.observe(self.raw_for({**others, **point}, numbers))
            if rescued is not None:
                return rescued
        return self.observer.error(raw)

    def _step_json(self, spec: StepSpec) -> dict:
        formula = spec.formula
        # The worked substitution as a template: the driver puts format_operand(value, unit) in each {{name}}.
        worked = formula.substituted({v.name: v.name for v in formula.variables},
                                     lambda name, unit: "{{" + name + "}}")
        self.table.units.update({spec.unit, *formula.units.values()})
        return {"key": spec.key, "label": spec.label, "unit": spec.unit, "rounding": spec.rounding,
                "formula": self.table.formula(formula), "from": dict(spec.from_steps),
                "args": [v.name for v in formula.variables], "units": dict(formula.units), "worked": worked}

    # --- self-check ---------------------------------------------------------------------------

    def verify(self, program: FamilyProgram, samples: int = VERIFY_SAMPLES) -> int:
        """Assemble steps and given on random inputs as the driver does; compare with the procedure."""
        rng = random.Random(f"export-{self.family.slug}")
        checked = 0
        for _ in range(samples * 3):
            if checked >= samples:
                break
            point = {name: rng.choice(values) for name, values in self.dims}
            numbers = {spec.name: random_number(rng, spec) for spec in self.numbers}
            raw = self.raw_for(point, numbers)
            seen = self.observer.observe(raw)
            if seen is None:
                continue
            steps, given = assemble(program, raw, self.table)
            if [s["key"] for s in steps] != [s.key for s in seen[0]] or \
                    [s["formula"] for s in steps] != [self.table.formula(s.formula) for s in seen[0]]:
                raise ExportError(f"{self.family.slug}: offline steps differ from the procedure's at {raw}.")
            for key in given:
                if not same(given[key], seen[1].get(key)):
                    raise ExportError(f"{self.family.slug}: offline {key} = {given[key]!r}, the procedure's "
                                      f"{seen[1].get(key)!r}, at {raw}.")
            checked += 1
        if checked < samples // 3:
            raise ExportError(f"{self.family.slug}: too few random inputs were accepted to check the export.")
        return checked


def _signature(specs: list[StepSpec]) -> tuple:
    return tuple((s.key, id(s.formula), tuple(sorted(s.from_steps.items())), s.rounding) for s in specs)


def _input_json(spec: InputSpec) -> dict:
    # The spec's messages, the web form's too: the driver checks bounds, never words them.
    messages = spec.messages if spec.kind in NUMBER_KINDS else {}
    return {"name": spec.name, "kind": spec.kind, "default": spec.default, "min": spec.minimum,
            "max": spec.maximum, "exclusive_min": spec.exclusive_minimum, "choices": list(spec.choices),
            "messages": messages}


def left_out() -> list[Family]:
    """The families the export leaves out (``Family.offline`` is ``None``: the simulated drills, whose
    numbers come from the serving simulator), in page order."""
    return sorted((f for f in FAMILIES.values() if f.offline is None), key=lambda f: (f.order, f.slug))


def build_programs(slugs: list[str], table: FormulaTable) -> dict[str, FamilyProgram]:
    """The :class:`FamilyProgram` of each family in ``slugs`` (each checked; see module docstring).

    Raises :class:`ExportError` for a family the export leaves out (:func:`left_out`)."""
    return {slug: _Builder(FAMILIES[slug], table).build() for slug in slugs}


def page_data(programs: dict[str, FamilyProgram], table: FormulaTable) -> dict:
    """The JSON the driver reads: programs, unit display rules, GPU names, headline steps."""
    units = {unit: unit_payload(unit) for unit in sorted(table.units)}
    units = {unit: payload for unit, payload in units.items() if payload}
    catalog = default_catalog()
    return {
        "programs": {slug: program.to_json() for slug, program in programs.items()},
        "units": units,
        "gpu_names": {gpu_id: gpu.name for gpu_id, gpu in catalog.gpus.items()},
        "headlines": {slug: list(family.headlines) for slug, family in FAMILIES.items() if family.headlines},
    }


def unit_payload(unit: str) -> dict | None:
    """A unit's display rules for the offline driver: the engine's unit-table record
    (:func:`calculators.engine.units.display_table`) with the parser's symbol and dimension and
    ``format_quantity``'s rule (:func:`calculators.engine.units.quantity_rule`) and the bare number's
    (:data:`calculators.engine.procedures.base.PLAIN_RULE`), or ``None`` for a unit the parser does not know."""
    try:
        spec = get_unit(unit)
    except AnswerError:
        return None
    return {**DISPLAY_TABLE.get(unit, {}), "symbol": spec.symbol, "dimension": spec.dimension,
            "quantity": quantity_rule(unit), "plain": PLAIN_RULE}


def formulas_script(table: FormulaTable) -> str:
    """``window.OfflineFormulas = {...}``: every printed formula and given-expression of the page.

    Uses ``R.wholeCeil``/``R.wholeFloor`` from the driver's rounding (``window.OfflineRounding``)."""
    body = ",\n".join(f"  {name!r}: {code}" for name, code in sorted(table.functions.items()))
    return ("(function () {\n\"use strict\";\nvar R = window.OfflineRounding;\n"
            f"window.OfflineFormulas = {{\n{body}\n}};\n}})();")

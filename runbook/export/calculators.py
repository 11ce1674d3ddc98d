"""Calculator families as data for the offline driver (``static/js/offline-calculator.js``).

A family's procedure does two things: it *resolves* the typed inputs into
``given`` (plain numbers keyed by formula variable: a model's layers, a card's
MiB, the bits of a precision …) and a list of :class:`StepSpec`, then it
*evaluates* the steps' formulas in order. The second half is printed to
JavaScript from the very sympy expressions the Python engine lambdifies
(:attr:`Formula.numeric_expr`). The first half is not re-implemented: it is
*observed*. The procedure is run with the engine's ``run`` intercepted, which
hands back ``(specs, given)``, and

* every given number that follows a catalog choice (model, GPU, a precision,
  whether an optional number is filled) is tabulated over exactly the choices
  it was seen to depend on;
* every given number that follows a typed number is found by probing: it is
  that number (``context``), a multiple of it (``params_b`` × 10⁹), or one of
  the few :data:`ADAPTERS` written here as sympy (the ladder's
  ``min(avg_tokens, context)``) — anything else stops the export
  (:class:`ExportError`) rather than ship a calculator that disagrees;
* the step list is tabulated the same way (it depends on the model's attention,
  or on whether a budget was typed).

Finally :func:`build_program` checks itself: on random inputs it assembles
``given`` and the steps from the tables exactly as the driver will and compares
them with the procedure's own; a mismatch raises :class:`ExportError`.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import math
import random
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import sympy
from sympy.printing.jscode import JavascriptCodePrinter

from calculators.engine import formulas as F
from calculators.engine.catalog import default_catalog
from calculators.engine.errors import AnswerError, EngineError
from calculators.engine.formula import Formula
from calculators.engine.procedures import FAMILIES, Family, StepSpec
from calculators.engine.procedures.inputs import InputSpec
from calculators.engine.procedures.ladder import TP_DEGREES
from calculators.engine.unit_table import display_table
from calculators.engine.units import get_unit

DISPLAY_TABLE = display_table()  # the engine's unit records, shipped to the offline driver
DISCRETE_KINDS = ("model", "gpu", "choice")
NUMBER_KINDS = ("int", "float")
ABSENT, PRESENT = "-", "+"  # an optional number left blank, or typed
PRESENCE_PREFIX = "has:"

# Given numbers that follow several typed inputs at once, stated once as sympy over the
# inputs' names and printed to JavaScript like the formulas. Keyed by (family, given key).
ADAPTERS: dict[tuple[str, str], sympy.Expr] = {
    # No conversation outlives the context limit (procedures/ladder.py).
    ("ladder", "avg_tokens"): sympy.Min(sympy.Symbol("avg_tokens"), sympy.Symbol("context")),
}

# Given numbers computed from typed inputs AND other given numbers (evaluated after the tabulated
# ones), in every family that has them. The K/V replication of docs/architecture.md §12: a degree above the K/V
# head count copies each head; an MLA latent is copied on every card (step_model.kv_replication).
_GPUS, _KV_HEADS, _RANK = sympy.Symbol("gpus"), sympy.Symbol("kv_heads"), sympy.Symbol("kv_lora_rank")
_E, _K, _BATCH = sympy.Symbol("experts"), sympy.Symbol("experts_per_token"), sympy.Symbol("batch")
_DOMAIN, _NVLINK = sympy.Symbol("nvlink_domain_gpus"), sympy.Symbol("nvlink_gb_s_per_direction")
DERIVED: dict[str, sympy.Expr] = {
    "kv_replication": sympy.Piecewise((_GPUS, sympy.StrictGreaterThan(_RANK, 0)),
                                      (sympy.Max(1, _GPUS / _KV_HEADS), True)),
    # Experts a batch touches per MoE layer (serving_formulas.EXPERTS_TOUCHED); 0 for a dense model.
    "experts_touched": sympy.Piecewise((_E * (1 - (1 - _K / _E) ** _BATCH), sympy.StrictGreaterThan(_E, 0)),
                                       (0, True)),
    # Two all-reduces per layer once the model is split (procedures/step.py step_given).
    "allreduces": 2 * sympy.Symbol("layers") * sympy.Min(1, _GPUS - 1),
    # The ring's slowest link per direction (procedures/step.py link_gb_s).
    "link_gb_s": sympy.Piecewise(
        (_NVLINK, sympy.And(sympy.LessThan(_GPUS, _DOMAIN), sympy.StrictGreaterThan(_NVLINK, 0))),
        (sympy.Symbol("pcie_gb_s_per_direction"), sympy.LessThan(_GPUS, 8)),
        (sympy.Symbol("scale_out_gb_s"), True)),
}
# Families whose tensor-parallel degree settles by a loop (procedures/tp.py _settle_degree): the
# driver re-runs the steps at the degree they choose until it stops growing, setting these givens.
SETTLED = {"tp": ("gpus", "kv_replication")}

# Functions the driver implements by hand: ceilings and floors round like the engine's
# whole_ceil/whole_floor, and tp's next_tp_degree (its _imp_ is procedures/tp.buyable_degree) steps
# through the buyable degrees. An expression calling any other function the JavaScript printer
# does not know stops the export.
JS_FUNCTIONS = {"ceiling": "R.wholeCeil", "floor": "R.wholeFloor", "next_tp_degree": "R.nextTpDegree",
                "largest_batch": "R.largestBatch", "grid_batch": "R.gridBatch"}
# The refusals a procedure makes on its typed numbers, before or between its steps (in plain Python,
# so they cannot be observed as tables): the driver implements each kind with the engine's sentence.
# The degree rule (step_model.check_degree) reads the model's head counts from the tables: before
# resolving where the procedure checks it first, after ("given") where a card's refusal comes first.
_DEGREE = {"kind": "degree_rule"}
CHECKS: dict[str, list[dict]] = {
    "decode": [{"kind": "not_above", "low": "efficiency_low", "high": "efficiency_high"}, _DEGREE],  # decode.py
    "fleet": [{"kind": "packing", "replica": "gpus_per_replica", "node": "gpus_per_node"}],  # fleet.check_packing
    "kv": [_DEGREE],
    "ladder": [_DEGREE],
    "preempt": [{**_DEGREE, "after": "given"}],  # preempt.py refuses a card without PCIe first
    # pareto.py: the degree rule inside slo_given, then check_limits once both batch limits are known.
    "pareto": [{**_DEGREE, "after": "given"}, {"kind": "link", "after": "given"},
               {"kind": "pareto_feasible", "after": "batch_tpot_limit"}],
    "slo": [{"kind": "packing", "replica": "gpus", "node": "gpus_per_node"}, {**_DEGREE, "after": "given"},
            {"kind": "slo_feasible", "after": "max_batch"}],  # slo._check_feasible
    "tp": [{"kind": "power_of_two", "name": "gpus_per_node"}],  # tp.py run_tp
}
# The head counts the degree rule reads, tabulated for every family that checks it.
DEGREE_GIVENS = {"heads", "kv_heads", "kv_lora_rank"}
VERIFY_SAMPLES = 60
TP_DEGREES_CHECKED = (1, 2, 4, 8, 16)
RESCUE_TRIES = 200
RELATIVE_TOLERANCE = 1e-12


class ExportError(RuntimeError):
    """A family whose resolution the offline driver could not reproduce exactly."""


class _Captured(Exception):
    def __init__(self, specs: list[StepSpec], given: dict[str, Any]):
        super().__init__("captured")
        self.specs, self.given = specs, given


@contextmanager
def _intercepted(family: Family) -> Iterator[None]:
    """Make the family module's ``run`` hand back ``(specs, given)`` instead of evaluating.

    Patches a module global for the duration, so it is not thread-safe: the export runs alone."""
    module = importlib.import_module(family.procedure.__module__)
    original = module.run

    def capture(name, inputs, specs, given, notes, extra=None):
        raise _Captured(list(specs), dict(given))

    module.run = capture
    try:
        yield
    finally:
        module.run = original


def _js_code(expr: sympy.Expr, args: tuple[str, ...]) -> str:
    """``function (a, b) { return …; }`` for a numeric sympy expression."""
    printer = JavascriptCodePrinter({"user_functions": JS_FUNCTIONS, "strict": False})
    code = printer.doprint(expr)
    if printer._not_supported or "Not supported" in code:
        raise ExportError(f"No JavaScript for {sorted(map(str, printer._not_supported))} in {expr}; "
                          f"add it to the driver and to runbook.export.calculators.JS_FUNCTIONS.")
    return f"function ({', '.join(args)}) {{ return {code}; }}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return math.isclose(float(a), float(b), rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0) or a == b
    return a == b


@dataclass
class FormulaTable:
    """The formulas and given-expressions of one page, each printed once; ids are stable within it."""

    functions: dict[str, str] = field(default_factory=dict)
    _ids: dict[int, str] = field(default_factory=dict)
    sympy_expressions: dict[str, sympy.Expr] = field(default_factory=dict)
    units: set[str] = field(default_factory=set)
    _keep: list[Any] = field(default_factory=list)  # keep objects alive so id() stays unique

    evaluators: dict[str, Any] = field(default_factory=dict)

    def formula(self, formula: Formula) -> str:
        """The id of ``formula``'s JavaScript, printed from ``formula.numeric_expr``."""
        if id(formula) not in self._ids:
            name = f"f{len(self._ids)}_{formula.key}"
            args = tuple(v.name for v in formula.variables)
            self.functions[name] = _js_code(formula.numeric_expr, args)
            self._ids[id(formula)] = name
            self.evaluators[name] = formula  # the self-check's degree loop evaluates steps with it
            self._keep.append(formula)
        return self._ids[id(formula)]

    def expression(self, family: str, key: str, expr: sympy.Expr) -> str:
        """The id of a given-number expression over the family's typed inputs (arguments by name)."""
        name = f"g_{family}_{key}_{hashlib.sha256(sympy.srepr(expr).encode()).hexdigest()[:8]}"
        if name not in self.functions:
            args = tuple(sorted(s.name for s in expr.free_symbols))
            self.functions[name] = _js_code(expr, args)
            self.sympy_expressions[name] = expr
        return name


class _Observer:
    """Runs one family's procedure on chosen inputs, with ``run`` intercepted, caching results."""

    def __init__(self, family: Family):
        self.family = family
        self.specs = {spec.name: spec for spec in family.inputs}
        self._cache: dict[tuple, tuple[list[StepSpec], dict] | None] = {}
        self.errors: dict[tuple, str] = {}

    def error(self, raw: dict[str, Any]) -> str:
        """The procedure's message for inputs :meth:`observe` found rejected."""
        return self.errors.get(tuple(sorted(raw.items())), "These inputs give no result.")

    def observe(self, raw: dict[str, Any]) -> tuple[list[StepSpec], dict] | None:
        """``(specs, given)`` for ``raw``, or ``None`` when the procedure rejects these inputs."""
        key = tuple(sorted(raw.items()))
        if key not in self._cache:
            with _intercepted(self.family):
                try:
                    self.family.run(dict(raw))
                    outcome = None  # finished without run(): nothing to observe (every family calls it)
                except _Captured as captured:
                    outcome = (captured.specs, captured.given)
                except (EngineError, ArithmeticError, ValueError) as exc:
                    outcome = None
                    self.errors[key] = str(exc)
            self._cache[key] = outcome
        return self._cache[key]


def _dimensions(family: Family) -> list[tuple[str, tuple[str, ...]]]:
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


def _numeric_candidates(spec: InputSpec) -> list[float]:
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


def _random_number(rng: random.Random, spec: InputSpec) -> float:
    """A valid value for the self-check: a probe value half the time, else the default scaled at random."""
    if spec.name == "gpus":  # a tensor-parallel degree: most others break the degree rule (step_model)
        return rng.choice(TP_DEGREES_CHECKED)
    candidates = _numeric_candidates(spec) + ([spec.default] if spec.default is not None else [])
    base = spec.default or (candidates[0] if candidates else 1)
    if rng.random() < 0.5 or not candidates:
        return rng.choice(candidates) if candidates else base
    value = base * rng.uniform(0.3, 3)
    value = round(value) if spec.kind == "int" else value
    low = spec.minimum if spec.minimum is not None else -math.inf
    high = spec.maximum if spec.maximum is not None else math.inf
    valid = low < value <= high or (value == low and not spec.exclusive_minimum)
    return value if valid else rng.choice(candidates)


@dataclass
class FamilyProgram:
    """What the driver needs for one family (see :meth:`to_json`)."""

    slug: str
    inputs: list[dict]
    given: dict[str, dict]
    steps: dict
    alert: str | None
    extras: dict = field(default_factory=dict)
    checks: list[dict] = field(default_factory=list)
    verified: int = 0
    missing: int = 0

    def to_json(self) -> dict:
        """``{"slug", "inputs", "given": {key: {"deps", "cells"}}, "steps": {"deps", "cells"}, "alert",
        "extras", "checks"}``: a cell is a number, ``{"expr": id}`` or ``{"error": sentence}``."""
        return {"slug": self.slug, "inputs": self.inputs, "given": self.given, "steps": self.steps,
                "alert": self.alert, "extras": self.extras, "checks": self.checks}


class _Builder:
    """Observes one family's procedure and turns what it saw into a checked :class:`FamilyProgram`."""

    def __init__(self, family: Family, table: FormulaTable):
        self.family = family
        self.table = table
        self.observer = _Observer(family)
        self.dims = _dimensions(family)
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
            for value in _numeric_candidates(spec):
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
            for probe in _numeric_candidates(spec)[:3]:
                if probe == raw[spec.name]:
                    continue
                seen = self.observer.observe({**raw, spec.name: probe})
                if seen is None:
                    continue
                if _signature(seen[0]) != base_signature:
                    raise ExportError(f"{self.family.slug}: the steps change with the number {spec.name}; "
                                      f"the offline driver cannot follow that.")
                for key, value in seen[1].items():
                    if not _same(value, base[1].get(key)):
                        depends.setdefault(key, []).append((spec.name, probe, value))
        exprs: dict[str, sympy.Expr] = {}
        for (slug, key), expr in ADAPTERS.items():
            if slug == self.family.slug and {s.name for s in expr.free_symbols} <= set(raw):
                exprs[key] = expr
        for key, seen in depends.items():
            if key in exprs or key in DERIVED or key in SETTLED.get(self.family.slug, ()):
                continue
            names = {name for name, _, _ in seen}
            if len(names) != 1:
                raise ExportError(f"{self.family.slug}: given {key} follows {sorted(names)} together; "
                                  f"state it in runbook.export.calculators.ADAPTERS.")
            name = names.pop()
            points = [(raw[name], base[1][key])] + [(probe, value) for _, probe, value in seen]
            if all(_same(value, probe) for probe, value in points):
                exprs[key] = sympy.Symbol(name)
                continue
            ratios = {value / probe for probe, value in points if _is_number(value) and probe}
            if len(points) >= 2 and all(_is_number(v) for _, v in points) and \
                    all(_same(r, next(iter(ratios))) for r in ratios):
                exprs[key] = sympy.nsimplify(next(iter(ratios)), rational=True) * sympy.Symbol(name)
                continue
            raise ExportError(f"{self.family.slug}: given {key} follows {name} in a way the driver cannot "
                              f"infer; state it in runbook.export.calculators.ADAPTERS.")
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
                    if not _same(seen[1].get(key), base_given.get(key)):
                        given_deps.setdefault(key, set()).add(name)
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

        settled = SETTLED.get(self.family.slug, ())
        if any(check["kind"] == "degree_rule" for check in CHECKS.get(self.family.slug, [])):
            used |= DEGREE_GIVENS & set(base_given)
        for key in used & set(DERIVED):  # the tabulated numbers a derived one reads
            used |= {sym.name for sym in DERIVED[key].free_symbols} & set(base_given)
        given = {key: given_entry(key) for key in sorted(used) if key not in DERIVED and key not in settled}
        for key in sorted(used & set(DERIVED)):
            if key not in settled:
                given[key] = {"deps": [], "derived": True,
                              "cells": {"": {"expr": self.table.expression(self.family.slug, key, DERIVED[key])}}}
        for key in sorted(used & set(settled)):
            given[key] = {"deps": [], "cells": {}}  # set by the driver's degree loop
        missing += sum(1 for entry in given.values() for cell in entry["cells"].values()
                       if isinstance(cell, dict) and "error" in cell)

        program = FamilyProgram(self.family.slug, [_input_json(s) for s in self.family.inputs], given,
                                {"deps": steps_deps, "cells": step_cells}, None,
                                checks=CHECKS.get(self.family.slug, []), missing=missing)
        if settled:
            program.extras["settle"] = {"keys": list(settled), "replication": self.table.expression(
                self.family.slug, "kv_replication", DERIVED["kv_replication"])}
        if self.family.slug == "pareto":
            # The driver's curve (procedures/pareto_curve.py): the steps re-run at each degree and grid batch.
            from calculators.engine.procedures.pareto_curve import CURVE_DEGREES

            program.extras["curve"] = {"degrees": list(CURVE_DEGREES)}
        if self.family.slug == "ladder":
            # The driver's one hand-written branch: the ladder's does-not-fit alert (procedures/ladder.py).
            program.alert = "ladder"
            program.extras = {"paged_user_gib": self.table.formula(F.PAGED_USER_GIB),
                              "tp_degrees": list(TP_DEGREES)}
            for key in ("avg_tokens", "block_size"):
                program.given.setdefault(key, given_entry(key))
        program.verified = self.verify(program)
        return program

    def observe_somewhere(self, point: dict[str, str]) -> tuple | str:
        """``(specs, given)`` for these choices at the defaults or, if the procedure rejects those,
        at the first of some seeded other numbers and other choices it accepts (a tabulated value
        depends only on its own choices; :meth:`verify` checks that); else the procedure's message."""
        raw = self.raw_for(point)
        seen = self.observer.observe(raw)
        if seen is not None:
            return seen
        rng = random.Random(f"rescue-{self.family.slug}-{sorted(point.items())}")
        for _ in range(RESCUE_TRIES):
            others = {name: rng.choice(values) for name, values in self.dims if name not in point}
            numbers = {spec.name: rng.choice(_numeric_candidates(spec)) for spec in self.numbers}
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
            numbers = {spec.name: _random_number(rng, spec) for spec in self.numbers}
            raw = self.raw_for(point, numbers)
            seen = self.observer.observe(raw)
            if seen is None:
                continue
            steps, given = assemble(program, raw, self.table)
            if [s["key"] for s in steps] != [s.key for s in seen[0]] or \
                    [s["formula"] for s in steps] != [self.table.formula(s.formula) for s in seen[0]]:
                raise ExportError(f"{self.family.slug}: offline steps differ from the procedure's at {raw}.")
            for key in given:
                if not _same(given[key], seen[1].get(key)):
                    raise ExportError(f"{self.family.slug}: offline {key} = {given[key]!r}, the procedure's "
                                      f"{seen[1].get(key)!r}, at {raw}.")
            checked += 1
        if checked < samples // 3:
            raise ExportError(f"{self.family.slug}: too few random inputs were accepted to check the export.")
        return checked


def _signature(specs: list[StepSpec]) -> tuple:
    return tuple((s.key, id(s.formula), tuple(sorted(s.from_steps.items())), s.rounding) for s in specs)


def _input_json(spec: InputSpec) -> dict:
    return {"name": spec.name, "kind": spec.kind, "default": spec.default, "min": spec.minimum,
            "max": spec.maximum, "exclusive_min": spec.exclusive_minimum, "choices": list(spec.choices)}


def cell_key(deps: list[str], raw: dict[str, Any]) -> str:
    """The table key of ``raw``'s choices along ``deps`` (as the driver computes it)."""
    parts = []
    for dep in deps:
        if dep.startswith(PRESENCE_PREFIX):
            parts.append(PRESENT if raw.get(dep[len(PRESENCE_PREFIX):]) is not None else ABSENT)
        else:
            parts.append(str(raw[dep]))
    return "|".join(parts)


def assemble(program: FamilyProgram, raw: dict[str, Any], table: FormulaTable) -> tuple[list[dict], dict]:
    """The steps and given numbers for ``raw`` read from ``program``'s tables (the driver's logic, in
    Python, for the self-check). Raises ``KeyError`` where a table has no cell."""
    steps = program.steps["cells"][cell_key(program.steps["deps"], raw)]
    if isinstance(steps, dict):
        raise KeyError(steps["error"])
    given = {}
    derived = []
    for key, entry in program.given.items():
        cell = entry["cells"].get(cell_key(entry["deps"], raw))
        if isinstance(cell, dict) and "error" in cell:
            raise KeyError(cell["error"])
        if entry.get("derived"):
            derived.append((key, cell))
        elif isinstance(cell, dict):
            function = _python_function(table.functions[cell["expr"]], cell["expr"], table)
            given[key] = function(raw)
        elif cell is not None or cell_key(entry["deps"], raw) in entry["cells"]:
            given[key] = cell
    for key, cell in derived:  # after the tabulated numbers they read
        given[key] = _python_function(table.functions[cell["expr"]], cell["expr"], table)({**raw, **given})
    if "settle" in program.extras:
        given.update(_settle(steps, given, program.extras["settle"], table))
    return steps, given


def _settle(steps: list[dict], given: dict, settle: dict, table: FormulaTable) -> dict:
    """The driver's degree loop (procedures/tp.py _settle_degree), in Python for the self-check:
    evaluate at degree 1, then at the degree the steps choose, until it stops growing."""
    replication = _python_function(table.functions[settle["replication"]], settle["replication"], table)
    degree = 1
    while True:
        at = {**given, "gpus": degree}
        at["kv_replication"] = replication(at)
        values = {}
        for step in steps:
            formula = table.evaluators[step["formula"]]
            values[step["key"]] = formula({name: values[step["from"][name]] if name in step["from"] else at[name]
                                           for name in step["args"]})
        chosen = int(values["tp_degree"])
        heads, kv_heads = int(at["heads"]), int(at["kv_heads"])
        if chosen <= degree or heads % chosen or (kv_heads % chosen and chosen % kv_heads):
            return {"gpus": at["gpus"], "kv_replication": at["kv_replication"]}
        degree = chosen


def _python_function(js: str, name: str, table: FormulaTable):
    """Evaluate a given-expression in Python (the self-check): it is kept as sympy beside its JS."""
    expr = table.sympy_expressions[name]
    args = sorted(s.name for s in expr.free_symbols)
    evaluator = sympy.lambdify([sympy.Symbol(a) for a in args], expr, modules="math")
    return lambda raw: float(evaluator(*(raw[a] for a in args)))


def build_programs(slugs: list[str], table: FormulaTable) -> dict[str, FamilyProgram]:
    """The :class:`FamilyProgram` of each family in ``slugs`` (each checked; see module docstring)."""
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
    """A unit's display rule for the offline driver: the engine's unit-table record
    (:func:`calculators.engine.unit_table.display_table`) with the parser's symbol and dimension,
    or ``None`` for a unit the parser does not know."""
    try:
        spec = get_unit(unit)
    except AnswerError:
        return None
    return {**DISPLAY_TABLE.get(unit, {}), "symbol": spec.symbol, "dimension": spec.dimension}


def formulas_script(table: FormulaTable) -> str:
    """``window.OfflineFormulas = {...}``: every printed formula and given-expression of the page.

    Uses ``R.wholeCeil``/``R.wholeFloor`` from the driver's rounding (``window.OfflineRounding``)."""
    body = ",\n".join(f"  {name!r}: {code}" for name, code in sorted(table.functions.items()))
    return ("(function () {\n\"use strict\";\nvar R = window.OfflineRounding;\n"
            f"window.OfflineFormulas = {{\n{body}\n}};\n}})();")

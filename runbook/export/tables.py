"""The printed half of the offline export: formulas as JavaScript, and the driver's table lookups.

:class:`FormulaTable` prints each step formula (from :attr:`Formula.numeric_expr`, the sympy the
Python engine lambdifies) and each given-number expression once per page; :class:`FamilyProgram` is
one family's tables; :func:`assemble` reads steps and given numbers out of them exactly as
``static/js/offline-calculator.js`` does (the export's self-check runs it against the engine).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import sympy
from sympy.printing.jscode import JavascriptCodePrinter

from calculators.engine.formula import Formula
from calculators.engine.step_model import LINK_GB_S_RULE

ABSENT, PRESENT = "-", "+"  # an optional number left blank, or typed
PRESENCE_PREFIX = "has:"
RELATIVE_TOLERANCE = 1e-12

# Given numbers computed from typed inputs AND other given numbers (evaluated after the tabulated
# ones), in every family that has them. The K/V replication of docs/architecture.md §12: a degree above the K/V
# head count copies each head; an MLA latent is copied on every card (step_model.kv_replication).
_GPUS, _KV_HEADS, _RANK = sympy.Symbol("gpus"), sympy.Symbol("kv_heads"), sympy.Symbol("kv_lora_rank")
_E, _K, _BATCH = sympy.Symbol("experts"), sympy.Symbol("experts_per_token"), sympy.Symbol("batch")
DERIVED: dict[str, sympy.Expr] = {
    "kv_replication": sympy.Piecewise((_GPUS, sympy.StrictGreaterThan(_RANK, 0)),
                                      (sympy.Max(1, _GPUS / _KV_HEADS), True)),
    # Experts a batch touches per MoE layer (formulas.serving.EXPERTS_TOUCHED); 0 for a dense model.
    "experts_touched": sympy.Piecewise((_E * (1 - (1 - _K / _E) ** _BATCH), sympy.StrictGreaterThan(_E, 0)),
                                       (0, True)),
    # Two all-reduces per layer once the model is split (procedures/step.py step_given).
    "allreduces": 2 * sympy.Symbol("layers") * sympy.Min(1, _GPUS - 1),
    # The ring's slowest link per direction, the engine's own rule (step_model.LINK_GB_S_RULE).
    "link_gb_s": LINK_GB_S_RULE,
}
# Functions the driver implements by hand: ceilings and floors round like the engine's
# whole_ceil/whole_floor, and tp's next_tp_degree (its _imp_ is procedures/tp.buyable_degree) steps
# through the buyable degrees. An expression calling any other function the JavaScript printer
# does not know stops the export.
JS_FUNCTIONS = {"ceiling": "R.wholeCeil", "floor": "R.wholeFloor", "next_tp_degree": "R.nextTpDegree",
                "largest_batch": "R.largestBatch", "grid_batch": "R.gridBatch"}


class ExportError(RuntimeError):
    """A family whose resolution the offline driver could not reproduce exactly."""


def _js_code(expr: sympy.Expr, args: tuple[str, ...]) -> str:
    """``function (a, b) { return …; }`` for a numeric sympy expression."""
    printer = JavascriptCodePrinter({"user_functions": JS_FUNCTIONS, "strict": False})
    code = printer.doprint(expr)
    if printer._not_supported or "Not supported" in code:
        raise ExportError(f"No JavaScript for {sorted(map(str, printer._not_supported))} in {expr}; "
                          f"add it to the driver and to runbook.export.tables.JS_FUNCTIONS.")
    return f"function ({', '.join(args)}) {{ return {code}; }}"


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or a float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same(a: Any, b: Any) -> bool:
    """Whether two given numbers agree (to :data:`RELATIVE_TOLERANCE`), or two other values are equal."""
    if is_number(a) and is_number(b):
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

"""A formula written once, as a sympy expression with a unit on every variable.

From one :class:`Formula` come:

* the numeric evaluator (``sympy.lambdify`` on the ``math`` module, built once
  per formula and cached) that procedures and the grader call;
* the exact evaluation (``expr.subs`` with rationals) that tests compare it to;
* the presentation MathML shown on the pages (no fonts or scripts needed) and
  the LaTeX source;
* the worked substitution ("2 × 32 × 8 × 128 × 2 = 131,072 B") shown after a
  problem is graded;
* a dimension check: every variable carries a unit, the numeric expression is
  derived from the physical one by substituting each unit's size, and a
  relation whose units do not reduce to the declared result unit cannot be
  defined (:class:`FormulaUnitError`).

Expressions are built with ``evaluate=False`` where the order of factors is
part of the teaching (the KV formula reads 2 × layers × KV heads × head dim ×
bytes, in that order); printers are asked to keep that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Mapping, Sequence

import sympy
from sympy.printing.mathml import MathMLPresentationPrinter
from sympy.printing.str import StrPrinter

from .errors import InputError
from .quantities import QUANTITIES

# Every unit's size in the check's bases comes from the one unit table (:mod:`.units`).
from .units import BASE_SYMBOLS, RECORDS, UnitRecord

# Bases a formula's dimension check keeps (positive symbols, so sympy cancels them exactly).
BYTE = sympy.Symbol("unit_byte", positive=True)
SECOND = sympy.Symbol("unit_second", positive=True)
USD = sympy.Symbol("unit_usd", positive=True)
FORMULA_BASES = {"B": BYTE, "s": SECOND, "USD": USD}


def _in_formula_bases(record: UnitRecord) -> sympy.Expr:
    """The unit's size in bytes, seconds and dollars (other bases enter formulas as counts)."""
    factor = record.factor
    size = sympy.Rational(factor.numerator, factor.denominator)
    for base, power in zip(BASE_SYMBOLS, record.exponents):
        if base in FORMULA_BASES and power:
            size *= FORMULA_BASES[base] ** power
    return size


#: Each unit's size in the formula layer's bases (bytes, seconds, dollars; :data:`.units.RECORDS`).
UNIT_IN_BASE: dict[str, sympy.Expr] = {symbol: _in_formula_bases(record) for symbol, record in RECORDS.items()}

_BASE_UNITS = (BYTE, SECOND, USD)


# A ratio this close (relative) to a whole number is that number: float round-off
# (0.6 is stored as 0.59999…) must not turn an exact 125 replicas into 126, or
# 53 users into 52. Exact sympy evaluation needs no such care. The one whole-number rule of the
# engine and the simulator (whose KV blocks floor with :func:`whole_floor` too). Round-off in a
# chain of a few float operations is ~1e-15 relative; 1e-12 keeps a thousand times that, and no more:
# at 1e-9, gpt-oss-20b at 4.5-bit weights on an MI300X (216,854.99993 blocks, a true fraction) took
# a block that is not there.
WHOLE_TOLERANCE = 1e-12


def near_whole(value: float) -> int | None:
    """The whole number ``value`` is within round-off of, or ``None``."""
    nearest = round(value)
    return nearest if abs(value - nearest) <= WHOLE_TOLERANCE * max(1.0, abs(value)) else None


def whole_ceil(value: float) -> int:
    """⌈value⌉, except that a value within round-off of a whole number is that number."""
    nearest = near_whole(value)
    return nearest if nearest is not None else math.ceil(value)


def whole_floor(value: float) -> int:
    """⌊value⌋, except that a value within round-off of a whole number is that number."""
    nearest = near_whole(value)
    return nearest if nearest is not None else math.floor(value)


def _pull_common_factor(expr: sympy.Expr) -> sympy.Expr:
    """``max(a·u, b·u)`` → ``u·max(a, b)`` for a positive factor ``u`` (a unit's size) common to
    every argument, so a max or min of two times in ms reduces to ms like any other term."""
    powers = [arg.as_powers_dict() for arg in expr.args]
    common = [(base, exp) for base, exp in powers[0].items()
              if (base.is_positive or base in _BASE_UNITS) and all(p.get(base) == exp for p in powers[1:])]
    if not common:
        return expr
    factor = sympy.Mul(*(base**exp for base, exp in common))
    return factor * expr.func(*(arg / factor for arg in expr.args))


@dataclass(frozen=True)
class Var:
    """One input of a formula: its symbol name, its unit (a key of ``UNIT_IN_BASE``) and a label."""

    name: str
    unit: str
    label: str


class FormulaUnitError(ValueError):
    """A formula whose result does not have the dimension of its declared unit."""


class Formula:
    """A named physical relation between :class:`Var` inputs, giving the quantity ``key`` in its unit.

    The key names a quantity declared once in :data:`.quantities.QUANTITIES`: the formula takes its unit
    and its label from there (``label`` may name the form more precisely: "KV cache per token (latent)").
    Only a formula whose key is no quantity (an intermediate term such as ``experts_touched``) states its
    ``unit``; one that states a unit other than its quantity's raises :class:`FormulaUnitError`.

    ``build`` receives a dict of sympy symbols by variable name and returns the
    *physical* expression, each symbol standing for a quantity in its own unit
    (``s["params"] * s["weight_bits"]`` with ``weight_bits`` in bits gives
    bits). The numeric expression, which takes numbers in each variable's unit
    and returns a number in ``unit``, is derived from it by substituting each
    unit's size in bytes and seconds: conversion constants (÷ 8, ÷ 2^30) are
    never typed by hand, and a relation whose units do not reduce to ``unit``
    raises :class:`FormulaUnitError` when it is defined.
    """

    def __init__(self, key: str, variables: tuple[Var, ...], build: Callable[[dict[str, sympy.Symbol]], sympy.Expr],
                 *, label: str = "", unit: str = ""):
        declared = QUANTITIES.get(key)
        if declared is not None:
            if unit and unit != declared.unit:
                raise FormulaUnitError(f"Formula {key} states {unit}; its quantity is in {declared.unit}.")
            unit, label = declared.unit, label or declared.label
        elif not unit:
            raise FormulaUnitError(f"Formula {key} names no quantity (quantities.py), so it must state its unit.")
        label = label or key
        for name in (unit, *(v.unit for v in variables)):
            if name not in UNIT_IN_BASE:
                raise FormulaUnitError(f"Unknown unit '{name}' in formula {key}.")
        self.key = key
        self.label = label
        self.unit = unit
        self.variables = variables
        self.units = {v.name: v.unit for v in variables}
        self.symbols = {v.name: sympy.Symbol(v.name, real=True) for v in variables}
        self.expr = build(self.symbols)
        self.numeric_expr = self._numeric(self.expr)
        self._arg_names = tuple(v.name for v in variables)
        self._argument_symbols = [self.symbols[name] for name in self._arg_names]

    def __repr__(self) -> str:
        return f"Formula({self.key!r}: {self.text} [{self.unit}])"

    def _numeric(self, expr: sympy.Expr) -> sympy.Expr:
        in_base = {self.symbols[n]: self.symbols[n] * UNIT_IN_BASE[unit] for n, unit in self.units.items()}
        in_units = expr.subs(in_base).replace(lambda e: e.func in (sympy.Max, sympy.Min), _pull_common_factor)
        numeric = sympy.expand(sympy.powsimp(in_units / UNIT_IN_BASE[self.unit]))
        if numeric.free_symbols & set(_BASE_UNITS):
            # A sum of like quantities in a denominator ((a·B + b·B)⁻¹): take the unit out of the sum first.
            numeric = sympy.expand(sympy.powsimp(sympy.factor_terms(in_units) / UNIT_IN_BASE[self.unit]))
        leftover = numeric.free_symbols & set(_BASE_UNITS)
        if leftover:
            names = ", ".join(sorted(s.name.removeprefix("unit_") for s in leftover))
            raise FormulaUnitError(
                f"Formula {self.key} does not reduce to {self.unit}: {names} left over in {numeric}."
            )
        return numeric

    @cached_property
    def _evaluator(self) -> Callable[..., float]:
        # Ceilings and floors round like exact arithmetic (see WHOLE_TOLERANCE).
        return sympy.lambdify(self._argument_symbols, self.numeric_expr,
                              modules=[{"ceiling": whole_ceil, "floor": whole_floor}, "math"])

    def __call__(self, values: Mapping[str, float]) -> float:
        """Evaluate numerically with the cached evaluator.

        ``values`` maps every variable name to a number in that variable's unit;
        the result is in :attr:`unit`. Raises :class:`InputError` if one is missing.
        """
        try:
            args = [values[name] for name in self._arg_names]
        except KeyError as exc:
            raise InputError(f"Formula {self.key} needs a value for {exc.args[0]}.") from None
        try:
            return float(self._evaluator(*args))
        except (ZeroDivisionError, OverflowError):
            # Inputs at the edge of float range (5e-324, 1e308): one sentence, never a traceback.
            raise InputError(f"These inputs make {self.label.lower()} overflow; use realistic sizes.") from None

    def call_args(self, args: Sequence[float]) -> float:
        """Evaluate numerically on ``args``, one number per variable in :attr:`variables` order, with the
        cached evaluator: the grader's path for re-evaluating a step many times (no mapping built).
        Errors (``ZeroDivisionError``, ``OverflowError``, ``ValueError``) propagate unchanged."""
        return float(self._evaluator(*args))

    def exact(self, values: Mapping[str, float]) -> sympy.Expr:
        """Evaluate by exact sympy substitution, each value made rational (slow; for
        tests and the benchmark that the cached evaluator is measured against)."""
        subs = {self.symbols[n]: sympy.nsimplify(values[n], rational=True) for n in self._arg_names}
        return self.numeric_expr.subs(subs)

    @cached_property
    def latex(self) -> str:
        """The relation as LaTeX, variables spelled out."""
        names = {sym: r"\mathrm{" + name.replace("_", r"\_") + "}" for name, sym in self.symbols.items()}
        return sympy.latex(self.expr, symbol_names=names, order="none", mul_symbol="times")

    @cached_property
    def mathml(self) -> str:
        """Presentation MathML of ``key = relation`` for the pages (needs no fonts or scripts)."""
        printer = _OrderedMathML({"order": "none", "mul_symbol": "times"})
        body = printer._print(self.expr).toxml()
        lhs = f"<mi>{self.key.replace('_', ' ')}</mi><mo>=</mo>"
        return f'<math display="block"><mrow>{lhs}{body}</mrow></math>'

    @cached_property
    def text(self) -> str:
        """The relation in plain text, × for multiplication, factors in written order."""
        return _TextPrinter(None).doprint(self.expr)

    def substituted(self, values: Mapping[str, float], formatter: Callable[[float, str], str]) -> str:
        """The relation with each variable replaced by ``formatter(value, unit)``; a size counted in bits and
        given in bytes says so (``7,241,732,096 × 8 bit ÷ 8 bit/B``), or multiplying by 8 bit would seem to change
        nothing."""
        shown = {name: formatter(values[name], self.units[name]) for name in self._arg_names}
        text = _TextPrinter(shown).doprint(self.expr)
        if not self._counted_in_bits:
            return text
        return f"({text}) ÷ 8 bit/B" if self.expr.is_Add else f"{text} ÷ 8 bit/B"

    @cached_property
    def _counted_in_bits(self) -> bool:
        """Whether the result is a memory size and every term of the relation carries one bits-per-value variable,
        so the relation counts bits that the result turns into bytes."""
        bits = {self.symbols[name] for name, unit in self.units.items() if unit == "bit"}
        if not bits or RECORDS[self.unit].dimension != "memory":
            return False
        terms = self.expr.args if self.expr.is_Add else (self.expr,)
        return all(len(term.free_symbols & bits) == 1 and self._linear_in_bits(term, bits) for term in terms)

    @staticmethod
    def _linear_in_bits(term: sympy.Expr, bits: set) -> bool:
        """``term`` is a product with its bits variable as a plain factor (not divided by, not in a power)."""
        factors = term.args if term.is_Mul else (term,)
        return any(factor in bits for factor in factors)


def _without_minus_one(expr: sympy.Mul) -> sympy.Expr:
    """``-1 × a × b`` → ``a × b`` (kept unevaluated, in written order)."""
    rest = expr.args[1:]
    return rest[0] if len(rest) == 1 else sympy.Mul(*rest, evaluate=False)


def _split_fraction(expr: sympy.Mul) -> tuple[list, list]:
    """Split a product into numerator and denominator factors, keeping written order."""
    numer, denom = [], []
    for factor in expr.args:
        if factor.is_Pow and factor.exp.is_number and factor.exp.is_negative:
            denom.append(factor.base if factor.exp == -1
                         else sympy.Pow(factor.base, -factor.exp, evaluate=False))
        elif factor.is_Rational and factor.p == 1 and factor.q != 1:
            denom.append(sympy.Integer(factor.q))
        else:
            numer.append(factor)
    return numer, denom


class _OrderedMathML(MathMLPresentationPrinter):
    """Presentation MathML that spells variables out and keeps factors in written order."""

    def _print_Symbol(self, sym, style="plain"):
        mi = self.dom.createElement("mi")
        mi.appendChild(self.dom.createTextNode(sym.name.replace("_", " ")))
        return mi

    def _print_Mul(self, expr):
        if expr.args and expr.args[0] == -1:  # −m, not −1 × m
            inner = _without_minus_one(expr)
            row = self.dom.createElement("mrow")
            minus = self.dom.createElement("mo")
            minus.appendChild(self.dom.createTextNode("−"))
            row.appendChild(minus)
            row.appendChild(self._paren(inner) if inner.is_Add else self._print(inner))
            return row
        numer, denom = _split_fraction(expr)
        top = self._join_product(numer or [sympy.Integer(1)])
        if not denom:
            return top
        frac = self.dom.createElement("mfrac")
        frac.appendChild(top)
        frac.appendChild(self._join_product(denom))
        return frac

    def _print_log(self, expr):
        row = self.dom.createElement("mrow")
        name = self.dom.createElement("mi")
        name.appendChild(self.dom.createTextNode("ln"))
        row.appendChild(name)
        row.appendChild(self._paren(expr.args[0]))
        return row

    def _join_product(self, factors):
        row = self.dom.createElement("mrow")
        for i, factor in enumerate(factors):
            if i:
                times = self.dom.createElement("mo")
                times.appendChild(self.dom.createTextNode("×"))
                row.appendChild(times)
            if factor.is_Add:
                row.appendChild(self._paren(factor))
            else:
                row.appendChild(self._print(factor))
        return row

    def _paren(self, expr):
        row = self.dom.createElement("mrow")
        for text, node in (("(", None), (None, expr), (")", None)):
            if node is None:
                mo = self.dom.createElement("mo")
                mo.appendChild(self.dom.createTextNode(text))
                row.appendChild(mo)
            else:
                row.appendChild(self._print(node))
        return row


class _TextPrinter(StrPrinter):
    """Plain-text printer: × and ÷, ⌊ ⌋ and ⌈ ⌉, factors in written order; prints
    given text in place of each symbol when ``shown`` maps names to text."""

    def __init__(self, shown: Mapping[str, str] | None):
        super().__init__({"order": "none"})
        self._shown = shown

    def _print_Symbol(self, expr):
        return self._shown[expr.name] if self._shown is not None else expr.name

    def _print_floor(self, expr):
        return "⌊" + self._print(expr.args[0]) + "⌋"

    def _print_ceiling(self, expr):
        return "⌈" + self._print(expr.args[0]) + "⌉"

    def _print_Mul(self, expr):
        if expr.args and expr.args[0] == -1:  # −x, not −1 × x
            inner = _without_minus_one(expr)
            text = self._print(inner)
            return "−" + (f"({text})" if inner.is_Add else text)
        numer, denom = _split_fraction(expr)
        text = " × ".join(self.parenthesize(f, 40) for f in numer) or "1"
        for d in denom:
            text += " ÷ " + self.parenthesize(d, 51)
        return text

    def _print_Pow(self, expr, rational=False):
        base, exponent = expr.args
        if exponent.is_number and exponent.is_negative and not base.is_Integer:
            return "1 ÷ " + self.parenthesize(sympy.Pow(base, -exponent, evaluate=False), 50)
        shown_base = self._print(base)
        if not (base.is_Symbol or (base.is_Integer and base >= 0) or base is sympy.pi):
            shown_base = f"({shown_base})"
        shown_exponent = self._print(exponent)
        if not (exponent.is_Symbol or (exponent.is_Integer and exponent >= 0)):
            shown_exponent = f"({shown_exponent})"
        elif self._shown is not None and exponent.is_Symbol:
            # A substituted exponent is always bracketed (0.5, −3 and 93 alike), as the offline driver's
            # worked templates print it.
            shown_exponent = f"({shown_exponent})"
        return f"{shown_base}^{shown_exponent}"

    def _print_Pi(self, expr):
        return "π"

    def _print_log(self, expr):
        return "ln(" + self._print(expr.args[0]) + ")"

    def _print_Max(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Add(self, expr, order=None):
        terms = list(expr.args)
        text = self._print(terms[0])
        for term in terms[1:]:
            if term.could_extract_minus_sign():
                text += " − " + self.parenthesize(-term, 40)
            else:
                text += " + " + self._print(term)
        return text

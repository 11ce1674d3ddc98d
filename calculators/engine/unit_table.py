"""The one table of the units steps and formulas are written in (docs/architecture.md §10–§11).

Each :class:`UnitRecord` carries the unit's symbol, its dimension vector over
:data:`.units.BASE_SYMBOLS` (bytes, FLOP, tokens, seconds, USD, users, GPUs,
nodes, replicas, requests) with its exact factor to the coherent base unit —
both read from :mod:`.units`, the parser's vocabulary, so the two can never
disagree — and its display rule and label. From this table come:

* :data:`UNIT_IN_BASE` for :mod:`.formula`'s dimension check (the physical part
  of the vector: bytes, seconds and dollars; counts enter formulas as plain
  factors, so a formula's own check cannot tell users from GPUs — the parser
  and the step units can);
* the display of a step value (:func:`display`, which
  :func:`.procedures.base.format_number` uses) and of a bare operand;
* :func:`display_table`, the same rules as data for the offline calculator's
  JavaScript, so it formats from the table instead of a hand copy.

Display rules (DESIGN §10): ``plain`` — a bare number (four significant figures,
exact up to six below one, thousands separators for whole numbers); ``whole`` —
an integer with separators; ``fixed`` — ``decimals`` places; ``significant`` —
four significant figures; ``money`` — dollars to the cent. ``small_below``:
under that magnitude a ``fixed`` value shows ``small_digits`` significant
figures instead (always for rates; for sizes only when two decimals would hide
it). ``singular`` is the word for a count of one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

import sympy

from .units import BASE_SYMBOLS, Unit, resolve_unit

# Bases a formula's dimension check keeps (positive symbols, so sympy cancels them exactly).
BYTE = sympy.Symbol("unit_byte", positive=True)
SECOND = sympy.Symbol("unit_second", positive=True)
USD = sympy.Symbol("unit_usd", positive=True)
FORMULA_BASES = {"B": BYTE, "s": SECOND, "USD": USD}


@dataclass(frozen=True)
class UnitRecord:
    """One unit of steps and formulas: ``symbol``; ``label`` (how a form names it); ``style``,
    ``decimals``, ``small_below``, ``small_digits``, ``small_if_hidden`` (display, see the module);
    ``singular`` (for a count of one); ``bare_operand`` (printed without its unit inside a worked
    substitution); ``whole_json`` (an integral value prints as a JSON integer)."""

    symbol: str
    label: str
    style: str
    decimals: int = 0
    small_below: float = 0.0
    small_digits: int = 3
    small_if_hidden: bool = False
    singular: str = ""
    bare_operand: bool = False
    whole_json: bool = False

    def _unit(self) -> Unit:
        """The parser's unit of this symbol (every symbol of the table is one the parser reads)."""
        unit = resolve_unit(self.symbol)
        if unit is None:
            raise LookupError(f"The unit table's symbol {self.symbol!r} is not a unit the parser reads.")
        return unit

    @property
    def exponents(self) -> tuple[int, ...]:
        """The dimension vector over :data:`.units.BASE_SYMBOLS`."""
        return self._unit().exponents

    @property
    def factor(self) -> Fraction:
        """The exact factor to the coherent base unit of the dimension."""
        return self._unit().exact_factor

    @property
    def dimension(self) -> str:
        """The dimension's name (``memory``, ``bandwidth`` …) from :mod:`.units`."""
        return self._unit().dimension


def _r(symbol, label, style, decimals=0, **rest):
    return UnitRecord(symbol, label, style, decimals, **rest)


_MEMORY_SMALL = {"small_below": 1.0, "small_digits": 3, "small_if_hidden": True}
_RATE_SMALL = {"small_below": 10.0, "small_digits": 3}

RECORDS: dict[str, UnitRecord] = {r.symbol: r for r in (
    _r("1", "", "plain", bare_operand=True, whole_json=True),
    _r("B", "B", "whole", whole_json=True),
    _r("bit", "bits", "bit"),
    _r("KiB", "KiB", "fixed", 2),
    _r("MiB", "MiB", "mib"),
    _r("GiB", "GiB", "fixed", 2, **_MEMORY_SMALL),
    _r("GB", "GB", "fixed", 2, **_MEMORY_SMALL),
    _r("GB/s", "GB/s", "significant"),
    _r("TB/s", "TB/s", "significant"),
    _r("GiB/s", "GiB/s", "significant"),
    _r("FLOP", "FLOP", "whole", whole_json=True),
    _r("TFLOP", "TFLOP", "significant"),
    _r("FLOP/s", "FLOP/s", "significant"),
    _r("GFLOP/s", "GFLOP/s", "significant"),
    _r("TFLOP/s", "TFLOP/s", "significant"),
    _r("PFLOP/s", "PFLOP/s", "significant"),
    _r("FLOP/byte", "FLOP/byte", "fixed", 1, **_RATE_SMALL),
    _r("tok", "tokens", "tokens", bare_operand=True, whole_json=True),
    _r("Mtok", "million tokens", "significant"),
    _r("tok/s", "tok/s", "fixed", 1, **_RATE_SMALL),
    _r("tok/h", "tok/h", "fixed", 1),
    _r("req/s", "req/s", "significant", bare_operand=True),
    _r("requests", "requests", "whole", singular="request", bare_operand=True, whole_json=True),
    _r("s", "s", "significant"),
    _r("ms", "ms", "significant"),
    _r("us", "µs", "significant"),
    _r("µs", "µs", "significant"),
    _r("h", "h", "significant"),
    _r("users", "users", "whole", singular="user", bare_operand=True, whole_json=True),
    _r("GPUs", "GPUs", "whole", singular="GPU", bare_operand=True, whole_json=True),
    _r("nodes", "nodes", "whole", singular="node", bare_operand=True, whole_json=True),
    _r("replicas", "replicas", "whole", singular="replica", bare_operand=True, whole_json=True),
    _r("GPU-h", "GPU-hours", "significant"),
    _r("USD", "USD", "money"),
    _r("USD/h", "USD/h", "money"),
    _r("USD/Mtok", "USD/Mtok", "money"),
)}


def _in_formula_bases(record: UnitRecord) -> sympy.Expr:
    """The unit's size in bytes, seconds and dollars (other bases enter formulas as counts)."""
    factor = record.factor
    size = sympy.Rational(factor.numerator, factor.denominator)
    for base, power in zip(BASE_SYMBOLS, record.exponents):
        if base in FORMULA_BASES and power:
            size *= FORMULA_BASES[base] ** power
    return size


#: Each unit's size in the formula layer's bases (see the module docstring).
UNIT_IN_BASE: dict[str, sympy.Expr] = {symbol: _in_formula_bases(record) for symbol, record in RECORDS.items()}

#: Units whose integral values print as JSON integers (131072, not 131072.0).
WHOLE_UNITS = frozenset(symbol for symbol, record in RECORDS.items() if record.whole_json)
#: A count of one reads in the singular ("1 user", not "1 users").
SINGULAR = {symbol: record.singular for symbol, record in RECORDS.items() if record.singular}
#: Operands printed bare inside a worked substitution ("1 × 3.00 GiB", not "1 GPUs × …").
BARE_OPERAND_UNITS = frozenset(symbol for symbol, record in RECORDS.items() if record.bare_operand)


def display_table() -> dict[str, dict]:
    """The records as plain data (symbol → fields, with the dimension name and the factor as a float)
    for the offline calculator's JavaScript."""
    return {symbol: {**asdict(record), "dimension": record.dimension, "factor": float(record.factor)}
            for symbol, record in RECORDS.items()}

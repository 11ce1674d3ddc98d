"""Unit vocabulary for typed answers: dimensions, conversions and display.

Every unit is a product of integer powers of ten base quantities, in this
order: byte ``B``, operation ``FLOP``, token ``tok``, second ``s``, dollar
``USD``, ``user``, ``GPU``, ``node``, ``replica``, ``req`` (a request).  A dimension is that vector
of exponents, so bandwidth is B·s⁻¹ and a token price is USD·tok⁻¹.  Named
dimensions (``"memory"``, ``"bandwidth"``, ...) are labels on common vectors.

``Unit.factor`` converts a value in the unit into the *coherent* base unit
of its dimension: bytes, B/s, FLOP, FLOP/s, FLOP/B, tokens, tok/s, seconds,
USD, USD per **second** (so ``USD/h`` has factor 1/3600 and ``$/h × h``
gives dollars), USD per token (``USD/Mtok`` has factor 1e-6), and the counts.

Spellings :func:`get_unit` accepts (whitespace anywhere is ignored):

* Memory: ``B``, ``byte``/``bytes``; decimal ``kB KB MB GB TB PB EB``; binary
  ``KiB MiB GiB TiB PiB EiB``; ``bit``/``bits`` (1/8 byte).  Prefixed symbols
  are case-sensitive: ``Mb`` and ``Gb`` (bits or bytes?) are rejected with a
  hint, not guessed.  All in lower case (``gb``, ``tb/s``) they are read as
  bytes only in a step that asks for a memory size or a bandwidth
  (:func:`respell`, which the answer reader applies and notes).
* Operations: ``FLOP``, ``FLOPs`` (lowercase s is a plural count) and the
  ``k K M G T P E`` prefixed forms (``TFLOP``, ``TFLOPs``).  Throughput:
  ``FLOPS`` (capital S means per second), ``GFLOPS TFLOPS PFLOPS``...,
  or any operation unit over time such as ``TFLOP/s``.
* Tokens: ``tok toks token tokens`` and multiples ``Ktok``/``ktok``,
  ``Mtok``, ``1M tokens``, ``M tok`` (any of the four words).
* Time: ``ns``; ``µs`` ``μs`` ``us`` (micro sign or Greek mu); ``ms``; ``s``
  ``sec`` ``secs`` ``second(s)``; ``min`` ``mins`` ``minute(s)``; ``h``
  ``hr`` ``hrs`` ``hour(s)``; ``day(s)``.
* Money: ``$`` and ``USD``.  Counts: ``user(s)``, ``GPU(s)``, ``card(s)``
  (a GPU), ``node(s)``, ``replica(s)``, ``req``/``request(s)``; ``GPU-h``
  (a GPU for an hour).  ``%`` is 1/100; ``1`` is the
  dimensionless unit.
* Whole words (bytes, bits, tokens, seconds, minutes, hours, days, USD and
  the counts) are also accepted in any case; short symbols are not.
* A compound unit joins simple units with ``/``: ``TB/s``, ``FLOP/byte``,
  ``$/M tok``, ``USD/h``; ``a/b/c`` means a/(b·c), as in ``tok/s/user``.

The table of the units steps and formulas are written in (docs/architecture.md §10–§11): each
:class:`UnitRecord` carries the unit's symbol, its dimension vector over :data:`BASE_SYMBOLS` (bytes,
FLOP, tokens, seconds, USD, users, GPUs, nodes, replicas, requests) with its exact factor to the coherent
base unit — both read from the parser's vocabulary above, so the two can never disagree — and its display
rule and label. From this table come:

* :data:`.formula.UNIT_IN_BASE` for the formulas' dimension check (the physical part
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
under that magnitude a ``fixed`` (or ``whole``) value shows ``small_digits`` significant
figures instead (always for rates; for sizes only when the rounding would hide
it: 0.5625 B per fp4 value, not "1 B"). ``singular`` is the word for a count of one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from calculators.engine.errors import AnswerError

GIB = 2**30  # bytes in a GiB
GB = 10**9  # bytes in a (decimal) GB
GIB_PER_GB = GIB / GB  # 1.073741824: a GiB is 7.4 % more than a GB
BINARY_STEP = 2**10  # one binary prefix to the next: 1,024 B in a KiB, 1,024 MiB in a GiB (IEC 80000-13)

#: Scale words and suffixes a count may carry (``7.6B`` parameters, ``70 billion``, ``1.2k`` requests): read only in
#: a step that asks for a count or a plain number (:data:`COUNT_DIMENSIONS`), never in a bytes step, where ``B``
#: stays bytes.
COUNT_SCALES = {"k": 10**3, "K": 10**3, "thousand": 10**3, "M": 10**6, "million": 10**6, "B": 10**9, "bn": 10**9,
                "billion": 10**9, "T": 10**12, "trillion": 10**12}
#: Lower-case spellings of the decimal byte units, read as those units only in a step that asks for one of
#: :data:`LOWER_CASE_DIMENSIONS` (``52 gb`` in a GiB step is 52 GB, said in the feedback): there a lower-case
#: ``b`` can only be bytes. Anywhere else they stay unknown, and ``Gb``/``Mb`` (a capital prefix before a
#: lower-case ``b``, how bits are written) are refused everywhere.
LOWER_CASE_BYTES = {"kb": "kB", "mb": "MB", "gb": "GB", "tb": "TB", "pb": "PB", "eb": "EB"}
LOWER_CASE_DIMENSIONS = frozenset({"memory", "bandwidth"})
#: The words a 1-or-0 verdict step reads besides 1 and 0, by the kind of verdict it gives (a ``flag`` quantity names
#: its kind, :attr:`.quantities.Quantity.verdict`), in any case, a space or ``_`` read as ``-`` ("Memory bound").
#: The first word of each value is the one a form offers as a choice; ``calc``, ``grade --json`` and the API keep
#: the values 1 and 0 (DESIGN §10).
VERDICT_WORDS: dict[str, dict[str, int]] = {
    "bound": {"compute-bound": 1, "compute": 1, "memory-bound": 0, "memory": 0},
    "yes/no": {"yes": 1, "no": 0},
}


def verdict_choices(kind: str) -> tuple[tuple[str, int], ...]:
    """The word a form offers for each value of a ``kind`` verdict, 1 first: ``(("compute-bound", 1),
    ("memory-bound", 0))``. Raises KeyError for a kind not in :data:`VERDICT_WORDS`."""
    first: dict[int, str] = {}
    for word, value in VERDICT_WORDS[kind].items():
        first.setdefault(value, word)
    return tuple((first[value], value) for value in (1, 0))


def verdict_phrase(kind: str) -> str:
    """How a message names a ``kind`` verdict's answers: ``"compute-bound (1) or memory-bound (0)"``."""
    return " or ".join(f"{word} ({value})" for word, value in verdict_choices(kind))


#: Counts that name one thing: a request in flight is one user (sequence) of a batch, so a step counting either
#: reads a count of the other as its own (``400 requests`` where concurrent users are asked for), said in the
#: feedback. Rates are not included (req/s and users are not one dimension).
SAME_COUNTS = frozenset({"users", "requests"})
#: Dimensions whose step reads a bare amount of money as the step's own unit (``$0.67`` where USD/Mtok is asked,
#: ``$24`` where USD/h is): the "per" is the step's, as a bare number's unit is.
PER_STEP_MONEY = frozenset({"token_price", "money_rate"})
#: Nouns a plain-number step reads as the thing it counts, after a number or a scale word (``8030261248
#: parameters``, ``8 billion parameters``, ``423 adapters``, ``64 bands``): the things the plain-number quantities
#: count (:mod:`.quantities`: parameters, adapters, bands, K/V copies, elements), any case.
PLAIN_NOUNS = frozenset({"parameters", "parameter", "params", "weights", "adapters", "adapter", "bands", "band",
                         "copies", "copy", "elements"})

BASE_SYMBOLS = ("B", "FLOP", "tok", "s", "USD", "user", "GPU", "node", "replica", "req")
Exponents = tuple[int, ...]
DIMENSIONLESS: Exponents = (0,) * len(BASE_SYMBOLS)


def _dims(**powers: int) -> Exponents:
    return tuple(powers.get(name, 0) for name in BASE_SYMBOLS)


# name -> (exponent vector, phrase used in messages, coherent base unit symbol)
_DIMENSIONS: dict[str, tuple[Exponents, str, str]] = {
    "memory": (_dims(B=1), "a memory size", "B"),
    "bandwidth": (_dims(B=1, s=-1), "a bandwidth", "B/s"),
    "compute": (_dims(FLOP=1, s=-1), "a compute throughput", "FLOP/s"),
    "operations": (_dims(FLOP=1), "an operation count", "FLOP"),
    "intensity": (_dims(FLOP=1, B=-1), "an arithmetic intensity", "FLOP/B"),
    "tokens": (_dims(tok=1), "a token count", "tok"),
    "token_rate": (_dims(tok=1, s=-1), "a token rate", "tok/s"),
    "time": (_dims(s=1), "a duration", "s"),
    "money": (_dims(USD=1), "an amount of money", "USD"),
    "money_rate": (_dims(USD=1, s=-1), "a cost per hour", "USD/s"),
    "token_price": (_dims(USD=1, tok=-1), "a price per token", "USD/tok"),
    "users": (_dims(user=1), "a user count", "users"),
    "gpus": (_dims(GPU=1), "a GPU count", "GPUs"),
    "nodes": (_dims(node=1), "a node count", "nodes"),
    "replicas": (_dims(replica=1), "a replica count", "replicas"),
    "requests": (_dims(req=1), "a request count", "requests"),
    "request_rate": (_dims(req=1, s=-1), "a request rate", "req/s"),
    "dimensionless": (DIMENSIONLESS, "a plain number", "1"),
}
_NAME_OF_EXPONENTS = {dims: name for name, (dims, _, _) in _DIMENSIONS.items()}

#: Dimensions whose messages need no "in <unit>" (a count is a count).
COUNT_DIMENSIONS = frozenset({"tokens", "users", "gpus", "nodes", "replicas", "requests", "dimensionless"})

#: The exact unit strings that worked steps use.
CANONICAL_UNITS = (
    "B", "GiB", "GB", "GB/s", "FLOP", "FLOP/s", "FLOP/byte", "tok", "tok/s",
    "s", "ms", "users", "GPUs", "nodes", "replicas", "USD", "USD/h", "USD/Mtok", "1",
    "req/s", "µs", "requests",  # DESIGN §11's additions
)


@dataclass(frozen=True)
class Unit:
    """One unit: ``symbol`` as spelled (whitespace removed), ``dimension`` name
    (see :func:`dimension_phrase`; an unnamed combination is described by its
    base units, e.g. ``"B·s"``), ``factor`` to the coherent base unit as a
    float, ``exponents`` over :data:`BASE_SYMBOLS`, and ``exact_factor``, the
    same factor as a Fraction so conversions between decimal units stay exact.
    """

    symbol: str
    dimension: str
    factor: float
    exponents: Exponents = field(default=DIMENSIONLESS, compare=False)
    exact_factor: Fraction = field(default=Fraction(1), compare=False, repr=False)

    @property
    def phrase(self) -> str:
        """The human phrase for this unit's dimension, e.g. ``"a bandwidth"``."""
        return dimension_phrase(self.dimension)


# Simple (slash-free) spellings: exact-case table and a lowercase table for words.
_SIMPLE: dict[str, tuple[Exponents, Fraction]] = {}
_ANY_CASE: dict[str, str] = {}


def _add(names: str, dims: Exponents, factor: Fraction | int, any_case: bool = False) -> None:
    for name in names.split():
        _SIMPLE[name] = (dims, Fraction(factor))
        if any_case:
            _ANY_CASE[name.lower()] = name


def _build_vocabulary() -> None:
    mem, ops, flops = _dims(B=1), _dims(FLOP=1), _dims(FLOP=1, s=-1)
    _add("B", mem, 1)
    _add("byte bytes", mem, 1, any_case=True)
    _add("bit bits", mem, Fraction(1, 8), any_case=True)
    for prefix, power in (("k", 1), ("K", 1), ("M", 2), ("G", 3), ("T", 4), ("P", 5), ("E", 6)):
        _add(prefix + "B", mem, 10 ** (3 * power))
        _add(f"{prefix}FLOP {prefix}FLOPs", ops, 10 ** (3 * power))
        _add(prefix + "FLOPS", flops, 10 ** (3 * power))
    for prefix, power in (("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)):
        # Binary sizes are unambiguous in any case ("gib" can only mean GiB), unlike "gb"/"Gb".
        _add(prefix + "B", mem, 2 ** (10 * power), any_case=True)
    _add("FLOP FLOPs", ops, 1)
    _add("FLOPS", flops, 1)
    tok = _dims(tok=1)
    _add("tok toks token tokens", tok, 1, any_case=True)
    for prefix, factor in (("K", 10**3), ("k", 10**3), ("M", 10**6)):
        for word in ("tok", "toks", "token", "tokens"):
            _add(f"{prefix}{word} 1{prefix}{word}", tok, factor)
    sec = _dims(s=1)
    _add("ns", sec, Fraction(1, 10**9))
    _add("µs μs us", sec, Fraction(1, 10**6))
    _add("ms", sec, Fraction(1, 1000))
    _add("s", sec, 1)
    _add("sec secs second seconds", sec, 1, any_case=True)
    _add("min mins minute minutes", sec, 60, any_case=True)
    _add("h hr hrs hour hours", sec, 3600, any_case=True)
    _add("day days", sec, 86400, any_case=True)
    _add("$", _dims(USD=1), 1)
    _add("USD", _dims(USD=1), 1, any_case=True)
    _add("user users", _dims(user=1), 1, any_case=True)
    _add("GPU GPUs card cards", _dims(GPU=1), 1, any_case=True)
    _add("node nodes", _dims(node=1), 1, any_case=True)
    _add("replica replicas", _dims(replica=1), 1, any_case=True)
    _add("req reqs request requests", _dims(req=1), 1, any_case=True)
    # Load-testing tools print a request rate as rps or QPS (requests or queries per second).
    _add("rps qps", _dims(req=1, s=-1), 1, any_case=True)
    _add("GPU-h GPU-hour GPU-hours", _dims(GPU=1, s=1), 3600)
    _add("%", DIMENSIONLESS, Fraction(1, 100))


_build_vocabulary()


def _lookup_simple(name: str) -> tuple[Exponents, Fraction] | None:
    if name in _SIMPLE:
        return _SIMPLE[name]
    canonical = _ANY_CASE.get(name.lower())
    return _SIMPLE[canonical] if canonical else None


#: The byte symbols whose case carries meaning: read in another case (``gib``, ``gb``), the feedback says how.
_CASED_BYTE_SYMBOLS = frozenset(f"{p}B" for p in ("k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi",
                                                   "Ei"))


@lru_cache(maxsize=1024)
def respell(spelling: str, dimension: str | None) -> str | None:
    """The canonical spelling of a unit written with a byte symbol in another case, or ``None``.

    ``spelling`` is a unit as typed (``"gb"``, ``"tb/s"``, ``"gib"``); ``dimension`` the dimension name of the
    step it is read in (``"memory"``, ``"bandwidth"`` …; ``None`` when reading outside a step). A binary symbol
    is unambiguous in any case (``gib`` → ``GiB``); a lower-case decimal one (:data:`LOWER_CASE_BYTES`) only in
    a step of :data:`LOWER_CASE_DIMENSIONS` (``tb/s`` → ``TB/s`` in a bandwidth step). ``None`` when the
    spelling is already canonical, or not a unit read this way (``Gb`` stays refused).
    """
    parts = "".join(spelling.split()).split("/")
    changed = False
    for index, part in enumerate(parts):
        if part in _SIMPLE:
            continue
        canonical = _ANY_CASE.get(part.lower())
        if canonical is None and dimension in LOWER_CASE_DIMENSIONS:
            canonical = LOWER_CASE_BYTES.get(part)
        if canonical in _CASED_BYTE_SYMBOLS:
            parts[index], changed = canonical, True
    return "/".join(parts) if changed else None


def bits_or_bytes(word: str) -> str | None:
    """The byte symbol a spelling such as ``Gb`` or ``Mb`` may mean (``"GB"``), or ``None``: a capital prefix
    before a lower-case ``b`` is how bits are written (Gb/s on a network card), so it is never read as bytes."""
    word = "".join(word.split())
    if len(word) == 2 and word[0] in "KMGTPE" and word[1] == "b":
        return word[0] + "B"
    return None


def describe_exponents(exponents: Exponents) -> str:
    """Spell an exponent vector in base units, e.g. ``"B/s"`` or ``"tok/(s·user)"``."""
    top = [_power_text(sym, p) for sym, p in zip(BASE_SYMBOLS, exponents) if p > 0]
    bottom = [_power_text(sym, -p) for sym, p in zip(BASE_SYMBOLS, exponents) if p < 0]
    text = "·".join(top) or "1"
    if bottom:
        text += "/" + (bottom[0] if len(bottom) == 1 else "(" + "·".join(bottom) + ")")
    return text


def _power_text(symbol: str, power: int) -> str:
    return symbol if power == 1 else f"{symbol}^{power}"


def dimension_name(exponents: Exponents) -> str:
    """The dimension name for an exponent vector, or its base-unit description."""
    return _NAME_OF_EXPONENTS.get(exponents) or describe_exponents(exponents)


def dimension_phrase(dimension: str) -> str:
    """Phrase for messages: ``"memory"`` -> ``"a memory size"``; an unnamed
    dimension such as ``"B·s"`` -> ``"a quantity in B·s"``."""
    if dimension in _DIMENSIONS:
        return _DIMENSIONS[dimension][1]
    return f"a quantity in {dimension}"


def base_unit_symbol(exponents: Exponents) -> str:
    """Symbol of the coherent base unit for an exponent vector (``"B/s"``, ``"USD/s"``)."""
    name = _NAME_OF_EXPONENTS.get(exponents)
    return _DIMENSIONS[name][2] if name else describe_exponents(exponents)


@lru_cache(maxsize=1024)
def resolve_unit(spelling: str) -> Unit | None:
    """The Unit for a spelling, or None when it is not one; never raises.

    ``spelling`` is any text; whitespace is ignored and ``/`` separates a
    numerator from one or more denominators (``"GB / s"``, ``"$/1M tokens"``).
    """
    symbol = "".join(spelling.split())
    if symbol == "1":  # only whole: "GB/1" must not swallow the "1" of "GB/1 s"
        return Unit("1", "dimensionless", 1.0, DIMENSIONLESS, Fraction(1))
    parts = symbol.split("/")
    if not symbol or len(parts) > 4:
        return None
    found = []
    for part in parts:
        item = _lookup_simple(part)
        if item is None:
            return None
        found.append(item)
    exponents, factor = found[0]
    for part_exponents, part_factor in found[1:]:
        exponents = tuple(a - b for a, b in zip(exponents, part_exponents))
        factor /= part_factor
    return Unit(symbol, dimension_name(exponents), float(factor), exponents, factor)


def get_unit(symbol: str) -> Unit:
    """Return the Unit for ``symbol`` (any spelling in the module docstring).

    Raises AnswerError naming the unit when it is not known, with a hint when
    only the letter case is wrong (``gb``) or a lowercase ``b`` suggests bits.
    """
    unit = resolve_unit(symbol) if isinstance(symbol, str) else None
    if unit is None:
        raise AnswerError(f"{quote(str(symbol))} is not a unit I know{unit_hint(str(symbol))}.")
    return unit


def unit_hint(word: str) -> str:
    """A short parenthetical suggestion for an unknown unit spelling, or ``""``."""
    word = "".join(word.split())
    if word in ("x", "X"):
        return " (to multiply, write * or ×)"
    matches = sorted(name for name in _SIMPLE if name.lower() == word.lower() and name != word)
    if word == "b":  # alone, a lower-case b is bits in network writing and bytes in some memory writing
        return " (a lower-case 'b' means bits to some and bytes to others: write 'B' for bytes or 'bit' for bits)"
    bits = " and bits are written 'bit'" if len(word) > 1 and word.endswith("b") else ""
    if matches:
        return f" (did you mean '{matches[0]}'? Units are case-sensitive{bits})"
    return " (bits are written 'bit')" if bits else ""


def rescale(value: float, ratio: Fraction) -> float:
    """``value * ratio`` with one rounding where possible (so 52 GB -> GiB and
    0.9 = 90 % are exact-rounded); raises AnswerError if the result is not finite."""
    if ratio == 1:
        result = value
    elif abs(ratio.numerator) < 2**53 and ratio.denominator < 2**53:
        result = value * ratio.numerator / ratio.denominator
        if not math.isfinite(result) and math.isfinite(value):
            result = value * (ratio.numerator / ratio.denominator)
    else:
        try:
            result = value * float(ratio)
        except OverflowError:
            result = math.inf
    if not math.isfinite(result):
        raise AnswerError("The value is too large to convert between units.")
    return result


def convert(value: float, from_symbol: str, to_symbol: str) -> float:
    """Convert ``value`` in ``from_symbol`` into ``to_symbol`` (e.g. 52, "GB", "GiB").

    Raises AnswerError for an unknown unit, or when the two units measure
    different dimensions (a bandwidth cannot become a memory size).
    """
    source, target = get_unit(from_symbol), get_unit(to_symbol)
    if source.exponents != target.exponents:
        raise AnswerError(
            f"Cannot convert {source.symbol} ({source.phrase}) to {target.symbol} ({target.phrase})."
        )
    return rescale(value, source.exact_factor / target.exact_factor)


# --- display -------------------------------------------------------------

_INTEGER_SYMBOLS = frozenset(
    "B byte bytes bit bits tok toks token tokens user users GPU GPUs card cards "
    "node nodes replica replicas req reqs request requests FLOP FLOPs".split()
)
_MONEY_DIMENSIONS = frozenset({"money", "money_rate", "token_price"})
_FIXED_LIMIT = 1e15  # beyond this, fixed decimals get long: switch to 1.5e15
_SIGNIFICANT_LIMIT = 1e9  # 9.89e14 FLOP/s reads better than 989,000,000,000,000
_SIGNIFICANT_FLOOR = 1e-3  # below this, 0.000123 reads better as 1.23e-4
_DIGITS = 4  # significant figures shown


def quantity_rule(unit: str) -> dict[str, Any]:
    """How :func:`format_quantity` shows a value in ``unit``, as data (the offline calculator's JavaScript
    formats from it, so the two cannot drift): ``style`` (``money``, ``fixed`` or ``significant``),
    ``decimals`` (for ``money`` and ``fixed``), ``suffix`` (what follows the number: `` GiB``, ``%``,
    ``/h`` after a dollar amount, or nothing) and the switch points to e-notation. Raises AnswerError
    for an unknown unit."""
    spec = get_unit(unit)
    symbol = spec.symbol
    limits = {"fixed_limit": _FIXED_LIMIT, "significant_limit": _SIGNIFICANT_LIMIT,
              "significant_floor": _SIGNIFICANT_FLOOR, "digits": _DIGITS}
    if spec.dimension in _MONEY_DIMENSIONS and symbol.startswith(("$", "USD")):
        return {"style": "money", "decimals": 2, "suffix": symbol[1:] if symbol.startswith("$") else symbol[3:],
                **limits}
    if symbol in ("1", "%"):
        return {"style": "significant", "decimals": 0, "suffix": "" if symbol == "1" else "%", **limits}
    if symbol in _INTEGER_SYMBOLS:
        decimals = 0
    elif spec.dimension == "memory":
        decimals = 2
    elif spec.dimension in ("token_rate", "intensity"):
        decimals = 1
    else:
        return {"style": "significant", "decimals": 0, "suffix": f" {symbol}", **limits}
    return {"style": "fixed", "decimals": decimals, "suffix": f" {symbol}", **limits}


def format_quantity(value: float, unit: str) -> str:
    """Display ``value`` (a finite float, already in ``unit``) with its unit, by :func:`quantity_rule`.

    Money to the cent with a leading ``$`` (``$2.50``, ``$2.50/h``,
    ``$0.12/Mtok``); bytes, tokens, FLOP and counts as integers with thousands
    separators (``131,072 B``); memory multiples (GiB, GB, ...) to two decimals;
    token rates and arithmetic intensity to one decimal; everything else to four
    significant figures (``3.35 TB/s``, ``15.52 ms``, ``9.89e14 FLOP/s``);
    ``1`` shows the bare number and ``%`` is appended without a space.  Fixed
    formats switch to e-notation from 1e15 (``1.4e15 FLOP``), significant
    figures from 1e9 and below 1e-3.  The text always parses back to ``value``
    within the displayed precision.  Raises AnswerError for an unknown unit or
    a value that is not finite.
    """
    rule = quantity_rule(unit)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AnswerError(f"Cannot display {value!r} {get_unit(unit).symbol}: it is not a finite number.")
    value = float(value)
    if rule["style"] == "money":
        number = _fixed(abs(value), 2)
        sign = "-" if value < 0 and number.strip("0.,") else ""
        return f"{sign}${number}{rule['suffix']}"
    number = _fixed(value, rule["decimals"]) if rule["style"] == "fixed" else _significant(value)
    return number + rule["suffix"]


def format_faithful(value: float, unit: str) -> str:
    """``value`` in ``unit`` as :func:`format_quantity` shows it, unless that rounding hides more than 0.05 % of it
    (64 MiB is 0.0625 GiB, not "0.06 GiB"; 32 MB is 0.0298 GiB, not "0.03 GiB"): then to four significant figures,
    so a converted value can be told from the one it is compared with. Raises AnswerError as
    :func:`format_quantity` does."""
    shown = format_quantity(value, unit)
    rule = quantity_rule(unit)
    if rule["style"] != "fixed" or value == 0:
        return shown
    number = shown.removesuffix(rule["suffix"]).replace(",", "")
    try:
        hidden = abs(float(number) - value) > 0.0005 * abs(value)
    except ValueError:  # e-notation past the fixed range: already significant figures
        return shown
    return _significant(float(value)) + rule["suffix"] if hidden else shown


#: The decimal byte prefixes and their binary partners (IEC 80000-13): a kB is 1,000 B and a KiB 1,024.
_PREFIX_PARTNERS = {"kB": "KiB", "KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "PB": "PiB", "EB": "EiB"}
_PREFIX_PARTNERS.update({binary: decimal for decimal, binary in _PREFIX_PARTNERS.items() if decimal != "KB"})


def prefix_partner(symbol: str) -> str | None:
    """The unit ``symbol`` names with its byte prefix read in the other system — decimal for binary and binary for
    decimal (``"MB"`` → ``"MiB"``, ``"GiB/s"`` → ``"GB/s"``, ``"KiB"`` → ``"kB"``) — or ``None`` for a unit
    without a prefixed byte (``"B"``, ``"ms"``). Raises nothing."""
    parts = symbol.split("/")
    for index, part in enumerate(parts):
        if part in _PREFIX_PARTNERS:
            return "/".join([*parts[:index], _PREFIX_PARTNERS[part], *parts[index + 1:]])
    return None


def _fixed(value: float, decimals: int) -> str:
    if abs(value) >= _FIXED_LIMIT:
        return _scientific(value)
    text = f"{value:,.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _significant(value: float, digits: int = _DIGITS) -> str:
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude >= _SIGNIFICANT_LIMIT or magnitude < _SIGNIFICANT_FLOOR:
        return _scientific(value, digits)
    decimals = max(0, digits - 1 - math.floor(math.log10(magnitude)))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scientific(value: float, digits: int = _DIGITS) -> str:
    mantissa, _, exponent = f"{value:.{digits - 1}e}".partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def quote(text: str, limit: int = 40) -> str:
    """``text`` in single quotes for a message: whitespace runs collapsed,
    unprintable characters replaced by ``?``, and cut to ``limit`` characters
    (ending in ``…``) so a message never echoes a long input."""
    clipped = text[: limit * 4]
    cleaned = " ".join(clipped.split())
    cleaned = "".join(ch if ch.isprintable() else "?" for ch in cleaned)
    if len(cleaned) > limit or len(text) > len(clipped):
        cleaned = cleaned[: limit - 1].rstrip() + "…"
    return f"'{cleaned}'"



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
    # A few bytes per value that are not whole (fp4 with its block scales, 0.5625 B; an fp8 indexer key with its
    # fp32 scale per 128 values, 1.03125 B) show their figures: "1 B" would hide them in a worked substitution.
    _r("B", "B", "whole", whole_json=True, small_below=10.0, small_digits=6, small_if_hidden=True),
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

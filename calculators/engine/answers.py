"""Safe, unit-aware reading of a typed answer: ``"52 GB"`` -> 48.43 in GiB.

Grammar (evaluated by a hand-written tokenizer and recursive-descent parser;
nothing is ever handed to ``eval``, ``compile`` or sympy)::

    sum      := product (("+" | "-") product)*
    product  := signed (("*" | "/") signed)*
    signed   := ("+" | "-")* with_unit
    with_unit:= power [unit]            # "2^10 B" is (2^10) B
    power    := atom ["^" exponent]     # right-associative: 2^3^2 = 2^9
    exponent := ("+" | "-")* atom ["^" exponent]
    atom     := number | "$" number | "(" sum ")"

* Numbers: ``131072``, ``1.5e9``, ``1.5E-3``, ``.5``, ``5.``, ``1_024``
  (underscores between digits), ``1,024`` and ``8,030,261,248`` (commas only
  between groups of exactly three digits, so ``1,5`` and ``0,5`` are rejected).
* Operators: ``+ - * /``, ``×`` ``·`` ``⋅`` for times, ``÷`` for divide, ``−``
  (U+2212) and ``–`` (en dash) for minus, ``^`` and ``**`` for power.  There is
  no implicit multiplication: ``2(3)`` is rejected with a message saying so.
* Units (see :mod:`.units` for spellings) follow a number or a ``)``: ``128 KiB``,
  ``(80*0.9) GiB``, ``3.35 TB / s``; money may also lead: ``$2.50/h``.

Units are tracked exactly through the arithmetic: each value carries an
exponent vector, ``*`` and ``/`` combine them, and ``+``/``-`` need the same
dimension on both sides (``79.65 GiB - 14.96 GiB``; ``1 GiB / 131072 B`` is a
plain ratio).  A number written without a unit is a plain factor inside a
product (``80 GB * 0.9``), but may not be added to a quantity that has a
dimension (``80 GiB - 14.96`` is rejected; write ``(80 - 14.96) GiB``).  An
expression with no unit anywhere is taken to be in the step's unit.  Only
plain numbers may be raised to a power, and exponents must be plain numbers.

``%`` is the unit 1/100: ``90%`` is accepted for the dimensionless step unit
``1`` (as 0.9) and as a factor (``80 GB * 90%``), but ``90%`` alone in a GiB
step is rejected as "a percentage".

Bounds, checked before any work that could be slow: at most
:data:`MAX_LENGTH` characters and :data:`MAX_TOKENS` tokens, brackets and
power chains nested at most :data:`MAX_DEPTH` deep, exponents at most
:data:`MAX_EXPONENT` in magnitude, and a power's result under 1e300 (checked
with ``log10`` before computing).  Arithmetic is in floats only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import NoReturn

from calculators.engine.errors import AnswerError
from calculators.engine.units import (
    COUNT_DIMENSIONS,
    DIMENSIONLESS,
    Exponents,
    Unit,
    base_unit_symbol,
    dimension_name,
    dimension_phrase,
    format_quantity,
    get_unit,
    quote,
    rescale,
    resolve_unit,
    unit_hint,
)

MAX_LENGTH = 200
MAX_TOKENS = 120
MAX_DEPTH = 20
MAX_EXPONENT = 1000
MAX_POWER_LOG10 = 300
_MAX_UNIT_PHRASE = 40  # longest run of text tried as a unit ("$/1M tokens" is 11)

_OPERATORS = {"+": "+", "-": "-", "−": "-", "–": "-", "*": "*", "×": "*", "·": "*",
              "⋅": "*", "/": "/", "÷": "/", "^": "^", "**": "^"}
_DIGITS = "0123456789"
_NUMBER_CHARS = "0123456789._,"

_EXAMPLES = {
    "B": "131072 or 128 KiB", "GiB": "14.96 or 15 GiB", "GB": "16.06 or 16 GB",
    "GB/s": "3350 or 3.35 TB/s", "FLOP": "1.4e15 or 1400 TFLOP",
    "FLOP/s": "9.89e14 or 989 TFLOP/s", "FLOP/byte": "295.4", "tok": "4096",
    "tok/s": "208.5", "s": "0.25 or 250 ms", "ms": "15.5 or 0.0155 s", "users": "53",
    "GPUs": "16", "nodes": "2", "replicas": "4", "USD": "2.50 or $2.50",
    "USD/h": "2.50 or $2.50/h", "USD/Mtok": "0.12 or $0.12/M tok", "1": "0.9 or 90%",
}


@dataclass(frozen=True)
class ParsedAnswer:
    """A typed answer read for one step.

    ``value`` is in ``unit`` (the step's unit).  ``typed_unit`` is the unit as
    written (whitespace removed, e.g. ``"TB/s"``), or None for a bare number;
    when several different units were combined (``52 GB / 3.35 TB/s``) it is
    the step's unit.  ``typed_value`` is the number in ``typed_unit`` before
    conversion.  ``conversion`` is one sentence describing a conversion, or None
    when the value needed none.  ``text`` is the raw input.
    """

    value: float
    unit: str
    typed_unit: str | None
    typed_value: float
    conversion: str | None
    text: str


@dataclass(frozen=True)
class _Quantity:
    value: float          # the true quantity is value * factor in coherent base units
    factor: Fraction
    exponents: Exponents
    has_unit: bool        # False only when no unit was written anywhere inside


@dataclass(frozen=True)
class _Token:
    kind: str             # "num", "unit", "op", "(", ")" or "end"
    text: str             # as typed, for messages
    number: float = 0.0
    unit: Unit | None = None


def _short(text: str, limit: int = 12) -> str:
    """A fragment of the input for a message: printable, at most ``limit`` characters."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def expected_phrase(unit: Unit) -> str:
    """What a step in ``unit`` asks for: ``"a memory size in GiB"``, ``"a user count"``."""
    phrase = dimension_phrase(unit.dimension)
    return phrase if unit.dimension in COUNT_DIMENSIONS else f"{phrase} in {unit.symbol}"


def _expectation(step: Unit | None) -> str:
    if step is None:
        return "a number, optionally with a unit, such as 14.96 or 15 GiB"
    return f"{expected_phrase(step)}, such as {_EXAMPLES.get(step.symbol, f'12.5 or 12.5 {step.symbol}')}"


class _Reader:
    """Tokenizes and evaluates one input; every failure raises AnswerError."""

    def __init__(self, text: str, step: Unit | None):
        self.text, self.step = text, step
        self.quoted = quote(text)
        self.units_seen: list[Unit] = []
        self.tokens: list[_Token] = []
        self.position = 0

    def fail(self, detail: str) -> NoReturn:
        raise AnswerError(f"Could not read {self.quoted}: {detail}.")

    def fail_work(self, detail: str) -> NoReturn:
        raise AnswerError(f"Could not work out {self.quoted}: {detail}.")

    # --- tokenizer ------------------------------------------------------------

    def tokenize(self) -> None:
        text, i, n = self.text, 0, len(self.text)
        while True:
            while i < n and text[i].isspace():
                i += 1
            if i >= n:
                break
            if len(self.tokens) >= MAX_TOKENS:
                raise AnswerError(f"{self.quoted} has more than {MAX_TOKENS} numbers, operators "
                                  f"and units; simplify it to a number with a unit.")
            ch, previous = text[i], self.tokens[-1].kind if self.tokens else None
            if ch in _NUMBER_CHARS:
                i = self._read_number(i)
            elif text.startswith("**", i):
                self.tokens.append(_Token("op", "**"))
                i += 2
            elif ch in _OPERATORS:
                self.tokens.append(_Token("op", ch))
                i += 1
            elif ch in "()":
                self.tokens.append(_Token(ch, ch))
                i += 1
            elif ch in "xX" and previous in ("num", ")", "unit") and self._operand_follows(i + 1):
                self.tokens.append(_Token("op", "*"))  # "2 x 32": a typed times sign
                i += 1
            elif ch == "$" and previous not in ("num", ")", "unit"):
                i = self._read_money(i)
            elif ch.isalpha() or ch in "$%":
                if previous == "unit":  # fail now rather than scan a run of units
                    self.fail(f"'{self._word_at(i)}' follows a value that already has a unit")
                if previous in ("num", ")"):
                    i = self._read_unit(i)
                else:
                    self._word_without_number(i)
            else:
                shown = ch if ch.isprintable() else f"U+{ord(ch):04X}"
                self.fail(f"'{shown}' is not allowed; use digits, + - * / ^ ( ) and an optional unit")
        self.tokens.append(_Token("end", ""))

    def _operand_follows(self, index: int) -> bool:
        """True when the next non-space character starts a number or a bracket."""
        while index < len(self.text) and self.text[index].isspace():
            index += 1
        return index < len(self.text) and (self.text[index] in _DIGITS or self.text[index] in ".(")

    def _read_number(self, start: int) -> int:
        text, n, end = self.text, len(self.text), start
        while end < n and text[end] in _NUMBER_CHARS:
            end += 1
        mantissa, exponent = text[start:end], ""
        if end < n and text[end] in "eE":
            cursor = end + 1 + (end + 1 < n and text[end + 1] in "+-")
            if cursor < n and text[cursor] in _DIGITS:
                while cursor < n and text[cursor] in _NUMBER_CHARS:
                    cursor += 1
                exponent, end = text[end + 1:cursor], cursor
        self.tokens.append(_Token("num", text[start:end], self._number_value(mantissa, exponent)))
        return end

    def _number_value(self, mantissa: str, exponent: str) -> float:
        whole, point, fraction = mantissa.partition(".")
        if "." in fraction:
            self.fail("a number cannot have two decimal points")
        if any(ch in exponent for ch in "._,"):
            self.fail("the power of ten after 'e' must be a whole number, as in 1.5e9")
        if not any(ch in _DIGITS for ch in mantissa):
            point_hint = " (a decimal point needs digits next to it)" if "." in mantissa else ""
            self.fail(f"'{_short(mantissa)}' is not a number{point_hint}")
        if "," in fraction:
            self.fail("commas may only group the digits before the decimal point, as in 1,024.5")
        if "," in whole and "_" in whole:
            self.fail("use commas or underscores to group digits, not both")
        if "," in whole:
            groups = whole.split(",")
            if groups[0] in ("", "0") or len(groups[0]) > 3 or any(len(g) != 3 for g in groups[1:]):
                decimal = whole.replace(",", ".", 1) if whole.count(",") == 1 else None
                hint = f"; for a decimal, write {decimal}{point}{fraction}" if decimal and not point else ""
                self.fail(f"commas only separate groups of three digits, as in 1,024{hint}")
        for part in (whole, fraction):
            if part and (part[0] == "_" or part[-1] == "_" or "__" in part):
                self.fail("an underscore may only sit between two digits, as in 1_024")
        digits = whole.replace(",", "").replace("_", "") + "." + fraction.replace("_", "")
        value = float(digits + ("e" + exponent if exponent else ""))
        if not math.isfinite(value):
            self.fail_work("a number in it is too large")
        return value

    def _read_money(self, start: int) -> int:
        cursor = start + 1
        while cursor < len(self.text) and self.text[cursor].isspace():
            cursor += 1
        if cursor >= len(self.text) or self.text[cursor] not in _NUMBER_CHARS:
            self.fail("a '$' must come right before a number, as in $2.50, or after it, as in 2.50 $")
        end = self._read_number(cursor)
        skip = end
        while skip < len(self.text) and self.text[skip].isspace():
            skip += 1
        if skip < len(self.text) and self.text[skip] == "/":
            found = self._match_unit(skip, prefix="$")
            if found:
                self.tokens.append(found[0])
                return found[1]
        self.tokens.append(_Token("unit", "$", unit=get_unit("$")))
        return end

    def _match_unit(self, start: int, prefix: str = "") -> tuple[_Token, int] | None:
        """Longest known unit spelled from ``start``, ending at a word boundary."""
        text, limit, end = self.text, min(len(self.text), start + _MAX_UNIT_PHRASE), start
        while end < limit and (text[end].isalnum() or text[end] in "$%/" or text[end].isspace()):
            end += 1
        for stop in range(end, start, -1):
            last = text[stop - 1]
            if last.isspace() or (stop < len(text) and last.isalnum() and text[stop].isalnum()):
                continue
            unit = resolve_unit(prefix + text[start:stop])
            if unit is not None:
                return _Token("unit", unit.symbol, unit=unit), stop
        return None

    def _read_unit(self, start: int) -> int:
        found = self._match_unit(start)
        if found is None:
            word = self._word_at(start)
            self.fail(f"'{word}' is not a unit I know{unit_hint(word)}; "
                      f"this step expects {_expectation(self.step)}")
        self.tokens.append(found[0])
        return found[1]

    def _word_at(self, start: int) -> str:
        end = start + 1
        while end < len(self.text) and end - start < 20 and (
                self.text[end].isalnum() or self.text[end] in "$%"):
            end += 1
        return _short(self.text[start:end])

    def _word_without_number(self, start: int) -> NoReturn:
        word = self._word_at(start)
        if resolve_unit(word) is not None:
            self.fail(f"the unit '{word}' needs a number before it, as in 15 {word}")
        if word == self.text.strip():
            raise AnswerError(f"{self.quoted} is not a number; this step expects {_expectation(self.step)}.")
        self.fail(f"'{word}' is not a number; this step expects {_expectation(self.step)}")

    # --- parser and evaluator ------------------------------------------------

    def peek(self) -> _Token:
        return self.tokens[self.position]

    def take(self) -> _Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def evaluate(self) -> _Quantity:
        self.tokenize()
        result = self._sum(0)
        if self.peek().kind != "end":
            self._expected_operator(self.peek())
        return result

    def _sum(self, depth: int) -> _Quantity:
        left = self._product(depth)
        while self.peek().kind == "op" and _OPERATORS.get(self.peek().text) in ("+", "-"):
            sign = 1 if _OPERATORS[self.take().text] == "+" else -1
            left = self._add(left, self._product(depth), sign)
        return left

    def _product(self, depth: int) -> _Quantity:
        left = self._signed(depth)
        while self.peek().kind == "op" and _OPERATORS.get(self.peek().text) in ("*", "/"):
            operator = _OPERATORS[self.take().text]
            right = self._signed(depth)
            left = self._multiply(left, right) if operator == "*" else self._divide(left, right)
        return left

    def _signs(self) -> int:
        """Consume a run of unary + and - (a loop, so no recursion); return ±1."""
        sign, count = 1, 0
        while self.peek().kind == "op" and _OPERATORS.get(self.peek().text) in ("+", "-"):
            sign *= -1 if _OPERATORS[self.take().text] == "-" else 1
            count += 1
            if count > 3:
                self.fail("it has more than three signs in a row")
        return sign

    def _signed(self, depth: int) -> _Quantity:
        sign = self._signs()
        quantity = self._power(depth)
        if self.peek().kind == "unit":
            unit = self.take().unit
            if unit is None:  # a "unit" token always carries its unit
                self.fail("it has a unit the reader lost")
            if quantity.has_unit:
                self.fail(f"it puts the unit '{_short(unit.symbol)}' on a value that already has a unit")
            self.units_seen.append(unit)
            quantity = _Quantity(quantity.value, unit.exact_factor, unit.exponents, True)
        if self.peek().kind == "op" and _OPERATORS.get(self.peek().text) == "^":
            self.fail("only plain numbers can be raised to a power, so put the power before the unit")
        return _Quantity(sign * quantity.value, quantity.factor, quantity.exponents, quantity.has_unit)

    def _power(self, depth: int) -> _Quantity:
        base = self._atom(depth)
        if self.peek().kind == "op" and _OPERATORS.get(self.peek().text) == "^":
            self.take()
            if depth + 1 > MAX_DEPTH:
                self.fail(f"it nests brackets or powers more than {MAX_DEPTH} deep")
            sign = self._signs()
            exponent = self._power(depth + 1)
            return self._raise(base, _Quantity(sign * exponent.value, exponent.factor,
                                               exponent.exponents, exponent.has_unit))
        return base

    def _atom(self, depth: int) -> _Quantity:
        token = self.take()
        if token.kind == "num":
            return _Quantity(token.number, Fraction(1), DIMENSIONLESS, False)
        if token.kind == "(":
            if depth + 1 > MAX_DEPTH:
                self.fail(f"it nests brackets or powers more than {MAX_DEPTH} deep")
            inner = self._sum(depth + 1)
            closing = self.take()
            if closing.kind != ")":
                if closing.kind == "end":
                    self.fail("a '(' is never closed")
                self.position -= 1
                self._expected_operator(closing)
            return inner
        self._expected_operand(token)

    def _expected_operand(self, token: _Token) -> NoReturn:
        if token.kind == "end":
            self.fail("it ends where a number was expected")
        if token.kind == ")":
            self.fail("a ')' comes where a number was expected")
        self.fail(f"'{token.text}' comes where a number was expected")

    def _expected_operator(self, token: _Token) -> NoReturn:
        if token.kind == "(":
            self.fail("implicit multiplication is not supported, so put * before the '('")
        if token.kind == ")":
            self.fail("a ')' has no matching '('")
        if token.kind == "num":
            self.fail(f"the number '{_short(token.text)}' follows another value with no operator between them")
        if token.kind == "unit":
            self.fail(f"the unit '{_short(token.text)}' follows a value that already has a unit")
        self.fail(f"'{token.text}' is unexpected here")

    # --- arithmetic on quantities -------------------------------------------

    def _checked(self, value: float, factor: Fraction, exponents: Exponents, has_unit: bool) -> _Quantity:
        if not math.isfinite(value):
            self.fail_work("the result is too large")
        return _Quantity(value, factor, exponents, has_unit)

    def _add(self, left: _Quantity, right: _Quantity, sign: int) -> _Quantity:
        if left.has_unit and right.has_unit:
            if left.exponents != right.exponents:
                self.fail(f"it adds {self._kind(left)} and {self._kind(right)}, "
                          f"but both sides of + and - must be the same kind of quantity")
            right_value = rescale(right.value, right.factor / left.factor)
            return self._checked(left.value + sign * right_value, left.factor, left.exponents, True)
        if left.has_unit or right.has_unit:
            with_unit = left if left.has_unit else right
            if with_unit.exponents != DIMENSIONLESS:
                self.fail(f"it adds {self._kind(with_unit)} and a number without a unit; put a unit "
                          f"on every term, or one unit after brackets, as in (80 - 14.96) GiB")
            total = rescale(left.value, left.factor) + sign * rescale(right.value, right.factor)
            return self._checked(total, Fraction(1), DIMENSIONLESS, True)
        return self._checked(left.value + sign * right.value, Fraction(1), DIMENSIONLESS, False)

    def _multiply(self, left: _Quantity, right: _Quantity) -> _Quantity:
        exponents = tuple(a + b for a, b in zip(left.exponents, right.exponents))
        return self._checked(left.value * right.value, left.factor * right.factor, exponents,
                             left.has_unit or right.has_unit)

    def _divide(self, left: _Quantity, right: _Quantity) -> _Quantity:
        if right.value == 0:
            self.fail_work("it divides by zero")
        exponents = tuple(a - b for a, b in zip(left.exponents, right.exponents))
        return self._checked(left.value / right.value, left.factor / right.factor, exponents,
                             left.has_unit or right.has_unit)

    def _raise(self, base: _Quantity, exponent: _Quantity) -> _Quantity:
        if base.exponents != DIMENSIONLESS:
            self.fail(f"only plain numbers can be raised to a power, not {self._kind(base)}")
        if exponent.exponents != DIMENSIONLESS:
            self.fail(f"a power must be a plain number, not {self._kind(exponent)}")
        b, e = rescale(base.value, base.factor), rescale(exponent.value, exponent.factor)
        if abs(e) > MAX_EXPONENT:
            shown = f"{e:,.0f}" if abs(e) < 1e15 else f"{e:.3g}"
            self.fail_work(f"the exponent {shown} is larger than the limit of {MAX_EXPONENT}")
        if b == 0:
            if e < 0:
                self.fail_work("it divides by zero (zero to a negative power)")
            return _Quantity(1.0 if e == 0 else 0.0, Fraction(1), DIMENSIONLESS, base.has_unit)
        if b < 0 and not e.is_integer():
            self.fail_work("a negative number cannot be raised to a fractional power")
        # Decide from the logarithm before computing, so nothing huge is ever built.
        if e * math.log10(abs(b)) > MAX_POWER_LOG10:
            self.fail_work(f"a power in it is larger than 1e{MAX_POWER_LOG10}")
        magnitude = math.pow(abs(b), e)
        value = -magnitude if b < 0 and int(e) % 2 else magnitude
        return self._checked(value, Fraction(1), DIMENSIONLESS, base.has_unit or exponent.has_unit)

    def _kind(self, quantity: _Quantity) -> str:
        if quantity.exponents == DIMENSIONLESS:
            return "a percentage" if any(u.symbol == "%" for u in self.units_seen) else "a plain ratio"
        return dimension_phrase(dimension_name(quantity.exponents))

    # --- the unit as typed ------------------------------------------------------

    def typed_unit(self, result: _Quantity) -> Unit | None:
        """The single unit the answer was written in, or None if several were combined."""
        kinds: dict[tuple[Exponents, Fraction], Unit] = {}
        for unit in self.units_seen:  # the first spelling of each distinct unit
            if unit.exponents != DIMENSIONLESS:
                kinds.setdefault((unit.exponents, unit.exact_factor), unit)
        if not kinds:
            for unit in self.units_seen:
                kinds.setdefault((unit.exponents, unit.exact_factor), unit)
        if len(kinds) == 1:
            unit = next(iter(kinds.values()))
            if unit.exponents == result.exponents:
                return unit
        return None


def _check_length(text: object, step: Unit | None) -> str:
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise AnswerError(f"An answer must be text, not {type(text).__name__}.")
    stripped = text.strip()
    if not stripped:
        raise AnswerError(f"Empty answer; this step expects {_expectation(step)}.")
    if len(stripped) > MAX_LENGTH:
        raise AnswerError(f"{quote(stripped)} is {len(stripped):,} characters long; "
                          f"answers are limited to {MAX_LENGTH} characters.")
    return stripped


# Words a candidate writes around a value that change nothing about it: a leading
# "≈ 53" or "about 53", a trailing "per user" or "/token" (the step already says per what).
_LEADING_QUALIFIER = r"^(?:[≈~≃=]|about\b|approx(?:\.|imately\b)|roughly\b|around\b)\s*"
_TRAILING_QUALIFIER = r"\s*(?:(?:/|\bper\s+)(?:user|token|tok|request|GPU|card|replica|node)s?|\beach)\s*$"


# A ratio typed with its multiplication sign after it ("2.5x", "3 ×"), read in a plain-number step.
_RATIO_SUFFIX = r"^(.*[0-9.)])\s*[x×X]$"
# One comma between a group of one to three digits and exactly three more, alone: 3,145 is 3145 here,
# though some write it for 3.145; the feedback says which reading was taken.
_AMBIGUOUS_GROUP = r"(?<![0-9,.])[0-9]{1,3},[0-9]{3}(?![0-9,])"


def _without_qualifiers(text: str) -> str:
    """Drop approximation marks and per-item qualifiers that do not change the value."""
    cleaned = re.sub(_LEADING_QUALIFIER, "", text, count=1, flags=re.IGNORECASE)
    cleaned = re.sub(_TRAILING_QUALIFIER, "", cleaned, count=1, flags=re.IGNORECASE).strip()
    return cleaned or text


def _as_typed(value: float, unit: Unit) -> str:
    number = f"{value:,.6g}"
    if "e" in number:
        mantissa, _, exponent = number.partition("e")
        number = f"{mantissa}e{int(exponent)}"
    if unit.symbol == "%":
        return number + "%"
    if unit.symbol.startswith("$"):
        return f"${number}{unit.symbol[1:]}"
    return f"{number} {unit.symbol}"


def parse_answer(text: str, unit: str) -> ParsedAnswer:
    """Read ``text`` (what a candidate typed) as a value in ``unit``.

    ``unit`` is a step unit such as ``"GiB"``, ``"tok/s"`` or ``"1"`` (any
    spelling :func:`.units.get_unit` accepts).  A bare number or expression is
    taken to be in ``unit``; a typed unit is converted when it measures the same
    dimension.  Raises AnswerError, with one sentence saying what was read and
    what was expected, for empty, over-long, malformed, overflowing or
    wrong-dimension input.
    """
    step = get_unit(unit)
    stripped = _without_qualifiers(_check_length(text, step))
    note = None
    ratio = re.match(_RATIO_SUFFIX, stripped) if step.dimension == "dimensionless" else None
    if ratio:  # "2.5x", "3 ×": a ratio, in a plain-number step
        stripped = ratio.group(1)
        note = f"Read {quote(text.strip())} as the ratio {stripped}."
    grouped = re.search(_AMBIGUOUS_GROUP, stripped)
    if grouped:
        note = ((note + " ") if note else "") + (
            f"Read {grouped.group(0)} as {grouped.group(0).replace(',', '')} (a comma groups thousands; "
            f"write {grouped.group(0).replace(',', '.')} for a decimal).")
    parsed = _read_in_step(stripped, step, unit, text)
    if note:
        parsed = replace(parsed, conversion=f"{note} {parsed.conversion}" if parsed.conversion else note)
    return parsed


def _read_in_step(stripped: str, step: Unit, unit: str, text: str) -> ParsedAnswer:
    """:func:`parse_answer` after its notes: read ``stripped`` and convert it into ``step``."""
    reader = _Reader(stripped, step)
    result = reader.evaluate()
    if not result.has_unit:
        return ParsedAnswer(result.value, unit, None, result.value, None, text)
    if result.exponents != step.exponents:
        hint = (" (write TFLOP/s or TFLOPS for a throughput)"
                if dimension_name(result.exponents) == "operations" and step.dimension == "compute" else "")
        raise AnswerError(f"{reader.quoted} is {reader._kind(result)}{hint}; "
                          f"this step asks for {expected_phrase(step)}.")
    value = rescale(result.value, result.factor / step.exact_factor)
    typed = reader.typed_unit(result)
    if typed is None:
        return ParsedAnswer(value, unit, step.symbol, value,
                            f"Worked out {reader.quoted} as {format_quantity(value, step.symbol)}.", text)
    typed_value = rescale(result.value, result.factor / typed.exact_factor)
    if typed.exact_factor == step.exact_factor:
        return ParsedAnswer(typed_value, unit, typed.symbol, typed_value, None, text)
    shown = format_quantity(value, step.symbol)
    sentence = (f"Read {_as_typed(typed_value, typed)} as {shown}." if typed.symbol == "%"
                else f"Read {_as_typed(typed_value, typed)} and converted it to {shown}.")
    return ParsedAnswer(value, unit, typed.symbol, typed_value, sentence, text)


def parse_quantity(text: str) -> tuple[float, Unit | None]:
    """Read ``text`` as a number and the unit it was written in, unconverted.

    ``"52 GB"`` -> ``(52.0, Unit GB)``; ``"2^10"`` -> ``(1024.0, None)``.  When
    different units are combined (``52 GB / 3.35 TB/s``) the value is returned
    in the coherent base unit of its dimension (here ``s``).  Raises AnswerError
    as :func:`parse_answer` does.
    """
    reader = _Reader(_check_length(text, None), None)
    result = reader.evaluate()
    if not result.has_unit:
        return result.value, None
    typed = reader.typed_unit(result)
    if typed is not None:
        return rescale(result.value, result.factor / typed.exact_factor), typed
    symbol = base_unit_symbol(result.exponents)
    base = resolve_unit(symbol) or Unit(symbol, symbol, 1.0, result.exponents, Fraction(1))
    return rescale(result.value, result.factor / base.exact_factor), base

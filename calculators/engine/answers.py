"""Safe, unit-aware reading of a typed answer: ``"52 GB"`` -> 48.43 in GiB (docs/architecture.md §4).

:func:`parse_answer` reads a candidate's text for one step; :func:`parse_quantity`
reads a number with the unit it was written in; :func:`read_input` reads a
calculator input (a form field, a ``calc`` flag, an API value) the same way, so
``90%`` is 0.9 there as in an answer.  The text is tokenized by :class:`Tokenizer`
and evaluated by :class:`Reader` (grammar below); nothing typed is ever handed to
``eval``, ``compile`` or sympy.

Around the expression, this module reads what candidates write: a leading
``≈``/``~``/``about``, a trailing ``per user``/``/token``; a ratio with its sign
after it (``2.5x``, ``3 ×``) in a plain-number step; a count with its noun
(``53 users``, ``16 GPUs``, ``2 nodes``, ``4096 tok``, singular or plural) in a
step counting that noun.  An expression with no unit anywhere is taken to be in
the step's unit.  ``%`` is the unit 1/100: ``90%`` is accepted for the
dimensionless step unit ``1`` (as 0.9) and as a factor (``80 GB * 90%``), but
``90%`` alone in a GiB step is rejected as "a percentage".  The feedback says
how an ambiguous ``3,145`` (3145, not 3.145) and an implicit product
(``2(8)(128)``) were read.

Bounds, checked before any work that could be slow: at most
:data:`MAX_LENGTH` characters and :data:`MAX_TOKENS` tokens; brackets and power
chains nested at most :data:`MAX_DEPTH` deep, exponents at most
:data:`MAX_EXPONENT` in magnitude, and a power's result under 1e300 (checked
with ``log10`` before computing).  Arithmetic is in floats only.

Tokens (:class:`Tokenizer` turns what a candidate typed into :class:`Token`
objects, failing with one sentence, an :class:`AnswerError`, that quotes the
input and says what was expected):

* Numbers: ``131072``, ``1.5e9``, ``1.5E-3``, ``.5``, ``5.``, ``1_024``
  (underscores between digits), ``1,024`` and ``8,030,261,248`` (commas only
  between groups of exactly three digits, so ``1,5`` and ``0,5`` are rejected).
* Operators: ``+ - * /``, ``×`` ``·`` ``⋅`` and a spaced ``x`` for times, ``÷``
  for divide, ``−`` (U+2212) and ``–`` (en dash) for minus, ``^`` and ``**`` for
  power.
* Implicit multiplication only between a number and a bracket, or two brackets:
  ``2(8)(128)``, ``2 (80)``, ``(1+1)3`` get an implicit ``*`` token (marked, so
  the reader can refuse the ambiguous ``1/2(3)`` and ``2^3(4)`` and say how it
  read the rest); a letter never multiplies.
* Significant figures of a number as typed (:func:`significant_figures`): ``0.70`` has
  two, ``700`` one (an integer's trailing zeros are not significant), ``700.`` three.
* Units (see :mod:`.units` for spellings) follow a number or a ``)``; money may
  also lead (``$2.50/h``). A byte symbol in another case (``gib``; ``gb``, ``tb/s``
  in a memory or bandwidth step, :func:`.units.respell`) is read as its unit and
  remembered in :attr:`Tokenizer.respelled`, so the feedback can say so.

Grammar (a recursive-descent parser, :class:`Reader`)::

    sum      := product (("+" | "-") product)*
    product  := signed (("*" | "/" | implicit "*") signed)*
    signed   := ("+" | "-")* with_unit
    with_unit:= power [unit]            # "2^10 B" is (2^10) B
    power    := atom ["^" exponent]     # right-associative: 2^3^2 = 2^9
    exponent := ("+" | "-")* atom ["^" exponent]
    atom     := number | "$" number | "(" sum ")"

Units are tracked exactly through the arithmetic: each value carries an
exponent vector, ``*`` and ``/`` combine them, and ``+``/``-`` need the same
dimension on both sides (``79.65 GiB - 14.96 GiB``; ``1 GiB / 131072 B`` is a
plain ratio).  A number written without a unit is a plain factor inside a
product (``80 GB * 0.9``), but may not be added to a quantity that has a
dimension (``80 GiB - 14.96`` is rejected; write ``(80 - 14.96) GiB``).  Only
plain numbers may be raised to a power, and exponents must be plain numbers.
An implicit ``*`` after a ``/`` (``1/2(3)``) or after a power (``2^3(4)``) is
refused as ambiguous rather than guessed.
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
    COUNT_SCALES,
    DIMENSIONLESS,
    PER_STEP_MONEY,
    PLAIN_NOUNS,
    SAME_COUNTS,
    VERDICT_WORDS,
    Exponents,
    Unit,
    base_unit_symbol,
    bits_or_bytes,
    dimension_name,
    dimension_phrase,
    format_faithful,
    format_quantity,
    get_unit,
    quote,
    rescale,
    resolve_unit,
    respell,
    unit_hint,
    verdict_phrase,
)

MAX_TOKENS = 120
MAX_DEPTH = 20
MAX_EXPONENT = 1000
MAX_POWER_LOG10 = 300
_MAX_UNIT_PHRASE = 40  # longest run of text tried as a unit ("$/1M tokens" is 11)

OPERATORS = {"+": "+", "-": "-", "−": "-", "–": "-", "*": "*", "×": "*", "·": "*",
             "⋅": "*", "/": "/", "÷": "/", "^": "^", "**": "^"}
_DIGITS = "0123456789"
_NUMBER_CHARS = "0123456789._,"

EXAMPLES = {
    "B": "131072 or 128 KiB", "GiB": "14.96 or 15 GiB", "GB": "16.06 or 16 GB",
    "GB/s": "3350 or 3.35 TB/s", "FLOP": "1.4e15 or 1400 TFLOP",
    "FLOP/s": "9.89e14 or 989 TFLOP/s", "FLOP/byte": "295.4", "tok": "4096",
    "tok/s": "208.5", "s": "0.25 or 250 ms", "ms": "15.5 or 0.0155 s", "users": "53",
    "GPUs": "16", "nodes": "2", "replicas": "4", "USD": "2.50 or $2.50",
    "USD/h": "2.50 or $2.50/h", "USD/Mtok": "0.12 or $0.12/M tok", "1": "0.9 or 90%",
    "requests": "120", "req/s": "12.5", "µs": "8 or 0.008 ms",
}


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is "num", "unit", "op", "(", ")" or "end"; ``text`` as typed (for messages);
    ``number`` for a number, ``unit`` for a unit; ``implicit`` marks the ``*`` read between a number and a
    bracket."""

    kind: str
    text: str
    number: float = 0.0
    unit: Unit | None = None
    implicit: bool = False


def short(text: str, limit: int = 12) -> str:
    """A fragment of the input for a message: printable, at most ``limit`` characters."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def significant_figures(literal: str) -> int:
    """The significant figures of a number as typed: ``"0.70"`` → 2, ``"703.6"`` → 4, ``"1.5e9"`` → 2,
    ``"8,030"`` → 3, ``"700"`` → 1 (an integer's trailing zeros are not significant without a decimal point),
    ``"700."`` → 3, ``"0"`` → 0. ``literal`` is a number token's text (digits, ``.``, ``,``, ``_``, an exponent)."""
    mantissa = literal.lower().partition("e")[0].replace(",", "").replace("_", "")
    digits = mantissa.replace(".", "").lstrip("0")
    if "." not in mantissa:
        digits = digits.rstrip("0")
    return len(digits)


def expected_phrase(unit: Unit) -> str:
    """What a step in ``unit`` asks for: ``"a memory size in GiB"``, ``"a user count"``."""
    phrase = dimension_phrase(unit.dimension)
    return phrase if unit.dimension in COUNT_DIMENSIONS else f"{phrase} in {unit.symbol}"



def expectation(step: Unit | None) -> str:
    """What a step in ``step`` expects, with an example: ``"a user count, such as 53"``."""
    if step is None:
        return "a number, optionally with a unit, such as 14.96 or 15 GiB"
    return f"{expected_phrase(step)}, such as {EXAMPLES.get(step.symbol, f'12.5 or 12.5 {step.symbol}')}"


class Tokenizer:
    """Splits one input into :attr:`tokens`; every failure raises AnswerError."""

    def __init__(self, text: str, step: Unit | None):
        self.text, self.step = text, step
        self.quoted = quote(text)
        self.tokens: list[Token] = []
        self.implicit_at: list[int] = []  # where an implicit * was read (an index into text)
        self.respelled: list[tuple[str, str]] = []  # (as typed, as read): "gb" read as "GB"

    def fail(self, detail: str) -> NoReturn:
        raise AnswerError(f"Could not read {self.quoted}: {detail}.")

    def fail_work(self, detail: str) -> NoReturn:
        raise AnswerError(f"Could not work out {self.quoted}: {detail}.")

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
                if previous == ")" and ch not in ",_":
                    self._implicit_times(i)  # "(1+1)3"
                i = self._read_number(i)
            elif text.startswith("**", i):
                self.tokens.append(Token("op", "**"))
                i += 2
            elif ch in OPERATORS:
                self.tokens.append(Token("op", ch))
                i += 1
            elif ch in "()":
                if ch == "(" and previous in ("num", ")"):
                    self._implicit_times(i)  # "2(8)", "(8)(128)"
                self.tokens.append(Token(ch, ch))
                i += 1
            elif ch in "xX" and previous in ("num", ")", "unit") and self._operand_follows(i + 1):
                self.tokens.append(Token("op", "*"))  # "2 x 32": a typed times sign
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
        self.tokens.append(Token("end", ""))

    def _implicit_times(self, index: int) -> None:
        """A ``*`` read between a number and a bracket (never next to a letter), remembered at ``index``."""
        self.tokens.append(Token("op", "*", implicit=True))
        self.implicit_at.append(index)

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
        self.tokens.append(Token("num", text[start:end], self._number_value(mantissa, exponent)))
        return end

    def _number_value(self, mantissa: str, exponent: str) -> float:
        whole, point, fraction = mantissa.partition(".")
        if "." in fraction:
            self.fail("a number cannot have two decimal points")
        if any(ch in exponent for ch in "._,"):
            self.fail("the power of ten after 'e' must be a whole number, as in 1.5e9")
        if not any(ch in _DIGITS for ch in mantissa):
            point_hint = " (a decimal point needs digits next to it)" if "." in mantissa else ""
            self.fail(f"'{short(mantissa)}' is not a number{point_hint}")
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
        self.tokens.append(Token("unit", "$", unit=get_unit("$")))
        return end

    def _match_unit(self, start: int, prefix: str = "") -> tuple[Token, int] | None:
        """Longest known unit spelled from ``start``, ending at a word boundary."""
        text, limit, end = self.text, min(len(self.text), start + _MAX_UNIT_PHRASE), start
        while end < limit and (text[end].isalnum() or text[end] in "$%/" or text[end].isspace()):
            end += 1
        for stop in range(end, start, -1):
            last = text[stop - 1]
            if last.isspace() or (stop < len(text) and last.isalnum() and text[stop].isalnum()):
                continue
            typed = prefix + text[start:stop]
            canonical = respell(typed, self.step.dimension if self.step else None)
            unit = resolve_unit(canonical or typed)
            if unit is not None:
                if canonical:
                    self.respelled.append(("".join(typed.split()), unit.symbol))
                return Token("unit", unit.symbol, unit=unit), stop
        return None

    def _read_unit(self, start: int) -> int:
        found = self._match_unit(start)
        if found is None:
            word = self._word_at(start)
            if bits_or_bytes(word):  # "52 Gb": gigabits or gigabytes? Never guessed.
                self.fail(f"'{word}' could mean bits or bytes, so it is not guessed: write "
                          f"{bits_or_bytes(word)} for bytes (bits are written 'bit'); this step expects "
                          f"{expectation(self.step)}")
            as_bytes = respell(word, "memory") or respell(word, "bandwidth")
            if as_bytes and self.step is not None:  # "52 gb" in a ms step: a byte unit in the wrong place
                self.fail(f"'{word}' is read as {as_bytes} only in a memory or bandwidth step: write {as_bytes} "
                          f"(unit symbols are case-sensitive); this step expects {expectation(self.step)}")
            self.fail(f"'{word}' is not a unit I know{unit_hint(word)}; "
                      f"this step expects {expectation(self.step)}")
        self.tokens.append(found[0])
        return found[1]

    def _word_at(self, start: int) -> str:
        end = start + 1
        while end < len(self.text) and end - start < 20 and (
                self.text[end].isalnum() or self.text[end] in "$%"):
            end += 1
        return short(self.text[start:end])

    def _word_without_number(self, start: int) -> NoReturn:
        word = self._word_at(start)
        if resolve_unit(word) is not None:
            self.fail(f"the unit '{word}' needs a number before it, as in 15 {word}")
        if word == self.text.strip():
            raise AnswerError(f"{self.quoted} is not a number; this step expects {expectation(self.step)}.")
        self.fail(f"'{word}' is not a number; this step expects {expectation(self.step)}")


@dataclass(frozen=True)
class Quantity:
    """A value read so far: the true quantity is ``value * factor`` in coherent base units of
    ``exponents``; ``has_unit`` is False only when no unit was written anywhere inside."""

    value: float
    factor: Fraction
    exponents: Exponents
    has_unit: bool


class Reader(Tokenizer):
    """Tokenizes and evaluates one input (:meth:`evaluate`); every failure raises AnswerError."""

    def __init__(self, text: str, step: Unit | None):
        super().__init__(text, step)
        self.units_seen: list[Unit] = []
        self.position = 0

    def peek(self) -> Token:
        return self.tokens[self.position]

    def take(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def evaluate(self) -> Quantity:
        self.tokenize()
        result = self._sum(0)
        if self.peek().kind != "end":
            self._expected_operator(self.peek())
        return result

    def _sum(self, depth: int) -> Quantity:
        left = self._product(depth)
        while self.peek().kind == "op" and OPERATORS.get(self.peek().text) in ("+", "-"):
            sign = 1 if OPERATORS[self.take().text] == "+" else -1
            left = self._add(left, self._product(depth), sign)
        return left

    def _product(self, depth: int) -> Quantity:
        left, divided = self._signed(depth), False
        while self.peek().kind == "op" and OPERATORS.get(self.peek().text) in ("*", "/"):
            token = self.take()
            operator = OPERATORS[token.text]
            if token.implicit and divided:  # 1/2(3): is (3) under the line or not? Ask, never guess.
                self.fail("a bracket multiplies with no '*' after a '/', which can be read two ways; "
                          "add the brackets you mean, as in 1/(2*3) or 1/2*3")
            divided = divided or operator == "/"
            right = self._signed(depth)
            left = self._multiply(left, right) if operator == "*" else self._divide(left, right)
        return left

    def _signs(self) -> int:
        """Consume a run of unary + and - (a loop, so no recursion); return ±1."""
        sign, count = 1, 0
        while self.peek().kind == "op" and OPERATORS.get(self.peek().text) in ("+", "-"):
            sign *= -1 if OPERATORS[self.take().text] == "-" else 1
            count += 1
            if count > 3:
                self.fail("it has more than three signs in a row")
        return sign

    def _signed(self, depth: int) -> Quantity:
        sign = self._signs()
        quantity = self._power(depth)
        if self.peek().kind == "unit":
            unit = self.take().unit
            if unit is None:  # a "unit" token always carries its unit
                self.fail("it has a unit the reader lost")
            if quantity.has_unit:
                self.fail(f"it puts the unit '{short(unit.symbol)}' on a value that already has a unit")
            self.units_seen.append(unit)
            quantity = Quantity(quantity.value, unit.exact_factor, unit.exponents, True)
        if self.peek().kind == "op" and OPERATORS.get(self.peek().text) == "^":
            self.fail("only plain numbers can be raised to a power, so put the power before the unit")
        return Quantity(sign * quantity.value, quantity.factor, quantity.exponents, quantity.has_unit)

    def _power(self, depth: int) -> Quantity:
        base = self._atom(depth)
        if self.peek().kind == "op" and OPERATORS.get(self.peek().text) == "^":
            self.take()
            if depth + 1 > MAX_DEPTH:
                self.fail(f"it nests brackets or powers more than {MAX_DEPTH} deep")
            sign = self._signs()
            exponent = self._power(depth + 1)
            if self.peek().implicit:  # 2^3(4): (2^3)*4 or 2^(3*4)?
                self.fail("a bracket multiplies a power with no '*', which can be read two ways; "
                          "add the '*' or brackets you mean, as in 2^3*(4) or 2^(3*4)")
            return self._raise(base, Quantity(sign * exponent.value, exponent.factor,
                                              exponent.exponents, exponent.has_unit))
        return base

    def _atom(self, depth: int) -> Quantity:
        token = self.take()
        if token.kind == "num":
            return Quantity(token.number, Fraction(1), DIMENSIONLESS, False)
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

    def _expected_operand(self, token: Token) -> NoReturn:
        if token.kind == "end":
            self.fail("it ends where a number was expected")
        if token.kind == ")":
            self.fail("a ')' comes where a number was expected")
        self.fail(f"'{token.text}' comes where a number was expected")

    def _expected_operator(self, token: Token) -> NoReturn:
        if token.kind == "(":  # after a unit: only a number or a bracket multiplies without a '*'
            self.fail("a '(' follows a unit with no operator, so put * before the '('")
        if token.kind == ")":
            self.fail("a ')' has no matching '('")
        if token.kind == "num":
            self.fail(f"the number '{short(token.text)}' follows another value with no operator between them")
        if token.kind == "unit":
            self.fail(f"the unit '{short(token.text)}' follows a value that already has a unit")
        self.fail(f"'{token.text}' is unexpected here")

    # --- arithmetic on quantities -------------------------------------------

    def _checked(self, value: float, factor: Fraction, exponents: Exponents, has_unit: bool) -> Quantity:
        if not math.isfinite(value):
            self.fail_work("the result is too large")
        return Quantity(value, factor, exponents, has_unit)

    def _add(self, left: Quantity, right: Quantity, sign: int) -> Quantity:
        if left.has_unit and right.has_unit:
            if left.exponents != right.exponents:
                self.fail(f"it adds {self.kind(left)} and {self.kind(right)}, "
                          f"but both sides of + and - must be the same kind of quantity")
            right_value = rescale(right.value, right.factor / left.factor)
            return self._checked(left.value + sign * right_value, left.factor, left.exponents, True)
        if left.has_unit or right.has_unit:
            with_unit = left if left.has_unit else right
            if with_unit.exponents != DIMENSIONLESS:
                self.fail(f"it adds {self.kind(with_unit)} and a number without a unit; put a unit "
                          f"on every term, or one unit after brackets, as in (80 - 14.96) GiB")
            total = rescale(left.value, left.factor) + sign * rescale(right.value, right.factor)
            return self._checked(total, Fraction(1), DIMENSIONLESS, True)
        return self._checked(left.value + sign * right.value, Fraction(1), DIMENSIONLESS, False)

    def _multiply(self, left: Quantity, right: Quantity) -> Quantity:
        exponents = tuple(a + b for a, b in zip(left.exponents, right.exponents))
        return self._checked(left.value * right.value, left.factor * right.factor, exponents,
                             left.has_unit or right.has_unit)

    def _divide(self, left: Quantity, right: Quantity) -> Quantity:
        if right.value == 0:
            self.fail_work("it divides by zero")
        exponents = tuple(a - b for a, b in zip(left.exponents, right.exponents))
        return self._checked(left.value / right.value, left.factor / right.factor, exponents,
                             left.has_unit or right.has_unit)

    def _raise(self, base: Quantity, exponent: Quantity) -> Quantity:
        if base.exponents != DIMENSIONLESS:
            self.fail(f"only plain numbers can be raised to a power, not {self.kind(base)}")
        if exponent.exponents != DIMENSIONLESS:
            self.fail(f"a power must be a plain number, not {self.kind(exponent)}")
        b, e = rescale(base.value, base.factor), rescale(exponent.value, exponent.factor)
        if abs(e) > MAX_EXPONENT:
            shown = f"{e:,.0f}" if abs(e) < 1e15 else f"{e:.3g}"
            self.fail_work(f"the exponent {shown} is larger than the limit of {MAX_EXPONENT}")
        if b == 0:
            if e < 0:
                self.fail_work("it divides by zero (zero to a negative power)")
            return Quantity(1.0 if e == 0 else 0.0, Fraction(1), DIMENSIONLESS, base.has_unit)
        if b < 0 and not e.is_integer():
            self.fail_work("a negative number cannot be raised to a fractional power")
        # Decide from the logarithm before computing, so nothing huge is ever built.
        if e * math.log10(abs(b)) > MAX_POWER_LOG10:
            self.fail_work(f"a power in it is larger than 1e{MAX_POWER_LOG10}")
        magnitude = math.pow(abs(b), e)
        value = -magnitude if b < 0 and int(e) % 2 else magnitude
        return self._checked(value, Fraction(1), DIMENSIONLESS, base.has_unit or exponent.has_unit)

    def kind(self, quantity: Quantity) -> str:
        """How a message names the kind of ``quantity``: "a memory size", "a percentage", "a plain ratio"."""
        if quantity.exponents == DIMENSIONLESS:
            return "a percentage" if any(u.symbol == "%" for u in self.units_seen) else "a plain ratio"
        return dimension_phrase(dimension_name(quantity.exponents))

    # --- the unit as typed ------------------------------------------------------

    def lone_number(self) -> str | None:
        """The text of the one number typed when the answer is a number with at most a sign and a unit
        (``"0.70 s"``, ``"-3.2"``, ``"$2.50/h"``), or ``None`` for an expression (evaluate first)."""
        tokens = self.tokens[:-1]  # without the "end" token
        start = 0
        while start < len(tokens) and tokens[start].kind == "op" and OPERATORS.get(tokens[start].text) in ("+", "-"):
            start += 1
        if [token.kind for token in tokens[start:]] in (["num"], ["num", "unit"]):
            return tokens[start].text
        return None

    def typed_unit(self, result: Quantity) -> Unit | None:
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


__all__ = ["MAX_LENGTH", "ParsedAnswer", "expected_phrase", "parse_answer", "parse_quantity", "read_input"]

MAX_LENGTH = 200
#: An answer typed to at least these significant figures is correct when it is the right value rounded to them
#: (DESIGN §14).
MIN_FIGURES = 2


@dataclass(frozen=True)
class ParsedAnswer:
    """A typed answer read for one step.

    ``value`` is in ``unit`` (the step's unit).  ``typed_unit`` is the unit as
    written (whitespace removed, e.g. ``"TB/s"``), or None for a bare number;
    when several different units were combined (``52 GB / 3.35 TB/s``) it is
    the step's unit.  ``typed_value`` is the number in ``typed_unit`` before
    conversion.  ``conversion`` is one sentence describing a conversion, or None
    when the value needed none.  ``text`` is the raw input.  ``figures`` is the
    significant figures of the one number typed (``"0.70 s"``: 2), or None for
    an expression, which is never rounded (DESIGN §14); ``to_typed`` turns a value
    in the step's unit into ``typed_unit`` (1000 from s to ms).
    """

    value: float
    unit: str
    typed_unit: str | None
    typed_value: float
    conversion: str | None
    text: str
    figures: int | None = None
    to_typed: Fraction = Fraction(1)

    def rounded_figures(self, target: float) -> int | None:
        """The significant figures at which ``target`` (in the step's unit) rounds to the number as typed, or
        ``None``.

        The figures are those typed, and only an answer typed to at least :data:`MIN_FIGURES` is rounded
        (``"0.70 s"`` for 703.6 ms: 0.7036 s to two figures is 0.70 s; ``"0.7 s"``, one figure, is not read as
        ``"0.70 s"``). The comparison is in the unit typed. A tie rounds either way; a truncation (``"0.70"`` for
        0.7086) does not match. ``None`` also for an expression, which is never rounded (DESIGN §14).
        """
        if self.figures is None or self.figures < MIN_FIGURES or not math.isfinite(target):
            return None
        in_typed = rescale(target, self.to_typed)
        for nudged in (in_typed, in_typed * (1 - 1e-12), in_typed * (1 + 1e-12)):  # a tie, either way
            rounded = float(f"{nudged:.{self.figures - 1}e}")
            if abs(rounded - self.typed_value) <= 1e-12 * abs(self.typed_value):
                return self.figures
        return None

    def rounded_text(self, target: float) -> str | None:
        """``target`` (in the step's unit) rounded to the figures typed, written in the unit typed (``"0.71 s"``),
        or ``None`` when :meth:`rounded_figures` would not round (an expression, fewer than two figures)."""
        if self.figures is None or self.figures < MIN_FIGURES or not math.isfinite(target) or target == 0:
            return None
        rounded = float(f"{rescale(target, self.to_typed):.{self.figures - 1}e}")
        decimals = max(0, self.figures - 1 - math.floor(math.log10(abs(rounded))))
        number = f"{rounded:,.{decimals}f}"
        return _with_unit(number, get_unit(self.typed_unit)) if self.typed_unit else number



def _check_length(text: object, step: Unit | None) -> str:
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise AnswerError(f"An answer must be text, not {type(text).__name__}.")
    stripped = text.strip()
    if not stripped:
        raise AnswerError(f"Empty answer; this step expects {expectation(step)}.")
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


# Full-width forms (U+FF01–U+FF5E: "８０３０", "ＧＢ", "／") as their ASCII letters, and the ideographic space as a
# space: an East Asian keyboard's digits are digits.
_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: " "}
# Thousands grouped by a space (``8 030 261 248``, ``1 024``; ASCII, no-break, thin or narrow no-break space): a
# group of one to three digits, then groups of exactly three, no digit, comma or point before it.
_SPACE_GROUPED = r"(?<![0-9.,])[0-9]{1,3}(?:[ \u00a0\u2009\u202f][0-9]{3})+(?![0-9,])"


def _grouped_by_space(text: str) -> tuple[str, str]:
    """``text`` with full-width forms read as ASCII and space-grouped thousands joined (``8 030 261 248`` →
    ``8030261248``), and the note saying so (``""`` when no group was joined)."""
    text = text.translate(_FULL_WIDTH)
    groups = [match.group(0) for match in re.finditer(_SPACE_GROUPED, text)]
    if not groups:
        return text, ""
    joined = re.sub(_SPACE_GROUPED, lambda match: re.sub(r"\s", "", match.group(0)), text)
    shown = ", ".join(f"{group} as {re.sub(r'[^0-9]', '', group)}" for group in groups)
    return joined, f"Read {shown} (a space groups thousands)."


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
    return _with_unit(number, unit)


def _with_unit(number: str, unit: Unit) -> str:
    """``number`` (already written) with ``unit`` as a candidate writes it: ``70%``, ``$2.50/h``, ``0.70 s``."""
    if unit.symbol == "%":
        return number + "%"
    if unit.symbol.startswith("$"):
        return f"${number}{unit.symbol[1:]}"
    return f"{number} {unit.symbol}"


_COUNT_SCALE = r"^([0-9][0-9_]*(?:\.[0-9]+)?)\s*([A-Za-z]+)\b\s*([A-Za-z]*)$"
_PER_SECOND = r"[0-9][0-9_.,]*(?:e[+-]?[0-9]+)?\s*/\s*s"


def _count_scale(text: str, step: Unit) -> str | None:
    """``text`` with a count's scale word multiplied out (``7.6B`` → ``7600000000``), in a step that counts
    (:data:`.units.COUNT_DIMENSIONS`), or ``None``: a bytes step never reads ``B`` as billions."""
    match = re.match(_COUNT_SCALE, text.strip())
    if step.dimension not in COUNT_DIMENSIONS or not match or match.group(2) not in COUNT_SCALES:
        return None
    noun = match.group(3)
    if noun and not (noun.lower() in PLAIN_NOUNS and step.dimension == "dimensionless"):
        try:
            if get_unit(noun).dimension != step.dimension \
                    and not {get_unit(noun).dimension, step.dimension} <= SAME_COUNTS:
                return None
        except AnswerError:
            return None
    number = float(match.group(1).replace("_", "")) * COUNT_SCALES[match.group(2)]
    kept = noun if noun and noun.lower() not in PLAIN_NOUNS else ""
    return f"{number:.15g} {kept}".strip()


_WORD = r"[A-Za-z][A-Za-z _-]*"
_PLAIN_NOUN = r"^(.*[0-9)])\s*([A-Za-z]+)$"  # a number, then one word


def read_verdict(text: str, verdict: str) -> int | None:
    """The value (1 or 0) of a word a ``verdict`` step reads (:data:`.units.VERDICT_WORDS`: ``"Memory-bound"`` → 0,
    ``"yes"`` → 1, in any case, a space or ``_`` for ``-``, a full stop after it), or ``None`` for anything else."""
    word = re.sub(r"[\s_-]+", "-", text.strip().rstrip(".!").strip().lower())
    return VERDICT_WORDS.get(verdict, {}).get(word)


def parse_answer(text: str, unit: str, verdict: str = "") -> ParsedAnswer:
    """Read ``text`` (what a candidate typed) as a value in ``unit``.

    ``unit`` is a step unit such as ``"GiB"``, ``"tok/s"`` or ``"1"`` (any
    spelling :func:`.units.get_unit` accepts).  A bare number or expression is
    taken to be in ``unit``; a typed unit is converted when it measures the same
    dimension.  ``verdict`` names the words a 1-or-0 verdict step also reads
    (``"bound"``: compute-bound or memory-bound, ``"yes/no"``; see
    :func:`read_verdict`); ``""`` for a step that is not a verdict.  Raises
    AnswerError, with one sentence saying what was read and what was expected,
    for empty, over-long, malformed, overflowing or wrong-dimension input (a
    count whose noun is not the step's: ``12 GPUs`` where users are asked for),
    and for a word a verdict step does not read (``yes`` for which bound).
    """
    step = get_unit(unit)
    checked, grouped_note = _grouped_by_space(_check_length(text, step))
    if verdict:
        chosen = read_verdict(checked, verdict)
        if chosen is not None:  # "memory-bound", "Yes": the verdict in words, 1 or 0
            return ParsedAnswer(float(chosen), unit, None, float(chosen), None, text)
        if re.fullmatch(_WORD, checked.rstrip(".!")):
            raise AnswerError(f"{quote(checked)} is not an answer this step reads; it asks for "
                              f"{verdict_phrase(verdict)}.")
    stripped = _without_qualifiers(checked)
    notes = [grouped_note] if grouped_note else []
    figures = None
    scaled = _count_scale(stripped, step)
    if scaled is not None:  # "7.6B", "70 billion parameters": a count with its scale word
        notes.append(f"Read {quote(text.strip())} as {quote(scaled)}.")
        typed_number = re.match(_COUNT_SCALE, stripped)  # "7.60B": three figures, as typed
        figures = significant_figures(typed_number.group(1)) if typed_number else None
        stripped = scaled
    elif step.symbol == "req/s" and re.fullmatch(_PER_SECOND, stripped):  # "12/s": requests per second
        stripped = re.sub(r"\s*/\s*s$", " req/s", stripped)
    counted = re.match(_PLAIN_NOUN, stripped) if step.dimension == "dimensionless" else None
    if counted and counted.group(2).lower() in PLAIN_NOUNS:  # "423 adapters": the thing a plain count counts
        stripped = counted.group(1)
    ratio = re.match(_RATIO_SUFFIX, stripped) if step.dimension == "dimensionless" else None
    if ratio:  # "2.5x", "3 ×": a ratio, in a plain-number step
        stripped = ratio.group(1)
        notes.append(f"Read {quote(text.strip())} as the ratio {stripped}.")
    grouped = re.search(_AMBIGUOUS_GROUP, stripped)
    if grouped:
        notes.append(f"Read {grouped.group(0)} as {grouped.group(0).replace(',', '')} (a comma groups thousands; "
                     f"write {grouped.group(0).replace(',', '.')} for a decimal).")
    reader = Reader(stripped, step)
    parsed = _read_in_step(reader, step, unit, text)
    lone = reader.lone_number()
    if lone is not None:  # one number as typed, not an expression: its figures may round (DESIGN §14)
        parsed = replace(parsed, figures=significant_figures(lone) if figures is None else figures)
    for typed, read in dict.fromkeys(reader.respelled):  # "52 gb": GB, said so
        notes.append(f"Read {quote(typed)} as {read} (unit symbols are case-sensitive).")
    if reader.implicit_at:  # "2(8)(128)": say where the multiplications were read
        shown = "".join(("*" if i in reader.implicit_at else "") + ch for i, ch in enumerate(stripped))
        notes.append(f"Read {quote(stripped)} as {quote(shown)}.")
    if notes:
        note = " ".join(notes)
        parsed = replace(parsed, conversion=f"{note} {parsed.conversion}" if parsed.conversion else note)
    return parsed


def _read_in_step(reader: Reader, step: Unit, unit: str, text: str) -> ParsedAnswer:
    """:func:`parse_answer` after its notes: evaluate ``reader`` and convert the result into ``step``."""
    result = reader.evaluate()
    if not result.has_unit:
        return ParsedAnswer(result.value, unit, None, result.value, None, text)
    if result.exponents != step.exponents:
        name = dimension_name(result.exponents)
        if {name, step.dimension} <= SAME_COUNTS and reader.typed_unit(result) is not None:
            count = rescale(result.value, result.factor / step.exact_factor)  # "400 requests" as 400 users
            return ParsedAnswer(count, unit, step.symbol, count,
                                f"Read {reader.quoted} as {format_quantity(count, step.symbol)} (a request in "
                                f"flight is one user of the batch).", text)
        if name == "money" and step.dimension in PER_STEP_MONEY and reader.typed_unit(result) is not None \
                and not re.search(_TRAILING_QUALIFIER, text.strip(), flags=re.IGNORECASE):  # "$7e-7/tok" is not
            dollars = rescale(result.value, result.factor)  # "$0.67" where USD/Mtok is asked: 0.67 USD/Mtok
            return ParsedAnswer(dollars, unit, step.symbol, dollars,
                                f"Read {reader.quoted} as {format_quantity(dollars, step.symbol)}.", text)
        raise AnswerError(_wrong_dimension(reader, result, step))
    value = rescale(result.value, result.factor / step.exact_factor)
    typed = reader.typed_unit(result)
    if typed is None:
        return ParsedAnswer(value, unit, step.symbol, value,
                            f"Worked out {reader.quoted} as {format_faithful(value, step.symbol)}.", text)
    typed_value = rescale(result.value, result.factor / typed.exact_factor)
    if typed.exact_factor == step.exact_factor:
        return ParsedAnswer(typed_value, unit, typed.symbol, typed_value, None, text)
    shown = format_faithful(value, step.symbol)  # "0.0625 GiB" for 64 MiB, not a rounded "0.06 GiB"
    sentence = (f"Read {_as_typed(typed_value, typed)} as {shown}." if typed.symbol == "%"
                else f"Read {_as_typed(typed_value, typed)} and converted it to {shown}.")
    return ParsedAnswer(value, unit, typed.symbol, typed_value, sentence, text,
                        to_typed=step.exact_factor / typed.exact_factor)


def _wrong_dimension(reader: Reader, result: Quantity, step: Unit) -> str:
    """The sentence for a value of another kind than the step's; a count says what it counted
    (``'12 GPUs' is a GPU count (read as 12 GPUs); this step asks for a user count, such as 53.``)."""
    name = dimension_name(result.exponents)
    if name in COUNT_DIMENSIONS and name != "dimensionless":
        count = rescale(result.value, result.factor)
        shown = format_quantity(count, base_unit_symbol(result.exponents))
        if count == 1 and shown.endswith("s"):  # "1 GPU", "1 user"
            shown = shown[:-1]
        return f"{reader.quoted} is {reader.kind(result)} (read as {shown}); this step asks for {expectation(step)}."
    hint = " (write TFLOP/s or TFLOPS for a throughput)" if name == "operations" and step.dimension == "compute" else ""
    return f"{reader.quoted} is {reader.kind(result)}{hint}; this step asks for {expected_phrase(step)}."


def read_input(text: str, unit: str = "") -> float:
    """A calculator input typed as text (a form field, a ``calc`` flag, an API value), read as answers are.

    ``unit`` is the input's unit (``"GiB"``, ``"tok"``; ``""`` for a plain number or a fraction), so
    ``"90%"`` is 0.9, ``"3 GiB"`` is 3 and ``"2^13"`` is 8192. Raises AnswerError, one sentence saying
    what was read and what the input expects.
    """
    try:
        return parse_answer(text, unit or "1").value
    except AnswerError as exc:
        raise AnswerError(str(exc).replace("this step", "this input")) from None


def parse_quantity(text: str) -> tuple[float, Unit | None]:
    """Read ``text`` as a number and the unit it was written in, unconverted.

    ``"52 GB"`` -> ``(52.0, Unit GB)``; ``"2^10"`` -> ``(1024.0, None)``.  When
    different units are combined (``52 GB / 3.35 TB/s``) the value is returned
    in the coherent base unit of its dimension (here ``s``).  Raises AnswerError
    as :func:`parse_answer` does.
    """
    reader = Reader(_grouped_by_space(_check_length(text, None))[0], None)
    result = reader.evaluate()
    if not result.has_unit:
        return result.value, None
    typed = reader.typed_unit(result)
    if typed is not None:
        return rescale(result.value, result.factor / typed.exact_factor), typed
    symbol = base_unit_symbol(result.exponents)
    base = resolve_unit(symbol) or Unit(symbol, symbol, 1.0, result.exponents, Fraction(1))
    return rescale(result.value, result.factor / base.exact_factor), base

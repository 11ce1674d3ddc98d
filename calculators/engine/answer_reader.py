"""The evaluator of typed answers: tokens -> a value with its units (docs/architecture.md §4).

Grammar (a recursive-descent parser over :class:`.answer_tokens.Tokenizer`'s
tokens; nothing is ever handed to ``eval``, ``compile`` or sympy)::

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

Bounds: brackets and power chains nested at most :data:`MAX_DEPTH` deep,
exponents at most :data:`MAX_EXPONENT` in magnitude, and a power's result under
1e300 (checked with ``log10`` before computing).  Arithmetic is in floats only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn

from calculators.engine.answer_tokens import (
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_POWER_LOG10,
    OPERATORS,
    Token,
    Tokenizer,
    short,
)
from calculators.engine.units import DIMENSIONLESS, Exponents, Unit, dimension_name, dimension_phrase, rescale


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

"""The tokenizer of typed answers: text -> numbers, operators, brackets and units (docs/architecture.md §4).

:class:`Tokenizer` turns what a candidate typed into :class:`Token` objects
for :class:`.answer_reader.Reader`, failing with one sentence (an
:class:`AnswerError`) that quotes the input and says what was expected.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NoReturn

from calculators.engine.errors import AnswerError
from calculators.engine.units import (
    COUNT_DIMENSIONS,
    Unit,
    bits_or_bytes,
    dimension_phrase,
    get_unit,
    quote,
    resolve_unit,
    respell,
    unit_hint,
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


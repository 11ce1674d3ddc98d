"""Safe, unit-aware reading of a typed answer: ``"52 GB"`` -> 48.43 in GiB (docs/architecture.md §4).

:func:`parse_answer` reads a candidate's text for one step; :func:`parse_quantity`
reads a number with the unit it was written in; :func:`read_input` reads a
calculator input (a form field, a ``calc`` flag, an API value) the same way, so
``90%`` is 0.9 there as in an answer.  The text is tokenized by
:mod:`.answer_tokens` and evaluated by :mod:`.answer_reader` (grammar there);
nothing typed is ever handed to ``eval``, ``compile`` or sympy.

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
:data:`MAX_LENGTH` characters and :data:`.answer_tokens.MAX_TOKENS` tokens; the
evaluator's own bounds are in :mod:`.answer_reader`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from fractions import Fraction

from calculators.engine.answer_reader import Quantity, Reader
from calculators.engine.answer_tokens import expectation, expected_phrase, significant_figures
from calculators.engine.errors import AnswerError
from calculators.engine.units import (
    COUNT_DIMENSIONS,
    COUNT_SCALES,
    PLAIN_NOUNS,
    VERDICT_WORDS,
    Unit,
    base_unit_symbol,
    dimension_name,
    format_quantity,
    get_unit,
    quote,
    rescale,
    resolve_unit,
    verdict_phrase,
)

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
            if get_unit(noun).dimension != step.dimension:
                return None
        except AnswerError:
            return None
    number = float(match.group(1).replace("_", "")) * COUNT_SCALES[match.group(2)]
    kept = noun if noun and noun.lower() not in PLAIN_NOUNS else ""
    return f"{number:.15g} {kept}".strip()


_WORD = r"[A-Za-z][A-Za-z _-]*"


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
    checked = _check_length(text, step)
    if verdict:
        chosen = read_verdict(checked, verdict)
        if chosen is not None:  # "memory-bound", "Yes": the verdict in words, 1 or 0
            return ParsedAnswer(float(chosen), unit, None, float(chosen), None, text)
        if re.fullmatch(_WORD, checked.rstrip(".!")):
            raise AnswerError(f"{quote(checked)} is not an answer this step reads; it asks for "
                              f"{verdict_phrase(verdict)}.")
    stripped = _without_qualifiers(checked)
    notes = []
    figures = None
    scaled = _count_scale(stripped, step)
    if scaled is not None:  # "7.6B", "70 billion parameters": a count with its scale word
        notes.append(f"Read {quote(text.strip())} as {quote(scaled)}.")
        typed_number = re.match(_COUNT_SCALE, stripped)  # "7.60B": three figures, as typed
        figures = significant_figures(typed_number.group(1)) if typed_number else None
        stripped = scaled
    elif step.symbol == "req/s" and re.fullmatch(_PER_SECOND, stripped):  # "12/s": requests per second
        stripped = re.sub(r"\s*/\s*s$", " req/s", stripped)
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
        raise AnswerError(_wrong_dimension(reader, result, step))
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
    reader = Reader(_check_length(text, None), None)
    result = reader.evaluate()
    if not result.has_unit:
        return result.value, None
    typed = reader.typed_unit(result)
    if typed is not None:
        return rescale(result.value, result.factor / typed.exact_factor), typed
    symbol = base_unit_symbol(result.exponents)
    base = resolve_unit(symbol) or Unit(symbol, symbol, 1.0, result.exponents, Fraction(1))
    return rescale(result.value, result.factor / base.exact_factor), base

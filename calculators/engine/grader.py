"""Grade a worked answer step by step, the way an interviewer reads a whiteboard.

For each step, in order (docs/architecture.md §10), the typed text is read by
:func:`~.answers.parse_answer` in the step's unit and then judged:

1. ``correct`` (credit 1) — within the step's relative tolerance (0.5 % by
   default) of the right value, or equal to it rounded to the significant
   figures typed, at least two (``"0.70 s"`` for 703.6 ms; DESIGN §14; said in
   the message); integer steps (users) and 1-or-0 verdicts want the value itself;
2. ``carried_forward`` (1) — equal (in the same sense) to the step's formula
   evaluated on the candidate's *own* earlier values, so one slip does not zero
   the ladder;
3. ``misconception`` (0) — equal to a named wrong variant of the step
   (:mod:`.mistakes`), skipping any variant whose value is the right
   answer for this problem (query heads on an MHA model);
4. ``impossible`` (0) — beyond a hard physical bound (more users than the card
   could hold with no weights at all, usable memory above the card …);
5. ``close`` (0.5) — within 10 %: rounded working an interviewer accepts, with
   by how much it is off (a truncated ``"0.70"`` for 0.7086 is close, and the
   message says what the figures typed round to);
6. ``wrong`` (0); and ``unreadable`` (0) when the text cannot be read.

The score is the mean credit over the steps, 0 to 1.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

from .answers import ParsedAnswer, parse_answer
from .errors import AnswerError
from .mistakes import MISCONCEPTIONS
from .perturbations import PROBLEMS, Problem
from .procedures.base import Result, StepSpec, format_number
from .quantities import aliases_of, quantity
from .units import quote, verdict_choices

CREDIT = {"correct": 1.0, "carried_forward": 1.0, "close": 0.5, "misconception": 0.0,
          "impossible": 0.0, "wrong": 0.0, "unreadable": 0.0}
VERDICTS = tuple(CREDIT)
CLOSE_TOLERANCE = 0.10


@dataclass
class StepGrade:
    """The verdict on one step.

    ``expected`` is the right value and ``carried_expected`` the value the
    step's formula gives on the candidate's own earlier values (``None`` when
    that equals ``expected``); ``value`` is what was read from ``given`` (the raw
    text), in ``unit``; ``misconception`` is an id of :data:`~.mistakes.MISCONCEPTIONS`.
    """

    key: str
    label: str
    unit: str
    verdict: str
    credit: float
    expected: float
    given: str
    value: float | None
    message: str
    misconception: str | None = None
    carried_expected: float | None = None
    conversion: str | None = None
    substituted: str = ""

    @property
    def misconception_info(self):
        """The :class:`~.mistakes.Mistake`, or ``None``."""
        return MISCONCEPTIONS.get(self.misconception) if self.misconception else None

    def to_json(self) -> dict[str, Any]:
        """docs/architecture.md §10's step shape (plus credit and the worked substitution)."""
        data = asdict(self)
        data.pop("label")
        return data


@dataclass
class Grade:
    """All step verdicts of one submission and its score (mean credit, 0 to 1)."""

    family: str
    inputs: dict[str, Any]
    steps: list[StepGrade]

    @property
    def score(self) -> float:
        """Mean credit over the steps."""
        return sum(step.credit for step in self.steps) / len(self.steps) if self.steps else 0.0

    def to_json(self) -> dict[str, Any]:
        """``{"family", "inputs", "steps": [...], "score"}`` as ``manage.py grade --json`` prints it."""
        return {"family": self.family, "inputs": self.inputs,
                "steps": [step.to_json() for step in self.steps], "score": self.score}


def _matches(value: float, target: float | None, spec: StepSpec) -> bool:
    if target is None or math.isnan(target):
        return False
    if spec.rounding:
        return abs(value - target) < 1e-9
    if target == 0:
        return abs(value) < 1e-9
    return abs(value - target) <= spec.tolerance * abs(target)


def _shown(value: float, unit: str, words: str) -> str:
    """A value as a message shows it: the display rounding of its unit, or a verdict's word (``memory-bound (0)``)."""
    for word, choice in (verdict_choices(words) if words else ()):
        if value == choice:
            return f"{word} ({choice})"
    return format_number(value, unit)


def shown_value(key: str, family: str, value: float, unit: str) -> str:
    """Step ``key``'s ``value`` (in ``unit``) of ``family`` as pages and messages show it: its unit's display
    rounding, or a verdict step's word with its 1/0 (``memory-bound (0)``). Raises nothing."""
    declared = quantity(key, family)
    words = declared.verdict if declared is not None and declared.bounds == "flag" else ""
    return _shown(value, unit, words)


def _rounded(parsed: ParsedAnswer, target: float | None, spec: StepSpec, verdict_step: bool) -> int | None:
    """The significant figures at which ``target`` rounds to what was typed (DESIGN §14), or ``None``: never
    for an integer step or a 1-or-0 verdict, whose value is exact, nor for an expression."""
    if target is None or spec.rounding or verdict_step:
        return None
    return parsed.rounded_figures(target)


def _relative_error(value: float, target: float) -> float:
    if target == 0:
        return math.inf if value else 0.0
    return abs(value - target) / abs(target)


def _bound_violation(key: str, value: float, right: Mapping[str, float], given: Mapping[str, float],
                     family: str | None = None) -> str | None:
    """The physical bound a value breaks, as a sentence, or ``None`` (docs/architecture.md §11).

    The quantity's own bounds (:mod:`.quantities`: fractions in [0, 1], verdicts 1 or 0, sizes, times
    and counts not negative), the steps it may not exceed (usable memory ≤ the card, a batch ≤ what the
    KV budget holds, a rate ≤ its ceiling), and the ladder's user ceilings (no more users than the card
    holds with no weights at all). A bound the right answer itself breaks is not applied.
    """
    declared = quantity(key, family)
    gib = lambda v: format_number(v, "GiB")  # noqa: E731 - a local shorthand
    if declared is not None:
        expected = right.get(declared.key)
        broken = declared.violation(value)
        if broken and (expected is None or declared.violation(expected) is None):
            return broken
        for other in declared.at_most:
            limit = right.get(other, given.get(other))  # an earlier step, or a bound the problem is given
            if limit is not None and expected is not None and expected <= limit * 1.0001 \
                    and value > limit * 1.0001 + 1e-9:
                bound = quantity(other, family)
                return (f"it cannot exceed the {bound.label.lower() if bound else other.replace('_', ' ')} "
                        f"({format_number(limit, bound.unit if bound else declared.unit)})")
    if key in ("users_worst_case", "users_paged") and "card_gib" in right and "avg_tokens" in given:
        if key == "users_worst_case":
            per_user = right["per_user_gib"]
        else:
            tokens = math.ceil(given["avg_tokens"] / given["block_size"]) * given["block_size"]
            per_user = right["kv_bytes_per_token"] * tokens / 2**30
            if given.get("window_layers"):
                per_user = min(per_user, right["kv_bytes_per_token"] * given["window"] / 2**30)
        ceiling_users = math.floor(right["card_gib"] / per_user) if per_user > 0 else math.inf
        if value > ceiling_users:
            return (f"even with no weights at all, {gib(right['card_gib'])} holds at most "
                    f"{ceiling_users:,} such users")
    return None


def _safe_evaluate(spec: StepSpec, given, values) -> float:
    """The step on the candidate's own earlier values; NaN when those make it undefined
    (a typed 0 divides, a typed 1e308 overflows), so no verdict matches it."""
    try:
        result = spec.evaluate(given, values)
    except (ZeroDivisionError, OverflowError, ValueError):
        return math.nan
    return result if math.isfinite(result) else math.nan


def perturbed(result: Result) -> Problem:
    """``result``'s perturbations (:mod:`.perturbations`), shared by every submission on the same problem."""
    return PROBLEMS.get(result)


def grade_step(spec: StepSpec, text: str | None, result: Result,
               own: Mapping[str, float], problem: Problem | Callable[[], Problem] | None = None) -> StepGrade:
    """Judge one step's typed ``text`` against ``result`` (the problem's right answers).

    ``own`` holds the candidate's readable values of the earlier steps (for
    carried-forward credit and for misconceptions made after a slip);
    ``problem`` the problem's perturbations (:func:`perturbed`), or a function
    returning them (called only if the step needs them), found here when not given.
    """
    given, right = result.given, result.values
    expected = right[spec.key]
    correct_step = result.step(spec.key)
    base = dict(key=spec.key, label=spec.label, unit=spec.unit, expected=expected,
                given=text or "", substituted=correct_step.substituted)
    declared = quantity(spec.key, result.family)
    verdict_step = declared is not None and declared.bounds == "flag"
    words = declared.verdict if declared is not None and verdict_step else ""
    shown_expected = _shown(expected, spec.unit, words)
    if text is None or not str(text).strip():
        return StepGrade(verdict="unreadable", credit=0.0, value=None,
                         message=f"No answer given; expected {shown_expected}.", **base)
    try:
        parsed = parse_answer(str(text), spec.unit, words)
    except AnswerError as exc:
        return StepGrade(verdict="unreadable", credit=0.0, value=None, message=str(exc), **base)
    value = parsed.value
    conversion = parsed.conversion
    prefix = f"{conversion} " if conversion else ""

    if _matches(value, expected, spec):
        return StepGrade(verdict="correct", credit=1.0, value=value, conversion=conversion,
                         message=f"{prefix}Correct.", **base)
    figures = _rounded(parsed, expected, spec, verdict_step)
    if figures:
        return StepGrade(verdict="correct", credit=1.0, value=value, conversion=conversion,
                         message=(f"{prefix}Correct to {figures} significant figures: {shown_expected} rounds to "
                                  f"{quote(str(text).strip())}."), **base)

    mixed = {**right, **{k: v for k, v in own.items() if k != spec.key}}
    carried = _safe_evaluate(spec, given, mixed)
    figures = _rounded(parsed, carried, spec, verdict_step)
    if _matches(value, carried, spec) or figures:
        rounded = (f", to {figures} significant figures" if figures and not _matches(value, carried, spec)
                   else "")
        return StepGrade(verdict="carried_forward", credit=1.0, value=value, conversion=conversion,
                         carried_expected=carried,
                         message=(f"{prefix}Follows from your earlier values "
                                  f"({_shown(carried, spec.unit, words)}{rounded}); with the right inputs this step is "
                                  f"{shown_expected}."), **base)

    if problem is None:
        problem = perturbed(result)
    elif callable(problem):
        problem = problem()
    index = result.specs.index(spec)
    for misconception_id, wrong_value in problem.candidates(index, own, verdict_step):
        if _matches(wrong_value, expected, spec):
            continue  # this perturbation gives the right answer here (query heads on an MHA model)
        if _matches(value, wrong_value, spec):
            info = MISCONCEPTIONS[misconception_id]
            return StepGrade(verdict="misconception", credit=0.0, value=value, conversion=conversion,
                             misconception=misconception_id,
                             message=f"{prefix}{info.title}: {info.explanation} Expected {shown_expected}.",
                             **base)

    violation = _bound_violation(spec.key, value, right, given, result.family)
    if violation:
        return StepGrade(verdict="impossible", credit=0.0, value=value, conversion=conversion,
                         message=f"{prefix}Impossible: {violation}. Expected {shown_expected}.", **base)

    off_expected = _relative_error(value, expected)
    off_carried = _relative_error(value, carried) if math.isfinite(carried) else math.inf
    if min(off_expected, off_carried) <= CLOSE_TOLERANCE:
        whole = float(value).is_integer()
        rounding = " (users are whole: round down)" if spec.rounding == "floor" and not whole else ""
        if off_expected <= off_carried:
            rounded_text = None if spec.rounding or verdict_step else parsed.rounded_text(expected)
            if rounded_text:  # "0.70" for 0.7086 (truncated, not rounded): say what those figures give
                rounding = f" (to the figures you typed it rounds to {rounded_text})"
            return StepGrade(verdict="close", credit=0.5, value=value, conversion=conversion,
                             message=(f"{prefix}Close: {off_expected:.1%} off {shown_expected}{rounding}; half "
                                      f"credit for rounded working."), **base)
        # Close to what the candidate's own earlier values give, not to the right answer: name that value,
        # as carried-forward credit does, or "1.1 % off 1.56 GiB" would be read of an answer 91 % away.
        return StepGrade(verdict="close", credit=0.5, value=value, conversion=conversion,
                         carried_expected=carried,
                         message=(f"{prefix}Close: {off_carried:.1%} off {format_number(carried, spec.unit)}, what "
                                  f"your earlier values give{rounding}; half credit for rounded working. With the "
                                  f"right inputs this step is {shown_expected}."), **base)
    return StepGrade(verdict="wrong", credit=0.0, value=value, conversion=conversion,
                     message=f"{prefix}Expected {shown_expected}.", **base)


def grade(result: Result, answers: Mapping[str, str | None]) -> Grade:
    """Grade every step of ``result`` (a procedure's right answers) against ``answers``.

    ``answers`` maps step keys to the typed text; a missing key is an empty
    answer (``unreadable``). Keys that are not steps of the family are ignored.
    A step answered under an older key (``weight_gib`` for ``weights_gib``,
    :mod:`.quantities`) is read there and reported under that key.
    """
    own: dict[str, float] = {}
    grades = []
    found: list[Problem] = []

    def problem() -> Problem:
        if not found:  # at the first step that needs the perturbations
            found.append(perturbed(result))
        return found[0]

    for spec in result.specs:
        used = spec.key
        if spec.key not in answers:
            used = next((old for old in aliases_of(spec.key, result.family) if old in answers), spec.key)
        step_grade = grade_step(spec, answers.get(used), result, own, problem)
        step_grade.key = used
        if step_grade.value is not None and step_grade.verdict != "impossible":
            # An impossible value earns nothing downstream either.
            own[spec.key] = step_grade.value
        grades.append(step_grade)
    return Grade(result.family, result.inputs, grades)

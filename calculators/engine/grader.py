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

*Misconceptions as perturbations* of a family's own steps (docs/architecture.md §11).

A classic mistake changes one thing — an input, a unit, a rounding or, rarely, one quantity's own formula
(the changes of the one registry, :mod:`.mistakes`) — and everything computed after it follows. A
:class:`Chain` is that change applied to one problem: the family's own steps re-evaluated in order with
it, so every step downstream of the perturbed variable carries the misconception's name, in every
family whose steps it reaches. :meth:`Problem.candidates` reads, for one step, the value each chain
gives both on the right earlier values and on the candidate's own (a slip carried forward is still
named). A change the registry marks ``local`` belongs to its step only.

Why it is built this way (bench/bench_grader.py holds it to at most 4× grading without perturbations):

* a :class:`Problem` depends only on the problem (family, given values, steps), never on what a
  candidate typed, so it is kept in a small LRU (:data:`PROBLEMS`) and shared by every submission on
  the same inputs;
* a chain is evaluated lazily, step by step, and only at the steps it can reach (whose inputs,
  followed back through earlier steps, include what it changes); elsewhere it equals the right value
  and is skipped unevaluated. A step's per-step variants run only when a step at or after it needs them;
* candidates are produced one at a time in precedence order, so grading stops at the first match; the
  re-evaluation on the candidate's own values runs the step's compiled formula, and is skipped when its
  arguments equal the carried-forward ones or ones already tried at this step.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from functools import lru_cache, partial
from typing import Any, Callable, Iterator, Mapping

import sympy

from .answers import ParsedAnswer, parse_answer
from .errors import AnswerError
from .formula import Formula, whole_floor
from .mistakes import (
    ADDED_FROM,
    MISCONCEPTIONS,
    MISTAKES,
    Override,
    PrefixSlip,
    RoundingSlip,
    UnitSlip,
    at_step,
    order_of,
)
from .mistakes.memory import rederive
from .procedures.base import Result, StepSpec, format_number
from .quantities import aliases_of, quantity
from .units import format_quantity, get_unit, prefix_partner, quote, rescale, verdict_choices

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


#: The mistake whose :class:`~.mistakes.PrefixSlip` the grader reads off the unit typed (the registry's first).
PREFIX_SLIP = next(mistake.id for mistake in MISTAKES if any(isinstance(c, PrefixSlip) for c in mistake.change))


def _prefix_slip(parsed: ParsedAnswer, spec: StepSpec, expected: float, carried: float,
                 verdict_step: bool) -> str | None:
    """The sentence naming a decimal/binary prefix mix (DESIGN §4: "GB/GiB mixed"), or ``None``: the number typed,
    in a unit with a byte prefix, is the answer (or what the candidate's earlier values give) in the same prefix of
    the other system — ``32 MB`` where the answer is 32 MiB: "32 MB is 30.52 MiB; the answer is 32 MiB". Matched
    within the step's tolerance or rounded to the figures typed, as a right answer is; never for a count or a
    verdict."""
    partner = prefix_partner(parsed.typed_unit) if parsed.typed_unit else None
    if partner is None or spec.rounding or verdict_step:
        return None
    step, typed, other = get_unit(spec.unit), get_unit(parsed.typed_unit or ""), get_unit(partner)
    for target, whose in ((expected, "the answer is"), (carried, "your earlier values give")):
        if not math.isfinite(target) or target == 0 or (whose != "the answer is" and _matches(target, expected, spec)):
            continue
        number = rescale(target, step.exact_factor / other.exact_factor)  # the target in the partner unit
        slipped = rescale(number, typed.exact_factor / step.exact_factor)  # that number read in the typed unit
        if _matches(parsed.value, slipped, spec) or parsed.rounded_figures(slipped):
            typed_in_partner = rescale(parsed.typed_value, typed.exact_factor / other.exact_factor)
            # Bare numbers (unit "1": four significant figures, thousands grouped) before the prefixed symbols.
            return (f"{format_quantity(parsed.typed_value, '1')} {typed.symbol} is "
                    f"{format_quantity(typed_in_partner, '1')} {other.symbol}; {whose} {format_quantity(number, '1')} "
                    f"{other.symbol}.")
    return None


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
    """``result``'s perturbations (:mod:`.grader`), shared by every submission on the same problem."""
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

    mixed_prefix = _prefix_slip(parsed, spec, expected, carried, verdict_step)
    if mixed_prefix is not None:
        info = MISCONCEPTIONS[PREFIX_SLIP]
        return StepGrade(verdict="misconception", credit=0.0, value=value, conversion=conversion,
                         misconception=PREFIX_SLIP,
                         message=f"{prefix}{info.title}: {mixed_prefix} {info.explanation} Expected {shown_expected}.",
                         **base)

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


# --- a perturbation applied to one problem, and how a family's steps read each other -------------------

@dataclass(eq=False, slots=True)
class Chain:
    """One perturbation applied to one problem: misconception ``id``, the changed ``given``, the step
    ``start`` index it takes effect at — where a per-step ``variant`` (its ``value_index``-th value) or a
    unit slip (× ``factor``) replaces that step's value, ``start_value`` on the right earlier values;
    neither for a change of inputs — ``reach`` (the step indices whose value it can change), and
    ``values``: the steps re-evaluated on the right earlier values (NaN where undefined), filled lazily in
    step order by :meth:`fill`. Slotted and closure-free: a problem holds dozens, and the cache hundreds
    of problems, so fewer objects for the garbage collector to trace."""

    id: str
    given: Mapping[str, float]
    start: int
    variant: Callable | None = None
    value_index: int = 0
    factor: float | None = None
    slip_input: int = -1
    changed: frozenset = frozenset()
    rank: tuple = ()
    reach: frozenset = frozenset()
    start_value: float = math.nan
    values: dict[str, float] = field(default_factory=dict)

    @property
    def at_step(self) -> bool:
        """Whether it replaces step ``start``'s value (a per-step variant or a unit slip)."""
        return self.variant is not None or self.factor is not None

    def fill(self, index: int, problem: "Problem") -> dict[str, float]:
        """``values`` up to step ``index`` (inclusive); steps out of reach take the right value unevaluated."""
        values, right = self.values, problem.right
        for k in range(len(values), index + 1):
            key = problem.specs[k].key
            if k not in self.reach:
                values[key] = right[key]
            elif k == self.start and self.at_step:
                values[key] = self.start_value
            else:
                values[key] = problem.run(k, problem.arguments(k, self.given, values))
        return values

    def own_value(self, problem: "Problem", own: Mapping[str, float]) -> float:
        """Step ``start``'s replaced value on the candidate's ``own`` earlier values (the chain's elsewhere)."""
        if self.factor is not None:
            return problem.slipped(self.start, problem.arguments(self.start, self.given, self.values, own),
                                   self.factor, self.slip_input)
        variant, mixed = self.variant, {**self.values, **own}
        produced = _safe(lambda: _pick(variant(self.given, mixed), self.value_index))  # type: ignore[misc]
        return produced


def _pick(produced, value_index: int) -> float:
    produced = produced if isinstance(produced, list) else [produced]
    if value_index >= len(produced) or produced[value_index] is None:
        raise ValueError("variant does not apply")
    return produced[value_index]


def _safe(evaluate: Callable[[], float]) -> float:
    try:
        value = float(evaluate())
    except (ZeroDivisionError, OverflowError, ValueError, KeyError, TypeError):
        return math.nan
    except Exception:  # noqa: BLE001 - an InputError from a formula missing a value: undefined here
        return math.nan
    return value if math.isfinite(value) else math.nan


class StepGraph:
    """How a family's steps read each other (the same for every problem with these steps): for each step,
    ``plan`` — its formula's arguments in order, as (variable, the earlier step feeding it or ``None``
    for a given value); ``direct`` — the given keys it reads itself; ``upstream`` — the earlier steps it
    reads, directly or through others; ``given_deps`` — the given keys likewise (``None``: it reads a step
    not in the list, so any); ``downstream`` — itself and the steps that read it."""

    def __init__(self, specs) -> None:
        self.plan = [tuple((var.name, spec.from_steps.get(var.name)) for var in spec.formula.variables)
                     for spec in specs]
        self.direct: list[frozenset] = []
        self.upstream: list[frozenset] = []
        self.given_deps: list[frozenset | None] = []
        index_of = {spec.key: i for i, spec in enumerate(specs)}
        for i, spec in enumerate(specs):
            names = {var.name for var in spec.formula.variables}
            self.direct.append(frozenset(names - set(spec.from_steps)))
            found = [index_of.get(spec.from_steps[name]) for name in names & set(spec.from_steps)]
            sources = [s for s in found if s is not None and s < i]
            if len(sources) < len(found):  # a step read that is not an earlier one: depend on everything
                self.upstream.append(frozenset(range(i)))
                self.given_deps.append(None)
                continue
            upstream: set[int] = set(sources)
            deps: frozenset | None = self.direct[i]
            for s in sources:
                upstream |= self.upstream[s]
                earlier = self.given_deps[s]
                deps = None if deps is None or earlier is None else deps | earlier
            self.upstream.append(frozenset(upstream))
            self.given_deps.append(deps)
        self.downstream = [frozenset(j for j, up in enumerate(self.upstream) if i in up) | {i}
                           for i in range(len(specs))]
        self.own_step = [frozenset({i}) for i in range(len(specs))]
        # Each step's arguments that are earlier steps: (position in ``plan``, that step's unit).
        self.step_inputs = [[(position, specs[index_of[src]].unit) for position, (_, src) in enumerate(row)
                             if src in index_of] for row in self.plan]
        self.reach_of: dict[frozenset, frozenset] = {}  # given keys changed → the steps that read them

    def reaches(self, changed: frozenset) -> frozenset:
        """The steps whose inputs, followed back, include a key of ``changed``."""
        found = self.reach_of.get(changed)
        if found is None:
            found = self.reach_of[changed] = frozenset(
                j for j, deps in enumerate(self.given_deps) if deps is None or not changed.isdisjoint(deps))
        return found


# --- the problems and their chains ----------------------------------------------------------------------

#: A step in one of these units typed in a sibling: every (mistake id, factors) the registry's unit slips declare
#: on the unit, in registry order (a GiB step may be typed in GB, or as its MiB number).
UNIT_SLIPS: dict[str, list[tuple[str, tuple[float, ...]]]] = {}
#: Per unit, the slips with which an earlier step's value, read by a later step, is also tried in its sibling unit
#: at that step (a budget in GiB divided by a per-user figure taken in GB): the slip belongs to the reading step.
INPUT_SLIPS: dict[str, list[tuple[str, tuple[float, ...]]]] = {}
for _mistake in MISTAKES:
    for _change in _mistake.change:
        if isinstance(_change, UnitSlip):
            for _unit in _change.units:
                UNIT_SLIPS.setdefault(_unit, []).append((_mistake.id, _change.factors))
                if _change.reading:
                    INPUT_SLIPS.setdefault(_unit, []).append((_mistake.id, _change.factors))
#: The mistake a count rounded down instead of up is named as.
ROUNDED_DOWN = next(mistake.id for mistake in MISTAKES if any(isinstance(c, RoundingSlip) for c in mistake.change))
_OVERRIDES = [(mistake, change) for mistake in MISTAKES for change in mistake.change if isinstance(change, Override)]


@lru_cache(maxsize=1024)
def _rounded_down(formula: Formula):
    """``formula``'s evaluator with every ceiling taken as a floor (``None`` when it has no ceiling)."""
    if not formula.expr.has(sympy.ceiling):
        return None
    arguments = [formula.symbols[var.name] for var in formula.variables]
    return sympy.lambdify(arguments, formula.numeric_expr, modules=[{"ceiling": whole_floor, "floor": whole_floor},
                                                                     "math"])


def _floored(spec, evaluate, given, steps) -> float:
    """Step ``spec`` on ``given`` and earlier ``steps`` with its ceiling taken as a floor."""
    bound = spec.values(given, steps)
    return float(evaluate(*[bound[var.name] for var in spec.formula.variables]))


class Problem:
    """Every perturbation of one problem (``result``'s family, given values and steps), built lazily.

    A mistake is tried where the problem holds every quantity it ``needs`` (:mod:`.mistakes`); a step value that
    raises ``KeyError`` there is a bug in its declared needs and is raised, not skipped (one that does not apply
    returns ``None``).
    """

    def __init__(self, result, graph: "StepGraph | None" = None) -> None:
        self.family = result.family
        self.specs = list(result.specs)
        self.given = result.given
        self.right = result.values
        self.available = frozenset(self.given) | {spec.key for spec in self.specs}
        graph = graph or StepGraph(self.specs)
        self._plan, self._direct, self._upstream = graph.plan, graph.direct, graph.upstream
        self._given_deps, self._downstream, self._own_step = graph.given_deps, graph.downstream, graph.own_step
        self._graph = graph
        self._step_inputs = graph.step_inputs
        # Bound now, so a grader that swaps the evaluator (bench/bench_grader.py's naive one) is used throughout.
        self._call = [spec.formula.call_args for spec in self.specs]
        self._given_chains = self._build_given_chains()
        self._step_chains: dict[int, list[Chain]] = {}
        self._local_chains: dict[int, list[Chain]] = {}
        self._relevant: dict[int, list[Chain]] = {}

    def arguments(self, index: int, given: Mapping[str, float], steps: Mapping[str, float],
                  own: Mapping[str, float] | None = None) -> tuple | None:
        """Step ``index``'s formula arguments, in order, from ``given`` and earlier ``steps`` (``own``'s value
        first where it has one); ``None`` when one is missing."""
        try:
            if own:
                return tuple([(own[src] if src in own else steps[src]) if src else given[name]
                              for name, src in self._plan[index]])
            return tuple([steps[src] if src else given[name] for name, src in self._plan[index]])
        except KeyError:
            return None

    def run(self, index: int, arguments: tuple | None) -> float:
        """Step ``index``'s compiled formula on ``arguments``; NaN where undefined (or ``arguments`` is ``None``)."""
        if arguments is None:
            return math.nan
        try:
            value = self._call[index](arguments)
        except Exception:  # noqa: BLE001 - division by zero, overflow, a domain error: undefined here
            return math.nan
        return value if math.isfinite(value) else math.nan

    def slipped(self, index: int, arguments: tuple | None, factor: float, position: int = -1) -> float:
        """Step ``index`` with a unit slip: its value × ``factor`` (``position`` −1), or its value with the
        ``position``-th argument × ``factor`` (an earlier step's GiB read as GB in this step)."""
        if arguments is None:
            return math.nan
        if position < 0:
            return self.run(index, arguments) * factor
        return self.run(index, (*arguments[:position], arguments[position] * factor, *arguments[position + 1:]))

    def _build_given_chains(self) -> list[Chain]:
        given, found, available = self.given, [], self.available
        for mistake, change in _OVERRIDES:
            if not available.issuperset(mistake.needs) or not available.issuperset(change.where) \
                    or any(need not in given for need in change.needs):
                continue
            changed = change.perturb(given)
            for one in changed if isinstance(changed, list) else [changed]:
                if one is None:
                    continue
                derived = rederive(one, given)  # a fresh dict from the perturbation: changed in place
                try:
                    keys = frozenset(key for key, _ in derived.items() - given.items())
                except TypeError:  # an unhashable value
                    keys = frozenset(k for k, v in derived.items() if given.get(k) != v)
                found.append(Chain(mistake.id, derived, 0, changed=keys, reach=self._graph.reaches(keys),
                                   rank=(order_of(mistake.id), (1,))))
        return found

    def step_chains(self, index: int, local: bool = False) -> list[Chain]:
        """The chains that start at step ``index`` and carry on downstream: a slip of its unit, a ceiling rounded
        down, then the mistakes the registry declares on its quantity; with ``local``, instead those that belong to
        the step alone (``local`` ones, a slip of an input's unit), needed only when it is graded."""
        cache = self._local_chains if local else self._step_chains
        if index in cache:
            return cache[index]
        spec, found, available = self.specs[index], [], self.available
        reach = self._own_step[index] if local else self._downstream[index]
        for slip_id, factors in () if local else UNIT_SLIPS.get(spec.unit, ()):
            for place, factor in enumerate(factors):
                found.append(Chain(slip_id, self.given, index, factor=factor, reach=reach,
                                   start_value=_safe(lambda: self.right[spec.key] * factor),
                                   rank=(order_of(slip_id), (0, index, -2, place))))
        floored = None if local or spec.rounding != "ceil" else _rounded_down(spec.formula)
        if floored is not None:
            variant = partial(_floored, spec, floored)
            found.append(Chain(ROUNDED_DOWN, self.given, index, variant, reach=reach,
                               start_value=_safe(lambda: variant(self.given, self.right)),
                               rank=(order_of(ROUNDED_DOWN), (0, index, -1, 0))))
        listed = at_step(spec.key)
        for place, (mistake, change) in enumerate(listed):
            if change.local != local or not available.issuperset(change.needs) \
                    or not available.issuperset(mistake.needs):
                continue
            try:
                produced = change.value(self.given, self.right)
            except (ZeroDivisionError, OverflowError, ValueError):
                continue  # degenerate on this problem (a zero context divides)
            readings: list = produced if isinstance(produced, list) else [produced]
            for value_index, value in enumerate(readings):
                if value is not None:
                    found.append(Chain(mistake.id, self.given, index, change.value, value_index, reach=reach,
                                       start_value=_safe(lambda: value),
                                       rank=(order_of(mistake.id), (0, index, place, value_index))))
        for argument, unit in self._step_inputs[index] if local else ():
            for slip_id, factors in INPUT_SLIPS.get(unit, ()):
                arguments = self.arguments(index, self.given, self.right)
                for place, factor in enumerate(factors):
                    # An earlier step's value read in its sibling unit here: this step's own slip, after its
                    # variants.
                    found.append(Chain(slip_id, self.given, index, factor=factor, slip_input=argument, reach=reach,
                                       start_value=self.slipped(index, arguments, factor, argument),
                                       rank=(order_of(slip_id), (0, index, len(listed) + argument, place))))
        cache[index] = found
        return found

    def relevant(self, index: int) -> list[Chain]:
        """The chains that can change step ``index``, in precedence order (registry order, then position)."""
        if index not in self._relevant:
            found = [chain for chain in self._given_chains if index in chain.reach]
            for start in sorted(self._upstream[index] | {index}):
                found += [chain for chain in self.step_chains(start) if index in chain.reach]
            found += self.step_chains(index, local=True)
            found.sort(key=lambda chain: chain.rank)
            self._relevant[index] = found
        return self._relevant[index]

    def chains(self) -> list[Chain]:
        """Every chain of the problem, fully evaluated, in precedence order."""
        found = list(self._given_chains)
        for index in range(len(self.specs)):
            found += self.step_chains(index) + self.step_chains(index, local=True)
        found.sort(key=lambda chain: chain.rank)
        for chain in found:
            chain.fill(len(self.specs) - 1, self)
        return found

    def _refuted(self, chain: Chain, index: int, own: Mapping[str, float]) -> bool:
        """Whether the candidate typed the right value at an earlier step this chain changes (so they did
        not make this slip there)."""
        for k in range(chain.start, index):
            if k not in chain.reach:
                continue
            key = self.specs[k].key
            typed, wrong, correct = own.get(key), chain.values[key], self.right[key]
            if typed is None or math.isnan(wrong) or _close(wrong, correct):
                continue
            if _close(typed, correct):
                return True
        return False

    def candidates(self, index: int, own: Mapping[str, float], verdict_step: bool = False
                   ) -> Iterator[tuple[str, float]]:
        """(id, value) pairs a candidate holding each misconception would type at step ``index``, lazily:
        on the right earlier values, then on ``own`` (the candidate's readable earlier values, each in
        place of the chain's). The nearest cause comes first — a slip made at this step, then an input
        this step reads itself, then one carried from upstream (unless the candidate's own right answer
        upstream rules it out, or the step is a yes/no verdict) — then the registry's order."""
        spec, direct = self.specs[index], self._direct[index]
        # Existing ids first (the registry's earlier part, DESIGN §11), then the nearest cause: a mistake made at
        # this very step, an earlier step's value read here in its sibling unit, an input this step reads itself,
        # one carried from upstream.
        buckets: tuple[list[Chain], ...] = ([], [], [], [], [], [], [], [])
        for chain in self.relevant(index):
            later = 4 if chain.rank[0] >= ADDED_FROM else 0
            if index == chain.start and chain.at_step:
                buckets[later + (chain.slip_input >= 0)].append(chain)
            elif not chain.changed.isdisjoint(direct):
                buckets[later + 2].append(chain)
            elif not verdict_step:  # a yes/no verdict is not explained by a far cause
                buckets[later + 3].append(chain)
        own_earlier = {k: v for k, v in own.items() if k != spec.key}
        tried: set[tuple] = set()
        if own_earlier:
            carried = self.arguments(index, self.given, self.right, own_earlier)
            if carried is not None:
                tried.add(carried)  # the carried-forward value: already not a match
        # Every step this one reads was typed: a chain that changes none of its given inputs gives, on the
        # candidate's values, exactly the carried-forward value (already not a match).
        all_typed = all(src in own_earlier for _, src in self._plan[index] if src)
        for place, bucket in enumerate(buckets):
            near = max(0, place % 4 - 1)
            for chain in bucket:
                values = chain.fill(index, self)
                if near == 2 and self._refuted(chain, index, own):
                    continue  # the candidate's own right answer upstream rules this chain out
                yield chain.id, values[spec.key]
                if not own_earlier or (near == 2 and all_typed):
                    continue
                if near == 0:
                    yield chain.id, chain.own_value(self, own_earlier)
                    continue
                arguments = self.arguments(index, chain.given, values, own_earlier)
                if arguments is None or arguments in tried:
                    continue
                tried.add(arguments)
                yield chain.id, self.run(index, arguments)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.005 * abs(b) if b else abs(a) < 1e-9


class ProblemCache:
    """The :class:`Problem` s of recently graded problems, least recently used dropped first, keyed by
    family, given values and steps (never by what a candidate typed). ``enabled = False`` builds every
    problem afresh (bench/bench_grader.py's naive grader has no cache)."""

    def __init__(self, size: int = 1024):
        self.size = size
        self.enabled = True
        self._problems: OrderedDict[tuple, Problem] = OrderedDict()
        self._graphs: dict[tuple, StepGraph] = {}  # one per family's step layout: a handful
        self._graph_specs: list = []

    def get(self, result) -> Problem:
        """``result``'s problem, built once per distinct problem."""
        if not self.enabled:
            return Problem(result)
        try:
            shape = tuple((s.key, id(s.formula), tuple(s.from_steps.items())) for s in result.specs)
            key = (result.family, frozenset(result.given.items()), shape)
        except TypeError:  # an unhashable given value: not cached
            return Problem(result)
        problem = self._problems.get(key)
        if problem is not None:
            self._problems.move_to_end(key)
            return problem
        graph = self._graphs.get(shape)
        if graph is None:
            if len(self._graphs) >= self.size:  # formulas made per problem would otherwise pile up here
                self._graphs.clear()
                self._graph_specs.clear()
            graph = self._graphs[shape] = StepGraph(result.specs)
            self._graph_specs.append(result.specs)  # keeps the formulas alive: the ids in ``shape`` stay theirs
        # The problem keeps its specs (and so their formulas) alive: the ids in the key stay theirs.
        problem = self._problems[key] = Problem(result, graph)
        if len(self._problems) > self.size:
            self._problems.popitem(last=False)
        return problem

    def clear(self) -> None:
        """Forget every problem."""
        self._problems.clear()
        self._graphs.clear()
        self._graph_specs.clear()


PROBLEMS = ProblemCache()


def chains(result) -> list[Chain]:
    """Every perturbation of ``result``'s problem, each re-evaluated through the family's steps, in precedence
    order (the grader reads them lazily through :meth:`Problem.candidates` instead)."""
    return Problem(result).chains()

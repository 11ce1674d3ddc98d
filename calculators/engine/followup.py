"""The interviewer's follow-up: the same stack with one input changed (DESIGN §14, issue 33 item 1).

After a worked problem the interviewer asks "and if …?": the KV cache in another precision, double the
context, another tensor-parallel degree, another card, the MoE sibling (only where the catalog names one),
a tighter TPOT target. :func:`draw_followup` draws one such change, reproducibly from a seed, among what
the family's inputs allow (their choices and bounds, :mod:`.procedures.inputs`; the defaults of
:data:`.quantities.INPUTS`), solves the changed stack and says which steps move: a step moves when its new
value differs from the original by more than its tolerance (the grader's own tolerance test).
:func:`draw_chain` draws 2–4 follow-ups, each on the stack the previous one left.

:func:`grade_followup` grades the candidate's two answers: which steps they marked as moving (each step
right or wrong, a moved step left unmoved and a still step marked as moving named as such), and the new
values of the steps they marked (a follow-up with no step marked and no value typed is unanswered: 0 for every
step, :func:`answered`), graded by :func:`.grader.grade_step` on the changed stack with the
candidate's own earlier answers standing in for the steps they did not give again (error carried forward
from their first answers). Pure Python, no Django.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .catalog import Catalog
from .errors import EngineError
from .grader import Grade, StepGrade, grade, grade_step, shown_value
from .grader import _matches as matches  # the grader's tolerance test, shared by "does it move?"
from .procedures.base import Family, Result, computing_gpus
from .procedures.inputs import InputSpec

#: The changes an interviewer asks first, by input name, in this order of preference; a family draws among
#: those it has, and only when none of them gives a follow-up among its other inputs (:func:`_other_changes`).
INTERVIEW_INPUTS = ("kv_dtype", "context", "gpus", "gpu", "model", "tpot_target_ms", "tpot_slo_ms",
                    "weights_dtype", "prompt_tokens", "batch", "decode_batch", "request_rate", "rate")

#: The precisions a follow-up moves a KV cache or the weights to (the formats problems are drawn in,
#: :mod:`.procedures.base`).
KV_FOLLOWUP_DTYPES = ("bf16", "fp8")
WEIGHT_FOLLOWUP_DTYPES = ("bf16", "fp8", "int4")

#: A tighter TPOT target is this share of the one before (50 ms → 25 ms).
TIGHTER_TARGET = 0.5

#: A context of zero (a decode step with an empty cache) follows up at this many tokens.
FIRST_CONTEXT = 2048

#: Inputs a follow-up never changes: the simulator's seed, and the inputs left to their default ``None``
#: (a measured rate, a proposed degree): a question about them is not "the same stack with one input changed".
NEVER_CHANGED = ("sim_seed", "simulation",
                 # Inputs that add steps rather than change the stack: a cold start's loader (weights) and the
                 # moe family's layout per card with its own context and cache precision.
                 "load_path", "layout", "layout_context", "layout_kv_dtype")

# The catalog field naming a model's MoE (or dense) sibling: ``{"id": …, "source": …}``.
SIBLING_FIELD = "moe_sibling"

MARK_VERDICTS = ("right", "left_unmoved", "moved_when_still", "unanswered")


@dataclass(frozen=True)
class Change:
    """One changed input: its name, the value before and after, and the interviewer's sentence."""

    input: str
    before: Any
    after: Any
    sentence: str

    def to_json(self) -> dict[str, Any]:
        """``{"input", "before", "after", "sentence"}``."""
        return {"input": self.input, "before": self.before, "after": self.after, "sentence": self.sentence}


@dataclass
class FollowUp:
    """A drawn follow-up: the stack ``inputs`` before, ``new_inputs`` after ``change``, both solved, and the
    keys of the steps that move (in step order)."""

    family: str
    inputs: dict[str, Any]
    new_inputs: dict[str, Any]
    change: Change
    original: Result
    result: Result
    moves: tuple[str, ...]

    @property
    def still(self) -> tuple[str, ...]:
        """The step keys that do not move, in step order."""
        return tuple(spec.key for spec in self.result.specs if spec.key not in self.moves)

    def to_json(self) -> dict[str, Any]:
        """The follow-up as data: the change and per step before, after and whether it moves (the new inputs,
        a simulated drill's run among them, are ``new_inputs``)."""
        before = self.original.values
        return {"family": self.family, "change": self.change.to_json(),
                "steps": [{"key": step.key, "unit": step.unit, "before": before[step.key], "after": step.value,
                           "moves": step.key in self.moves} for step in self.result.steps]}


@dataclass
class MarkGrade:
    """Whether the candidate marked one step right: ``verdict`` one of :data:`MARK_VERDICTS`."""

    key: str
    label: str
    moves: bool
    marked: bool
    verdict: str
    message: str

    @property
    def credit(self) -> float:
        """1 for a right mark, 0 otherwise."""
        return 1.0 if self.verdict == "right" else 0.0


@dataclass
class FollowUpGrade:
    """Both halves of a graded follow-up: the marks (one per step) and the values of the steps that move
    or were marked (a :class:`~.grader.StepGrade` each; a moving step left unmarked is ``left_unmoved``,
    a still step given a changed value ``moved_when_still``, both credit 0)."""

    followup: FollowUp
    marks: list[MarkGrade]
    values: list[StepGrade]
    own: dict[str, float] = field(default_factory=dict)

    @property
    def marks_score(self) -> float:
        """The share of steps marked right, 0 to 1."""
        return sum(mark.credit for mark in self.marks) / len(self.marks) if self.marks else 0.0

    @property
    def values_score(self) -> float:
        """Mean credit over the graded values, 0 to 1."""
        return sum(step.credit for step in self.values) / len(self.values) if self.values else 0.0

    @property
    def score(self) -> float:
        """The marks and the values weigh half each, 0 to 1."""
        return (self.marks_score + self.values_score) / 2

    def to_json(self) -> dict[str, Any]:
        """The follow-up, both halves and the scores as data."""
        return {"followup": self.followup.to_json(),
                "marks": [{"key": m.key, "moves": m.moves, "marked": m.marked, "verdict": m.verdict,
                           "message": m.message} for m in self.marks],
                "values": [step.to_json() for step in self.values],
                "marks_score": self.marks_score, "values_score": self.values_score, "score": self.score}


def _shown(spec: InputSpec, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = f"{value:,}" if float(value).is_integer() else f"{value:g}"
        unit = spec.unit
        return f"{number} {unit}".strip() if unit and unit != "1" else number
    return str(value)


def _within(spec: InputSpec, value: float) -> bool:
    if spec.minimum is not None and (value < spec.minimum or (spec.exclusive_minimum and value == spec.minimum)):
        return False
    return spec.maximum is None or value <= spec.maximum


def _numeric(spec: InputSpec, value: float) -> int | float:
    return int(value) if spec.kind == "int" else value


def _interview_changes(spec: InputSpec, current: Any, rng: random.Random, catalog: Catalog,
                       cleaned: Mapping[str, Any]) -> list[Change]:
    """The follow-ups an interviewer asks of the input ``spec`` (:data:`INTERVIEW_INPUTS`), most likely first."""
    name = spec.name
    if name == "kv_dtype":
        options = [d for d in KV_FOLLOWUP_DTYPES if d != current and d in spec.choices]
        return [Change(name, current, d, f"Keep everything else, but store the KV cache in {d} instead of "
                                         f"{current}.") for d in options]
    if name == "weights_dtype":
        options = [d for d in WEIGHT_FOLLOWUP_DTYPES if d != current and d in spec.choices]
        rng.shuffle(options)
        return [Change(name, current, d, f"Same stack, but the weights quantised to {d} instead of {current}.")
                for d in options]
    if name == "context":
        after = current * 2 if current else FIRST_CONTEXT
        if not _within(spec, after):
            return []
        words = "doubles" if current else "grows"
        return [Change(name, current, after, f"The context limit {words}: {_shown(spec, current)} → "
                                             f"{_shown(spec, after)}.")]
    if name == "gpus":
        degrees: list[int] = [current * 2] + ([current // 2] if current > 1 and current % 2 == 0 else [])
        label = (spec.label or "cards").lower()
        return [Change(name, current, n, f"Now {_shown(spec, n)} instead of {_shown(spec, current)} ({label}).")
                for n in degrees if _within(spec, n)]
    if name == "gpu":
        options = [g for g in computing_gpus(catalog) if g != current]
        rng.shuffle(options)
        return [Change(name, current, g, f"The same model on {catalog.gpu(g).name} instead of "
                                         f"{catalog.gpu(current).name}.") for g in options[:4]]
    if name == "model":
        if "config" in cleaned or current not in catalog.models:
            return []
        sibling = catalog.model(current).entry.get(SIBLING_FIELD)
        if not isinstance(sibling, dict) or sibling.get("id") not in catalog.models:
            return []  # only the sibling the catalog names; otherwise no model follow-up is drawn
        return [Change(name, current, sibling["id"], f"Swap in its MoE sibling: {sibling['id']} instead of "
                                                     f"{current}.")]
    if name in ("tpot_target_ms", "tpot_slo_ms"):
        after = round(current * TIGHTER_TARGET, 3)
        if not _within(spec, after):
            return []
        return [Change(name, current, after, f"A tighter TPOT target: {_shown(spec, after)} instead of "
                                             f"{_shown(spec, current)}.")]
    after = current * 2  # prompt tokens, batch, rate: twice the load
    if not _within(spec, after):
        return []
    return [Change(name, current, _numeric(spec, after), f"Twice the {spec.label.lower() or name}: "
                                                         f"{_shown(spec, current)} → "
                                                         f"{_shown(spec, _numeric(spec, after))}.")]


def _other_changes(spec: InputSpec, current: Any, rng: random.Random) -> list[Change]:
    """A follow-up on an input no interviewer list names: another choice, or the value doubled or halved
    within its bounds."""
    label = spec.label or spec.name.replace("_", " ")
    if spec.kind == "choice":
        options = [c for c in spec.choices if c != current]
        rng.shuffle(options)
        return [Change(spec.name, current, c, f"Same question with the {label.lower()} set to {c} instead of "
                                              f"{current}.") for c in options[:3]]
    if spec.kind not in ("int", "float") or current is None or isinstance(current, bool):
        return []
    changes = []
    for after in (current * 2, current / 2):
        if spec.kind == "int" and not float(after).is_integer():
            continue
        after = _numeric(spec, after)
        if after != current and _within(spec, after):
            changes.append(Change(spec.name, current, after, f"Same question with the {label.lower()} at "
                                                             f"{_shown(spec, after)} instead of "
                                                             f"{_shown(spec, current)}."))
    return changes


def moving_steps(original: Result, result: Result) -> tuple[str, ...]:
    """The keys of ``result``'s steps whose value differs from ``original``'s by more than the step's
    tolerance (an integer step: any difference), in step order."""
    before = original.values
    return tuple(spec.key for spec in result.specs
                 if spec.key not in before or not matches(result.values[spec.key], before[spec.key], spec))


def _candidates(family: Family, inputs: Mapping[str, Any], original: Result, rng: random.Random,
                catalog: Catalog, avoid: Iterable[str]) -> list[list[Change]]:
    """The possible changes in two tiers (interview first, others second), each in drawn order."""
    cleaned = original.inputs
    avoid = set(avoid)
    interview: list[Change] = []
    other: list[Change] = []
    for spec in family.inputs:
        if spec.name in NEVER_CHANGED or spec.name in avoid:
            continue
        current = cleaned.get(spec.name, inputs.get(spec.name, spec.default))
        if spec.name == "model" and "config" in cleaned:
            continue
        if current is None:
            continue
        if spec.name in INTERVIEW_INPUTS:
            interview.extend(_interview_changes(spec, current, rng, catalog, cleaned))
        elif spec.kind not in ("model", "gpu"):
            other.extend(_other_changes(spec, current, rng))
    rng.shuffle(interview)
    rng.shuffle(other)
    return [interview, other]


def _changed_inputs(inputs: Mapping[str, Any], change: Change) -> dict[str, Any]:
    changed = {k: v for k, v in inputs.items() if k not in NEVER_CHANGED}
    changed[change.input] = change.after
    if change.input == "weights_dtype":
        changed.pop("weights_bits", None)  # the new format's own width
    return changed


def follow_up(family: Family, inputs: Mapping[str, Any], change: Change, catalog: Catalog, *,
              original: Result | None = None, runner: Callable | None = None) -> FollowUp | None:
    """The follow-up ``change`` makes to a problem of ``family`` on ``inputs``, solved, or ``None`` when the
    changed stack does not solve or no step moves. ``original`` is the problem's result when already known;
    a family with ``prepare`` (the simulated drills) stores the changed stack's run through ``runner``.
    Raises what :meth:`Family.run` raises for bad original ``inputs``."""
    if original is None:
        original = family.run(dict(inputs), catalog)
    new_inputs = _changed_inputs(inputs, change)
    try:
        if family.prepare is not None:
            if runner is None:
                return None
            new_inputs = family.prepare(new_inputs, catalog, runner)
        result = family.run(dict(new_inputs), catalog)
    except EngineError:
        return None  # the changed stack is not one this family can solve (a degree the heads refuse …)
    moves = moving_steps(original, result)
    if not moves:
        return None
    return FollowUp(family.slug, dict(inputs), new_inputs, change, original, result, moves)


def draw_followup(family: Family, inputs: Mapping[str, Any], seed: int, catalog: Catalog, *,
                  avoid: Iterable[str] = (), runner: Callable | None = None) -> FollowUp | None:
    """The follow-up of a problem of ``family`` on ``inputs``, drawn from ``seed``: the same every time.

    ``inputs`` are the problem's (snake case, as stored); ``catalog`` must hold the cards and models a
    follow-up may move to (the whole catalog; a stored problem's snapshot entries override it). ``avoid``
    names inputs not to change (those a chain already changed). A change is kept only if the changed stack
    solves and at least one step moves (:func:`follow_up`); interview changes (:data:`INTERVIEW_INPUTS`) are
    tried before the family's other inputs. A family with ``prepare`` (the simulated drills) needs ``runner``
    (its sweep runner) to store the changed stack's run beside it, and draws none without. ``None`` when the
    family has no input whose change moves a step.
    """
    if family.prepare is not None and runner is None:
        return None
    original = family.run(dict(inputs), catalog)
    rng = random.Random(f"followup:{family.slug}:{seed}")
    for tier in _candidates(family, inputs, original, rng, catalog, avoid):
        for change in tier:
            followup = follow_up(family, inputs, change, catalog, original=original, runner=runner)
            if followup is not None:
                return followup
    return None


#: How long a chain of follow-ups runs (the "Follow-ups" round's and a review card's).
CHAIN_LENGTHS = (2, 4)


def draw_chain(family: Family, inputs: Mapping[str, Any], seed: int, catalog: Catalog, length: int = 3, *,
               runner: Callable | None = None) -> list[FollowUp]:
    """Up to ``length`` follow-ups from ``seed``, each on the stack the one before left and each changing
    another input; shorter when the family runs out of inputs whose change moves a step."""
    chain: list[FollowUp] = []
    current = dict(inputs)
    for index in range(length):
        followup = draw_followup(family, current, seed * 8 + index, catalog,
                                 avoid=[link.change.input for link in chain], runner=runner)
        if followup is None:
            break
        chain.append(followup)
        current = followup.new_inputs
    return chain


def own_values(result: Result, answers: Mapping[str, str | None]) -> dict[str, float]:
    """The values the candidate's ``answers`` give ``result``'s steps (readable and possible ones), by
    canonical key: what error is carried forward from."""
    return graded_values(result, grade(result, answers))


def graded_values(result: Result, graded: Grade) -> dict[str, float]:
    """:func:`own_values` read from ``graded``, the grade of the answers against ``result`` already made (a
    page that grades the answers and then follows up grades them once)."""
    return {spec.key: step.value for spec, step in zip(result.specs, graded.steps)
            if step.value is not None and step.verdict != "impossible"}


def answered(marked: Iterable[str], answers: Mapping[str, str | None]) -> bool:
    """Whether a follow-up was answered: a step marked as moving, or a new value typed (not blank) in any box.

    The form as shown (nothing ticked, every box blank) is no answer, not "nothing moves": every follow-up
    moves at least one step (:func:`follow_up` draws none where nothing moves), so leaving every box unticked
    is never its right answer, and the still steps an untouched form leaves unmarked earn nothing."""
    return any(True for _ in marked) or any(text is not None and str(text).strip() for text in answers.values())


def grade_followup(followup: FollowUp, first: Mapping[str, float], marked: Iterable[str],
                   answers: Mapping[str, str | None]) -> FollowUpGrade:
    """Grade the candidate's marks and new values on ``followup``.

    ``first`` holds the candidate's own values of the original steps (:func:`own_values`); ``marked`` the
    step keys they said move; ``answers`` their typed new values (step key → text; only the marked steps'
    are graded; a value typed in any box makes the follow-up :func:`answered`). Each step's mark is
    ``right``, ``left_unmoved`` (it moves, unmarked) or ``moved_when_still`` (marked, but it does not move).
    Each marked step's value is graded on the changed stack with the candidate's first values standing in for
    every step they did not give again; a moving step left unmarked is graded ``left_unmoved`` (0), a still
    step marked and given another value ``moved_when_still`` (0). An unanswered follow-up (nothing marked,
    nothing typed) marks every step ``unanswered`` and grades every moving step's value ``unanswered``: 0 for
    each, as a blank step of a problem scores 0; ``own`` keeps the first values.
    """
    result, original = followup.result, followup.original
    marked = set(marked)
    blank = not answered(marked, answers)  # then nothing is marked: every step unanswered
    before, after = original.values, result.values
    own = dict(first)
    marks: list[MarkGrade] = []
    values: list[StepGrade] = []
    for spec in result.specs:
        moves = spec.key in followup.moves
        is_marked = spec.key in marked
        shown_after = shown_value(spec.key, result.family, after[spec.key], spec.unit)
        # a step the changed stack adds (a block-scaled format's block size) moves from nothing
        shown_before = (shown_value(spec.key, result.family, before[spec.key], spec.unit) if spec.key in before
                        else "no such step")
        if blank:
            verdict, message = "unanswered", (f"Not answered: it goes from {shown_before} to {shown_after}." if moves
                                              else f"Not answered: it stays at {shown_after}.")
        elif moves == is_marked:
            verdict, message = "right", (f"It moves: {shown_before} → {shown_after}." if moves
                                         else f"It stays at {shown_after}.")
        elif moves:
            verdict, message = "left_unmoved", f"A moved step left unmoved: {shown_before} → {shown_after}."
        else:
            verdict, message = "moved_when_still", f"A still step marked as moving: it stays at {shown_after}."
        marks.append(MarkGrade(spec.key, spec.label, moves, is_marked, verdict, message))
        if is_marked:
            step = grade_step(spec, answers.get(spec.key), result, own)
            if not moves and step.credit < 1:
                step.verdict, step.credit = "moved_when_still", 0.0
                step.message = f"This step does not move: it stays at {shown_after}. {step.message}"
            if step.value is not None and step.verdict != "impossible":
                own[spec.key] = step.value
            values.append(step)
        elif moves:
            values.append(StepGrade(key=spec.key, label=spec.label, unit=spec.unit, verdict=verdict,
                                    credit=0.0, expected=after[spec.key], given="", value=None,
                                    message=message if blank else f"A moved step left unmoved: it goes from "
                                                                  f"{shown_before} to {shown_after}.",
                                    substituted=result.step(spec.key).substituted))
    return FollowUpGrade(followup, marks, values, own)


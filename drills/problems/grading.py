"""Grade answers to a problem instance, store the attempt, and hand it to a review: :func:`submit`.

:func:`submit` is the one path a worked problem's answers take, wherever they
are typed: the drill page, a review card (which adds the FSRS review through
its ``review`` hook), a timed round, and the coach's sample data.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Sequence

from calculators.engine.grader import Grade, StepGrade, grade
from calculators.engine.procedures import Result
from drills.problems.models import Attempt, ProblemInstance, StepAnswer
from drills.problems.storage import store_attempt


class UnreadableAnswers(ValueError):
    """Some typed steps of a problem review could not be read; nothing was recorded.

    ``messages`` maps each such step's key to the parser's message (``Could not
    read '7O GiB': 'O' is not a unit I know; …``), in step order.
    """

    def __init__(self, messages: dict[str, str], blank: tuple[str, ...] = ()):
        self.messages = messages
        self.blank = blank  # the keys of the blank steps among ``messages`` (refused only when asked)
        plural = "s" if len(messages) != 1 else ""
        super().__init__(f"Nothing was recorded: {len(messages)} answer{plural} could not be read. "
                         f"Fix the marked step{plural} and grade again.")

    @property
    def unreadable(self) -> int:
        """How many refused steps were typed but could not be read (the rest are blank)."""
        return len(self.messages) - len(self.blank)


BLANK = "Blank: type or choose a value, or grade with the blank steps counted as unanswered."


def counts_blanks(data) -> bool:
    """Whether a form (a ``QueryDict``) asked to grade its blank steps as unanswered: its ``blanks`` button
    (value ``count``), offered once a submission was refused for blank steps. Without it the drill page refuses
    any blank step and a round item refuses an all-blank one, each with :data:`BLANK` beside the boxes."""
    return data.get("blanks") == "count"


def unreadable_steps(graded: Grade, blank: bool = False) -> dict[str, str]:
    """Step key → parser message for every step typed but unreadable; with ``blank``, blank steps too (:data:`BLANK`).

    Without ``blank`` a blank step is unanswered (graded 0), not listed.
    """
    return {step.key: step.message if step.given.strip() else BLANK for step in graded.steps
            if step.verdict == "unreadable" and (blank or step.given.strip())}


def grade_problem(problem: ProblemInstance, answers: dict[str, str]) -> Grade:
    """Grade ``answers`` (step key → typed text) against the problem's right answers."""
    return grade(problem.solve(), answers)


def stored_grade(solution: Result, steps: Sequence[StepAnswer]) -> Grade | None:
    """The grade an attempt was given, read back from its stored ``steps`` (in ``position`` order) instead of
    grading its answers again: each step's verdict, credit, message, misconception and values as
    :func:`store_attempt` saved them, with the step's label from ``solution`` (the problem's right answers).

    ``None`` when the stored steps are not one per step of ``solution`` under the same keys in the same order
    (an attempt stored before the family's steps changed, or answered under an older key): the caller grades the
    stored answers again then.
    """
    specs = solution.specs
    if [step.key for step in steps] != [spec.key for spec in specs]:
        return None
    return Grade(solution.family, solution.inputs, [
        StepGrade(key=step.key, label=spec.label, unit=step.unit, verdict=step.verdict, credit=step.credit,
                  expected=step.expected, given=step.raw_input, value=step.parsed_value, message=step.message,
                  misconception=step.misconception or None, carried_expected=step.carried_expected,
                  substituted=worked.substituted)
        for step, spec, worked in zip(steps, specs, solution.steps)])


@dataclass(frozen=True)
class Submission:
    """What :func:`submit` did: the grade, the stored attempt (``None`` for a visitor) and the review hook's result."""

    grade: Grade
    attempt: Attempt | None
    review: Any = None


def submit(problem: ProblemInstance, user, answers: dict[str, str], *, started_at: datetime | None = None,
           now: datetime | None = None, time_taken_s: float | None = None, strict: bool = False,
           refuse_blank: bool = False, review: Callable[[Grade, Attempt | None], Any] | None = None) -> Submission:
    """Grade → attempt → review: the one way a worked problem's answers are recorded.

    ``answers`` maps step keys to the typed text. A logged-in ``user`` gets an
    :class:`Attempt` with its steps (a visitor, or ``user`` ``None``, only the
    grade). With ``now`` the attempt is stamped with that clock (a review's or a
    round's) and ``time_taken_s``; without it, with the wall clock and the time
    since ``started_at``. ``strict`` raises :class:`UnreadableAnswers` before
    anything is written when a typed step cannot be read (with ``refuse_blank``,
    also when a step is blank: the drill page, where grading reveals the expected
    values, records nothing until the candidate asks to count blanks as
    unanswered). ``review`` (given the
    grade and the attempt) records what follows, e.g. the FSRS review of a card;
    call this inside the caller's transaction when the review must be atomic with it.
    """
    graded = grade_problem(problem, answers)
    if strict:
        unreadable = unreadable_steps(graded, blank=refuse_blank)
        if unreadable:
            raise UnreadableAnswers(unreadable, blank=tuple(key for key, message in unreadable.items()
                                                            if message == BLANK))
    attempt = None
    if user is not None and user.is_authenticated:
        attempt = store_attempt(problem, user, graded, started_at, now=now, time_taken_s=time_taken_s)
    return Submission(graded, attempt, review(graded, attempt) if review is not None else None)

"""Follow-ups on a stored or drawn problem: the chain's links, grading one, storing it (issue 33 item 1).

The engine draws and grades (:mod:`calculators.engine.followup`); this module gives it a problem's catalog
(the whole catalog, the problem's own snapshot entries first, so the original stack keeps its numbers), the
candidate's first values (their answers to the problem, or the ``own`` values the previous link left), and
stores a graded link as a :class:`FollowUpAttempt` for a logged-in candidate. Drill pages, round items and
review cards all go through :func:`grade_link`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping

from calculators.engine.answers import parse_answer
from calculators.engine.catalog import Catalog, catalog_from_entries, default_catalog
from calculators.engine.errors import AnswerError
from calculators.engine.followup import FollowUp, FollowUpGrade, draw_chain, grade_followup, graded_values, own_values
from calculators.engine.grader import Grade
from calculators.families import FAMILIES
from calculators.simulation import run_sweep
from drills.models import Attempt, FollowUpAttempt, ProblemInstance

#: How many follow-ups the drill page asks after a worked problem (and a review card asks with its problem).
DRILL_CHAIN_LENGTH = 3

#: The seconds each follow-up adds to a review card's time box (a round's follow-up item is boxed 4 minutes, the
#: "Follow-ups" preset's ``followup_box_s``).
FOLLOWUP_BOX_S = 4 * 60


def followup_catalog(problem: ProblemInstance) -> Catalog:
    """The catalog a problem's follow-ups draw from: the whole catalog with the problem's snapshot entries
    standing for its own model and card (so the original stack is the one it was drawn on)."""
    catalog = default_catalog()
    own = catalog_from_entries(problem.snapshot.get("models", []), problem.snapshot.get("gpus", []))
    return Catalog(models={**catalog.models, **own.models}, gpus={**catalog.gpus, **own.gpus})


class _Key:
    """A problem's family, inputs, snapshot and seed, hashed by their ``repr`` (dicts are unhashable)."""

    __slots__ = ("key", "problem")

    def __init__(self, problem: ProblemInstance):
        self.problem = problem
        self.key = (problem.family, repr(problem.inputs), repr(problem.snapshot), problem.seed)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Key) and self.key == other.key


@lru_cache(maxsize=128)
def _chain(key: _Key, length: int) -> tuple[FollowUp, ...]:
    problem = key.problem
    family = FAMILIES[problem.family]
    return tuple(draw_chain(family, problem.inputs, problem.seed, followup_catalog(problem), length,
                            runner=run_sweep))


def chain(problem: ProblemInstance, length: int = DRILL_CHAIN_LENGTH) -> tuple[FollowUp, ...]:
    """The follow-ups of ``problem`` (up to ``length``; none for a family whose inputs give none), the same every
    time: drawn from the problem's seed. A simulated drill's changed stack is simulated through the web's sweep
    runner (:func:`calculators.simulation.run_sweep`: cached, one step budget) and stored with the link's inputs,
    so its follow-up is graded against that run as the problem is against its own. Kept per process for the
    last problems asked; treat the links as read-only."""
    return _chain(_Key(problem), length)


def first_values(problem: ProblemInstance, answers: Mapping[str, str], *,
                 graded: Grade | None = None) -> dict[str, float]:
    """The candidate's values of ``problem``'s steps from their typed ``answers`` (readable, possible ones).
    ``graded``, the grade of these very answers when the caller has it (the drill page's POST), is read instead
    of grading them again."""
    if graded is not None:
        return graded_values(problem.solve(), graded)
    return own_values(problem.solve(), answers)


def attempt_answers(attempt: Attempt) -> dict[str, str]:
    """Step key → the text typed in ``attempt``."""
    return dict(attempt.steps.values_list("key", "raw_input"))


@dataclass(frozen=True)
class Start:
    """Where a candidate's next follow-up starts: their values so far and the attempt they come from."""

    own: dict[str, float]
    attempt: Attempt | None


def stored_start(user, problem: ProblemInstance, position: int) -> Start | None:
    """A logged-in candidate's values before link ``position`` of ``problem``: their latest attempt's answers
    for the first link, the previous link's ``own`` after it. ``None`` when they have no attempt of the problem
    or have not answered the previous link (the links are asked in order)."""
    attempt = Attempt.objects.filter(user=user, problem=problem).order_by("-pk").first()
    if attempt is None:
        return None
    if position == 0:
        return Start(first_values(problem, attempt_answers(attempt)), attempt)
    previous = (FollowUpAttempt.objects.filter(user=user, problem=problem, attempt=attempt, position=position - 1)
                .order_by("-pk").first())
    if previous is None:
        return None
    return Start({key: float(value) for key, value in previous.own.items()}, attempt)


def next_link(user, problem: ProblemInstance, attempt: Attempt) -> int:
    """The first link of ``problem``'s chain that ``user`` has not answered after ``attempt`` (the chain is asked
    in order, so it is how many consecutive links from the first they have answered)."""
    answered = set(FollowUpAttempt.objects.filter(user=user, problem=problem, attempt=attempt)
                   .values_list("position", flat=True))
    position = 0
    while position in answered:
        position += 1
    return position


def grade_link(link: FollowUp, own: Mapping[str, float], marked: Iterable[str],
               answers: Mapping[str, str]) -> FollowUpGrade:
    """Grade a follow-up's marks and values (only step keys of the link count)."""
    keys = {spec.key for spec in link.result.specs}
    return grade_followup(link, own, [key for key in marked if key in keys],
                          {key: text for key, text in answers.items() if key in keys})


def store_link(user, problem: ProblemInstance, position: int, graded: FollowUpGrade,
               attempt: Attempt | None, marked: Iterable[str], answers: Mapping[str, str]) -> FollowUpAttempt:
    """Store a graded link as ``user``'s :class:`FollowUpAttempt` (a POST's write; never on a GET)."""
    keys = [mark.key for mark in graded.marks]
    marked = [key for key in keys if key in set(marked)]
    return FollowUpAttempt.objects.create(
        user=user, problem=problem, attempt=attempt, position=position, change=graded.followup.change.to_json(),
        inputs=graded.followup.new_inputs, marked=marked,
        answers={key: str(answers.get(key, "")) for key in marked}, grade=graded.to_json(), own=graded.own,
        marks_score=graded.marks_score, values_score=graded.values_score, score=graded.score)


def refusal(text: str, unit: str) -> str | None:
    """The answer parser's sentence for a typed new value it cannot read in ``unit``, or ``None`` (a blank value
    is not refused: it is graded unanswered)."""
    if not str(text).strip():
        return None
    try:
        parse_answer(str(text), unit)
    except AnswerError as error:
        return str(error)
    return None


def grade_chain(problem: ProblemInstance, links: Iterable[FollowUp], answers: Mapping[str, str],
                replies: Iterable[Mapping]) -> list[FollowUpGrade]:
    """Grade a whole chain answered at once (a review card: the chain is the card). ``answers`` are the typed
    answers to ``problem`` (the first values, error carried forward from them), ``replies`` one
    ``{"marked": [keys], "values": {key: text}}`` per link, in order; each link starts from the values the one
    before left (its ``own``). A link without a reply is graded unanswered: 0 for every step."""
    own = first_values(problem, answers)
    graded: list[FollowUpGrade] = []
    replies = list(replies)
    for position, link in enumerate(links):
        reply = replies[position] if position < len(replies) else {}
        result = grade_link(link, own, reply.get("marked", []), reply.get("values", {}))
        graded.append(result)
        own = result.own
    return graded


def chain_score(problem_score: float, links: Iterable[FollowUpGrade]) -> float:
    """The score of a problem and its follow-ups together: the mean of the problem's score and each link's
    (each weighs the same, 0 to 1). Without links it is the problem's score."""
    scores = [problem_score, *(link.score for link in links)]
    return sum(scores) / len(scores)


def unreadable_replies(links: Iterable[FollowUp], replies: Iterable[Mapping], prefix: str = "fu") -> dict[str, str]:
    """``<prefix><n>-value-<key>`` → the parser's message for each marked step of link ``n`` whose typed value
    cannot be read (a blank one is not listed: it is graded unanswered)."""
    messages: dict[str, str] = {}
    for position, (link, reply) in enumerate(zip(links, replies)):
        units = {spec.key: spec.unit for spec in link.result.specs}
        for key in reply.get("marked", []):
            if key in units and (message := refusal((reply.get("values") or {}).get(key, ""), units[key])):
                messages[f"{prefix}{position}-value-{key}"] = message
    return messages


#: How a follow-up's marks are named where it is read back (the round debrief, a review's result).
MARK_LABELS = {"right": "Right", "left_unmoved": "A moved step left unmoved",
               "moved_when_still": "A still step marked as moving", "unanswered": "Not answered"}


def debrief(stored: FollowUpAttempt, labels: Mapping[str, str]) -> dict:
    """A stored follow-up as it is read back: ``{"change", "number", "marks_score", "values_score", "score",
    "marks"}``, each mark with its step's label (from ``labels``, step key → label), whether the step moves, the
    mark's verdict named (:data:`MARK_LABELS`) and the new value's verdict (``None`` when none was graded)."""
    graded = stored.grade
    values = {value["key"]: value for value in graded["values"]}
    marks = [{**mark, "label": labels.get(mark["key"], mark["key"].replace("_", " ")),
              "verdict_label": MARK_LABELS.get(mark["verdict"], mark["verdict"]), "value": values.get(mark["key"])}
             for mark in graded["marks"]]
    return {"change": stored.change.get("sentence", ""), "number": stored.position + 1,
            "marks_score": graded["marks_score"], "values_score": graded["values_score"], "score": graded["score"],
            "marks": marks}

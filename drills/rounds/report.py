"""The report of a closed round, and adding its items to the review deck."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.utils.dateparse import parse_datetime

from calculators.engine.mistakes import MISCONCEPTIONS
from drills.followups.services import debrief
from drills.models import BankItem, Card, CritiqueMark, Round, RoundItem, StepAnswer
from drills.reviews.scheduling import HARD_BELOW, add_to_deck

# --- the report ---------------------------------------------------------------------------


@dataclass
class ReportRow:
    """One item of a round's report: time taken, over its box or not, misconceptions met."""

    item: RoundItem
    taken_s: float | None
    over_box: bool
    misconceptions: list
    pending: bool
    steps: list[StepAnswer] = field(default_factory=list)
    kept_aside: list[dict] = field(default_factory=list)
    followup: dict | None = None  # a follow-up item's graded chain link (FollowUpAttempt), for the debrief

    @property
    def impossible(self) -> bool:
        """Whether a step's answer was physically impossible (the grader's message on it says why)."""
        return any(step.verdict == "impossible" for step in self.steps)

    @property
    def late_after_grace(self) -> bool:
        """Whether an answer of this item came past the deadline's grace (kept, scored 0)."""
        return any(entry["late"] for entry in self.kept_aside)


def kept_aside(item: RoundItem, labels: dict[str, str]) -> list[dict]:
    """``item.late_answers`` as shown on the report: when, whether past the grace, and each field as words.

    ``labels`` maps a worked item's step keys to their labels. Returns dicts ``{"at": datetime, "late":
    bool, "lines": [(name, text)]}``, oldest first.
    """
    shown = []
    for entry in item.late_answers:
        lines = []
        for name, value in entry.items():
            if name in ("at", "late", "draft"):
                continue
            if name == "answers" and isinstance(value, dict):
                prefix = "line " if item.is_critique else ""
                lines += [(labels.get(k, f"{prefix}{k}".replace("_", " ")), v or "blank") for k, v in value.items()]
            elif name == "said_aloud":
                lines.append(("said aloud", "yes" if value else "no"))
            else:
                lines.append((name, value or "blank"))
        shown.append({"at": parse_datetime(entry.get("at", "")), "late": bool(entry.get("late")), "lines": lines})
    return shown


@dataclass
class Report:
    """A closed round's report: its rows, the misconceptions met, what to review, earlier rounds of the kind."""

    round: Round
    rows: list[ReportRow]
    misconceptions: list[dict]
    to_review: list[BankItem]
    in_deck: set[int]
    earlier: list[Round]
    previous: Round | None = None
    earlier_mean: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def followups(self) -> list[ReportRow]:
        """The rows of graded follow-up items, in order (the debrief's follow-up section)."""
        return [row for row in self.rows if row.followup is not None]

    @property
    def not_in_deck(self) -> list[BankItem]:
        return [item for item in self.to_review if item.pk not in self.in_deck]


def report_for(round_: Round) -> Report:
    """Score and time per item against its box, misconceptions made, what to review next, earlier rounds.

    An item is to review when it scored under ``HARD_BELOW``, was never graded, or had a step with a named
    misconception or an impossible value, whatever its score.
    """
    items = list(round_.items.select_related("item", "problem", "attempt", "critique_attempt", "followup_attempt",
                                             "round"))
    end = round_.finished_at or round_.deadline
    steps = Counter()
    made: dict[str, dict] = {}
    rows = []
    for item in items:
        mistakes = []
        graded = list(StepAnswer.objects.filter(attempt_id=item.attempt_id)) if item.attempt_id else []
        labels = ({spec.key: spec.label for spec in item.problem.solve().specs}
                  if (graded or item.late_answers) and item.problem else {})
        for step in graded:
            step.label = labels.get(step.key, step.key.replace("_", " "))
            step.info = MISCONCEPTIONS.get(step.misconception) if step.misconception else None
        if item.attempt_id:
            for step in (s for s in graded if s.verdict == "misconception"):
                info = step.info
                mistakes.append(info or step.misconception)
                if step.misconception:
                    steps[step.misconception] += 1
                    made.setdefault(step.misconception, {"info": info, "id": step.misconception, "items": []})
                    made[step.misconception]["items"].append(item)
        if item.critique_attempt_id:
            for mark in CritiqueMark.objects.filter(attempt_id=item.critique_attempt_id, outcome=CritiqueMark.MISSED):
                mistakes.append(f"missed: {mark.category or 'line ' + str(mark.line)}")
        followup = followup_debrief(item)
        if followup is not None:
            mistakes += [f"{mark['verdict_label']}: {mark['label']}" for mark in followup["marks"]
                         if mark["verdict"] != "right"]
        taken = item.time_taken_s(end)
        rows.append(ReportRow(item, taken, bool(item.time_box_s and taken and taken > item.time_box_s), mistakes,
                              pending=item.grade is None, steps=graded, kept_aside=kept_aside(item, labels),
                              followup=followup))
    for entry in made.values():
        entry["count"] = steps[entry["id"]]
    to_review = [row.item.item for row in rows if row.item.item is not None and (
        row.item.grade is None or row.item.grade < HARD_BELOW or row.misconceptions or row.impossible)]
    in_deck = set(Card.objects.of(round_.user).filter(item__in=to_review).values_list("item_id", flat=True))
    earlier = list(Round.objects.of(round_.user).closed().filter(kind=round_.kind, started_at__lt=round_.started_at)
                   .order_by("-started_at")[:10])
    scored = [r.score for r in earlier if r.score is not None]
    return Report(round_, rows, sorted(made.values(), key=lambda e: -e["count"]), to_review, in_deck, earlier,
                  previous=earlier[0] if earlier else None,
                  earlier_mean=sum(scored) / len(scored) if scored else None)


def followup_debrief(item: RoundItem) -> dict | None:
    """A graded follow-up item as the debrief shows it (:func:`drills.followups.services.debrief`); ``None`` for
    any other item or one not graded."""
    if not item.is_followup or item.followup_attempt is None:
        return None
    labels = ({spec.key: spec.label for spec in item.problem.solve().specs} if item.problem is not None else {})
    return {**debrief(item.followup_attempt, labels), "number": (item.followup or 0) + 1}


def add_review_items(user, round_: Round, item_ids, now: datetime | None = None) -> int:
    """Put the chosen items of ``round_`` in the candidate's deck (only items that were in the round)."""
    # Whole numbers a bigint can hold ("²" passes isdigit but not int(); 40 digits overflow the column).
    ids = [int(i) for i in item_ids if str(i).isdecimal() and len(str(i)) < 19]
    allowed = BankItem.objects.filter(pk__in=ids, round_items__round=round_).distinct()
    return add_to_deck(user, list(allowed), Card.VIA_ITEM, now)

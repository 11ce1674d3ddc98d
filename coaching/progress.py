"""Where each candidate stands on each assignment: status per entry and overall, for the dashboard and the pages."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from drills.models import Attempt, BankItem, CritiqueAttempt, ReviewLog, Round, RoundItem

from .models import Assignment, SetEntry, Work
from .visibility import HiddenWork

NOT_STARTED, IN_PROGRESS, DONE, LATE = "not_started", "in_progress", "done", "late"
# A timed round that ended with items never opened: nothing more can be done, and it is not "Done".
INCOMPLETE = "incomplete"
STATUS_LABELS = {NOT_STARTED: "Not started", IN_PROGRESS: "In progress", DONE: "Done", LATE: "Late",
                 INCOMPLETE: "Ended incomplete"}

# --- status ---------------------------------------------------------------------------------------


@dataclass
class EntryResult:
    """One set entry's state for one candidate: done or started, score (0-1), seconds taken, the attempt."""

    entry: SetEntry
    done: bool = False
    started: bool = False
    score: float | None = None
    seconds: float | None = None
    finished_at: datetime | None = None
    attempt_id: int | None = None
    review_id: int | None = None
    critique_id: int | None = None
    round_id: int | None = None
    late: bool = False
    missed: bool = False  # a timed round's item the round closed before the candidate ever opened it


@dataclass
class CandidateProgress:
    """One candidate's progress on one assignment: a result per entry, the status, lateness, the timed round."""

    assignment: Assignment
    candidate: object
    results: list[EntryResult] = field(default_factory=list)
    status: str = NOT_STARTED
    finished_late: bool = False
    round_id: int | None = None

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]

    @property
    def done_count(self) -> int:
        return sum(1 for r in self.results if r.done)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def score(self) -> float | None:
        scores = [r.score for r in self.results if r.score is not None]
        return sum(scores) / len(scores) if scores else None

    @property
    def seconds(self) -> float | None:
        times = [r.seconds for r in self.results if r.seconds is not None]
        return sum(times) if times else None


def progress_for(pairs: list[tuple[Assignment, object]], now: datetime | None = None, users=None,
                 hidden: HiddenWork = HiddenWork()) -> dict:
    """``{(assignment_id, candidate_id): CandidateProgress}`` for every pair, in a fixed number of queries.

    ``users``, when given, is a ``values()`` subquery selecting (at least) the pairs' candidates, used in the
    queries instead of the list of their ids (the dashboard's hundred ids are then not bound one by one).
    ``hidden``: on a coach's page, the work that coach may not see (:func:`coaching.visibility.hidden_work`),
    which then completes none of their entries: an answer to the same question written for another coach's
    assignment is neither shown nor counted.

    The assignments must come with ``question_set__entries`` prefetched. Evidence
    counts only from the moment the assignment was made: a review of an open
    item or design prompt, a critique attempt, a closed round (a round preset, or
    the timed round of a time-limited assignment, whose items are matched to the
    entries), and for a problem template whichever came first of the first attempt
    on the problem the assignment drew (its Start) and the first review of the
    candidate's card of the template (assigning put it in their deck; each review
    works a fresh variant, DESIGN §5, and the entry links that review's attempt, so
    the coach sees the stack it drew).
    """
    now = _now(now)
    if not pairs:
        return {}
    assignments = {a.pk: a for a, _ in pairs}
    user_ids = {c.pk for _, c in pairs} if users is None else users
    item_ids = {e.item_id for a in assignments.values() for e in a.question_set.entries.all() if e.item_id}
    since = min(a.created_at for a in assignments.values())
    works = list(Work.objects.filter(assignment_id__in=assignments, candidate_id__in=user_ids))
    work_of = {(w.assignment_id, w.candidate_id, w.entry_id): w for w in works}
    attempts: dict[int, dict] = {}
    for row in (Attempt.objects.filter(problem_id__in=[w.problem_id for w in works if w.problem_id])
                .order_by("submitted_at").values("pk", "problem_id", "user_id", "score", "time_taken_s",
                                                  "submitted_at")):
        if row["pk"] not in hidden.attempt_ids:
            attempts.setdefault((row["problem_id"], row["user_id"]), row)  # the first attempt counts
    logs: dict[tuple, list] = defaultdict(list)
    for row in (ReviewLog.objects.filter(user_id__in=user_ids, item_id__in=item_ids, reviewed_at__gte=since)
                .order_by("reviewed_at").values("pk", "user_id", "item_id", "grade", "duration_ms", "reviewed_at",
                                                "attempt_id")):
        if row["pk"] not in hidden.review_ids:
            logs[(row["user_id"], row["item_id"])].append(row)
    critiques: dict[tuple, list] = defaultdict(list)
    for row in (CritiqueAttempt.objects.filter(user_id__in=user_ids, item_id__in=item_ids, submitted_at__gte=since)
                .order_by("submitted_at").values("pk", "user_id", "item_id", "score", "time_taken_s",
                                                 "submitted_at")):
        if row["pk"] not in hidden.critique_ids:
            critiques[(row["user_id"], row["item_id"])].append(row)
    round_ids = [w.round_id for w in works if w.round_id]
    rounds = {r.pk: r for r in Round.objects.filter(pk__in=round_ids)}
    round_items: dict[int, list] = defaultdict(list)
    chains: dict[tuple, list] = defaultdict(list)  # (round, problem) → its follow-up rows, in order
    # A follow-up item shares its problem's bank item: the problem's own row is the entry's (issue 33 item 1), and
    # a follow-up entry's chain is the rows that follow up that problem.
    for row in RoundItem.objects.filter(round_id__in=round_ids).order_by("position").values(
            "round_id", "item_id", "grade", "submitted_at", "started_at", "late", "attempt_id", "problem_id",
            "followup"):
        if row["followup"] is None:
            round_items[row["round_id"]].append(row)
        else:
            chains[(row["round_id"], row["problem_id"])].append(row)

    out = {}
    for assignment, candidate in pairs:
        progress = CandidateProgress(assignment, candidate)
        key = (assignment.pk, candidate.pk)
        timed = work_of.get((*key, None))
        timed_round = rounds.get(timed.round_id) if timed and timed.round_id else None
        timed_items: dict = {}
        for row in round_items.get(timed_round.pk, []) if timed_round else []:
            # An entry's own item comes first; a preset of the set may draw the same template again after it.
            timed_items.setdefault(row["item_id"], row)
        if timed_round:
            progress.round_id = timed_round.pk
        for entry in assignment.question_set.entries.all():
            result = EntryResult(entry)
            work = work_of.get((*key, entry.pk))
            result.started = work is not None
            if timed_round is not None:
                result.started = True
                row = timed_items.get(entry.item_id) if entry.item_id else None
                closed = timed_round.status != Round.ACTIVE
                if row and row["submitted_at"] and row["started_at"] is None:
                    # Closed before it was ever opened: missed, not done (its automatic 0 % is no answer).
                    result.missed, result.started = True, False
                elif row and entry.kind == "followups":
                    _chain_result(result, row, chains.get((timed_round.pk, row["problem_id"]), []))
                elif row and row["submitted_at"]:
                    result.done, result.score, result.late = True, row["grade"], row["late"]
                    result.finished_at, result.attempt_id = row["submitted_at"], row["attempt_id"]
                    if row["started_at"]:
                        result.seconds = (row["submitted_at"] - row["started_at"]).total_seconds()
                elif entry.round_template_id and closed:
                    result.done, result.score, result.finished_at = True, timed_round.score, timed_round.finished_at
                result.round_id = timed_round.pk
            elif entry.round_template_id or entry.kind == "followups":  # a follow-up entry is sat as a round
                round_ = rounds.get(work.round_id) if work and work.round_id else None
                if round_ is not None:
                    result.round_id = round_.pk
                    if round_.status != Round.ACTIVE:
                        result.done, result.score = True, round_.score
                        result.finished_at, result.seconds = round_.finished_at, round_.time_used_s
            elif entry.kind == BankItem.PROBLEM:
                row = attempts.get((work.problem_id, candidate.pk)) if work and work.problem_id else None
                review = _first_review(logs, candidate.pk, entry, assignment)
                if review and (row is None or review["reviewed_at"] < row["submitted_at"]):
                    _reviewed(result, review)
                    result.attempt_id = review["attempt_id"]
                elif row:
                    result.done, result.score, result.seconds = True, row["score"], row["time_taken_s"]
                    result.finished_at, result.attempt_id = row["submitted_at"], row["pk"]
            elif entry.kind == BankItem.CRITIQUE:
                rows = [r for r in critiques.get((candidate.pk, entry.item_id), ())
                        if r["submitted_at"] >= assignment.created_at]
                if rows:
                    row = rows[0]
                    result.done, result.score, result.seconds = True, row["score"], row["time_taken_s"]
                    result.finished_at, result.critique_id = row["submitted_at"], row["pk"]
            else:
                review = _first_review(logs, candidate.pk, entry, assignment)
                if review:
                    _reviewed(result, review)
            result.started = result.started or result.done
            progress.results.append(result)
        all_done = bool(progress.results) and all(r.done for r in progress.results)
        if any(r.missed for r in progress.results):
            progress.status = INCOMPLETE
            progress.finished_late = any(r.late for r in progress.results)
        elif all_done:
            progress.status = DONE
            last = max((r.finished_at for r in progress.results if r.finished_at), default=None)
            progress.finished_late = bool(last and last > assignment.due_at) or any(r.late for r in progress.results)
        elif now > assignment.due_at:
            progress.status = LATE
        elif any(r.started for r in progress.results):
            progress.status = IN_PROGRESS
        out[key] = progress
    return out


def _first_review(logs: dict, candidate_id: int, entry: SetEntry, assignment: Assignment) -> dict | None:
    """The candidate's first review of ``entry``'s item made since ``assignment`` was (a ``ReviewLog`` values row
    of ``logs``, which are in time order), or ``None``."""
    return next((row for row in logs.get((candidate_id, entry.item_id), ())
                 if row["reviewed_at"] >= assignment.created_at), None)


def _reviewed(result: EntryResult, row: dict) -> None:
    """``result`` done by the review ``row``: its grade (0-1) is the score, its time on the card (ms) the seconds."""
    result.done, result.score = True, row["grade"]
    result.seconds = row["duration_ms"] / 1000 if row["duration_ms"] is not None else None
    result.finished_at, result.review_id = row["reviewed_at"], row["pk"]


def _chain_result(result: EntryResult, row: dict, chain: list[dict]) -> None:
    """A timed round's follow-up entry: done once its problem (``row``) and every follow-up of its ``chain`` are
    submitted, scored as the mean of their grades (the problem and each follow-up weigh the same), late when any
    was; its time runs from the problem's opening to the last follow-up's submission."""
    rows = [row, *chain]
    if not all(r["submitted_at"] for r in rows):
        return
    grades = [r["grade"] or 0.0 for r in rows]
    result.done, result.score, result.late = True, sum(grades) / len(grades), any(r["late"] for r in rows)
    result.finished_at, result.attempt_id = max(r["submitted_at"] for r in rows), row["attempt_id"]
    if row["started_at"]:
        result.seconds = (result.finished_at - row["started_at"]).total_seconds()


def assignments_for(user):
    """The assignments given to ``user`` (directly or through a cohort they are in), with their sets' entries."""
    return (Assignment.objects.for_candidate(user).select_related("question_set", "coach", "cohort")
            .prefetch_related("question_set__entries__item", "question_set__entries__round_template"))


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()

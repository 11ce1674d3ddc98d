"""The coach dashboard's tables, built with a bounded number of queries whatever the cohort size.

Every table is a :class:`Table` (headers, rows of :class:`Cell`), shown by ``templates/coaching/_tables.html``
(a ``{% partialdef cell %}`` per cell) and exported as CSV by the same view (``?export=<table name>``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Avg, Count, Min, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format

from accounts.roles import oversees_all
from calculators.engine.mistakes import MISCONCEPTIONS
from core.csv_export import write_csv
from drills.models import Card, FollowUpAttempt, ReviewLog, StepAnswer

from . import services
from .access import candidates_of, cohorts_of
from .models import Assignment, Membership
from .visibility import HiddenWork, hidden_work

TREND_DAYS = 14
RISING_MIN = 2
"""A misconception is *rising* (and its candidate falling behind) when at least this many attempts of the last
:data:`TREND_DAYS` days show it and more than in the :data:`TREND_DAYS` before: a single slip is ``new``, not a
rise."""
RETENTION_DAYS = 30
RETENTION_FLOOR = 0.7
SOON = timedelta(hours=48)


@dataclass
class Cell:
    """One table cell: its text, an optional link and CSS classes, and what the CSV export holds if different."""

    text: str
    url: str = ""
    css: str = ""
    csv_text: str | None = None  # what the CSV holds when it differs from the page (an ISO time)


@dataclass
class Table:
    """One dashboard table: a name (its CSV file and anchor), a title, headers, rows of cells and a note."""

    name: str
    title: str
    headers: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    note: str = ""

    @property
    def labelled_rows(self) -> list[list[tuple[str, Cell]]]:
        """Each row's cells with their column's header beside them: on a phone each row is read as a block of
        "header: value" lines (``table-stack-sm``), so no column is cut off past the screen's edge."""
        return [list(zip(self.headers, row)) for row in self.rows]

    def csv(self) -> str:
        """The table as CSV text through the project's one writer (formula-looking text neutralised)."""
        return write_csv(self.headers, ([cell.text if cell.csv_text is None else cell.csv_text for cell in row]
                                        for row in self.rows))


def when(moment: datetime, url: str = "") -> Cell:
    """A time as people read it on the page ("Thu 3 Dec 2026, 14:05", local time), ISO 8601 in the CSV."""
    local = timezone.localtime(moment)
    return Cell(date_format(local, "D j M Y, H:i"), url, csv_text=f"{local:%Y-%m-%d %H:%M}")


def pct(value: float | None) -> str:
    """A fraction (0-1) as a whole percentage ("63%"); blank for ``None``."""
    return "" if value is None else f"{value:.0%}"


def duration(seconds: float | None) -> str:
    """Seconds as "4m 05s" (or "45s" under a minute); blank for ``None``."""
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


STATUS_CSS = {services.DONE: "text-success", services.LATE: "text-danger fw-semibold",
              services.IN_PROGRESS: "text-primary", services.NOT_STARTED: "text-body-secondary",
              services.INCOMPLETE: "text-danger"}


def coach_assignments(coach, candidate_ids):
    """The coach's assignments to those candidates or to their cohorts, with the set's entries."""
    found = Assignment.objects.filter(Q(cohort__in=cohorts_of(coach)) | Q(candidate_id__in=candidate_ids))
    if not oversees_all(coach):
        found = found.filter(coach=coach)
    return list(found.select_related("question_set", "cohort", "candidate")
                .prefetch_related("question_set__entries__item", "question_set__entries__round_template")
                .order_by("due_at", "pk"))


def _pairs(assignments, members_of_cohort, candidates):
    by_id = {c.pk: c for c in candidates}
    pairs = []
    for assignment in assignments:
        if assignment.cohort_id:
            pairs += [(assignment, by_id[m]) for m in members_of_cohort.get(assignment.cohort_id, ()) if m in by_id]
        elif assignment.candidate_id in by_id:
            pairs.append((assignment, by_id[assignment.candidate_id]))
    return pairs


def misconception_counts(user_ids, now: datetime, hidden: HiddenWork = HiddenWork()) -> dict[int, list[dict]]:
    """Per candidate, misconceptions by the attempts showing them (each once per attempt,
    :meth:`~drills.problems.models.StepAnswerQuerySet.slips`): total, last 14 days, the 14 before, and the trend.

    The trend is ``rising`` when at least :data:`RISING_MIN` attempts of the last 14 days show it and more than in
    the 14 before, ``new`` when fewer (one attempt, none before), ``falling`` when fewer than before, else
    ``steady``.

    Each is a dict with ``id``, ``name``, ``total``, ``recent``, ``before``, ``trend`` and ``leaves_at``: the
    first moment after ``now`` at which one of its attempts leaves the last 14 days or the 14 before (the
    counts then change), or ``None``.

    ``hidden`` (from :func:`coaching.visibility.hidden_work`) leaves out attempts the coach may not see.
    """
    recent, earlier = now - timedelta(days=TREND_DAYS), now - timedelta(days=2 * TREND_DAYS)
    found = StepAnswer.objects.filter(attempt__user_id__in=user_ids).first_graded().slips()
    if hidden.attempt_ids:
        found = found.exclude(attempt_id__in=hidden.attempt_ids)
    rows = (found.values("attempt__user_id", "misconception")
            .annotate(total=Count("pk"), recent=Count("pk", filter=Q(attempt__submitted_at__gte=recent)),
                      before=Count("pk", filter=Q(attempt__submitted_at__gte=earlier,
                                                  attempt__submitted_at__lt=recent)),
                      first_recent=Min("attempt__submitted_at", filter=Q(attempt__submitted_at__gte=recent)),
                      first_counted=Min("attempt__submitted_at", filter=Q(attempt__submitted_at__gte=earlier)))
            .order_by("attempt__user_id", "-total", "misconception"))
    out: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        trend = ("falling" if row["recent"] < row["before"] else "steady" if row["recent"] == row["before"]
                 else "rising" if row["recent"] >= RISING_MIN else "new")
        info = MISCONCEPTIONS.get(row["misconception"])
        out[row["attempt__user_id"]].append({"id": row["misconception"], "name": getattr(info, "title", None)
                                             or row["misconception"], "total": row["total"],
                                             "recent": row["recent"], "before": row["before"], "trend": trend,
                                             "leaves_at": _earliest(
                                                 row["first_recent"] and row["first_recent"] + (now - recent),
                                                 row["first_counted"] and row["first_counted"] + (now - earlier))})
    return out


def _earliest(*moments: datetime | None) -> datetime | None:
    """The earliest of the moments that are not ``None`` (``None`` when all are)."""
    return min((m for m in moments if m is not None), default=None)


@dataclass(frozen=True)
class ReviewActivity:
    """One candidate's reviews in the last 30 days.

    ``total`` counts every review (new, learning and learned cards); ``learned`` only the reviews of cards
    already learned (FSRS state Review), the ones that measure retention, and ``retention`` is the share of
    those recalled (rated above Again), ``None`` without any.
    """

    total: int = 0
    learned: int = 0
    retention: float | None = None
    leaves_at: datetime | None = field(default=None, compare=False)  # when the earliest leaves the 30 days


def review_activity(user_ids, now: datetime, hidden: HiddenWork = HiddenWork()) -> dict[int, ReviewActivity]:
    """Per candidate, in one query: all reviews of the last 30 days, and the retention of learned cards.

    Both numbers come from the same rows so the dashboard's query count does not grow with the cohort.
    A candidate with no review at all is absent (callers default to ``ReviewActivity()``). ``hidden``
    leaves out the reviews the coach may not see.
    """
    learned = Q(state_before=Card.REVIEW)
    since = now - timedelta(days=RETENTION_DAYS)
    rows = (hidden.reviews(ReviewLog.objects).filter(user_id__in=user_ids, reviewed_at__gte=since)
            .values("user_id").annotate(total=Count("pk"), learned=Count("pk", filter=learned),
                                        kept=Count("pk", filter=learned & Q(rating__gt=ReviewLog.AGAIN)),
                                        first=Min("reviewed_at")))
    return {row["user_id"]: ReviewActivity(row["total"], row["learned"],
                                           row["kept"] / row["learned"] if row["learned"] else None,
                                           row["first"] + (now - since))
            for row in rows}


@dataclass(frozen=True)
class FollowUpScores:
    """One candidate's follow-ups (issue 33): how many links answered, the share of their step marks right
    (which steps move) and the mean credit of their new values, each link weighing the same."""

    count: int = 0
    marks: float | None = None
    values: float | None = None

    def text(self) -> str:
        """"marks 75% · values 60% (of 8)", blank without any follow-up."""
        if not self.count:
            return ""
        return f"marks {pct(self.marks)} · values {pct(self.values)} (of {self.count})"


def followup_scores(user_ids, hidden: HiddenWork = HiddenWork()) -> dict[int, FollowUpScores]:
    """Per candidate, in one query: their graded follow-ups (drill page, review cards, rounds) as
    :class:`FollowUpScores`. ``hidden`` leaves out the follow-ups of attempts the coach may not see (a chain
    follows up an attempt; one done for another coach's assignment is that coach's)."""
    found = FollowUpAttempt.objects.filter(user_id__in=user_ids)
    if hidden.attempt_ids:
        found = found.exclude(attempt_id__in=hidden.attempt_ids)
    rows = found.values("user_id").annotate(count=Count("pk"), marks=Avg("marks_score"), values=Avg("values_score"))
    return {row["user_id"]: FollowUpScores(row["count"], row["marks"], row["values"]) for row in rows}


@dataclass
class Overview:
    """The dashboard: its tables, who is falling behind, the coach's cohorts and how many candidates they hold,
    and ``changes_at``: the first moment after the one it was built for at which the clock alone changes it (an
    assignment turning late or due within 48 h, work leaving a window), or ``None``."""

    tables: list[Table]
    behind: list[dict]
    cohorts: list
    candidate_count: int
    changes_at: datetime | None = None


BEHIND_RULE = (f"A candidate is listed with an assignment overdue, one due within {SOON.total_seconds() / 3600:.0f} h "
               f"and not started, retention under {RETENTION_FLOOR:.0%} on learned cards ({RETENTION_DAYS} days), or "
               f"a misconception on the rise: shown in at least {RISING_MIN} attempts of the last {TREND_DAYS} days "
               f"and in more than in the {TREND_DAYS} before (a misconception counts once per attempt).")
"""The rule of the "Falling behind" table, shown under it."""


def overview(coach, now: datetime | None = None, cohort=None) -> Overview:
    """The dashboard: one completion table per cohort, a per-candidate summary, and who is falling behind."""
    now = now or timezone.now()
    if cohort is None:
        # Every member of the coach's cohorts is one of candidates_of(coach): each user is read once, not again
        # per membership (a hundred users, the dashboard's largest rows).
        cohorts = list(cohorts_of(coach).prefetch_related("memberships").order_by("name", "pk"))
        candidates = list(candidates_of(coach))
        who = candidates_of(coach).values("pk")
    else:
        cohorts = list(cohorts_of(coach).filter(pk=cohort.pk).prefetch_related("memberships__candidate"))
        candidates = [m.candidate for m in cohorts[0].memberships.all()]
        who = Membership.objects.filter(cohort_id=cohort.pk).values("candidate_id")
    user_of = {c.pk: c for c in candidates}
    # The queries below select the candidates by ``who``, a subquery, rather than by a list of a hundred ids:
    # the same rows, without binding and quoting a hundred parameters per query in Python.
    ids = list(user_of)
    members_of = {c.pk: [m.candidate_id for m in c.memberships.all()] for c in cohorts}
    assignments = coach_assignments(coach, who)
    if cohort is not None:
        assignments = [a for a in assignments if a.cohort_id == cohort.pk or
                       (a.candidate_id in ids and a.cohort_id is None)]
    pairs = _pairs(assignments, members_of, candidates)
    hidden = hidden_work(coach, who)
    progress = services.progress_for(pairs, now, users=who, hidden=hidden)
    mistakes = misconception_counts(who, now, hidden)
    activity = review_activity(who, now, hidden)
    chains = followup_scores(who, hidden)

    tables = []
    for group in cohorts:
        cols = [a for a in assignments if a.cohort_id == group.pk or
                (a.cohort_id is None and a.candidate_id in members_of[group.pk])]
        table = Table(f"cohort-{group.pk}", f"{group.name}: completion",
                      ["Candidate", *[f"{a.question_set.title} (due {timezone.localtime(a.due_at):%d %b})"
                                      for a in cols]])
        for membership in group.memberships.all():
            user = user_of[membership.candidate_id]
            row = [Cell(user.get_username(), reverse("coaching:candidate", args=[user.pk]))]
            for a in cols:
                p = progress.get((a.pk, user.pk))
                if p is None:
                    row.append(Cell("—"))
                else:
                    text = f"{p.status_label} {p.done_count}/{p.total}"
                    if p.score is not None:
                        text += f" · {pct(p.score)}"
                    if p.finished_late:
                        text += " (late)"
                    row.append(Cell(text, reverse("coaching:assignment", args=[a.pk]), STATUS_CSS[p.status]))
            table.rows.append(row)
        tables.append(table)

    summary = Table("candidates", "Candidates", ["Candidate", "Assignments done", "Late", "Mean score",
                                                 "Time on assignments", f"Reviews ({RETENTION_DAYS} days)",
                                                 f"Retention (learned cards, {RETENTION_DAYS} days)",
                                                 "Follow-ups (marks · new values right)",
                                                 "Top misconceptions (last 14 days vs the 14 before)"])
    behind = []
    by_candidate = defaultdict(list)
    for (a_id, c_id), p in progress.items():
        by_candidate[c_id].append(p)
    for user in candidates:
        rows = by_candidate.get(user.pk, [])
        done = sum(1 for p in rows if p.status == services.DONE)
        late = sum(1 for p in rows if p.status == services.LATE)
        scores = [p.score for p in rows if p.score is not None]
        seconds = sum(p.seconds or 0 for p in rows)
        reviews = activity.get(user.pk, ReviewActivity())
        share = reviews.retention
        top = mistakes.get(user.pk, [])[:3]
        summary.rows.append([
            Cell(user.get_username(), reverse("coaching:candidate", args=[user.pk])),
            Cell(f"{done}/{len(rows)}"), Cell(str(late), css="text-danger fw-semibold" if late else ""),
            Cell(pct(sum(scores) / len(scores)) if scores else ""), Cell(duration(seconds) if seconds else ""),
            Cell(str(reviews.total)),
            # The share alone can mislead (100 % of one review): say how many learned-card reviews it rests on.
            Cell(f"{pct(share)} of {reviews.learned}" if share is not None else ""),
            Cell(chains.get(user.pk, FollowUpScores()).text()),
            Cell("; ".join(f"{m['name']} ×{m['total']} ({m['recent']} vs {m['before']}, {m['trend']})" for m in top)),
        ])
        reasons = []
        if late:
            reasons.append(f"{late} assignment{'s' if late > 1 else ''} overdue")
        soon = [p for p in rows if p.status == services.NOT_STARTED and p.assignment.due_at - now <= SOON]
        if soon:
            reasons.append(f"{len(soon)} due within 48 h and not started")
        if share is not None and share < RETENTION_FLOOR:
            reasons.append(f"retention {pct(share)} on learned cards")
        if any(m["trend"] == "rising" for m in top):
            reasons.append("a misconception on the rise")
        if reasons:
            behind.append({"user": user, "reasons": reasons})
    tables.append(summary)
    behind_table = Table("behind", "Falling behind", ["Candidate", "Why"],
                         [[Cell(b["user"].get_username(), reverse("coaching:candidate", args=[b["user"].pk])),
                           Cell("; ".join(b["reasons"]))] for b in behind], note=BEHIND_RULE)
    tables.insert(0, behind_table)
    changes_at = _earliest(*(m for a in assignments for m in (a.due_at, a.due_at - SOON) if m > now),
                           *(m["leaves_at"] for found in mistakes.values() for m in found),
                           *(reviews.leaves_at for reviews in activity.values()))
    return Overview(tables, behind, cohorts, len(candidates), changes_at)


def _entry_header(entry, limit: int = 60) -> str:
    """A column header for a set entry: its position and label, cut at ``limit`` characters with an ellipsis."""
    label = entry.label if len(entry.label) <= limit else entry.label[:limit - 1].rstrip() + "…"
    return f"{entry.position}. {label}"


def assignment_tables(assignment: Assignment, coach, now: datetime | None = None) -> list[Table]:
    """Per candidate × entry: status, score and time of each item of one assignment."""
    now = now or timezone.now()
    visible = {c.pk: c for c in candidates_of(coach)}
    if assignment.cohort_id:
        people = [m.candidate for m in assignment.cohort.memberships.select_related("candidate")
                  if m.candidate_id in visible]
    else:
        people = [visible[assignment.candidate_id]] if assignment.candidate_id in visible else []
    entries = list(assignment.question_set.entries.all())
    progress = services.progress_for([(assignment, p) for p in people], now,
                                     hidden=hidden_work(coach, [p.pk for p in people]))
    headers = [_entry_header(e) for e in entries]
    scores = Table("items", "Score per item", ["Candidate", "Status", *headers, "Mean"])
    times = Table("times", "Time per item", ["Candidate", *headers, "Total"])
    for person in people:
        p = progress[(assignment.pk, person.pk)]
        row = [Cell(person.get_username(), reverse("coaching:candidate", args=[person.pk])),
               Cell(p.status_label + (" (late)" if p.finished_late else ""), css=STATUS_CSS[p.status])]
        time_row = [Cell(person.get_username())]
        for r in p.results:
            url = (reverse("coaching:attempt", args=[r.attempt_id]) if r.attempt_id else
                   reverse("coaching:review", args=[r.review_id]) if r.review_id else "")
            text = pct(r.score) if r.done and r.score is not None else ("done" if r.done else
                                                                        "started" if r.started else "")
            row.append(Cell(text, url))
            time_row.append(Cell(duration(r.seconds)))
        row.append(Cell(pct(p.score)))
        time_row.append(Cell(duration(p.seconds)))
        scores.rows.append(row)
        times.rows.append(time_row)
    return [scores, times]

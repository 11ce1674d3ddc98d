"""One candidate's page for a coach: the tables of :func:`candidate_tables` and the practice note of an attempt.

Split from :mod:`coaching.dashboard`, whose :class:`~coaching.dashboard.Table`,
cells and counts it reuses: the dashboard summarises many candidates, this page
drills into one.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from drills.bank.services import item_name
from drills.models import Attempt, ReviewLog, StepAnswer
from drills.reviews.progress import ladder_specs, ladder_step_answers

from . import services
from .dashboard import (
    RETENTION_DAYS,
    STATUS_CSS,
    TREND_DAYS,
    Cell,
    ReviewActivity,
    Table,
    coach_assignments,
    duration,
    misconception_counts,
    pct,
    review_activity,
    when,
)
from .visibility import HiddenWork, hidden_work

RECENT_ROWS = 30

# The "Counts" column of the recent attempts: a re-grade of a problem is practice (grading showed the
# expected values), and only the first attempt is in the scores and misconception tables.
FIRST_ATTEMPT = "yes"
PRACTICE = "no: practice re-grade"


def candidate_tables(coach, candidate, now: datetime | None = None) -> list[Table]:
    """One candidate: assignments, score per ladder step, misconceptions, and their recent attempts and answers.

    ``coach`` sees only what :func:`~coaching.visibility.hidden_work` leaves
    visible. The ladder and misconception tables count first graded attempts
    only; the recent attempts table lists re-grades too, marked as practice.
    """
    now = now or timezone.now()
    hidden = hidden_work(coach, [candidate.pk])
    return [_assignment_table(coach, candidate, now, hidden), _ladder_table(candidate, hidden),
            _misconception_table(candidate, now, hidden), _attempt_table(candidate, hidden),
            _answer_table(candidate, hidden)]


def _assignment_table(coach, candidate, now: datetime, hidden: HiddenWork) -> Table:
    assignments = [a for a in coach_assignments(coach, [candidate.pk])
                   if a.candidate_id == candidate.pk or
                   (a.cohort_id and candidate.memberships.filter(cohort_id=a.cohort_id).exists())]
    progress = services.progress_for([(a, candidate) for a in assignments], now, hidden=hidden)
    work = Table("assignments", "Assignments", ["Set", "Due", "Status", "Done", "Score", "Time"])
    for a in assignments:
        p = progress[(a.pk, candidate.pk)]
        work.rows.append([Cell(a.question_set.title, reverse("coaching:assignment", args=[a.pk])),
                          when(a.due_at),
                          Cell(p.status_label + (" (late)" if p.finished_late else ""), css=STATUS_CSS[p.status]),
                          Cell(f"{p.done_count}/{p.total}"), Cell(pct(p.score)), Cell(duration(p.seconds))])
    reviews = review_activity([candidate.pk], now, hidden).get(candidate.pk, ReviewActivity())
    work.note = (f"Reviews in the last {RETENTION_DAYS} days: {reviews.total}. Retention of learned cards: "
                 + (f"{pct(reviews.retention)} of {reviews.learned} reviews." if reviews.retention is not None
                    else "no reviews of learned cards yet."))
    return work


def _ladder_table(candidate, hidden: HiddenWork) -> Table:
    steps = Table("ladder", "Score per ladder step", ["Step", "Answers", "Mean credit", "Misconceptions"],
                  note="Every graded step that is a ladder step, whichever problem asked it (the KV drill's KV cache "
                       "per token counts as the ladder's).")
    answers = StepAnswer.objects.filter(attempt__user=candidate).first_graded()
    if hidden.attempt_ids:
        answers = answers.exclude(attempt_id__in=hidden.attempt_ids)
    found = ladder_step_answers(answers)  # every family's steps that are ladder steps (the KV drill's KV per token)
    for key, label in ladder_specs():
        rows = found.get(key, [])
        steps.rows.append([Cell(f"{label} ({key})"), Cell(str(len(rows))),
                           Cell(pct(sum(s.credit for s in rows) / len(rows)) if rows else ""),
                           Cell(str(sum(s.verdict == "misconception" for s in rows)) if rows else "")])
    return steps


def _misconception_table(candidate, now: datetime, hidden: HiddenWork) -> Table:
    mistakes = Table("misconceptions", "Misconceptions", ["Misconception", "Total", f"Last {TREND_DAYS} days",
                                                          f"The {TREND_DAYS} before", "Trend"])
    for m in misconception_counts([candidate.pk], now, hidden).get(candidate.pk, []):
        mistakes.rows.append([Cell(m["name"]), Cell(str(m["total"])), Cell(str(m["recent"])), Cell(str(m["before"])),
                              Cell(m["trend"], css="text-danger" if m["trend"] == "rising" else "")])
    return mistakes


def _attempt_table(candidate, hidden: HiddenWork) -> Table:
    attempts = Table("attempts", "Recent worked problems",
                     ["When", "Family", "Score", "Time", "Misconceptions", "Counts"],
                     note="Only a candidate's first graded attempt of a problem counts in the scores and "
                          "misconceptions above: grading shows every expected value, so a re-grade is practice.")
    for attempt in (hidden.attempts(Attempt.objects.filter(user=candidate)).select_related("problem")
                    .with_practice()
                    .annotate(wrong=Count("steps__misconception", distinct=True,  # once per attempt (StepAnswer slips)
                                         filter=Q(steps__verdict="misconception") & ~Q(steps__misconception="")))
                    # Explicit: Django leaves Meta.ordering out of a GROUP BY query, so "recent" needs saying.
                    .order_by("-submitted_at", "-pk")[:RECENT_ROWS]):
        attempts.rows.append([when(attempt.submitted_at, reverse("coaching:attempt", args=[attempt.pk])),
                              Cell(attempt.problem.family), Cell(pct(attempt.score)),
                              Cell(duration(attempt.time_taken_s)), Cell(str(attempt.wrong)),
                              Cell(PRACTICE, css="text-body-secondary") if attempt.practice else Cell(FIRST_ATTEMPT)])
    return attempts


def _answer_table(candidate, hidden: HiddenWork) -> Table:
    answers = Table("answers", "Recent open answers", ["When", "Question", "Rubric share", "Rating"])
    for log in (hidden.reviews(ReviewLog.objects.filter(user=candidate)).exclude(answer="", rubric_ticked=[])
                .select_related("item").order_by("-reviewed_at")[:RECENT_ROWS]):
        # The question's own words, as the bank lists it; the slug only for an item since removed.
        question = item_name(log.item) if log.item is not None else log.item_slug
        answers.rows.append([when(log.reviewed_at, reverse("coaching:review", args=[log.pk])), Cell(question),
                             Cell(pct(log.grade)), Cell(log.get_rating_display())])
    return answers


def counted_attempt(attempt: Attempt, hidden: HiddenWork) -> Attempt | None:
    """The attempt that counts when ``attempt`` is a practice re-grade, else ``None``.

    That is the candidate's earliest attempt of the same problem before this
    one (``Attempt.first_graded``). ``None`` as well when it is in ``hidden``
    (the coach's :func:`~coaching.visibility.hidden_work`), so the page neither
    links nor mentions work hidden from this coach.
    """
    first = (Attempt.objects.filter(user_id=attempt.user_id, problem_id=attempt.problem_id, pk__lt=attempt.pk)
             .order_by("pk").first())
    return None if first is None or first.pk in hidden.attempt_ids else first

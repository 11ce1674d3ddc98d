"""Coaching workflows as plain functions (views and tasks call these).

- Cohorts and invitations: :func:`create_cohort`, :func:`invite`, :func:`accept_invitation`.
- Authoring: :func:`save_question`, :func:`copy_item`, :func:`preview_html`.
- Sets: :func:`add_entry`, :func:`remove_entry`, :func:`move_entry`.
- Assigning: :func:`assign` (items join the recipients' review decks; the
  e-mails are enqueued after commit), :func:`recipients`.
- Doing the work: :func:`start_entry` (draws the problem, or starts the round
  preset through :func:`drills.rounds.services.start_round`), :func:`start_timed` (a
  time-limited assignment is sat as one timed round of ``drills.rounds.services``).
- Status: :func:`progress_for` computes, in a bounded number of queries, each
  (assignment, candidate)'s status from their attempts, reviews and rounds.
- Notices: :func:`send_notice` (idempotent), :func:`reminders_due`.
"""

from __future__ import annotations

import json
import random
import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.text import slugify

from calculators.engine.misconceptions import MISCONCEPTIONS
from drills.models import (
    Attempt,
    BankItem,
    Card,
    CritiqueAttempt,
    ReviewLog,
    ReviewSettings,
    Round,
    RoundItem,
    RoundTemplate,
)
from drills.reviews.scheduling import add_to_deck
from outbox.services import enqueue

from .access import can_see_candidate
from .models import Assignment, Cohort, Invitation, Membership, Notice, QuestionSet, SetEntry, Work

NOT_STARTED, IN_PROGRESS, DONE, LATE = "not_started", "in_progress", "done", "late"
STATUS_LABELS = {NOT_STARTED: "Not started", IN_PROGRESS: "In progress", DONE: "Done", LATE: "Late"}


class CoachingError(Exception):
    """A request that cannot be carried out; the message says why, in one sentence."""


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


# --- cohorts and invitations ------------------------------------------------------------------


def create_cohort(coach, name: str, *, with_invitation: bool = False) -> Cohort:
    """A new cohort of ``coach``; with its first invitation link when ``with_invitation`` (one transaction:
    never a cohort nobody can join because the invitation failed to save)."""
    name = name.strip()[:120]
    if not name:
        raise CoachingError("Give the cohort a name.")
    if Cohort.objects.filter(coach=coach, name=name).exists():
        raise CoachingError(f"You already have a cohort called “{name}”.")
    with transaction.atomic():
        cohort = Cohort.objects.create(coach=coach, name=name)
        if with_invitation:
            invite(cohort)
    return cohort


def invite(cohort: Cohort, days: int | None = 30, now: datetime | None = None) -> Invitation:
    """A fresh invitation link to ``cohort`` (valid for ``days`` days; ``None``: no expiry)."""
    expires = _now(now) + timedelta(days=days) if days else None
    return Invitation.objects.create(cohort=cohort, expires_at=expires)


def live_invitation(token: str, now: datetime | None = None) -> Invitation | None:
    found = Invitation.objects.select_related("cohort", "cohort__coach").filter(token=token, revoked=False).first()
    if found is None or (found.expires_at and found.expires_at <= _now(now)):
        return None
    return found


@transaction.atomic
def accept_invitation(invitation: Invitation, user, now: datetime | None = None) -> Membership:
    """Join ``user`` to the invitation's cohort (again: nothing changes); their cohort's assigned items join
    their review deck."""
    if invitation.cohort.coach_id == user.pk:
        raise CoachingError("This is your own cohort: send the link to a candidate.")
    membership, created = Membership.objects.get_or_create(cohort=invitation.cohort, candidate=user,
                                                           defaults={"invitation": invitation})
    if created:
        items = BankItem.objects.filter(pk__in=SetEntry.objects.filter(
            question_set__assignments__cohort=invitation.cohort, item__isnull=False).values("item_id"))
        add_to_deck(user, list(items), now=now)
    return membership


def leave_cohort(cohort: Cohort, candidate_id: int) -> bool:
    return bool(Membership.objects.filter(cohort=cohort, candidate_id=candidate_id).delete()[0])


# --- authoring ----------------------------------------------------------------------------------


def preview_html(markdown: str) -> str:
    """The sanitised HTML of ``markdown`` with its live numbers, or a sentence saying what is wrong."""
    from django.utils.html import escape

    from runbook.content import render_authored
    from runbook.shortcodes import ShortcodeError

    try:
        return render_authored(markdown or "").html
    except ShortcodeError as error:
        return f'<p class="text-danger">{escape(str(error))}</p>'


def _unique_slug(coach, text: str) -> str:
    base = f"c{coach.pk}-{slugify(text)[:60].strip('-') or 'question'}"
    slug = base
    while BankItem.objects.filter(slug=slug).exists():
        slug = f"{base}-{secrets.token_hex(2)}"
    return slug


def unknown_misconceptions(ids: list[str]) -> list[str]:
    return [ident for ident in ids if ident not in MISCONCEPTIONS]


def save_question(coach, data: dict, item: BankItem | None = None) -> BankItem:
    """Create (or update ``item``, which must be the coach's) an authored question; never published here."""
    if item is not None and item.author_id != coach.pk and not coach.is_staff:
        raise CoachingError("You can only edit questions you wrote.")
    item = item or BankItem(author=coach, published=False, kind=data.get("kind") or BankItem.OPEN,
                            slug=_unique_slug(coach, data["prompt"][:80]))
    item.prompt = data["prompt"]
    item.model_answer = data["model_answer"]
    item.rubric = list(data.get("rubric") or [])
    item.misconceptions = list(data.get("misconceptions") or [])
    tags = list(data.get("tags") or [])
    item.details = {**(item.details or {}), "tags": tags}
    item.topic = tags[0][:80] if tags else ""
    item.difficulty = data.get("difficulty") or item.difficulty or 2
    item.source_path = ""
    item.save()
    return item


def copy_item(coach, item: BankItem) -> BankItem:
    """A copy of a bank item the coach can edit (theirs, unpublished)."""
    return BankItem.objects.create(
        kind=item.kind, slug=_unique_slug(coach, item.slug), prompt=item.prompt, model_answer=item.model_answer,
        rubric=list(item.rubric or []), chapter=item.chapter, track=item.track, topic=item.topic,
        difficulty=item.difficulty, roles=list(item.roles or []), misconceptions=list(item.misconceptions or []),
        family=item.family, fixed_inputs=dict(item.fixed_inputs or {}),
        details={**(item.details or {}), "copied_from": item.slug}, author=coach, published=False)


# --- sets ---------------------------------------------------------------------------------------


def parse_fixed_inputs(text: str, family: str) -> dict:
    """``{"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"}`` checked against the family and the catalog."""
    from calculators.engine.procedures import FAMILIES
    from drills.problems.generation import create_problem

    text = (text or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise CoachingError('Fixed inputs must be a JSON object such as {"model": "llama-3.1-70b"}.') from None
    if not isinstance(value, dict):
        raise CoachingError('Fixed inputs must be a JSON object such as {"model": "llama-3.1-70b"}.')
    if family not in FAMILIES:
        raise CoachingError(f"'{family}' is not a calculator family.")
    try:  # draw once to prove the inputs work, then throw the draw away
        with transaction.atomic():
            create_problem(family, seed=1, fixed_inputs=value).solve()
            transaction.set_rollback(True)
    except Exception as error:
        raise CoachingError(f"Those fixed inputs do not work for {family}: {error}") from None
    return value


def add_entry(question_set: QuestionSet, *, item: BankItem | None = None, fixed_inputs: dict | None = None,
              round_template: RoundTemplate | None = None) -> SetEntry:
    last = question_set.entries.aggregate(m=Max("position"))["m"] or 0
    entry = SetEntry.objects.create(question_set=question_set, position=last + 1, item=item,
                                    fixed_inputs=fixed_inputs or {}, round_template=round_template)
    QuestionSet.objects.filter(pk=question_set.pk).update(updated_at=timezone.now())
    return entry


def remove_entry(entry: SetEntry) -> None:
    question_set = entry.question_set
    entry.delete()
    for position, row in enumerate(question_set.entries.order_by("position", "pk"), start=1):
        if row.position != position:
            SetEntry.objects.filter(pk=row.pk).update(position=position)


@transaction.atomic
def move_entry(entry: SetEntry, delta: int) -> None:
    rows = list(entry.question_set.entries.order_by("position", "pk"))
    index = next(i for i, row in enumerate(rows) if row.pk == entry.pk)
    target = max(0, min(len(rows) - 1, index + delta))
    rows.insert(target, rows.pop(index))
    for position, row in enumerate(rows, start=1):
        SetEntry.objects.filter(pk=row.pk).update(position=position)


# --- assigning ----------------------------------------------------------------------------------


def recipients(assignment: Assignment) -> list:
    """The candidates an assignment is for now (a cohort's current members)."""
    if assignment.candidate_id:
        return [assignment.candidate]
    return [m.candidate for m in assignment.cohort.memberships.select_related("candidate")]


def assign(question_set: QuestionSet, coach, *, due_at: datetime, candidate=None, cohort: Cohort | None = None,
           time_limit_s: int | None = None, now: datetime | None = None) -> Assignment:
    """Give a set to one candidate (of one of the coach's cohorts) or to one of the coach's cohorts.

    The set's bank items join each recipient's review deck, and one "assigned"
    e-mail per recipient is enqueued, through the outbox, once the transaction commits.
    """
    now = _now(now)
    if (candidate is None) == (cohort is None):
        raise CoachingError("Assign the set to one candidate or to one cohort.")
    if cohort is not None and cohort.coach_id != coach.pk and not coach.is_staff:
        raise CoachingError("That is not one of your cohorts.")
    if candidate is not None and not can_see_candidate(coach, candidate.pk):
        raise CoachingError("That candidate is not in one of your cohorts.")
    if not question_set.entries.exists():
        raise CoachingError("The set is empty: add items before assigning it.")
    if due_at <= now:
        raise CoachingError("The due time must be in the future.")
    with transaction.atomic():
        assignment = Assignment.objects.create(question_set=question_set, coach=coach, candidate=candidate,
                                               cohort=cohort, due_at=due_at, time_limit_s=time_limit_s or None,
                                               created_at=now)
        items = [entry.item for entry in question_set.entries.select_related("item") if entry.item_id]
        for user in recipients(assignment):
            add_to_deck(user, items, now=now)
            # By name: coaching.tasks imports this module, so importing the task here would close a circle.
            enqueue("coaching.tasks.send_assignment_notice", [assignment.pk, user.pk, Notice.ASSIGNED])
    return assignment


def assignments_for(user):
    return (Assignment.objects.for_candidate(user).select_related("question_set", "coach", "cohort")
            .prefetch_related("question_set__entries__item", "question_set__entries__round_template"))


def assignment_for(user, pk: int) -> Assignment:
    """One of ``user``'s assignments (``Assignment.DoesNotExist`` otherwise)."""
    return assignments_for(user).get(pk=pk)


# --- doing the work -----------------------------------------------------------------------------


def _entries(assignment: Assignment) -> list[SetEntry]:
    return list(assignment.question_set.entries.all())


@transaction.atomic
def start_entry(assignment: Assignment, candidate, entry: SetEntry, now: datetime | None = None) -> str:
    """Where to go to do ``entry`` (untimed assignments): draws the problem or starts the round once."""
    from drills.problems.generation import create_problem
    from drills.rounds.services import start_round

    now = _now(now)
    if assignment.time_limit_s:
        raise CoachingError("This assignment is timed: start it as a round.")
    work = Work.objects.select_for_update().filter(assignment=assignment, candidate=candidate, entry=entry).first()
    kind = entry.kind
    if kind == "round":
        if work is None or work.round is None:
            round_ = start_round(candidate, entry.round_template, now=now)
            work = _record_work(work, assignment, candidate, entry, now, round=round_)
        return work.round.get_absolute_url()
    if kind == BankItem.PROBLEM:
        if work is None or work.problem is None:
            problem = create_problem(entry.item.family, user=candidate,
                                     fixed_inputs={**(entry.item.fixed_inputs or {}), **(entry.fixed_inputs or {})})
            work = _record_work(work, assignment, candidate, entry, now, problem=problem)
        return work.problem.get_absolute_url()
    _record_work(work, assignment, candidate, entry, now)
    if kind == BankItem.CRITIQUE:
        from django.urls import reverse

        return reverse("drills:critique", args=[entry.item.slug])
    card = Card.objects.filter(user=candidate, item=entry.item).first()
    if card is None or card.suspended:
        add_to_deck(candidate, [entry.item], now=now)
        card = Card.objects.get(user=candidate, item=entry.item)
    from django.urls import reverse

    return reverse("reviews:card", args=[card.pk])


def _record_work(work, assignment, candidate, entry, now, **fields) -> Work:
    if work is None:
        return Work.objects.create(assignment=assignment, candidate=candidate, entry=entry, started_at=now, **fields)
    for name, value in fields.items():
        setattr(work, name, value)
    if fields:
        work.save(update_fields=list(fields))
    return work


@transaction.atomic
def start_timed(assignment: Assignment, candidate, now: datetime | None = None) -> Round:
    """Sit a time-limited assignment as one timed round of ``drills.rounds.services`` (once; again returns it).

    ``drills.rounds.services.start_round`` draws from a template's slots and cannot take
    an explicit list of items, so the round is built here from the set's
    entries (round presets among them drawn by ``drills.rounds.drawing.draw_items``),
    with the server's clock: the deadline is now plus the time limit. The
    rounds pages then run it (countdown, autosave, late flags, grading, FSRS).
    """
    from drills.problems.generation import create_problem
    from drills.rounds.drawing import draw_items

    now = _now(now)
    if not assignment.time_limit_s:
        raise CoachingError("This assignment has no time limit.")
    work = Work.objects.select_for_update().filter(assignment=assignment, candidate=candidate,
                                                   entry__isnull=True).first()
    if work is not None and work.round is not None:
        return work.round
    rng = random.Random()
    drawn: list[tuple[BankItem, dict]] = []
    for entry in _entries(assignment):
        if entry.round_template_id:
            drawn += [(item, {}) for item, _ in draw_items(candidate, entry.round_template, now, rng)]
        else:
            drawn.append((entry.item, entry.fixed_inputs or {}))
    round_ = Round.objects.create(user=candidate, template=None, kind="assignment",
                                  title=assignment.question_set.title[:120], started_at=now,
                                  deadline=now + timedelta(seconds=assignment.time_limit_s))
    for position, (item, fixed) in enumerate(drawn, start=1):
        problem = None
        if item.kind == BankItem.PROBLEM and item.family:
            problem = create_problem(item.family, seed=rng.randrange(2**31), user=candidate,
                                     fixed_inputs={**(item.fixed_inputs or {}), **fixed})
        RoundItem.objects.create(round=round_, position=position, item=item, item_slug=item.slug, kind=item.kind,
                                 problem=problem, started_at=now if position == 1 else None)
    _record_work(work, assignment, candidate, None, now, round=round_)
    return round_


# --- status ---------------------------------------------------------------------------------------


@dataclass
class EntryResult:
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


@dataclass
class CandidateProgress:
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


def progress_for(pairs: list[tuple[Assignment, object]], now: datetime | None = None) -> dict:
    """``{(assignment_id, candidate_id): CandidateProgress}`` for every pair, in a fixed number of queries.

    The assignments must come with ``question_set__entries`` prefetched. Evidence
    counts only from the moment the assignment was made: a review of an open
    item or design prompt, an attempt on the problem the assignment drew, a
    critique attempt, a closed round (a round preset, or the timed round of a
    time-limited assignment, whose items are matched to the entries).
    """
    now = _now(now)
    if not pairs:
        return {}
    assignments = {a.pk: a for a, _ in pairs}
    user_ids = {c.pk for _, c in pairs}
    item_ids = {e.item_id for a in assignments.values() for e in a.question_set.entries.all() if e.item_id}
    since = min(a.created_at for a in assignments.values())
    works = list(Work.objects.filter(assignment_id__in=assignments, candidate_id__in=user_ids))
    work_of = {(w.assignment_id, w.candidate_id, w.entry_id): w for w in works}
    attempts: dict[int, dict] = {}
    for row in (Attempt.objects.filter(problem_id__in=[w.problem_id for w in works if w.problem_id])
                .order_by("submitted_at").values("pk", "problem_id", "user_id", "score", "time_taken_s",
                                                  "submitted_at")):
        attempts.setdefault((row["problem_id"], row["user_id"]), row)  # the first attempt counts
    logs: dict[tuple, list] = defaultdict(list)
    for row in (ReviewLog.objects.filter(user_id__in=user_ids, item_id__in=item_ids, reviewed_at__gte=since)
                .order_by("reviewed_at").values("pk", "user_id", "item_id", "grade", "duration_ms", "reviewed_at")):
        logs[(row["user_id"], row["item_id"])].append(row)
    critiques: dict[tuple, list] = defaultdict(list)
    for row in (CritiqueAttempt.objects.filter(user_id__in=user_ids, item_id__in=item_ids, submitted_at__gte=since)
                .order_by("submitted_at").values("pk", "user_id", "item_id", "score", "time_taken_s",
                                                 "submitted_at")):
        critiques[(row["user_id"], row["item_id"])].append(row)
    round_ids = [w.round_id for w in works if w.round_id]
    rounds = {r.pk: r for r in Round.objects.filter(pk__in=round_ids)}
    round_items: dict[int, list] = defaultdict(list)
    for row in RoundItem.objects.filter(round_id__in=round_ids).order_by("position").values(
            "round_id", "item_id", "grade", "submitted_at", "started_at", "late", "attempt_id"):
        round_items[row["round_id"]].append(row)

    out = {}
    for assignment, candidate in pairs:
        progress = CandidateProgress(assignment, candidate)
        key = (assignment.pk, candidate.pk)
        timed = work_of.get((*key, None))
        timed_round = rounds.get(timed.round_id) if timed and timed.round_id else None
        timed_items = {row["item_id"]: row for row in round_items.get(timed_round.pk, [])} if timed_round else {}
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
                if row and row["submitted_at"]:
                    result.done, result.score, result.late = True, row["grade"], row["late"]
                    result.finished_at, result.attempt_id = row["submitted_at"], row["attempt_id"]
                    if row["started_at"]:
                        result.seconds = (row["submitted_at"] - row["started_at"]).total_seconds()
                elif entry.round_template_id and closed:
                    result.done, result.score, result.finished_at = True, timed_round.score, timed_round.finished_at
                result.round_id = timed_round.pk
            elif entry.round_template_id:
                round_ = rounds.get(work.round_id) if work and work.round_id else None
                if round_ is not None:
                    result.round_id = round_.pk
                    if round_.status != Round.ACTIVE:
                        result.done, result.score = True, round_.score
                        result.finished_at, result.seconds = round_.finished_at, round_.time_used_s
            elif entry.kind == BankItem.PROBLEM:
                row = attempts.get((work.problem_id, candidate.pk)) if work and work.problem_id else None
                if row:
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
                rows = [r for r in logs.get((candidate.pk, entry.item_id), ())
                        if r["reviewed_at"] >= assignment.created_at]
                if rows:
                    row = rows[0]
                    result.done, result.score = True, row["grade"]
                    result.seconds = row["duration_ms"] / 1000 if row["duration_ms"] is not None else None
                    result.finished_at, result.review_id = row["reviewed_at"], row["pk"]
            result.started = result.started or result.done
            progress.results.append(result)
        all_done = bool(progress.results) and all(r.done for r in progress.results)
        if all_done:
            progress.status = DONE
            last = max((r.finished_at for r in progress.results if r.finished_at), default=None)
            progress.finished_late = bool(last and last > assignment.due_at) or any(r.late for r in progress.results)
        elif now > assignment.due_at:
            progress.status = LATE
        elif any(r.started for r in progress.results):
            progress.status = IN_PROGRESS
        out[key] = progress
    return out


# --- notices --------------------------------------------------------------------------------------


def send_notice(assignment_id: int, candidate_id: int, kind: str, now: datetime | None = None) -> bool:
    """E-mail one candidate about one assignment, at most once per kind; whether a mail went out.

    Nothing is sent to someone the assignment is no longer for (they left the
    cohort), nor a reminder for work already done.
    """
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    now = _now(now)
    assignment = Assignment.objects.select_related("question_set", "coach", "cohort").filter(pk=assignment_id).first()
    user = get_user_model().objects.filter(pk=candidate_id, is_active=True).first()
    if assignment is None or user is None or not user.email:
        return False
    if not Assignment.objects.for_candidate(user).filter(pk=assignment.pk).exists():
        return False
    if kind == Notice.REMINDER:
        assignment = assignments_for(user).get(pk=assignment.pk)
        if progress_for([(assignment, user)], now)[(assignment.pk, user.pk)].status == DONE:
            return False
    with transaction.atomic():
        try:
            with transaction.atomic():
                Notice.objects.create(assignment=assignment, candidate=user, kind=kind, sent_at=now)
        except IntegrityError:
            return False
        context = {"assignment": assignment, "user": user, "kind": kind,
                   "url": getattr(settings, "SITE_URL", "").rstrip("/") + reverse("coaching:my_assignment",
                                                                                  args=[assignment.pk])}
        subject = (f"New assignment: {assignment.question_set.title}" if kind == Notice.ASSIGNED
                   else f"Due tomorrow: {assignment.question_set.title}")
        send_mail(subject, render_to_string("coaching/notice_email.txt", context), None, [user.email])
    return True


def reminders_due(now: datetime | None = None) -> list[tuple[int, int]]:
    """(assignment id, candidate id) pairs whose due day is tomorrow in the candidate's time zone,
    not done and not yet reminded."""
    now = _now(now)
    window = list(Assignment.objects.filter(due_at__gt=now, due_at__lte=now + timedelta(hours=50))
                  .select_related("question_set", "candidate", "cohort")
                  .prefetch_related("question_set__entries__item", "cohort__memberships__candidate"))
    pairs = [(a, user) for a in window
             for user in ([a.candidate] if a.candidate_id else [m.candidate for m in a.cohort.memberships.all()])]
    if not pairs:
        return []
    zones = {s.user_id: s.tz for s in ReviewSettings.objects.filter(user_id__in={u.pk for _, u in pairs})}
    reminded = set(Notice.objects.filter(assignment__in=window, kind=Notice.REMINDER)
                   .values_list("assignment_id", "candidate_id"))
    import zoneinfo

    due = []
    for assignment, user in pairs:
        tz = zones.get(user.pk, zoneinfo.ZoneInfo("UTC"))
        tomorrow = now.astimezone(tz).date() + timedelta(days=1)
        if assignment.due_at.astimezone(tz).date() == tomorrow and (assignment.pk, user.pk) not in reminded:
            due.append((assignment, user))
    progress = progress_for(due, now)
    return [(a.pk, u.pk) for a, u in due if progress[(a.pk, u.pk)].status != DONE]

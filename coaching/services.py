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
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max, Q
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.text import slugify

from accounts.roles import coach_accounts, oversees_all
from calculators.engine.errors import EngineError
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.families import FAMILIES
from coaching.notices import reminders_due as reminders_due
from coaching.notices import send_notice as send_notice
from coaching.progress import DONE as DONE
from coaching.progress import IN_PROGRESS as IN_PROGRESS
from coaching.progress import INCOMPLETE as INCOMPLETE
from coaching.progress import LATE as LATE
from coaching.progress import NOT_STARTED as NOT_STARTED
from coaching.progress import STATUS_LABELS as STATUS_LABELS
from coaching.progress import CandidateProgress as CandidateProgress
from coaching.progress import EntryResult as EntryResult
from coaching.progress import assignments_for as assignments_for
from coaching.progress import progress_for as progress_for
from drills.bank.services import item_title
from drills.followups.services import FOLLOWUP_BOX_S
from drills.models import BankItem, Card, Round, RoundTemplate
from drills.problems.generation import create_problem, generate_inputs, unsolvable
from drills.reviews.scheduling import add_to_deck, time_box_of
from drills.rounds.drawing import Drawn, draw_items
from drills.rounds.services import add_items, start_round
from outbox.services import enqueue
from runbook.content import render_authored
from runbook.shortcodes import ShortcodeError

from .access import can_see_candidate, is_coach
from .models import Assignment, Cohort, Invitation, Membership, Notice, QuestionSet, SetEntry, Work
from .tasks import send_assignment_notice


class CoachingError(Exception):
    """A request that cannot be carried out; the message says why, in one sentence."""


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()


# --- cohorts and invitations ------------------------------------------------------------------


def create_cohort(coach, name: str, *, with_invitation: bool = False) -> Cohort:
    """A new cohort of ``coach``; with its first invitation link when ``with_invitation`` (one transaction:
    never a cohort nobody can join because the invitation failed to save)."""
    name = name.strip()
    if not name:
        raise CoachingError("Give the cohort a name.")
    longest = Cohort._meta.get_field("name").max_length
    if len(name) > longest:
        raise CoachingError(f"A cohort name is at most {longest} characters; the one sent has {len(name)}.")
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
    """The invitation with ``token`` if it is neither revoked nor expired at ``now``, else ``None``."""
    found = Invitation.objects.select_related("cohort", "cohort__coach").filter(token=token, revoked=False).first()
    if found is None or (found.expires_at and found.expires_at <= _now(now)):
        return None
    return found


COACH_CANNOT_JOIN = ("Coaches cannot join a cohort: its members read their coach's unpublished questions. "
                     "To practise as a candidate, sign up a candidate account.")


@transaction.atomic
def accept_invitation(invitation: Invitation, user, now: datetime | None = None) -> Membership:
    """Join ``user`` to the invitation's cohort (again: nothing changes); their cohort's assigned items join
    their review deck.

    Raises :class:`CoachingError` for the cohort's own coach and for any coach
    (:data:`COACH_CANNOT_JOIN`): membership would let one coach read another's unpublished questions.
    """
    if invitation.cohort.coach_id == user.pk:
        raise CoachingError("This is your own cohort: send the link to a candidate.")
    if is_coach(user):
        # A member reads the cohort coach's unpublished questions (drills.bank.visibility); a coach must not.
        raise CoachingError(COACH_CANNOT_JOIN)
    membership, created = Membership.objects.get_or_create(cohort=invitation.cohort, candidate=user,
                                                           defaults={"invitation": invitation})
    if created:
        items = BankItem.objects.filter(pk__in=SetEntry.objects.filter(
            question_set__assignments__cohort=invitation.cohort, item__isnull=False).values("item_id"))
        add_to_deck(user, list(items), now=now)
    return membership


def leave_cohort(cohort: Cohort, candidate_id: int) -> bool:
    """Remove ``candidate_id`` from ``cohort``; whether they were a member."""
    return bool(Membership.objects.filter(cohort=cohort, candidate_id=candidate_id).delete()[0])


# --- authoring ----------------------------------------------------------------------------------


def preview_html(markdown: str) -> str:
    """The sanitised HTML of ``markdown`` with its live numbers, or a sentence saying what is wrong."""
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
    """The ids in ``ids`` that name no misconception of the engine's registry."""
    return [ident for ident in ids if ident not in MISCONCEPTIONS]


def save_question(coach, data: dict, item: BankItem | None = None) -> BankItem:
    """Create (or update ``item``, which must be the coach's) an authored question; never published here."""
    if item is not None and item.author_id != coach.pk and not oversees_all(coach):
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
    text = (text or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise CoachingError('Fixed inputs must be a JSON object such as {"model": "llama-3.1-70b"}.') from None
    if not isinstance(value, dict):
        raise CoachingError('Fixed inputs must be a JSON object such as {"model": "llama-3.1-70b"}.')
    return check_fixed_inputs(value, family)


# The seeds a coach's fixed inputs are drawn at before they are accepted: each draw is solved (and drawn again
# when it has no answer, drills.problems.generation.DRAW_ATTEMPTS), so a stack whose problems cannot be drawn
# is refused here rather than met by a candidate.
CHECK_SEEDS = (1, 2, 3)


def check_fixed_inputs(value: dict, family: str) -> dict:
    """``value`` (input name → value) if problems of ``family`` can be drawn and solved with it at each of
    :data:`CHECK_SEEDS`; else :class:`CoachingError` with the engine's sentence."""
    if not value:
        return {}
    if family not in FAMILIES:
        raise CoachingError(f"'{family}' is not a calculator family.")
    for seed in CHECK_SEEDS:
        try:
            generate_inputs(family, seed, fixed=value)
        except (ValueError, KeyError, TypeError) as error:  # the engine's EngineError is a ValueError
            raise CoachingError(f"Those fixed inputs do not work for {family}: {error}") from None
    return value


#: How many follow-ups a set's follow-up chain may ask (issue 33: a chain of 2 to 4).
FOLLOWUP_CHOICES = (2, 3, 4)


def add_entry(question_set: QuestionSet, *, item: BankItem | None = None, fixed_inputs: dict | None = None,
              round_template: RoundTemplate | None = None, followups: int = 0) -> SetEntry:
    """Append an entry (a bank item, a problem with fixed inputs and, with ``followups``, a chain of that many
    follow-ups on its stack, or a round template) to ``question_set``.

    Raises :class:`CoachingError` when the set already holds that bank item with the same fixed inputs and
    chain (a candidate would be asked the same thing twice); a template with other fixed inputs or another
    chain is another entry; and for a chain outside :data:`FOLLOWUP_CHOICES` or on anything but a problem
    template.
    """
    if followups and (followups not in FOLLOWUP_CHOICES or item is None or item.kind != BankItem.PROBLEM):
        raise CoachingError(f"A follow-up chain is {FOLLOWUP_CHOICES[0]} to {FOLLOWUP_CHOICES[-1]} follow-ups on "
                            "a problem template.")
    if item is not None and question_set.entries.filter(item=item, fixed_inputs=fixed_inputs or {},
                                                        followups=followups).exists():
        held = " with these fixed inputs" if fixed_inputs else ""
        chained = f" and {followups} follow-ups" if followups else ""
        raise CoachingError(f"This set already holds “{item_title(item, 80)}”{held}{chained}.")
    last = question_set.entries.aggregate(m=Max("position"))["m"] or 0
    entry = SetEntry.objects.create(question_set=question_set, position=last + 1, item=item,
                                    fixed_inputs=fixed_inputs or {}, round_template=round_template,
                                    followups=followups)
    QuestionSet.objects.filter(pk=question_set.pk).update(updated_at=timezone.now())
    return entry


def remove_entry(entry: SetEntry) -> None:
    """Delete ``entry`` and renumber the set's remaining entries from 1.

    Raises :class:`CoachingError` once a candidate has started the entry: its ``Work`` rows record what
    was done for this coach's assignment, which other coaches of the candidate may not see
    (:mod:`coaching.visibility`), so they must outlive any edit of the set. A start whose problem cannot be
    solved (:func:`drills.problems.generation.unsolvable`: nothing could be worked) records nothing done, so
    it does not hold the entry: it goes with it.
    """
    with transaction.atomic():
        # Only the Work rows are locked: PostgreSQL refuses FOR UPDATE on the nullable side of the problem's join.
        works = list(Work.objects.select_for_update(of=("self",)).filter(entry=entry).select_related("problem"))
        dead = [work.pk for work in works if work.problem is not None and unsolvable(work.problem)]
        started = len({work.candidate_id for work in works if work.pk not in dead})
        if started:
            raise CoachingError(f"{started} candidate{pluralize(started)} already started this entry, so it stays "
                                "in the set: removing it would lose their work and the record of whom it was done "
                                "for.")
        Work.objects.filter(pk__in=dead).delete()
        question_set = entry.question_set
        entry.delete()
        for position, row in enumerate(question_set.entries.order_by("position", "pk"), start=1):
            if row.position != position:
                row.position = position
                row.save(update_fields=["position"])


@transaction.atomic
def move_entry(entry: SetEntry, delta: int) -> None:
    """Move ``entry`` ``delta`` places (-1 up, +1 down, clamped to the set) and renumber the set."""
    rows = list(entry.question_set.entries.order_by("position", "pk"))
    index = next(i for i, row in enumerate(rows) if row.pk == entry.pk)
    target = max(0, min(len(rows) - 1, index + delta))
    rows.insert(target, rows.pop(index))
    for position, row in enumerate(rows, start=1):
        if row.position != position:
            row.position = position
            row.save(update_fields=["position"])


# --- assigning ----------------------------------------------------------------------------------


def recipients(assignment: Assignment) -> list:
    """The candidates an assignment is for now (a cohort's current members), coach accounts left out:
    they never receive another coach's items in their deck nor a notice quoting them."""
    if assignment.candidate_id:
        return [] if is_coach(assignment.candidate) else [assignment.candidate]
    members = (assignment.cohort.memberships.select_related("candidate")
               .exclude(coach_accounts("candidate__")))
    return [m.candidate for m in members]


def assign(question_set: QuestionSet, coach, *, due_at: datetime, candidate=None, cohort: Cohort | None = None,
           time_limit_s: int | None = None, now: datetime | None = None) -> Assignment:
    """Give a set to one candidate (of one of the coach's cohorts) or to one of the coach's cohorts.

    The set's bank items join each recipient's review deck, and one "assigned"
    e-mail per recipient is enqueued, through the outbox, once the transaction commits.
    """
    now = _now(now)
    if (candidate is None) == (cohort is None):
        raise CoachingError("Assign the set to one candidate or to one cohort.")
    if cohort is not None and cohort.coach_id != coach.pk and not oversees_all(coach):
        raise CoachingError("That is not one of your cohorts.")
    if candidate is not None and not can_see_candidate(coach, candidate.pk):
        raise CoachingError("That candidate is not in one of your cohorts.")
    if not question_set.entries.exists():
        raise CoachingError("The set is empty: add items before assigning it.")
    if due_at <= now:
        raise CoachingError("The due time must be in the future.")
    _refuse_a_second_open_copy(question_set, candidate, cohort, time_limit_s or None, now)
    with transaction.atomic():
        assignment = Assignment.objects.create(question_set=question_set, coach=coach, candidate=candidate,
                                               cohort=cohort, due_at=due_at, time_limit_s=time_limit_s or None,
                                               created_at=now)
        items = [entry.item for entry in question_set.entries.select_related("item") if entry.item_id]
        for user in recipients(assignment):
            add_to_deck(user, items, now=now)
            # By name: coaching.tasks imports this module, so importing the task here would close a circle.
            enqueue(send_assignment_notice, [assignment.pk, user.pk, Notice.ASSIGNED])
    return assignment


def _refuse_a_second_open_copy(question_set: QuestionSet, candidate, cohort: Cohort | None,
                               time_limit_s: int | None, now: datetime) -> None:
    """Raise :class:`CoachingError` when someone this assignment is for already has the same set, timed alike,
    open (not yet due), given to them directly or to a cohort they are in: they would see two identical rows and
    do the work twice. Naming who, and through which assignment, so the coach can pick another set or wait for
    that one. The same set timed for one candidate beside the cohort's untimed copy is a different task."""
    people = [candidate.pk] if candidate is not None else list(
        cohort.memberships.values_list("candidate_id", flat=True))
    if not people:
        return
    open_ = (Assignment.objects.filter(question_set=question_set, due_at__gt=now, time_limit_s=time_limit_s)
             .filter(Q(candidate_id__in=people) | Q(cohort__memberships__candidate_id__in=people))
             .select_related("cohort", "candidate").distinct())
    clash = next(iter(open_), None)
    if clash is None:
        return
    who = (clash.candidate.get_username() if clash.candidate_id
           else ", ".join(sorted(get_user_model().objects.filter(
               pk__in=people, memberships__cohort=clash.cohort).values_list("username", flat=True))[:3]))
    through = "directly" if clash.candidate_id else f"through cohort {clash.cohort.name}"
    raise CoachingError(f"“{question_set.title}” is already assigned to {who} {through}, due "
                        f"{timezone.localtime(clash.due_at):%d %b %Y %H:%M}: assigning it again would give the "
                        "same work twice. Pick another set, or assign this one after that due time.")


def assignment_for(user, pk: int) -> Assignment:
    """One of ``user``'s assignments (``Assignment.DoesNotExist`` otherwise)."""
    return assignments_for(user).get(pk=pk)


# --- doing the work -----------------------------------------------------------------------------


def _entries(assignment: Assignment) -> list[SetEntry]:
    return list(assignment.question_set.entries.all())


@transaction.atomic
def start_entry(assignment: Assignment, candidate, entry: SetEntry, now: datetime | None = None) -> str:
    """Where to go to do ``entry`` (untimed assignments): draws the problem or starts the round once."""
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
    if kind == "followups":  # a problem and its chain, sat as a short round (answered in order, then done)
        if work is None or work.round is None:
            work = _record_work(work, assignment, candidate, entry, now, round=_chain_round(entry, candidate, now))
        return work.round.get_absolute_url()
    if kind == BankItem.PROBLEM:
        # A problem stored before draws were checked may have no answer: it is drawn again (nothing was worked).
        if work is None or work.problem is None or unsolvable(work.problem):
            fixed = {**(entry.item.fixed_inputs or {}), **(entry.fixed_inputs or {})}
            try:
                problem = create_problem(entry.item.family, user=candidate, fixed_inputs=fixed)
            except (EngineError, KeyError) as error:
                raise CoachingError(f"This problem cannot be drawn ({str(error).rstrip('.')}): ask your coach to "
                                    "change or remove it.") from None
            work = _record_work(work, assignment, candidate, entry, now, problem=problem)
        return work.problem.get_absolute_url()
    _record_work(work, assignment, candidate, entry, now)
    if kind == BankItem.CRITIQUE:

        return reverse("drills:critique", args=[entry.item.slug])
    card = Card.objects.filter(user=candidate, item=entry.item).first()
    if card is None or card.suspended:
        add_to_deck(candidate, [entry.item], now=now)
        card = Card.objects.get(user=candidate, item=entry.item)

    return reverse("reviews:card", args=[card.pk])


def _chain_drawn(entry: SetEntry) -> Drawn:
    """A follow-up entry as a round draws it: its problem template, fixed inputs and chain, each follow-up boxed
    as the "Follow-ups" preset's are (:data:`~drills.followups.services.FOLLOWUP_BOX_S`)."""
    return Drawn(entry.item, None, entry.followups, FOLLOWUP_BOX_S, {**(entry.item.fixed_inputs or {}),
                                                                      **(entry.fixed_inputs or {})})


def _chain_round(entry: SetEntry, candidate, now: datetime) -> Round:
    """An untimed assignment's follow-up entry started: a round of its problem and chain, with the problem's time
    box and :data:`~drills.followups.services.FOLLOWUP_BOX_S` a follow-up to answer it in (the rounds pages run
    it, record the chain and its review, and close it when the chain is answered). Raises
    :class:`CoachingError` when no problem with a chain can be drawn."""
    rng = random.Random()
    steps = (entry.item.details or {}).get("steps")
    box = time_box_of(entry.item, steps) or 0
    round_ = Round.objects.create(user=candidate, template=None, kind="followups",
                                  title=f"{entry.question_set.title[:80]}: follow-ups"[:120], started_at=now,
                                  deadline=now + timedelta(seconds=box + FOLLOWUP_BOX_S * entry.followups))
    add_items(round_, [_chain_drawn(entry)], rng, candidate, now)
    if not round_.items.exists():
        raise CoachingError("This problem cannot be drawn with follow-ups: ask your coach to change or remove it.")
    return round_


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
    now = _now(now)
    if not assignment.time_limit_s:
        raise CoachingError("This assignment has no time limit.")
    work = Work.objects.select_for_update().filter(assignment=assignment, candidate=candidate,
                                                   entry__isnull=True).first()
    if work is not None and work.round is not None:
        return work.round
    rng = random.Random()
    drawn: list[Drawn] = []
    for entry in _entries(assignment):
        if entry.round_template_id:  # a preset's items, the follow-ups of a "Follow-ups" preset among them
            drawn += draw_items(candidate, entry.round_template, now, rng)
        elif entry.kind == "followups":
            drawn.append(_chain_drawn(entry))
        else:
            drawn.append(Drawn(entry.item, None, fixed=entry.fixed_inputs or {}))
    round_ = Round.objects.create(user=candidate, template=None, kind="assignment",
                                  title=assignment.question_set.title[:120], started_at=now,
                                  deadline=now + timedelta(seconds=assignment.time_limit_s))
    add_items(round_, drawn, rng, candidate, now)
    _record_work(work, assignment, candidate, None, now, round=round_)
    return round_



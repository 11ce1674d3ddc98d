"""Timed mock rounds (docs/architecture.md §6): presets, drawing items, autosave, submission, the clock, the report.

The server's clock is the only one: every call takes ``now`` (the request's
``timezone.now()``; tests pass their own) and the time left is always
``round.deadline - now``. :func:`close_if_due` closes a round whose deadline
has passed and grades what was saved; views call it on every request, after
applying what the request brought, so an answer typed before the deadline is
never lost and one that arrives after it is kept and flagged ``late``.

- **Worked items** (problem templates) draw a seeded variant when the round
  starts and are graded step by step by the grader (:mod:`drills.problems.grading`).
- **Critique items** are graded by :func:`drills.critique.services.grade_critique` and
  stored as a :class:`~drills.models.CritiqueAttempt`.
- **Open items** (open questions and design prompts): write or "say it
  aloud", reveal the model answer and rubric, tick what was covered, self-score.

Closing a round records one FSRS review for each of its items already in the
candidate's deck, with the rating that follows from the grade (the issue-8 rules in
:mod:`drills.reviews.scheduling`): through :func:`drills.reviews.services.record_open_review`
for open items, :func:`~drills.reviews.services.record_graded_review` (the item's grade and
attempt) for worked and critique items. A worked item followed up in the round is reviewed with its follow-ups:
the chain is the card, rated by the chain's score (issue 33), and the follow-up items carry that review.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from calculators.engine.errors import EngineError
from calculators.engine.followup import FollowUp
from config.middleware import TWIN
from drills.critique.services import grade_critique, read_flags
from drills.followups.services import FOLLOWUP_BOX_S, first_values, grade_link, refusal, store_link
from drills.followups.services import chain as followup_chain
from drills.models import BankItem, Card, CritiqueAttempt, ProblemInstance, ReviewLog, Round, RoundItem, RoundTemplate
from drills.problems import grading
from drills.problems.forms import read_start
from drills.problems.generation import DRAW_ATTEMPTS, create_problem
from drills.reviews.scheduling import _now, rating_for_problem, rating_for_rubric, time_box_of
from drills.reviews.services import record_graded_review, record_open_review
from drills.rounds.drawing import Drawn, draw_items
from drills.rounds.models import FOLLOWUP
from drills.rounds.presets import preset

MAX_TEXT = 20_000
LATE_GRACE = timedelta(seconds=5)
"""How late an answer may reach the server and still count in full (flagged late): the last autosave the
page sends at zero, or a click at 0:00, is a second or two in flight. Anything later is kept aside with the
item and scores 0; the report states the rule (docs/architecture.md §6)."""


@transaction.atomic
def start_round(user, template: RoundTemplate | str, now: datetime | None = None,
                rng: random.Random | None = None) -> Round:
    """Start a round of ``template`` (or a preset's kind) now: the server stamps start and deadline."""
    now = _now(now)
    template = preset(template) if isinstance(template, str) else template
    rng = rng or random.Random()
    drawn = draw_items(user, template, now, rng)
    started = Round.objects.create(user=user, template=template, kind=template.kind, title=template.title,
                                   started_at=now, deadline=now + timedelta(seconds=template.duration_s))
    add_items(started, drawn, rng, user, now)
    return started


def add_items(round_: Round, drawn: list[Drawn], rng: random.Random, user, now: datetime) -> None:
    """Put ``drawn`` in ``round_`` in order: each problem template's problem drawn now (a template that cannot
    draw one is left out) and its follow-ups after it (issue 33 item 1); the first item opens with the round.
    A round started from a template and a coach's timed assignment are both built here."""
    position = 0
    for item, box, followups, followup_box, fixed, alternatives in drawn:
        problem, links = None, 0
        if item.kind == BankItem.PROBLEM and item.family:
            for choice in (item, *alternatives):  # a template whose problems give no chain: the slot's next one
                problem, links = _problem_with_followups(choice, rng, user, followups, fixed)
                if problem is not None:
                    item = choice
                    break
            if problem is None:  # a template whose problem cannot be drawn is left out of the round
                continue
        position += 1
        RoundItem.objects.create(round=round_, position=position, item=item, item_slug=item.slug, kind=item.kind,
                                 time_box_s=box, problem=problem, started_at=now if position == 1 else None)
        for link in range(links):  # the interviewer follows up on that problem
            position += 1
            RoundItem.objects.create(round=round_, position=position, item=item, item_slug=item.slug,
                                     kind=FOLLOWUP, time_box_s=followup_box, problem=problem, followup=link)


#: A slot with follow-ups draws its problem again (another seed) until the chain is at least this long.
MIN_CHAIN = 2


def _problem_with_followups(item: BankItem, rng: random.Random, user, followups: int,
                            fixed: dict | None = None) -> tuple[ProblemInstance | None, int]:
    """A problem of template ``item`` and how many follow-ups its chain gives (up to ``followups``): drawn
    again, up to :data:`~drills.problems.generation.DRAW_ATTEMPTS` times, while its chain is shorter than
    :data:`MIN_CHAIN` (a params problem on a model without a named MoE sibling has none)."""
    problem = draw_or_none(item, rng, user, fixed)
    if not followups or problem is None:
        return problem, 0
    for _ in range(DRAW_ATTEMPTS):
        links = len(followup_chain(problem, followups))
        if links >= min(MIN_CHAIN, followups):
            return problem, links
        problem.delete()
        problem = draw_or_none(item, rng, user, fixed)
        if problem is None:
            return None, 0
    problem.delete()
    return None, 0


def draw_or_none(item: BankItem, rng: random.Random, user, fixed: dict | None = None) -> ProblemInstance | None:
    """A problem of template ``item`` (its fixed inputs, then ``fixed``) drawn at a seed from ``rng``, or ``None``
    when none can be drawn (:func:`drills.problems.generation.generate_inputs` gave up): a round leaves such a
    template out rather than fail to start."""
    try:
        return create_problem(item.family, seed=rng.randrange(2**31), user=user,
                              fixed_inputs={**(item.fixed_inputs or {}), **(fixed or {})})
    except (EngineError, KeyError):
        return None


# --- during the round ---------------------------------------------------------------------


def current_item(round_: Round) -> RoundItem | None:
    """The first item not yet submitted (else the last)."""
    items = list(round_.items.all())
    return next((item for item in items if not item.is_submitted), items[-1] if items else None)


def opened_at(item: RoundItem, data, now: datetime) -> datetime | None:
    """When the candidate opened ``item``, for the first write on it: the moment the item page signed into its
    form (``opened``, :func:`drills.problems.forms.sign_start`) when it lies within the round and not after
    ``now``, else ``now``; ``None`` once the round is closed. Opening the page stores nothing."""
    if not item.round.is_active:
        return None
    stamp = read_start(data.get("opened") if hasattr(data, "get") else None)
    return stamp if stamp is not None and item.round.started_at <= stamp <= now else now


def typed(data, name: str, saved: str) -> str:
    """The text of box ``name`` after a form (a ``QueryDict``) was sent: what the form holds when this page
    changed it, else ``saved`` (what is stored).

    A page changed a box when it is sent and its twin ``base-<name>`` (:data:`config.middleware.TWIN`; rounds.js
    moves it on after each autosave) is not sent or differs: a box
    cleared on purpose (``""`` from ``"79.65"``) is written blank, while a box the page still shows as it was
    (blank in a second tab that never saw another tab's answer) leaves the stored text alone. Two tabs of one round
    item thus merge box by box and nothing typed is lost; a box changed in both keeps the later one. Text is cut at
    :data:`MAX_TEXT` characters.
    """
    if name not in data:
        return saved
    sent = str(data.get(name, ""))
    if TWIN + name in data and sent == str(data.get(TWIN + name, "")):
        return saved
    return sent[:MAX_TEXT]


def read_content(item: RoundItem, data) -> dict:
    """What a form (a ``QueryDict``) says about ``item``'s answer, keyed by RoundItem field: each text box as
    :func:`typed` reads it (only the boxes this page changed replace what is stored)."""
    content: dict = {}
    if "scratch" in data:
        content["scratch"] = typed(data, "scratch", item.scratch)
    if item.is_open:
        if "answer" in data:
            content["answer"] = typed(data, "answer", item.answer)
        if "answer" in data or "said_aloud" in data or "present" in data:
            content["said_aloud"] = data.get("said_aloud") in ("on", "true", "1", True)
        if "ticked" in data or "present_ticks" in data:
            total = len((item.item.rubric if item.item else None) or ())
            # isdecimal, not isdigit: "²" is a digit that int() refuses.
            ticks = {int(v) for v in data.getlist("ticked") if str(v).isdecimal() and int(v) < total}
            content["ticked"] = sorted(ticks)
    elif item.is_worked and item.problem is not None:
        keys = [spec.key for spec in item.problem.solve().specs]
        content["answers"] = {key: typed(data, key, str(item.answers.get(key, ""))) for key in keys}
    elif item.is_followup and item.problem is not None:
        content["answers"] = read_followup(item, data)
    elif item.is_critique and item.item is not None:
        lines = (item.item.details or {}).get("lines", [])
        if "present_flags" in data or "flag" in data:
            flags = read_flags(lines, data.getlist("flag"),
                               {key[4:]: value for key, value in data.items() if key.startswith("why_")})
            content["answers"] = {str(line): why for line, why in flags.items()}
    return content


def followup_link(item: RoundItem) -> FollowUp | None:
    """The follow-up a follow-up ``item`` asks (a link of its problem's chain), or ``None``."""
    links = followup_chain(item.problem, (item.followup or 0) + 1) if item.problem is not None else ()
    return links[item.followup] if item.followup is not None and item.followup < len(links) else None


def read_followup(item: RoundItem, data) -> dict:
    """A follow-up item's answer from a form: ``{"marked": [step keys], "values": {key: text}}`` (the marks are
    read when the form says they are there, ``present_marks``; a value box not sent keeps its saved text)."""
    link = followup_link(item)
    saved = item.answers or {}
    if link is None:
        return dict(saved)
    keys = [spec.key for spec in link.result.specs]
    if "present_marks" in data or "marked" in data:
        chosen = set(data.getlist("marked"))
        marked = [key for key in keys if key in chosen]
    else:
        marked = list(saved.get("marked", []))
    values = {key: typed(data, f"value-{key}", str((saved.get("values") or {}).get(key, "")))
              for key in keys if f"value-{key}" in data or key in (saved.get("values") or {})}
    return {"marked": marked, "values": values}


def followup_own(item: RoundItem) -> dict[str, float]:
    """The candidate's values before follow-up ``item``: their answers to the round's problem item, carried
    through the follow-ups before this one as they answered them (error carried forward, issue 33 item 1)."""
    siblings = list(item.round.items.filter(problem_id=item.problem_id).order_by("position"))
    base = next((other for other in siblings if other.is_worked), None)
    own = first_values(item.problem, dict(base.answers) if base is not None else {})
    for other in siblings:
        if other.is_followup and other.followup is not None and other.followup < (item.followup or 0):
            link = followup_link(other)
            if link is not None:
                answers = other.answers or {}
                own = grade_link(link, own, answers.get("marked", []), answers.get("values", {})).own
    return own


def unreadable_answers(item: RoundItem, data) -> dict[str, str]:
    """Step key → the answer parser's message for each step of a worked ``item`` typed in ``data`` (a
    ``QueryDict``) that cannot be read ("12 foo", "1e999"); empty for other items or when every typed step reads.

    A blank step is not listed (in a round it counts as unanswered) unless every step is blank and ``data`` did
    not ask to count blanks (:func:`~drills.problems.grading.counts_blanks`): then each is listed with
    :data:`~drills.problems.grading.BLANK`, the drill page's words, so an all-blank submission is asked about
    first. The submit view refuses a submission before the deadline while this is not empty (the typo is the
    candidate's to fix, as on the drill and review pages); after the deadline what arrived is graded as it stands.
    """
    if item.is_followup and item.problem is not None:
        link = followup_link(item)
        answer = read_followup(item, data)
        units = {spec.key: spec.unit for spec in link.result.specs} if link is not None else {}
        return {key: message for key in answer.get("marked", []) if key in units
                for message in [refusal((answer.get("values") or {}).get(key, ""), units[key])] if message}
    if not item.is_worked or item.problem is None:
        return {}
    graded = grading.grade_problem(item.problem, read_content(item, data)["answers"])
    nothing = not any(step.given.strip() for step in graded.steps)
    return grading.unreadable_steps(graded, blank=nothing and not grading.counts_blanks(data))


def _changes(item: RoundItem, content: dict) -> dict:
    return {name: value for name, value in content.items() if getattr(item, name) != value}


def keep_aside(entries: list, now: datetime, changes: dict, late: bool, draft: bool = False) -> list:
    """``entries`` (an item's ``late_answers``) with ``changes`` kept aside: stored and shown, never graded.

    ``late`` marks an answer that arrived after the deadline and its grace (it scores 0); ``draft`` an
    autosave, which replaces the draft before it (autosave runs on every change: one entry, the last text).
    """
    entry = {"at": now.isoformat(), **changes, **({"late": True} if late else {}), **({"draft": True} if draft else {})}
    if draft and entries and entries[-1].get("draft"):
        return [*entries[:-1], {**entries[-1], **entry}]
    return [*entries, entry]


@transaction.atomic
def autosave(user, item_id: int, data, now: datetime | None = None) -> RoundItem:
    """Keep what was typed (htmx on every change). After the deadline it is still kept, and flagged late.

    Once an item is submitted its answer no longer changes: new text goes to
    ``late_answers`` (kept, not graded); the whiteboard stays editable until the round closes.
    """
    now = _now(now)
    item = RoundItem.objects.select_for_update(of=("self",)).select_related("round", "item", "problem").get(
        pk=item_id, round__user=user)
    content = read_content(item, data)
    if item.is_open and item.revealed_at is not None:
        content.pop("answer", None)
        content.pop("said_aloud", None)
    changes = _changes(item, content)
    if not changes:
        return item
    past, beyond = item.round.is_past_deadline(now), item.round.is_past_deadline(now - LATE_GRACE)
    fields = ["saved_at"]
    # The answer itself: not the rubric ticks (a self-assessment), nor the whiteboard while the round runs.
    typed = {k: v for k, v in changes.items() if k != "ticked" and (k != "scratch" or not item.round.is_active)}
    if typed and (item.is_submitted or beyond):
        item.late_answers = keep_aside(item.late_answers, now, typed, late=beyond, draft=True)
        fields.append("late_answers")
        changes = {k: v for k, v in changes.items() if k not in typed}
    if typed and past:
        item.late = True
        fields.append("late")
    for name, value in changes.items():
        setattr(item, name, value)
    if item.started_at is None and item.round.is_active:
        item.started_at = opened_at(item, data, now)  # the time box runs from the page's opening
        fields.append("started_at")
    item.saved_at = now
    item.save(update_fields=sorted(set(fields) | set(changes)))
    return item


@transaction.atomic
def reveal(user, item_id: int, data, now: datetime | None = None) -> RoundItem:
    """Save the open answer, then show the model answer and rubric (the answer is fixed from then on)."""
    now = _now(now)
    item = autosave(user, item_id, data, now)
    if item.is_open and item.revealed_at is None:
        item.revealed_at = now
        RoundItem.objects.filter(pk=item.pk, revealed_at__isnull=True).update(revealed_at=now)
    return item


@dataclass
class Submitted:
    """What :func:`submit` did: ``created`` when this submission is the one that counts.

    A repeat (``duplicate``) returns the item as recorded; ``kept_aside`` says
    it carried a different answer, stored in ``item.late_answers`` and not graded.
    """

    item: RoundItem
    created: bool
    kept_aside: bool = False

    @property
    def duplicate(self) -> bool:
        return not self.created


def _grade(item: RoundItem, user, now: datetime) -> None:
    """Grade what ``item`` holds (not saved)."""
    if item.is_worked and item.problem is not None:
        # The round's FSRS reviews are recorded when it closes (_review), not here.
        submitted = grading.submit(item.problem, user, dict(item.answers), started_at=item.started_at, now=now,
                                   time_taken_s=item.time_taken_s(now))
        item.attempt, item.grade = submitted.attempt, submitted.grade.score
    elif item.is_followup:
        link = followup_link(item)
        if link is None:  # the catalog moved under a stored problem's chain: nothing to grade it against
            item.grade = 0.0
            return
        answers = item.answers or {}
        graded = grade_link(link, followup_own(item), answers.get("marked", []), answers.get("values", {}))
        base = item.round.items.filter(problem_id=item.problem_id, kind="problem").first()
        item.followup_attempt = store_link(user, item.problem, item.followup or 0, graded,
                                           base.attempt if base is not None else None,
                                           answers.get("marked", []), answers.get("values", {}))
        item.grade = graded.score
    elif item.is_critique and item.item is not None:
        flags = {int(line): why for line, why in item.answers.items()}
        graded = grade_critique(item.item.details or {}, flags)
        item.critique_attempt = CritiqueAttempt.record(item.item, user, graded, started_at=item.started_at,
                                                       time_taken_s=item.time_taken_s(now))
        item.grade = graded.score
    else:
        total = len((item.item.rubric if item.item else None) or ())
        rated = item.self_score is not None
        if not rated:
            item.self_score = rating_for_rubric(len(item.ticked), total) or (
                ReviewLog.AGAIN if not (item.answer.strip() or item.said_aloud) else ReviewLog.GOOD)
        # The rubric's ticks score the item; an answer said aloud with no point ticked and a self-rating
        # scores as that rating (Again 0, Hard 1/3, Good 2/3, Easy 1), not as 0 ticks (issue 20).
        by_ticks = total and (item.ticked or not (item.said_aloud and rated))
        item.grade = len(item.ticked) / total if by_ticks else (item.self_score - 1) / 3


GRADED_FIELDS = ["started_at", "grade", "self_score", "attempt", "critique_attempt", "followup_attempt", "late",
                 "auto_submitted", "revealed_at", "ticked", "answers", "answer", "said_aloud", "scratch", "saved_at",
                 "late_answers"]


def submit(user, item_id: int, version: int, data, now: datetime | None = None) -> Submitted:
    """Record ``item``'s answer once: the first submission of a version counts; a repeat returns it.

    After the deadline the answer is still recorded, flagged late. A
    submission of an item that was already graded (another tab, or the round
    closed first) is kept in ``late_answers`` when it differs.
    """
    now = _now(now)
    with transaction.atomic():
        item = RoundItem.objects.select_for_update(of=("self",)).select_related("round", "item", "problem").get(
            pk=item_id, round__user=user)
        content = read_content(item, data)
        if item.is_open and item.revealed_at is not None and item.is_submitted:
            content.pop("answer", None)
        claimed = (not item.is_submitted and item.version == version and RoundItem.objects.filter(
            pk=item.pk, version=version, submitted_at__isnull=True).update(version=version + 1, submitted_at=now))
        if not claimed:
            changes = {k: v for k, v in _changes(item, content).items() if k != "scratch"}
            if changes:
                item.late_answers = keep_aside(item.late_answers, now, changes,
                                               late=item.round.is_past_deadline(now - LATE_GRACE))
                item.late = item.late or item.round.is_past_deadline(now)
                item.save(update_fields=["late_answers", "late"])
            return Submitted(item, False, kept_aside=bool(changes))
        item.version, item.submitted_at = version + 1, now
        item.started_at = item.started_at or opened_at(item, data, now)
        # The answer itself, not the self-assessment nor the whiteboard.
        arrived = {k: v for k, v in _changes(item, content).items() if k not in ("ticked", "scratch")}
        if arrived and item.round.is_past_deadline(now - LATE_GRACE):
            # Past the grace: kept aside and shown on the report, scoring 0; what was saved in time is graded.
            item.late_answers = keep_aside(item.late_answers, now, arrived, late=True)
            content = {k: v for k, v in content.items() if k not in arrived}
        for name, value in content.items():
            setattr(item, name, value)
        if item.is_open:
            item.revealed_at = item.revealed_at or now
            score = str(data.get("self_score", ""))
            item.self_score = int(score) if score in ("1", "2", "3", "4") else None
        if item.round.is_past_deadline(now) and arrived:
            item.late = True
        item.saved_at = now
        _grade(item, user, now)
        item.save(update_fields=GRADED_FIELDS)
        if not item.round.is_active:
            _review(item, now)
            _rescore(item.round)
    round_ = close_if_due(item.round, now)
    if round_.is_active and not round_.items.filter(submitted_at__isnull=True).exists():
        close(round_, now, Round.FINISHED)  # the last item is in: the round is done
    return Submitted(item, True)


# --- closing ------------------------------------------------------------------------------


def _rating(item: RoundItem, now: datetime) -> int:
    if item.is_worked:
        steps = (item.item.details or {}).get("steps") if item.item else None
        box = item.time_box_s or (time_box_of(item.item, steps) if item.item else None)
        return rating_for_problem(item.grade or 0.0, item.time_taken_s(now), box)
    if item.is_critique:
        if item.critique_attempt is not None:
            return item.critique_attempt.review_rating()
        return rating_for_problem(item.grade or 0.0, None, None)
    return item.self_score or ReviewLog.GOOD


def _chain_items(item: RoundItem) -> list[RoundItem]:
    """The follow-up items of a worked ``item``'s problem in its round, in order (none for other items)."""
    if not item.is_worked or item.problem_id is None:
        return []
    return list(item.round.items.filter(problem_id=item.problem_id, kind=FOLLOWUP).order_by("position"))


def _chain_review(item: RoundItem, chain: list[RoundItem], now: datetime) -> tuple[float, int, float | None]:
    """A worked item and its follow-ups as one card's review (the chain is the card, as on the review page):
    the chain's score (the problem and each follow-up weigh the same), the rating it earns against the problem's
    time box and each follow-up's (or :data:`~drills.followups.services.FOLLOWUP_BOX_S`), and the seconds taken
    over all of them (``None`` when none was timed)."""
    grades = [item.grade or 0.0, *(other.grade or 0.0 for other in chain)]
    score = sum(grades) / len(grades)
    steps = (item.item.details or {}).get("steps") if item.item else None
    box = item.time_box_s or (time_box_of(item.item, steps) if item.item else None)
    if box:
        box += sum(other.time_box_s or FOLLOWUP_BOX_S for other in chain)
    times = [t for t in (one.time_taken_s(now) for one in (item, *chain)) if t is not None]
    seconds = sum(times) if times else None
    return score, rating_for_problem(score, seconds, box), seconds


def _review(item: RoundItem, now: datetime) -> None:
    """Record the FSRS review of ``item``'s card (when the item is in the candidate's deck), once. A worked item
    with follow-ups is reviewed with them (their chain's score, :func:`_chain_review`) and its follow-up items
    carry that same review; a follow-up item alone records nothing (its bank item is its problem's template)."""
    if item.review_id or item.item is None or item.grade is None or item.is_followup:
        return
    user = item.round.user
    card = Card.objects.of(user).filter(item=item.item).first()
    if card is None:
        return
    taken = item.time_taken_s(now)
    started = now - timedelta(seconds=taken) if taken is not None else None
    chain = _chain_items(item)
    if chain:
        score, rating, seconds = _chain_review(item, chain, now)
        outcome = record_graded_review(user, card.pk, card.version, rating, grade=score, problem=item.problem,
                                       attempt=item.attempt, now=now,
                                       started_at=now - timedelta(seconds=seconds) if seconds is not None else None)
        if outcome.log is not None:
            RoundItem.objects.filter(pk__in=[other.pk for other in chain]).update(review=outcome.log)
    elif item.is_worked or item.is_critique:
        # The grade the report shows, with the attempt: not the correct steps read as rubric ticks (3 of 8 steps
        # right is 38 %, not 3 of the template's rubric points) nor the whiteboard logged as an open answer.
        outcome = record_graded_review(user, card.pk, card.version, _rating(item, now), grade=item.grade,
                                       problem=item.problem if item.is_worked else None,
                                       attempt=item.attempt if item.is_worked else None,
                                       started_at=started, now=now)
    else:
        outcome = record_open_review(user, card.pk, card.version, _rating(item, now),
                                     answer=item.answer or item.scratch, said_aloud=item.said_aloud,
                                     ticked=list(item.ticked), started_at=started, now=now)
    if outcome.log is not None:
        item.review = outcome.log
        item.save(update_fields=["review"])


def _rescore(round_: Round) -> None:
    grades = [item.grade for item in round_.items.all() if item.grade is not None]
    round_.score = sum(grades) / len(grades) if grades else None
    round_.save(update_fields=["score"])


def close(round_: Round, now: datetime | None = None, status: str = Round.FINISHED) -> Round:
    """Close the round once: grade what each unsubmitted item holds, then update the FSRS cards.

    Open items never revealed but with something written stay waiting for a
    self-score (the report asks for it); an open item with nothing written scores zero.
    """
    now = _now(now)
    with transaction.atomic():
        # FOR NO KEY UPDATE, not FOR UPDATE: it still serialises two closes, but lets a concurrent submit()
        # commit. That submit holds the item's row lock and, at COMMIT, PostgreSQL's deferred foreign-key
        # check of the item it updated twice takes FOR KEY SHARE on this round; FOR UPDATE would block it
        # while we wait for the item's lock: a deadlock (tests/config/test_concurrency.py races the two).
        round_ = Round.objects.select_for_update(no_key=True).get(pk=round_.pk)
        if not round_.is_active:
            return round_
        end = min(now, round_.deadline) if status == Round.EXPIRED else now
        round_.status, round_.finished_at = status, end
        round_.save(update_fields=["status", "finished_at"])
        items = list(round_.items.select_related("item", "problem", "round"))
        for item in items:
            item.round = round_
            if item.is_submitted:
                continue
            typed = item.answer.strip() or item.said_aloud or item.scratch.strip()
            if item.is_open and item.revealed_at is None and typed:
                continue  # waits for the candidate's self-score
            claimed = RoundItem.objects.filter(pk=item.pk, submitted_at__isnull=True).update(
                submitted_at=end, version=item.version + 1)
            if not claimed:
                continue
            item.submitted_at, item.version, item.auto_submitted = end, item.version + 1, True
            _grade(item, round_.user, end)
            item.save(update_fields=GRADED_FIELDS)
        for item in items:
            _review(item, now)
        _rescore(round_)
    return round_


def close_if_due(round_: Round, now: datetime | None = None, grace: bool = False) -> Round:
    """Close ``round_`` if the server's clock has passed its deadline (and :data:`LATE_GRACE` with ``grace``).

    The beat closes with the grace, so it never beats the last autosave a page sends at zero; a request on
    the round closes it at the deadline, after applying what it brought.
    """
    now = _now(now)
    if round_.is_active and round_.is_past_deadline(now - LATE_GRACE if grace else now):
        return close(round_, now, Round.EXPIRED)
    return round_



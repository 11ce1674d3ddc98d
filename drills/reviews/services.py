"""The review flow: show a due card, record one review per card version, whatever the number of clicks.

- An **open question** (or a design prompt or critique drill): the candidate
  writes an answer or ticks "said it out loud", reveals the model answer and
  rubric, ticks the points covered and rates it; :func:`record_open_review`.
- A **problem template**: :func:`problem_for` draws a fresh seeded variant
  (``create_problem(item.family, seed, fixed_inputs=…)``, the seed made from the
  card and its version, so each review gets new numbers and a refresh shows the
  same ones); :func:`record_problem_review` grades the typed steps with the
  grader, stores the attempt and rates it by :func:`~drills.reviews.scheduling.rating_for_problem`.
  A step the parser cannot read (``7O GiB``, ``65,5``) records nothing: it raises
  :class:`UnreadableAnswers` with the parser's messages, so a typo is fixed and
  sent again rather than costing a failed review. A blank step is not a typo: it
  is graded as unanswered.

Every submission names the card ``version`` it was shown. Under a row lock
(``select_for_update`` on PostgreSQL; SQLite serialises writers) a version that
has moved on means the review was already recorded — by another tab or a
second click — and the first review is returned instead of a new one; the
unique (card, card_version) constraint on :class:`ReviewLog` backs this up.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from calculators.engine.errors import EngineError
from calculators.engine.grader import Grade
from calculators.families import FAMILIES
from drills.followups.services import FOLLOWUP_BOX_S, chain_score, grade_chain, store_link, unreadable_replies
from drills.followups.services import chain as followup_chain
from drills.models import Attempt, BankItem, Card, ProblemInstance, ReviewLog, ReviewSettings
from drills.problems.generation import create_problem, draw_problem, unsolvable
from drills.problems.grading import UnreadableAnswers, grade_problem, submit, unreadable_steps
from drills.reviews.scheduling import _now, rating_for_problem, rating_for_rubric, schedule, time_box_of
from llm_grading import services as model_grading
from runbook.models import chapter_text

MAX_DURATION_MS = 24 * 3600 * 1000


@dataclass
class Outcome:
    """What a submission did: the review log (new or the one already recorded), or ``None`` for a stale page."""

    log: ReviewLog | None
    created: bool

    @property
    def duplicate(self) -> bool:
        return self.log is not None and not self.created


def problem_seed(card: Card) -> int:
    """The seed of the variant shown for ``card`` at its current version (below 2^31)."""
    digest = hashlib.sha256(f"review:{card.pk}:{card.version}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


class Undrawable(Exception):
    """A template card whose problem cannot be drawn (its fixed inputs have no problem with an answer); the
    message says so in one sentence, naming the card and the engine's reason."""


def _undrawable(item: BankItem, error: Exception) -> Undrawable:
    name = FAMILIES[item.family].title if item.family in FAMILIES else item.slug
    return Undrawable(f"“{name}” ({item.slug}) was skipped: its problem cannot be drawn "
                      f"({str(error).rstrip('.')}). It stays in your deck; take it out from the bank, or it is "
                      f"asked again once its template is changed.")


def drawn_problem(card: Card) -> ProblemInstance:
    """The problem variant of a template card's next review as a page shows it, storing nothing: the pending
    one, or the one drawn from the card's seed (:func:`problem_seed`), unsaved; answering stores that same
    variant (:func:`problem_for`). Raises :class:`Undrawable` when no variant can be drawn."""
    if card.pending_problem_id and unsolvable(card.pending_problem) is None:
        return card.pending_problem
    try:
        return draw_problem(card.item.family, problem_seed(card), card.item.fixed_inputs)
    except (EngineError, KeyError) as error:
        raise _undrawable(card.item, error) from None


def problem_for(card: Card) -> ProblemInstance:
    """The problem variant of a template card's next review, drawn once per card version and stored (on the
    write that answers it; a page shows :func:`drawn_problem`).

    A pending variant that cannot be solved (drawn before draws were checked) is drawn again. Raises
    :class:`Undrawable` when no variant can be drawn (the review page passes such a card over: :func:`undrawable`).
    """
    if card.pending_problem_id:
        if unsolvable(card.pending_problem) is None:
            return card.pending_problem
        Card.objects.filter(pk=card.pk, pending_problem_id=card.pending_problem_id).update(pending_problem=None)
        card.pending_problem = None
    item = card.item
    try:
        problem = create_problem(item.family, seed=problem_seed(card), user=card.user,
                                 fixed_inputs=item.fixed_inputs)
    except (EngineError, KeyError) as error:
        raise _undrawable(item, error) from None
    claimed = Card.objects.filter(pk=card.pk, version=card.version, pending_problem__isnull=True).update(
        pending_problem=problem)
    if not claimed:  # another tab drew it first: show theirs
        card.refresh_from_db(fields=["pending_problem", "version"])
        if card.pending_problem_id:
            problem.delete()
            return card.pending_problem
    card.pending_problem = problem
    return problem


def undrawable(card: Card) -> str | None:
    """The sentence saying why a template card's problem cannot be drawn, or ``None`` when it can (or the card
    is not a problem). Reads only: a page skips such a card for this visit and the card stays in the deck (safe
    requests never write, DESIGN §10); a broken template must not block the review queue."""
    if not is_problem(card.item):
        return None
    try:
        drawn_problem(card)
    except Undrawable as error:
        return str(error)
    return None


def _duration_ms(started_at: datetime | None, now: datetime) -> int | None:
    if started_at is None or started_at > now:
        return None
    return min(int((now - started_at).total_seconds() * 1000), MAX_DURATION_MS)


def _locked_card(user, card_id: int) -> Card:
    """The user's card, locked until the transaction ends (``DoesNotExist`` for anyone else's)."""
    return Card.objects.select_for_update(of=("self",)).select_related("item").get(pk=card_id, user=user)


def _current_card(user, card_id: int, version: int) -> Card | None:
    """The user's card locked (:func:`_locked_card`) when ``version`` is still its version, else ``None``: the
    page was older than the review already recorded, which the caller answers with (:func:`_earlier`)."""
    card = _locked_card(user, card_id)
    return card if card.version == version else None


def _earlier(card_id: int, version: int) -> Outcome:
    return Outcome(ReviewLog.objects.filter(card_id=card_id, card_version=version).first(), False)


def _write(card: Card, version: int, rating: int, now: datetime, review_settings: ReviewSettings,
           **fields) -> Outcome:
    """Schedule ``card`` and append its log, inside the caller's transaction."""
    scheduled = schedule(card, rating, review_settings, now, fields.get("duration_ms"))
    try:
        with transaction.atomic():
            log = ReviewLog.objects.create(
                card=card, user=card.user, item=card.item, item_slug=card.item.slug, card_version=version,
                rating=rating, reviewed_at=now, state_before=scheduled.state_before,
                retrievability=scheduled.retrievability, stability_after=card.stability, due_after=card.due,
                **fields)
            moved = Card.objects.filter(pk=card.pk, version=version).update(
                state=card.state, step=card.step, stability=card.stability, difficulty=card.difficulty,
                due=card.due, last_review=card.last_review, reps=card.reps, lapses=card.lapses,
                version=version + 1, pending_problem=None)
            if not moved:
                raise IntegrityError("the card moved on while this review was written")
    except IntegrityError:
        return _earlier(card.pk, version)
    card.version = version + 1
    return Outcome(log, True)


def record_open_review(user, card_id: int, version: int, rating: int | None, *, answer: str = "",
                       said_aloud: bool = False, ticked: list[int] | None = None,
                       started_at: datetime | None = None, now: datetime | None = None) -> Outcome:
    """Record the self-rated review of an open question; ``rating`` ``None`` takes the rubric's suggestion."""
    now = _now(now)
    review_settings = ReviewSettings.stored_for(user)
    with transaction.atomic():
        card = _locked_card(user, card_id)
        if card.version != version:
            return _earlier(card.pk, version)
        total = len(card.item.rubric or ())
        ticked = sorted({index for index in ticked or () if 0 <= index < total})
        suggested = rating_for_rubric(len(ticked), total)
        rating = rating or suggested or ReviewLog.GOOD
        return _write(card, version, rating, now, review_settings,
                      duration_ms=_duration_ms(started_at, now), grade=len(ticked) / total if total else None,
                      suggested_rating=suggested, answer=answer.strip()[:20_000], said_aloud=said_aloud,
                      rubric_ticked=ticked)


def record_graded_review(user, card_id: int, version: int, rating: int, *, grade: float | None,
                         problem: ProblemInstance | None = None, attempt: Attempt | None = None,
                         started_at: datetime | None = None, now: datetime | None = None) -> Outcome:
    """Record the review of a card whose item was graded elsewhere: a round's worked or critique item.

    ``grade`` (0-1) is the score it was given there (an attempt's mean step credit, a critique's score) and
    ``rating`` the rating that score earns; the log keeps the ``problem`` and ``attempt`` of a worked item, as
    :func:`record_problem_review` does, and no rubric ticks, so progress, exports and the coach's tables read
    the one score the round's report shows. A page older than the card's version gets the earlier review.
    """
    now = _now(now)
    with transaction.atomic():
        card = _current_card(user, card_id, version)
        if card is None:
            return _earlier(card_id, version)
        return _write(card, version, rating, now, ReviewSettings.stored_for(user),
                      duration_ms=_duration_ms(started_at, now), grade=grade, suggested_rating=rating,
                      problem=problem, attempt=attempt)


def record_problem_review(user, card_id: int, version: int, answers: dict[str, str], *,
                          followups: list[dict] | None = None, started_at: datetime | None = None,
                          now: datetime | None = None) -> Outcome:
    """Grade a template card's variant and its follow-up chain, store the attempt and its follow-ups, and record
    the review rated by the rule from the chain's score (issue 33: the chain is the card).

    ``followups`` holds one ``{"marked": [step keys], "values": {key: text}}`` per link of the variant's chain
    (:func:`drills.followups.services.chain`), answered on the card with the problem; each link is graded with
    error carried forward from the candidate's own answers and stored as a :class:`FollowUpAttempt` of the
    attempt. The log's ``grade`` and the rating are the chain's score
    (:func:`~drills.followups.services.chain_score`: the problem and each link weigh the same) and the time box
    grows by :data:`~drills.followups.services.FOLLOWUP_BOX_S` a link. ``None`` (a caller that did not show the
    chain) grades the problem alone.

    Raises :class:`UnreadableAnswers` (and writes nothing: no attempt, no log,
    the card's version and schedule unchanged) when a typed step or a marked
    follow-up's value cannot be read; a follow-up's message is keyed
    ``fu<n>-value-<key>``. A page older than the card's version still gets the
    review already recorded, whatever it typed: there is nothing left to correct.
    """
    now = _now(now)
    review_settings = ReviewSettings.stored_for(user)
    with transaction.atomic():
        card = _locked_card(user, card_id)
        if card.version != version:
            return _earlier(card.pk, version)
        problem = problem_for(card)
        duration = _duration_ms(started_at, now)
        seconds = duration / 1000 if duration is not None else None
        links = followup_chain(problem) if followups is not None else ()
        replies = list(followups or ())
        refused = unreadable_replies(links, replies)
        if refused:  # nothing is written: the problem's unreadable steps are named with the follow-ups'
            problem_refused = unreadable_steps(grade_problem(problem, answers))
            raise UnreadableAnswers({**problem_refused, **refused})

        def review(graded: Grade, attempt: Attempt | None) -> Outcome:
            linked = grade_chain(problem, links, answers, replies)
            for position, result in enumerate(linked):
                if attempt is not None:
                    store_link(user, problem, position, result, attempt, replies[position].get("marked", []),
                               replies[position].get("values", {}))
            score = chain_score(graded.score, linked)
            box = time_box_of(card.item, len(graded.steps))
            if box and linked:
                box += FOLLOWUP_BOX_S * len(linked)
            rating = rating_for_problem(score, seconds, box)
            return _write(card, version, rating, now, review_settings, duration_ms=duration, grade=score,
                          suggested_rating=rating, problem=problem, attempt=attempt)

        # Unreadable steps are checked before anything is written (strict): a typo is the candidate's to fix,
        # not a recall failure that rates Again and reschedules the card. Raising inside the atomic block
        # releases the row lock. The attempt carries the review's clock, not the wall clock.
        return submit(problem, user, answers, started_at=started_at, now=now, time_taken_s=seconds, strict=True,
                      review=review).review


def card_of(user, card_id: int) -> Card:
    """The user's card (``Card.DoesNotExist`` for another candidate's).

    Its chapter comes along for the card's heading and link only: the chapter's body and search text (some
    70 kB for a long chapter) are left in the database, as reading them was a third of the query's time.
    """
    return (Card.objects.select_related("item", "item__chapter", "pending_problem")
            .defer(*chapter_text("item__chapter")).get(pk=card_id, user=user))


# What revealing an open question's answer reads of its card: the card's FSRS state (the rating buttons'
# intervals), its counts and version; the item's prompt, model answer, rubric and details, its kind and family
# (a problem template is sent to the card page), whether it is published; the chapter's number, slug and title
# (the heading's link). Nothing else of the item is shown (its search text, source path, fixed inputs...).
REVEAL_FIELDS = (
    "user", "item", "state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses", "version",
    "suspended",
    *(f"item__{name}" for name in ("kind", "slug", "prompt", "model_answer", "rubric", "chapter", "topic",
                                   "family", "details", "published")),
    *(f"item__chapter__{name}" for name in ("number", "slug", "title")),
    "user__review_settings",
)

def card_to_reveal(user, card_id: int) -> Card:
    """The user's card with only what revealing its model answer shows (:data:`REVEAL_FIELDS`), and the
    user's review settings (the rating buttons' intervals depend on them) read in the same query; get those
    with :func:`owner_settings`. Its ``has_grading_endpoint`` says, from the same query, whether the user has an
    endpoint grading their answers (:func:`llm_grading.services.endpoints_of`).

    Raises ``Card.DoesNotExist`` for another candidate's card. Its pending problem is not read: only an open
    question's card is revealed (the view sends a problem template's to the card page first).
    """
    return (Card.objects.select_related("item", "item__chapter", "user__review_settings").only(*REVEAL_FIELDS)
            .annotate(has_grading_endpoint=Exists(model_grading.endpoints_of(OuterRef("user"))))
            .get(pk=card_id, user=user))


def owner_settings(card: Card) -> ReviewSettings:
    """The review settings of ``card``'s owner as :func:`card_to_reveal` read them, or, when the owner has
    none yet, the defaults, unsaved (the same read found none; revealing an answer records nothing)."""
    try:
        return card.user.review_settings
    except ReviewSettings.DoesNotExist:
        return ReviewSettings(user=card.user)


def is_problem(item: BankItem) -> bool:
    """Whether ``item`` is a problem template (reviewed by working a fresh variant)."""
    return item.kind == BankItem.PROBLEM and bool(item.family)


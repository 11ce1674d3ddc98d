"""Scheduling with FSRS: the deck, the due queue of a candidate's local day, the interview date, the ratings.

Every function takes ``now`` (an aware datetime; ``timezone.now()`` when
omitted), so tests move the clock by passing it.

- **The deck.** :func:`add_to_deck` puts bank items in a candidate's deck (one
  at a time, a chapter, a track, a chapter's questions once finished, or a bank
  search); a new card is due at once.
- **Local days.** "Due today" means before the end of the candidate's own day in
  their time zone, a day that turns at ``REVIEW_DAY_STARTS_HOUR`` (04:00 by
  default, as in Anki: a review at 01:00 still counts for the evening before)
  (:func:`local_today`, :func:`day_bounds`); streaks count these days too.
- **The queue** (:func:`due_queue`): cards due by the end of the local day. Those
  due now come first — oldest due first, or, with an interview date, those that
  would be *least* remembered on the interview day if not reviewed now (their
  FSRS recall at that day's start, ascending: :func:`drills.reviews.recall.recall_at`,
  the one computation of recall) — then those due later today (a card
  just failed comes back after its relearning step).
- **The intervals.** :func:`next_outcomes` gives every rating's next state from
  the card's current one (``drills.reviews.intervals``): Again ≤ Hard < Good ≤
  Easy, never past ``REVIEW_MAXIMUM_INTERVAL_DAYS`` (365 by default), fuzzed by
  one draw per card version so the buttons show what a rating will do.
- **The interview date.** Besides the queue order, a review whose next due would
  fall after the interview while the card would then be below the desired
  retention on the day (fuzzing can do that) is brought back to the day before.
  :func:`retention_on_day` gives the expected retention on the day per chapter;
  the forecasts stop at the date.
- **Ratings.** :func:`rating_for_problem` (the rule stated on the review page)
  and :func:`rating_for_rubric` (the suggestion for open questions).
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone
from typing import Any, Collection, Iterable, Mapping, NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, Min, OuterRef, Q, Subquery, Window
from django.utils import timezone
from fsrs import Rating, Scheduler, State
from fsrs.scheduler import DEFAULT_PARAMETERS

from drills.bank.models import visible_condition
from drills.bank.problem_templates import time_box_s
from drills.models import BankItem, Card, ReviewLog, ReviewSettings
from drills.reviews.intervals import Outcome, fuzz_draw, outcomes
from drills.reviews.recall import recall_at
from runbook.models import chapter_text

# Interval fuzzing spreads reviews out; tests switch it off for exact dates.
FUZZ = True

AGAIN, HARD, GOOD, EASY = ReviewLog.AGAIN, ReviewLog.HARD, ReviewLog.GOOD, ReviewLog.EASY
RATING_LABELS = dict(ReviewLog.RATINGS)

# The rating rule for problem templates (score is the grader's mean credit, 0 to 1).
AGAIN_BELOW = 0.5
HARD_BELOW = 0.8
EASY_FROM = 0.95
SLOW_FACTOR = 2.0  # over twice the time box, a good score is still only Hard
RATING_RULE = (f"Score under {AGAIN_BELOW:.0%} → Again; under {HARD_BELOW:.0%} → Hard; otherwise Good — "
               f"Easy when the score is at least {EASY_FROM:.0%} and you finished inside the time box, Hard "
               f"when you took more than {SLOW_FACTOR:g}× the time box.")
RUBRIC_RULE = (f"The suggestion: under {AGAIN_BELOW:.0%} of the points → Again, under {HARD_BELOW:.0%} "
               f"→ Hard, otherwise Good; every point → Easy.")


def _now(now: datetime | None) -> datetime:
    return (now or timezone.now()).astimezone(dt_timezone.utc)


# --- local days -------------------------------------------------------------------------


def day_starts_at() -> time:
    """The local time at which a review day turns (``REVIEW_DAY_STARTS_HOUR``, 04:00 by default)."""
    return time(settings.REVIEW_DAY_STARTS_HOUR)


def local_today(tz: zoneinfo.ZoneInfo, now: datetime | None = None) -> date:
    """The review day in ``tz`` at ``now`` (or any other instant): the calendar date, until the day turns.

    At 02:30 local time, with the day turning at 04:00, it is still the day before.
    """
    local = _now(now).astimezone(tz)
    return local.date() if local.time() >= day_starts_at() else local.date() - timedelta(days=1)


@dataclass(frozen=True)
class ReviewDay:
    """The review day at one instant in one zone, beside the calendar date there (see :func:`review_day`).

    ``day``: the review day (:func:`local_today`); ``calendar``: the date on the calendar; ``turns_at``: the
    local time the review day turns. Between midnight and ``turns_at`` the two dates differ
    (``before_turn``), and pages that show the review day say so.
    """

    day: date
    calendar: date
    turns_at: time

    @property
    def before_turn(self) -> bool:
        """Whether it is past midnight but the review day has not yet turned (``day`` is the calendar's eve)."""
        return self.day != self.calendar


def review_day(tz: zoneinfo.ZoneInfo, now: datetime | None = None) -> ReviewDay:
    """The review day in ``tz`` at ``now`` with the calendar date beside it: what every page showing "today"
    for reviews reads (the home page, /review/, /progress/ and the review settings).

    At 01:23 on Tuesday in ``tz`` the review day is Monday and the calendar says Tuesday.
    """
    return ReviewDay(local_today(tz, now), calendar_today(tz, now), day_starts_at())


def calendar_today(tz: zoneinfo.ZoneInfo, now: datetime | None = None) -> date:
    """The calendar date in ``tz`` at ``now``: what an interview date is counted from.

    The review day turns at 04:00 (:func:`local_today`), so that a late session still counts for the day it
    began; an interview is on a calendar date, so at 00:40 on its morning it is today, not tomorrow.
    """
    return _now(now).astimezone(tz).date()


def days_to_interview(review_settings: ReviewSettings, now: datetime | None = None) -> int | None:
    """Calendar days from today (in the settings' zone) to the interview date: 0 on the day, ``None`` without
    a date or once it has passed (:func:`calendar_today`)."""
    day = review_settings.interview_date
    today = calendar_today(review_settings.tz, now)
    return (day - today).days if day and day >= today else None


def day_bounds(tz: zoneinfo.ZoneInfo, day: date) -> tuple[datetime, datetime]:
    """The UTC instants where review ``day`` starts and ends (23 or 25 hours long across a DST change)."""
    start = datetime.combine(day, day_starts_at(), tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), day_starts_at(), tzinfo=tz)
    return start.astimezone(dt_timezone.utc), end.astimezone(dt_timezone.utc)


def interview_start(review_settings: ReviewSettings, now: datetime | None = None) -> datetime | None:
    """When the interview day begins (its review day, local), or ``None`` without a date still to come."""
    day = review_settings.interview_date
    if day is None or day < local_today(review_settings.tz, now):
        return None
    return day_bounds(review_settings.tz, day)[0]


# --- the scheduler ------------------------------------------------------------------------


def scheduler_for(review_settings: ReviewSettings | None, fuzz: bool | None = None) -> Scheduler:
    """The candidate's FSRS scheduler: their fitted parameters (or the defaults), desired retention and the
    site's maximum interval (``REVIEW_MAXIMUM_INTERVAL_DAYS``)."""
    parameters = DEFAULT_PARAMETERS
    retention = 0.9
    if review_settings is not None:
        retention = review_settings.desired_retention
        if review_settings.parameters and len(review_settings.parameters) == len(DEFAULT_PARAMETERS):
            parameters = review_settings.parameters
    common = {"desired_retention": retention, "maximum_interval": settings.REVIEW_MAXIMUM_INTERVAL_DAYS,
              "enable_fuzzing": FUZZ if fuzz is None else fuzz}
    try:
        return Scheduler(parameters=parameters, **common)
    except ValueError:  # stored parameters out of the package's bounds: fall back to the defaults
        return Scheduler(**common)


@dataclass
class Scheduled:
    """The outcome of one rating: the card's new state (applied to the row, not saved) and the log's numbers."""

    state_before: int
    retrievability: float | None
    due: datetime


def next_outcomes(card: Card, review_settings: ReviewSettings, now: datetime | None = None) -> dict[int, Outcome]:
    """Every rating's outcome for ``card`` reviewed at ``now``, keyed by rating: what the buttons show and
    what :func:`schedule` applies (the same fuzz draw for the card's version, the interview rule)."""
    now = _now(now)
    return outcomes(scheduler_for(review_settings, fuzz=False), card.to_fsrs(), now,
                    draw=fuzz_draw(card.pk or 0, card.version) if FUZZ else None,
                    interview=interview_start(review_settings, now), retention=review_settings.desired_retention)


def schedule(card: Card, rating: int, review_settings: ReviewSettings, now: datetime | None = None,
             duration_ms: int | None = None) -> Scheduled:
    """Rate ``card`` at ``now``: update its FSRS state on the row (the caller saves), as :func:`next_outcomes`."""
    now = _now(now)
    before = card.state
    recall = recall_at(scheduler_for(review_settings, fuzz=False), card.to_fsrs(), now) if card.last_review else None
    updated = next_outcomes(card, review_settings, now)[int(rating)].card
    card.take_fsrs(updated)
    card.reps += 1
    if before == Card.REVIEW and rating == AGAIN:
        card.lapses += 1
    return Scheduled(state_before=before, retrievability=recall, due=updated.due)


# --- the deck -----------------------------------------------------------------------------


def add_to_deck(user, items: Iterable[BankItem], via: str = Card.VIA_ITEM, now: datetime | None = None) -> int:
    """Put ``items`` in the user's deck (new cards due now; suspended ones back in); how many were added."""
    now = _now(now)
    items = list(items)
    allowed = set(BankItem.objects.visible_to(user).filter(pk__in=[item.pk for item in items])
                  .values_list("pk", flat=True)) if any(not item.published for item in items) else None
    items = [item for item in items if item.published or (allowed is not None and item.pk in allowed)]
    if not items:
        return 0
    with transaction.atomic():
        existing = dict(Card.objects.filter(user=user, item__in=items).values_list("item_id", "suspended"))
        fresh = [Card(user=user, item=item, due=now, added_via=via, added_at=now)
                 for item in items if item.pk not in existing]
        Card.objects.bulk_create(fresh, ignore_conflicts=True)
        revived = Card.objects.filter(user=user, item_id__in=[pk for pk, off in existing.items() if off]).update(
            suspended=False)
    return len(fresh) + revived


@dataclass(frozen=True)
class DeckBatch:
    """One bulk add to the deck, enough to take it back: how many cards went in, the moment (every new card's
    ``added_at``), and the ids of the suspended cards it put back."""

    added: int
    at: datetime
    revived: tuple[int, ...]


def add_batch(user, items: Iterable[BankItem], via: str, now: datetime | None = None) -> DeckBatch:
    """:func:`add_to_deck`, remembering what it changed so that :func:`undo_batch` can take it back."""
    now = _now(now)
    items = list(items)
    revived = tuple(Card.objects.filter(user=user, item__in=items, suspended=True).values_list("pk", flat=True))
    return DeckBatch(add_to_deck(user, items, via, now), now, revived)


def undo_batch(user, at: datetime, revived: Iterable[int]) -> tuple[int, int]:
    """Take a :class:`DeckBatch` back out of the deck (suspended, as :func:`remove_from_deck` does): the cards
    added at ``at`` and those it revived, except any reviewed since, which stay. Returns (taken out, kept)."""
    cards = Card.objects.of(user).filter(Q(added_at=at) | Q(pk__in=list(revived)))
    reviewed = cards.filter(Exists(ReviewLog.objects.filter(card=OuterRef("pk"), reviewed_at__gte=at)))
    kept = reviewed.count()
    return cards.exclude(pk__in=reviewed.values("pk")).update(suspended=True), kept


def remove_from_deck(user, item: BankItem) -> bool:
    """Take ``item`` out of the deck; the card and its history are kept (suspended)."""
    return bool(Card.objects.filter(user=user, item=item, suspended=False).update(suspended=True))


def chapter_items(chapter) -> list[BankItem]:
    """The published bank items of ``chapter``."""
    return list(BankItem.objects.published().filter(chapter=chapter))


def track_items(letter: str) -> list[BankItem]:
    """The published bank items of track ``letter`` (A–E)."""
    return list(BankItem.objects.published().filter(track=letter))


# --- the queue and forecasts ---------------------------------------------------------------


def _due_today(user, now: datetime, review_settings: ReviewSettings, excluding: Collection[int] = ()):
    """The user's cards due before their review day ends, on items they may still see, less the cards whose ids
    are in ``excluding``: what the queue holds."""
    _, end = day_bounds(review_settings.tz, local_today(review_settings.tz, now))
    return (Card.objects.of(user).due_by(end - timedelta(microseconds=1)).filter(visible_condition(user, "item__"))
            .exclude(pk__in=excluding))


def due_queue(user, now: datetime | None = None, review_settings: ReviewSettings | None = None,
              excluding: Collection[int] = ()) -> list[Card]:
    """The cards to review today, in order (see the module's docstring), less the cards whose ids are in
    ``excluding``."""
    now = _now(now)
    review_settings = review_settings or ReviewSettings.for_user(user)
    cards = list(_due_today(user, now, review_settings, excluding)
                 .select_related("item", "item__chapter").defer(*chapter_text("item__chapter")))
    due_now = [card for card in cards if card.due <= now]
    later = sorted((card for card in cards if card.due > now), key=lambda card: (card.due, card.pk))
    target = interview_start(review_settings, now)
    if target is None:
        due_now.sort(key=lambda card: (card.due, card.pk))
    else:
        scheduler = scheduler_for(review_settings)
        due_now.sort(key=lambda card: (recall_at(scheduler, card.to_fsrs(), target), card.due, card.pk))
    return due_now + later


class NextDue(NamedTuple):
    """The review page's head: the card to show (``None``: nothing due today), how many cards are left to finish
    today (due by the end of the local day, the one shown included), how many of those are relearning, and how
    many are due only later today with the first of those due times."""

    card: Card | None
    left: int
    relearning: int
    later: int = 0  # of ``left``, the cards not due yet but later today (learning steps, mostly)
    next_later: datetime | None = None  # when the first of those falls due


def next_due(user, now: datetime | None = None, review_settings: ReviewSettings | None = None,
             excluding: Collection[int] = (), also: Mapping[str, Any] | None = None) -> NextDue:
    """The first card of :func:`due_queue` (or ``None``), the queue's length and its relearning cards, as the
    review page shows them; the cards whose ids are in ``excluding`` (skipped by the page) are left out.

    ``now`` is an aware datetime (``timezone.now()`` when omitted). Without an interview date to come the
    queue's order is the database's (due, then id: the cards due now are all due before those due later
    today), so one query reads the first card with its item and chapter and counts the rest with a window,
    instead of building forty cards, items and chapters to show one. With an interview date the order is
    each card's retrievability on the day, computed in Python: :func:`due_queue` itself. ``also`` (name →
    query expression) is read with the first card in its query, as attributes of it, when there is that one
    query (not with an interview date to come). Raises nothing.
    """
    now = _now(now)
    review_settings = review_settings or ReviewSettings.for_user(user)
    if interview_start(review_settings, now) is not None:
        queue = due_queue(user, now, review_settings, excluding)
        later = [card.due for card in queue if card.due > now]
        return NextDue(queue[0] if queue else None, len(queue),
                       sum(1 for card in queue if card.state == Card.RELEARNING), len(later), min(later, default=None))
    first = (_due_today(user, now, review_settings, excluding)
             .select_related("item", "item__chapter").defer(*chapter_text("item__chapter"))
             .annotate(queue_length=Window(Count("pk")),
                       relearning=Window(Count("pk", filter=Q(state=Card.RELEARNING))),
                       later=Window(Count("pk", filter=Q(due__gt=now))),
                       next_later=Window(Min("due", filter=Q(due__gt=now))), **(also or {}))
             .order_by("due", "pk").first())
    if first is None:
        return NextDue(None, 0, 0)
    return NextDue(first, first.queue_length, first.relearning, first.later, first.next_later)


def due_count(user, now: datetime | None = None, review_settings: ReviewSettings | None = None) -> int:
    """How many cards :func:`due_queue` would return, counted by the database (one query, no rows loaded)."""
    now = _now(now)
    review_settings = review_settings or ReviewSettings.for_user(user)
    return _due_today(user, now, review_settings).count()


def horizon(review_settings: ReviewSettings, days: int, now: datetime | None = None) -> list[date]:
    """The local days a forecast covers: ``days`` from today, stopping at the interview date."""
    today = local_today(review_settings.tz, now)
    last = today + timedelta(days=days - 1)
    if review_settings.interview_date and today <= review_settings.interview_date < last:
        last = review_settings.interview_date
    return [today + timedelta(days=offset) for offset in range((last - today).days + 1)]


def due_forecast(user, days: int = 7, now: datetime | None = None,
                 review_settings: ReviewSettings | None = None) -> list[tuple[date, int]]:
    """How many cards fall due on each local day (today counts everything overdue), to the interview date."""
    review_settings = review_settings or ReviewSettings.for_user(user)
    dates = horizon(review_settings, days, now)
    _, end = day_bounds(review_settings.tz, dates[-1])
    return _per_day(Card.objects.of(user).filter(due__lt=end).values_list("due", flat=True), dates,
                    review_settings.tz)


def forecast_and_deck(user, days: int = 7, now: datetime | None = None,
                      review_settings: ReviewSettings | None = None) -> tuple[list[tuple[date, int]], int]:
    """:func:`due_forecast` and the deck's size (the user's cards, suspended ones left out).

    ``days``: how many local days from today (fewer when the interview date comes first); ``now`` an aware
    datetime. One query when any card falls due in the forecast: each due date comes with the deck's size (an
    uncorrelated subquery, counted once); a second query counts the deck only when none does. Raises nothing.
    """
    review_settings = review_settings or ReviewSettings.for_user(user)
    dates = horizon(review_settings, days, now)
    _, end = day_bounds(review_settings.tz, dates[-1])
    deck = Card.objects.of(user).order_by().values("user").annotate(size=Count("pk")).values("size")
    rows = list(Card.objects.of(user).filter(due__lt=end).order_by().values_list("due", Subquery(deck)))
    forecast = _per_day((due for due, _ in rows), dates, review_settings.tz)
    return forecast, rows[0][1] if rows else Card.objects.of(user).count()


def _per_day(dues: Iterable[datetime], dates: list[date], tz: zoneinfo.ZoneInfo) -> list[tuple[date, int]]:
    """How many of ``dues`` fall on each of ``dates`` (local review days in ``tz``; earlier ones on the first)."""
    counts = dict.fromkeys(dates, 0)
    for due in dues:
        counts[max(local_today(tz, due), dates[0])] += 1
    return list(counts.items())


@dataclass
class ChapterRetention:
    """Expected recall on the interview day for one chapter's cards: ``cards`` in the deck, ``reviewed`` of them
    reviewed at least once, and the mean recall of those (``None`` when none is: FSRS knows nothing of a card
    never reviewed, and its "0 %" would be no prediction). Every figure shown says how many cards it covers
    (the new ones are counted apart, never as remembered)."""

    label: str
    cards: int
    reviewed: int
    if_stopped: float | None
    if_kept_up: float | None


def _kept_up(scheduler: Scheduler, card: Card, now: datetime, target: datetime) -> float:
    """Recall on ``target`` if every review falling due before it is done on time and passed (rated Good)."""
    state = card.to_fsrs()
    for _ in range(64):
        if state.due >= target:
            break
        state, _ = scheduler.review_card(state, Rating.Good, review_datetime=max(state.due, now))
    return recall_at(scheduler, state, target)


def retention_on_day(user, now: datetime | None = None,
                     review_settings: ReviewSettings | None = None) -> list[ChapterRetention]:
    """Per chapter: the mean FSRS recall (:func:`recall_at`) of its reviewed cards when the interview day begins,
    if the candidate stopped reviewing now and if they keep up (``None`` for a chapter none of whose cards was
    ever reviewed); each row counts its cards and the reviewed ones. Empty without an interview date to come."""
    now = _now(now)
    review_settings = review_settings or ReviewSettings.for_user(user)
    target = interview_start(review_settings, now)
    if target is None:
        return []
    scheduler = scheduler_for(review_settings, fuzz=False)
    groups: dict[tuple, list[Card]] = {}
    for card in Card.objects.of(user).select_related("item__chapter").defer(*chapter_text("item__chapter")):
        chapter = card.item.chapter
        key = (chapter.number, f"{chapter.label} · {chapter.title}") if chapter else (999, "No chapter")
        groups.setdefault(key, []).append(card)
    rows = []
    for (_, label), cards in sorted(groups.items()):
        seen = [card for card in cards if not card.is_new]
        stopped = [recall_at(scheduler, card.to_fsrs(), target) for card in seen]
        kept = [_kept_up(scheduler, card, now, target) for card in seen]
        rows.append(ChapterRetention(label, len(cards), len(seen), sum(stopped) / len(seen) if seen else None,
                                     sum(kept) / len(seen) if seen else None))
    return rows


# --- ratings ------------------------------------------------------------------------------


def rating_for_problem(score: float, seconds: float | None, time_box_s: float | None) -> int:
    """The rating a graded problem earns from its score and the time taken (:data:`RATING_RULE`)."""
    if score < AGAIN_BELOW:
        return AGAIN
    if score < HARD_BELOW:
        return HARD
    if seconds is not None and time_box_s and seconds > SLOW_FACTOR * time_box_s:
        return HARD
    if score >= EASY_FROM and seconds is not None and time_box_s and seconds <= time_box_s:
        return EASY
    return GOOD


def rating_for_rubric(ticked: int, total: int) -> int | None:
    """The rating suggested by ``ticked`` of ``total`` rubric points (``None`` without a rubric)."""
    if total <= 0:
        return None
    share = ticked / total
    if share < AGAIN_BELOW:
        return AGAIN
    if share < HARD_BELOW:
        return HARD
    return EASY if ticked >= total else GOOD


def time_box_of(item: BankItem, step_count: int | None = None) -> int | None:
    """A problem template's time box in seconds (its ``details``, else 45 s a step, at least 2 minutes)."""
    box = (item.details or {}).get("time_box_s")
    if box:
        return int(box)
    return time_box_s(step_count) if step_count else None


def state_label(state: int) -> str:
    """The name of an FSRS card state (Learning, Review, Relearning)."""
    return {State.Learning.value: "Learning", State.Review.value: "Review",
            State.Relearning.value: "Relearning"}.get(state, str(state))

"""The next interval of every rating from one card state, kept in order: Again ≤ Hard < Good ≤ Easy.

The ``fsrs`` package computes one rating at a time, and two things can put its
Hard at or past its Good: rounding (a same-day review, or any two stabilities
that round to the same whole day, or both clipped at the maximum interval) and
fuzzing, which draws each rating's spread independently. Here the four outcomes
are computed together from one state (``fsrs.Scheduler.review_card``, fuzzing
off), then:

1. **Fuzz** (when on): one random draw per card and version, shared by the
   three passing ratings, mapped into the package's own fuzz range
   (``fsrs.scheduler.FUZZ_RANGES``, intervals of 2.5 days or more): a monotone
   map, so it keeps their order, and the same draw gives the same intervals when
   the buttons are drawn and when the rating is recorded.
2. **The interview day**: a passing rating that would fall due after the
   interview, where recall at the day's start (:func:`drills.reviews.recall.recall_at`)
   would be under the desired retention,
   comes back on the day before (whole days from now; nothing moves once that
   day has begun).
3. **Order and ceiling**: Good at least one day more than Hard, Easy at least
   Good, none past the maximum interval (so at the ceiling Hard is one day
   under it). When Good is a single day (an interview two days off), Hard is
   half of it.

Again is always a (re)learning step of minutes, at most Hard's. Sources: the
package's scheduler (``fsrs/scheduler.py``, v6), and Anki's rule of keeping
Good past Hard (``rslib/src/scheduler/states/review.rs``, ``passing_review_intervals``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from fsrs import Card as FsrsCard
from fsrs import Rating, Scheduler, State
from fsrs.scheduler import FUZZ_RANGES

from drills.reviews.recall import recall_at

DAY = timedelta(days=1)
RATINGS = (Rating.Again, Rating.Hard, Rating.Good, Rating.Easy)


@dataclass(frozen=True)
class Outcome:
    """What one rating does: the card's next FSRS state (its ``due`` already adjusted) and the interval."""

    rating: int
    card: FsrsCard
    interval: timedelta


def fuzz_draw(card_pk: int, version: int) -> float:
    """The fuzz draw in [0, 1) for one card at one version: the same for the buttons and the recorded rating."""
    return random.Random(f"fsrs-fuzz:{card_pk}:{version}").random()  # nosec B311 - spreads reviews, not security


def fuzzed_days(days: int, draw: float, maximum_days: int) -> int:
    """``days`` moved within the fsrs package's fuzz range by ``draw`` (in [0, 1)); under 2.5 days, unchanged.

    The range is the package's (``FUZZ_RANGES``: ±15 % of the part between 2.5 and 7 days, ±10 % of
    7–20, ±5 % beyond, plus one day), clipped to [2, ``maximum_days``]. For a fixed draw the result never
    decreases as ``days`` grows, so the order of the passing ratings survives.
    """
    if days < 2.5:
        return days
    delta = 1.0
    for band in FUZZ_RANGES:
        delta += band["factor"] * max(min(float(days), band["end"]) - band["start"], 0.0)
    low = max(2, round(days - delta))
    high = min(round(days + delta), maximum_days)
    low = min(low, high)
    return min(low + math.floor(draw * (high - low + 1)), high)


def outcomes(scheduler: Scheduler, card: FsrsCard, now: datetime, *, draw: float | None = None,
             interview: datetime | None = None, retention: float = 0.9) -> dict[int, Outcome]:
    """The four ratings' outcomes for ``card`` reviewed at ``now`` (aware, UTC), keyed by rating (1–4).

    ``scheduler`` must not fuzz (fuzzing is ``draw``'s job) and carries the maximum interval in days.
    ``interview``: when the interview day begins (UTC), or ``None``; ``retention``: the recall the
    candidate wants on that day. Raises ``ValueError`` for a ``now`` that is not aware UTC (the package's).
    """
    if scheduler.enable_fuzzing:
        raise ValueError("outcomes() fuzzes through draw; pass a scheduler with enable_fuzzing=False")
    maximum = scheduler.maximum_interval
    states = {int(rating): scheduler.review_card(card, rating, review_datetime=now)[0] for rating in RATINGS}
    passing = {rating: round((state.due - now) / DAY) for rating, state in states.items()
               if rating != Rating.Again and state.state == State.Review}

    if draw is not None:
        passing = {rating: fuzzed_days(days, draw, maximum) for rating, days in passing.items()}

    ceilings = dict.fromkeys(passing, maximum)
    if interview is not None:
        before = math.ceil((interview - DAY - now) / DAY)  # whole days from now into the day before
        if before >= 1:
            for rating, days in passing.items():
                if (now + days * DAY > interview
                        and recall_at(scheduler, states[rating], interview) < retention):
                    ceilings[rating] = min(maximum, before)

    intervals = {rating: state.due - now for rating, state in states.items()}
    hard, good, easy = int(Rating.Hard), int(Rating.Good), int(Rating.Easy)
    good_days = 0  # Good still a learning step (minutes): Easy needs no floor
    if good in passing:  # Hard passes only where Good does (a card already in Review)
        good_days = min(passing[good], ceilings[good])
        if hard in passing:
            good_days = min(max(good_days, passing[hard] + 1), ceilings[good])
            hard_days = min(passing[hard], ceilings[hard], good_days - 1)
            intervals[hard] = hard_days * DAY if hard_days >= 1 else good_days * DAY / 2
        intervals[good] = good_days * DAY
    if easy in passing:
        intervals[easy] = max(min(passing[easy], ceilings[easy]), good_days) * DAY
    result = {}
    for rating, state in states.items():
        state.due = now + intervals[rating]
        result[rating] = Outcome(rating, state, intervals[rating])
    return result


def interval_label(interval: timedelta) -> str:
    """A short label for a button: ``10 min``, ``5 h``, ``3 d``, ``4.2 mo``, ``1 y`` (months of 30.44 days)."""
    minutes = interval.total_seconds() / 60
    if minutes < 60:
        return f"{max(1, round(minutes))} min"
    if minutes < 24 * 60:
        return f"{round(minutes / 60)} h"
    days = interval / DAY
    if days < 60:
        return f"{round(days)} d"
    if days < 365:
        return f"{days / 30.44:.1f} mo"
    years = days / 365
    return f"{years:.0f} y" if abs(years - round(years)) < 0.05 else f"{years:.1f} y"

"""FSRS's forgetting curve, the one computation of recall (drills.reviews.recall.recall_at).

R(t) = (1 + FACTOR·t/S)^DECAY with the fsrs package's constants: DECAY = −w20 (−0.1542 by default) and
FACTOR = 0.9^(1/DECAY) − 1 = 0.9^(−6.48508) − 1 = 0.98035; t in days counted to the second.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from fsrs import Card as FsrsCard
from fsrs import Scheduler
from fsrs.scheduler import DEFAULT_PARAMETERS

from drills.reviews.recall import recall_at

T = datetime(2026, 3, 2, 8, 0, tzinfo=dt_timezone.utc)


def _card(stability: float | None, last_review: datetime | None = T) -> FsrsCard:
    return FsrsCard(stability=stability, difficulty=5.0, last_review=last_review)


@pytest.mark.parametrize("days, stability", [(1, 3.0), (7, 3.0), (40, 12.5), (3, 0.4)])
def test_on_whole_days_it_is_the_packages_curve(days, stability):
    """On whole days the package's public get_card_retrievability computes the same curve with its own constants."""
    scheduler = Scheduler(enable_fuzzing=False)
    card = _card(stability)
    moment = T + timedelta(days=days)
    assert recall_at(scheduler, card, moment) == pytest.approx(
        scheduler.get_card_retrievability(card, current_datetime=moment), rel=1e-12)


@pytest.mark.parametrize("elapsed, stability, expected", [
    (timedelta(0), 3.0, 1.0),                   # just reviewed
    (timedelta(days=3), 3.0, 0.9),              # t = S: the 90 % FSRS defines stability by
    (timedelta(days=23), 3.0, 0.7187),          # (1 + 0.98035 · 7.6667)^-0.1542
    (timedelta(hours=20), 0.5, 0.8613),         # 0.8333 days: (1 + 0.98035 · 1.6667)^-0.1542 = 2.63392^-0.1542
    (timedelta(days=-1), 3.0, 1.0),             # a moment before the last review counts as no time
])
def test_recall_at_the_default_decay(elapsed, stability, expected):
    scheduler = Scheduler(enable_fuzzing=False)
    assert recall_at(scheduler, _card(stability), T + elapsed) == pytest.approx(expected, abs=1e-4)


def test_hours_count_where_whole_days_would_not():
    """20 hours after a failed review (S = 0.5 days): 0.8613 to the second, where fsrs's whole days read 0 days,
    R = 1."""
    scheduler = Scheduler(enable_fuzzing=False)
    moment = T + timedelta(hours=20)
    assert scheduler.get_card_retrievability(_card(0.5), moment) == 1.0
    assert recall_at(scheduler, _card(0.5), moment) == pytest.approx(0.8613, abs=1e-4)


def test_a_fitted_decay_is_the_schedulers():
    """w20 = 0.5 (FSRS-5's fixed decay): DECAY = −0.5, FACTOR = 0.9^(−2) − 1 = 19/81; 10 days at S = 5:
    (1 + 19/81 · 2)^−0.5 = (119/81)^−0.5 = 9/√119 = 0.825029."""
    parameters = list(DEFAULT_PARAMETERS)
    parameters[20] = 0.5
    scheduler = Scheduler(parameters=parameters, enable_fuzzing=False)
    assert recall_at(scheduler, _card(5.0), T + timedelta(days=10)) == pytest.approx(0.825029, abs=1e-6)


def test_a_card_never_reviewed_has_no_recall():
    scheduler = Scheduler(enable_fuzzing=False)
    assert recall_at(scheduler, _card(None, None), T) == 0.0
    assert recall_at(scheduler, _card(None), T) == 0.0

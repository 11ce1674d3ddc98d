"""FSRS's forgetting curve: the one computation of how likely a card is to be recalled at a moment.

Every reader of recall uses :func:`recall_at`: the review queue's order before an interview, the retrievability a
review log keeps, the interview rule of the rating buttons (``drills.reviews.intervals``), the weakest cards a
round draws, and the expected recall on the interview day.

``fsrs.Scheduler.get_card_retrievability`` computes the same curve on whole days elapsed (``timedelta.days``), as
the package's day-based scheduling does; recall at one moment cannot round the time down: a card failed this
afternoon (S ≈ 0.2 days) would read 100 % at tomorrow's day start, less than 24 hours later, and every card
reviewed under a day ago would tie at 100 % in the queue. So the curve is computed here with the time counted to
the second, and its constants derived from the scheduler's public parameters (``Scheduler.parameters[20]``) the
way the package derives its own (its ``_DECAY`` and ``_FACTOR`` are private and not read here).
"""

from __future__ import annotations

from datetime import datetime

from fsrs import Card as FsrsCard
from fsrs import Scheduler

SECONDS_PER_DAY = 86_400


def recall_at(scheduler: Scheduler, state: FsrsCard, moment: datetime) -> float:
    """The probability (0-1) that ``state`` (an ``fsrs.Card``) is recalled at ``moment`` (an aware datetime).

    R = (1 + FACTOR·t/S)^DECAY (FSRS-6), t the time since the card's last review in days (fractional, 0 when
    ``moment`` is before it), S its stability in days, DECAY = −w20 of the scheduler's parameters (−0.1542 by
    default) and FACTOR = 0.9^(1/DECAY) − 1 (0.98035 by default), so that R = 0.9 when t = S: the constants
    ``scheduler`` itself schedules with. 0 for a card never reviewed (no last review or no stability). Raises
    nothing. Source: ``fsrs/scheduler.py`` (v6), ``Scheduler.__init__`` and ``get_card_retrievability``.
    """
    if state.last_review is None or state.stability is None:
        return 0.0
    decay = -scheduler.parameters[20]
    factor = 0.9 ** (1 / decay) - 1
    elapsed = max(0.0, (moment - state.last_review).total_seconds() / SECONDS_PER_DAY)
    return float((1 + factor * elapsed / state.stability) ** decay)

"""Fixtures of the spaced-repetition tests: a small bank, the problem templates, a clock.

``bank`` holds chapter 06 (track B) with three open questions (rubrics of 4, 3
and 2 points) and chapter 04 (track B) with one, plus the seventeen problem
templates of :func:`drills.bank.problem_templates.sync_problem_templates`. Intervals are
not fuzzed here, so every due date is exact.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timezone as dt_timezone

import pytest

from accounts.timezones import set_time_zone
from drills.models import ReviewSettings
from tests.drills.problems.answers import right_answers
from tests.factories import BankItemFactory, ChapterFactory, problem_templates

# Monday 2 March 2026, 08:00 UTC (09:00 in Paris, CET).
T0 = datetime(2026, 3, 2, 8, 0, tzinfo=dt_timezone.utc)


@pytest.fixture(autouse=True)
def no_fuzz(monkeypatch):
    monkeypatch.setattr("drills.reviews.scheduling.FUZZ", False)


@pytest.fixture
def bank(db):
    kv = ChapterFactory(number=6, slug="06-kv-cache", track="B", title="The KV cache")
    roofline = ChapterFactory(number=4, slug="04-gpu-roofline", track="B", title="The GPU and the roofline")
    items = {
        "kv-formula": BankItemFactory(slug="kv-formula", chapter=kv,
                                      rubric=["Factor 2 for K and V", "KV heads not query heads", "Bytes not bits",
                                              "Per token per layer"]),
        "kv-paged": BankItemFactory(slug="kv-paged", chapter=kv,
                                    rubric=["Worst case 53", "Paged 191", "Which to quote"],
                                    roles=["architect", "manager"], difficulty=3, topic="paging"),
        "kv-fp8": BankItemFactory(slug="kv-fp8", chapter=kv, rubric=["Halves the cache", "Quality check"],
                                  difficulty=1),
        "ridge": BankItemFactory(slug="ridge", chapter=roofline, rubric=["295 FLOP/byte", "Decode is memory-bound"],
                                 topic="Roofline and hardware"),
    }
    return {**items, **problem_templates()}


def settings_for(user, time_zone: str | None = None, **fields) -> ReviewSettings:
    """The user's review settings with ``fields`` saved, and their time zone when given (an accounts preference)."""
    if time_zone is not None:
        set_time_zone(user, time_zone)
    row = ReviewSettings.for_user(user)
    for name, value in fields.items():
        setattr(row, name, value)
    row.save()
    return row


def right_chain(problem) -> dict:
    """The review card's follow-up fields for ``problem``'s chain, every link answered right (the moving steps
    marked, with their exact new values): what a card's answer posts beside the problem's steps (issue 33)."""
    from drills.followups.services import chain

    fields: dict = {}
    for position, link in enumerate(chain(problem)):
        fields[f"fu{position}-marked"] = list(link.moves)
        fields.update({f"fu{position}-value-{key}": repr(link.result.values[key]) for key in link.moves})
    return fields


@pytest.fixture
def h():
    """The helpers of this folder, for the test modules (which cannot import a conftest)."""
    from types import SimpleNamespace

    return SimpleNamespace(T0=T0, settings=settings_for, answers=right_answers, chain=right_chain)

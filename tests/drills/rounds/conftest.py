"""Fixtures of the round tests: a small bank with every kind a preset draws, a movable server clock.

``bank`` holds two chapters, four open questions (one for managers), a design
prompt, a critique drill (five lines, two planted errors) and the seventeen
problem templates. ``clock`` patches ``django.utils.timezone.now`` so views see
the time a test sets (``clock.set(t)``, ``clock.advance(seconds=…)``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from types import SimpleNamespace

import pytest

from drills.models import BankItem
from tests.drills.problems.answers import right_answers
from tests.factories import BankItemFactory, ChapterFactory, problem_templates
from tests.url_table import CRITIQUE_DETAILS

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=dt_timezone.utc)


@pytest.fixture(autouse=True)
def no_fuzz(monkeypatch):
    monkeypatch.setattr("drills.reviews.scheduling.FUZZ", False)


@pytest.fixture
def bank(db):
    kv = ChapterFactory(number=6, slug="06-kv-cache", track="B", title="The KV cache")
    plan = ChapterFactory(number=14, slug="14-capacity-planning", track="D", title="Capacity planning")
    items = {
        "kv-formula": BankItemFactory(slug="kv-formula", chapter=kv,
                                      rubric=["Factor 2 for K and V", "KV heads not query heads", "Bytes not bits",
                                              "Per token per layer"],
                                      misconceptions=["query-heads-for-kv-heads"]),
        "kv-paged": BankItemFactory(slug="kv-paged", chapter=kv,
                                    rubric=["Worst case 53", "Paged 191", "Which to quote"]),
        "kv-fp8": BankItemFactory(slug="kv-fp8", chapter=kv, rubric=["Halves the cache", "Quality check"]),
        "cost-per-token": BankItemFactory(slug="cost-per-token", chapter=plan,
                                          rubric=["GPU-hours", "Utilisation", "Tokens per second"], roles=["manager"]),
        "design-chat": BankItemFactory(slug="design-chat", chapter=plan,
                                       rubric=["States assumptions", "Sizes the cache", "Counts nodes"],
                                       kind=BankItem.DESIGN, roles=["architect"],
                                       details={"title": "Chat", "levels": {"mid": ["Weights"], "staff": ["Fleet"]}}),
        "tiny-doc": BankItemFactory(slug="tiny-doc", chapter=plan, rubric=["Finds the GQA error"],
                                    kind=BankItem.CRITIQUE, details=CRITIQUE_DETAILS),
    }
    return {**items, **problem_templates()}


class Clock:
    def __init__(self, monkeypatch, start: datetime):
        self.now = start
        monkeypatch.setattr("django.utils.timezone.now", lambda: self.now)

    def set(self, moment: datetime) -> datetime:
        self.now = moment
        return moment

    def advance(self, **delta) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch):
    return Clock(monkeypatch, T0)


@pytest.fixture
def h():
    return SimpleNamespace(T0=T0, answers=right_answers)

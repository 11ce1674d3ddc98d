"""Fixtures of the coaching tests: a coach with a cohort of two candidates, strangers, a small bank, a clock.

``world`` holds carol (coach) with the cohort "Spring" of demo and demo2, an
unrelated candidate eve, another coach dave, staff sam, an open question carol
wrote, the problem templates, and a set (the open question, then the ladder
fixed to the 70B on an H200) assigned to the cohort, due two days after T0.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from types import SimpleNamespace

import pytest

from coaching import services
from coaching.models import QuestionSet
from drills.bank.problem_templates import sync_problem_templates
from drills.models import BankItem
from tests.factories import UserFactory

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=dt_timezone.utc)
FIXED = {"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"}


@pytest.fixture(autouse=True)
def no_fuzz(monkeypatch):
    monkeypatch.setattr("drills.reviews.scheduling.FUZZ", False)


def right_answers(problem) -> dict[str, str]:
    return {step.key: repr(step.value) for step in problem.solve().steps}


@pytest.fixture
def world(db, django_capture_on_commit_callbacks):
    sync_problem_templates()
    coach = UserFactory(username="carol", role="coach")
    demo, demo2, eve = (UserFactory(username=name, role="candidate") for name in ("demo", "demo2", "eve"))
    dave = UserFactory(username="dave", role="coach")
    sam = UserFactory(username="sam", is_staff=True, is_superuser=True)
    question = services.save_question(coach, {
        "prompt": "Why does GQA shrink the **KV cache**?", "model_answer": "Fewer KV heads.",
        "rubric": ["KV heads not query heads", "Factor 2 for K and V"], "tags": ["kv-cache"],
        "misconceptions": ["query-heads-for-kv-heads"], "difficulty": 2})
    cohort = services.create_cohort(coach, "Spring")
    invitation = services.invite(cohort)
    for user in (demo, demo2):
        services.accept_invitation(invitation, user, now=T0)
    question_set = QuestionSet.objects.create(coach=coach, title="Week 1", instructions="Do it *carefully*.")
    services.add_entry(question_set, item=question)
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    services.add_entry(question_set, item=ladder, fixed_inputs=FIXED)
    with django_capture_on_commit_callbacks(execute=True):
        assignment = services.assign(question_set, coach, cohort=cohort, due_at=T0 + timedelta(days=2),
                                     now=T0 - timedelta(hours=1))
    return SimpleNamespace(coach=coach, demo=demo, demo2=demo2, eve=eve, dave=dave, sam=sam, question=question,
                           cohort=cohort, invitation=invitation, set=question_set, ladder=ladder,
                           assignment=assignment, T0=T0)


@pytest.fixture
def h(db):
    """Helpers for the test modules (which cannot import a conftest)."""
    from django.utils import timezone

    return SimpleNamespace(templates=sync_problem_templates, now=timezone.now, answers=right_answers,
                           T0=T0)

"""A content reload that drops a fixture question an assignment someone started refers to keeps it, unpublished.

Deleting it would delete the set entry and, through it, the coaching ``Work`` row that hides that work from the
candidate's other coaches (``Work.entry`` is RESTRICT, so the delete is refused): the reload retires the item instead
and goes on with the rest.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from coaching import services
from coaching.models import QuestionSet, Work
from drills.models import BankItem
from runbook.loading.report import Tally
from runbook.loading.writing import sync

pytestmark = pytest.mark.django_db


def test_a_dropped_question_someone_started_is_unpublished_not_deleted(world, django_capture_on_commit_callbacks):
    started = BankItem.objects.create(slug="old-fixture-q", kind=BankItem.OPEN, published=True, prompt="Old?",
                                      model_answer="A.", source_path="questions/old.yaml")
    unused = BankItem.objects.create(slug="unused-fixture-q", kind=BankItem.OPEN, published=True, prompt="Unused?",
                                     model_answer="B.", source_path="questions/old.yaml")
    question_set = QuestionSet.objects.create(coach=world.coach, title="Old week")
    entry = services.add_entry(question_set, item=started)
    with django_capture_on_commit_callbacks(execute=True):
        assignment = services.assign(question_set, world.coach, cohort=world.cohort,
                                     due_at=world.T0 + timedelta(days=2), now=world.T0)
    services.start_entry(assignment, world.demo, entry, now=world.T0)

    tally, warnings = Tally(), []
    sync(BankItem, [], tally, scope=BankItem.objects.filter(pk__in=[started.pk, unused.pk]), warnings=warnings)

    assert not BankItem.objects.filter(pk=unused.pk).exists() and tally.removed == 1
    started.refresh_from_db()
    assert started.published is False and Work.objects.filter(entry=entry).count() == 1
    assert warnings == ["bank item 'old-fixture-q' is no longer in the content but an assignment someone started "
                        "refers to it: unpublished, not deleted."]

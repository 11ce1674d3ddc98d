"""GET pages of the rounds only read; a beat task closes the rounds past their deadline; presets load with the content.

The capacity preset is one ladder in five minutes. Its right answers, saved
(not submitted) a minute in, score 1.0 when the round is closed for them.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from drills import tasks
from drills.models import Round, RoundTemplate
from drills.rounds.presets import PRESETS, sync_presets
from drills.rounds.services import autosave, start_round
from runbook.loading import load_content

pytestmark = pytest.mark.django_db


def _writes(queries) -> list[str]:
    """The statements that changed a table of the drills app (anything but a SELECT naming one)."""
    return [q["sql"] for q in queries if "drills_" in q["sql"] and not q["sql"].lstrip().upper().startswith("SELECT")]


def _overdue_round(candidate, clock, h):
    round_ = start_round(candidate, "capacity", clock.now)  # five minutes
    item = round_.items.get()
    autosave(candidate, item.pk, h.answers(item.problem), clock.advance(minutes=1))
    clock.advance(minutes=5)  # one minute past the deadline
    return round_


def test_a_get_of_the_rounds_index_changes_nothing(candidate_client, candidate, bank, clock, h):
    round_ = _overdue_round(candidate, clock, h)
    templates = RoundTemplate.objects.count()
    with CaptureQueriesContext(connection) as captured:
        page = candidate_client.get(reverse("rounds:index"))
    assert page.status_code == 200
    assert _writes(captured.captured_queries) == []
    round_.refresh_from_db()
    assert round_.status == Round.ACTIVE and round_.score is None and round_.items.get().grade is None
    assert RoundTemplate.objects.count() == templates
    body = page.content.decode()
    assert "Time ran out" in body and "Resume" not in body  # out of time: listed with its report, not resumed
    assert reverse("rounds:report", args=[round_.pk]) in body


def test_the_beat_task_closes_an_overdue_round_and_grades_what_was_saved(candidate, bank, clock, h,
                                                                        django_capture_on_commit_callbacks):
    overdue = _overdue_round(candidate, clock, h)
    running = start_round(candidate, "critique", clock.now)  # twenty minutes left
    with django_capture_on_commit_callbacks(execute=True):
        picked = tasks.close_due_rounds.delay(clock.now.isoformat()).get()
    assert picked == [overdue.pk]
    overdue.refresh_from_db()
    running.refresh_from_db()
    assert overdue.status == Round.EXPIRED and overdue.finished_at == overdue.deadline
    item = overdue.items.get()
    assert item.auto_submitted and item.grade == pytest.approx(1.0) and overdue.score == pytest.approx(1.0)
    assert running.status == Round.ACTIVE
    # Idempotent: nothing is due any more, and closing the closed round again leaves it as it is.
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.close_due_rounds.delay(clock.now.isoformat()).get() == []
    assert tasks.close_round.delay(overdue.pk, clock.now.isoformat()).get() == Round.EXPIRED
    assert tasks.close_round.delay(10**9).get() == "gone"


def test_the_presets_are_written_when_content_is_loaded(db, tmp_path):
    assert not RoundTemplate.objects.exists()
    report = load_content(tmp_path)  # no content files: the presets are data, loaded all the same
    assert report.notes[-1] == "round presets      7"
    presets = RoundTemplate.objects.filter(owner__isnull=True).order_by("position")
    assert [p.slug for p in presets] == list(PRESETS) == ["capacity", "phone", "architect", "manager", "critique",
                                                          "weak", "followups"]
    assert presets[0].duration_s == 300 and presets[1].title == "Phone screen"


def test_the_index_lists_the_loaded_presets_in_order(candidate_client, bank):
    sync_presets()
    body = candidate_client.get(reverse("rounds:index")).content.decode()
    titles = [data["title"] for data in PRESETS.values()]
    assert all(title in body for title in titles)
    assert [body.index(title) for title in titles] == sorted(body.index(title) for title in titles)

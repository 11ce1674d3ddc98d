"""Grading with a broker: the task goes through the outbox, a worker runs it, the page only polls.

The first tests use kombu's in-process ``memory://`` broker (tests/outbox/test_outbox.py's switch); the integration
test starts a real Celery worker on Redis (127.0.0.1:6379) that calls the local chat-completions server.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from llm_grading import services
from llm_grading.models import Grading
from outbox.models import OutboxMessage
from tests.celery_worker import new_queue, real_worker, require_redis, worker_database_url, worker_environment
from tests.llm_grading.conftest import PLACE
from tests.outbox.test_outbox import Broker


@pytest.fixture
def broker(monkeypatch, settings):
    switch = Broker(monkeypatch)
    switch.up()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    yield switch
    switch.restore()


@pytest.mark.django_db
def test_with_a_broker_the_task_goes_through_the_outbox(broker, candidate, design_item, endpoint, chat_server,
                                                         recorded_grade, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        grading = services.request(candidate, design_item, recorded_grade["answer"], Grading.DESIGN,
                                   design_item.pk, **PLACE)
    row = OutboxMessage.objects.get()
    assert (row.task, row.args) == ("llm_grading.grade", [grading.pk]) and row.sent_at is not None
    assert broker.published() == [("llm_grading.grade", [grading.pk])]
    # The page's poll leaves it to the worker: nothing is called from the web process.
    assert services.run_here(grading).status == Grading.QUEUED and chat_server.requests == []
    # The worker's run (the task's body), then a second delivery of the same message: graded once.
    assert services.run(grading.pk) == Grading.DONE and services.run(grading.pk) == Grading.DONE
    assert len(chat_server.requests) == 1


@pytest.mark.django_db
def test_a_grading_whose_worker_died_is_failed_with_a_sentence(broker, candidate, design_item, endpoint,
                                                               recorded_grade):
    from datetime import timedelta

    from django.utils import timezone

    grading = services.request(candidate, design_item, recorded_grade["answer"], Grading.DESIGN, design_item.pk,
                               **PLACE)
    Grading.objects.filter(pk=grading.pk).update(status=Grading.RUNNING,
                                                 started_at=timezone.now() - timedelta(minutes=10))
    grading.refresh_from_db()
    grading = services.run_here(grading)
    assert (grading.status, grading.failure) == (Grading.FAILED, "timeout")
    assert grading.error == "The grading did not finish (the worker stopped or took too long)."


def _state(sqlite_path: Path | None, grading: Grading) -> tuple[str, int | None]:
    """(status, suggested rating) of the grading as the worker left it."""
    if sqlite_path is None:
        grading.refresh_from_db()
        return grading.status, grading.suggested_rating
    with sqlite3.connect(sqlite_path) as db:
        return db.execute("select status, suggested_rating from llm_grading_grading where id = ?",
                          (grading.pk,)).fetchone()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_grades_through_redis(candidate, design_item, endpoint, chat_server, recorded_grade, tmp_path):
    require_redis()
    grading = services.request(candidate, design_item, recorded_grade["answer"], Grading.DESIGN, design_item.pk,
                               **PLACE)
    database_url, sqlite_path = worker_database_url(tmp_path)
    environment = worker_environment("CELERY_", "DATABASE_", DATABASE_URL=database_url,
                                     LLM_KEY_ENCRYPTION_KEY=django_settings.LLM_KEY_ENCRYPTION_KEY)
    with real_worker(new_queue("grading"), environment, prefixed=True) as worker:
        worker.send_task("llm_grading.grade", args=[grading.pk])
        deadline = time.monotonic() + 90  # the task keeps no result (ignore_result): watch its row
        state = _state(sqlite_path, grading)
        while time.monotonic() < deadline and state[0] in (Grading.QUEUED, Grading.RUNNING):
            time.sleep(0.5)
            state = _state(sqlite_path, grading)
    output = worker.output
    status, suggested = state
    assert (status, suggested) == (Grading.DONE, 2), output
    assert len(chat_server.requests) == 1 and "sk-local-test" not in output  # the key never reaches the log

"""Grading with a broker: the task goes through the outbox, a worker runs it, the page only polls.

The first tests use kombu's in-process ``memory://`` broker (tests/outbox/test_outbox.py's switch); the integration
test starts a real Celery worker on Redis (127.0.0.1:6379) that calls the local chat-completions server.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from llm_grading import services
from llm_grading.models import Grading
from outbox.models import OutboxMessage
from tests import needs
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


def _redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
    except OSError:
        return False
    return True


def _worker_database(tmp_path: Path) -> tuple[str, Path | None]:
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}", None
    path = tmp_path / "worker.sqlite3"
    connection.ensure_connection()
    target = sqlite3.connect(path)
    connection.connection.backup(target)
    target.close()
    return f"sqlite:///{path}", path


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
    from celery import Celery

    if not _redis_up():
        needs.missing("Redis is not answering on 127.0.0.1:6379")
    grading = services.request(candidate, design_item, recorded_grade["answer"], Grading.DESIGN, design_item.pk,
                               **PLACE)
    database_url, sqlite_path = _worker_database(tmp_path)
    broker_url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    queue = f"test-grading-{uuid.uuid4().hex[:12]}"
    prefix = f"{queue}:"
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("CELERY_", "DATABASE_"))}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", CELERY_BROKER_URL=broker_url,
                       DATABASE_URL=database_url, CELERY_KEY_PREFIX=prefix,
                       LLM_KEY_ENCRYPTION_KEY=django_settings.LLM_KEY_ENCRYPTION_KEY)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--queues", queue,
         "--hostname", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "--loglevel=INFO"],
        cwd=django_settings.BASE_DIR, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = Celery(broker=broker_url, backend=broker_url)
    client.conf.broker_transport_options = {"global_keyprefix": prefix}
    client.conf.result_backend_transport_options = {"global_keyprefix": prefix}
    try:
        result = client.send_task("llm_grading.grade", args=[grading.pk], queue=queue)
        deadline = time.monotonic() + 90  # the task keeps no result (ignore_result): watch its row
        state = _state(sqlite_path, grading)
        while time.monotonic() < deadline and state[0] in (Grading.QUEUED, Grading.RUNNING):
            time.sleep(0.5)
            state = _state(sqlite_path, grading)
    finally:
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
        client.close()
        shared = redis.Redis.from_url(broker_url)
        try:
            for key in shared.scan_iter(match=f"{prefix}*", count=500):
                shared.delete(key)
            shared.delete(f"celery-task-meta-{result.id}", f"{prefix}celery-task-meta-{result.id}")
        finally:
            shared.close()
    status, suggested = state
    assert (status, suggested) == (Grading.DONE, 2), output
    assert len(chat_server.requests) == 1 and "sk-local-test" not in output  # the key never reaches the log

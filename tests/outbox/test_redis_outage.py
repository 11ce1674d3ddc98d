"""Redis down: pages and answers still work, nothing is lost, and the mail that could not be queued goes out later.

The unit tests point the cache at a closed port. The integration test starts its
own ``redis-server`` on a free port of 6390-6399 (never the shared 6379), makes
it the Celery broker and the cache of this process and of a real worker, stops
it in the middle of the run, starts it again on the same port and drains the
outbox; it counts every notice mailed (exactly once each).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

import core.cache
from coaching import services as coaching
from coaching.models import Notice, QuestionSet
from config import celery_app
from config.settings import cache_from_url
from drills.models import Attempt, Card, ProblemInstance, ReviewLog
from outbox import services as outbox
from outbox.models import OutboxMessage
from runbook.content import forget_rendered_chapters
from tests import needs
from tests.factories import ChapterFactory, UserFactory
from tests.paths import REPO_ROOT
from tests.ports import free_port

BASE_DIR = REPO_ROOT
#: As config/settings.py sets them when CELERY_BROKER_URL is set (the worker started below reads them there).
BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 0.5, "socket_timeout": 0.3, "visibility_timeout": 3600}


#: The body of the one chapter these tests make: a section to link to and a term to find.
KV_BODY = "## Paging {#paging}\n\nThe **KV cache** grows with every token.\n"


@pytest.fixture
def forgiving_cache(settings, monkeypatch):
    """The cache on Redis at a port nobody listens on."""
    monkeypatch.setattr(core.cache, "_paused_until", {})
    settings.CACHES = {"default": cache_from_url(f"redis://127.0.0.1:{free_port()}/1")}
    return cache


class TestTheCacheWithoutRedis:
    def test_reads_miss_writes_are_dropped_and_one_warning_is_logged(self, forgiving_cache, caplog):
        started = time.monotonic()
        assert forgiving_cache.get("k") is None and forgiving_cache.get("k", "fallback") == "fallback"
        assert forgiving_cache.set("k", 1) is None and forgiving_cache.add("k", 1) is False
        assert forgiving_cache.get_or_set("k", lambda: 42) == 42
        assert forgiving_cache.get_many(["a", "b"]) == {} and forgiving_cache.set_many({"a": 1}) == ["a"]
        assert forgiving_cache.delete("k") is False and forgiving_cache.has_key("k") is False
        assert time.monotonic() - started < 5
        assert [r.name for r in caplog.records if r.name == "core.cache"] == ["core.cache"]

    def test_during_the_pause_redis_is_not_even_tried(self, forgiving_cache, monkeypatch):
        forgiving_cache.get("k")
        from django.core.cache.backends.redis import RedisCacheClient

        def refuse(*args, **kwargs):
            raise AssertionError("Redis was tried during the pause")

        monkeypatch.setattr(RedisCacheClient, "get", refuse)
        assert forgiving_cache.get("k", 7) == 7

    def test_a_chapter_page_renders_uncached(self, forgiving_cache, client, db):
        ChapterFactory(number=6, slug="06-kv-cache", title="The KV cache", body=KV_BODY)
        response = client.get("/runbook/06-kv-cache/")
        assert response.status_code == 200 and "grows with every token" in response.content.decode()


# --- a real Redis, stopped mid-run ----------------------------------------------------------------


class RedisServer:
    """A private ``redis-server`` (no persistence) that the test can stop and start again on the same port."""

    def __init__(self, binary: str, port: int, directory: Path):
        self.binary, self.port, self.directory = binary, port, directory
        self.process: subprocess.Popen | None = None

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.1)
            finally:
                client.close()

    def kill(self) -> None:
        """SIGKILL: what Redis holds in memory is gone (no persistence)."""
        self.process.kill()
        self.process.wait(15)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)
        self.process = None


@pytest.fixture
def private_redis(tmp_path):
    binary = needs.tool("redis-server")
    server = RedisServer(binary, free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def on_private_redis(private_redis, settings, monkeypatch):
    """This process's broker and cache on the private Redis (Celery's configuration follows), until the end."""
    saved = {name: celery_app.conf[name] for name in ("broker_url", "task_always_eager", "broker_transport_options",
                                                      "broker_connection_timeout")}
    monkeypatch.setattr(outbox, "_paused_until", 0.0)
    monkeypatch.setattr(core.cache, "_paused_until", {})
    settings.CELERY_BROKER_URL = private_redis.url(0)
    settings.CACHES = {"default": cache_from_url(private_redis.url(1))}
    celery_app._after_fork()  # forget the connection pools of the previous broker
    celery_app.conf.update(broker_url=private_redis.url(0), task_always_eager=False,
                           broker_transport_options=BROKER_TRANSPORT_OPTIONS, broker_connection_timeout=0.5)
    yield private_redis
    celery_app._after_fork()
    celery_app.conf.update(saved)


def worker_database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(broker: str, log: Path) -> subprocess.Popen:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("CELERY_", "DATABASE_", "EMAIL_", "CACHE_", "REDIS_"))}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", CELERY_BROKER_URL=broker,
                       DATABASE_URL=worker_database_url(),
                       EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
    with log.open("w") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--hostname",
             f"outage-{os.getpid()}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "--loglevel=INFO"], cwd=BASE_DIR, env=environment, stdout=output, stderr=subprocess.STDOUT)


def wait_for(condition, seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds:.0f} s; the worker's log:\n{log.read_text()[-4000:]}")
        time.sleep(0.25)


def finished(log: Path) -> int:
    """How many notice tasks the worker has finished (and so acknowledged)."""
    return len(re.findall(r"send_assignment_notice\[[^\]]+\] succeeded", log.read_text()))


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_redis_stopped_mid_run_loses_nothing_and_doubles_nothing(on_private_redis, coach, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the worker must share the test database: run with DATABASE_URL=postgres://… (as CI does)")
    server = on_private_redis
    dan, erin = UserFactory(username="dan"), UserFactory(username="erin")
    cohort = coaching.create_cohort(coach, "Spring")
    invitation = coaching.invite(cohort)
    for user in (dan, erin):
        coaching.accept_invitation(invitation, user)
    question = coaching.save_question(coach, {"prompt": "Why page the KV cache?", "model_answer": "Fragmentation.",
                                              "rubric": ["Fragmentation", "Blocks of 16 tokens"], "tags": [],
                                              "misconceptions": [], "difficulty": 2})
    week1, week2 = (QuestionSet.objects.create(coach=coach, title=title) for title in ("Week 1", "Week 2"))
    for question_set in (week1, week2):
        coaching.add_entry(question_set, item=question)
    ChapterFactory(number=6, slug="06-kv-cache", title="The KV cache", body=KV_BODY)
    coach_client, candidate = Client(), Client()
    coach_client.force_login(coach)
    candidate.force_login(dan)
    due = (timezone.localtime() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")

    log = tmp_path / "worker.log"
    worker = start_worker(server.url(0), log)
    try:
        # Redis up: the coach assigns Week 1 to the cohort; the worker mails both candidates.
        response = coach_client.post(f"/coach/sets/{week1.pk}/assign/", {"target": f"cohort:{cohort.pk}",
                                                                          "due_at": due})
        assert response.status_code == 302, response.content.decode()[:2000]
        wait_for(lambda: Notice.objects.count() == 2 and finished(log) == 2, 90, "both Week 1 notices mailed", log)
        forget_rendered_chapters()  # an earlier test's page may sit in this process's memo, in front of Redis
        assert candidate.get("/runbook/06-kv-cache/").status_code == 200
        assert redis.Redis(port=server.port, db=1).dbsize() > 0  # the chapter went into the cache

        # Redis stops.
        server.stop()
        forget_rendered_chapters()  # so the page has to ask the stopped cache, not the memo
        chapter = candidate.get("/runbook/06-kv-cache/")
        assert chapter.status_code == 200 and "grows with every token" in chapter.content.decode()
        review = candidate.get("/review/")
        assert review.status_code == 200
        card = Card.objects.get(user=dan, item=question)
        html = review.content.decode()
        revealed = candidate.post(f"/review/card/{card.pk}/reveal/", {
            "version": hidden(html, "version"), "started": hidden(html, "started"), "answer": "Fragmentation."})
        assert revealed.status_code == 200
        page = revealed.content.decode()
        rated = candidate.post(f"/review/card/{card.pk}/rate/", {
            "version": hidden(page, "version"), "started": hidden(page, "started"), "answer": "Fragmentation.",
            "ticked": ["0"], "rating": "auto"})
        assert rated.status_code == 302 and ReviewLog.objects.filter(user=dan).count() == 1
        problem_url = candidate.post("/drills/ladder/new/?seed=5", {"save": "1"})["Location"]
        assert candidate.get(problem_url).status_code == 200
        problem = ProblemInstance.objects.get(pk=int(problem_url.rstrip("/").split("/")[-1]))
        answered = candidate.post(problem_url, {step.key: repr(step.value) for step in problem.solve().steps})
        assert answered.status_code in (200, 302) and Attempt.objects.filter(user=dan).count() == 1

        # The coach assigns Week 2 during the outage: success, quickly, and the two notices wait in the outbox.
        started = time.monotonic()
        response = coach_client.post(f"/coach/sets/{week2.pk}/assign/", {"target": f"cohort:{cohort.pk}",
                                                                          "due_at": due})
        assert response.status_code == 302 and time.monotonic() - started < 10
        assert OutboxMessage.objects.pending().count() == 2
        with pytest.raises(CommandError, match="Could not publish"):  # still down: the drain keeps them
            call_command("drain_outbox", "--all")
        assert OutboxMessage.objects.pending().count() == 2

        # Redis is back on the same port: the drain publishes both, the worker mails both.
        server.start()
        call_command("drain_outbox", "--all")
        wait_for(lambda: Notice.objects.count() == 4 and finished(log) == 4, 120, "both Week 2 notices mailed", log)
        call_command("drain_outbox", "--all")  # nothing left to publish again
        time.sleep(2)  # time for a duplicate, if there were one, to arrive
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    output = log.read_text()

    week2_assignment = week2.assignments.get()
    assert sorted(Notice.objects.filter(assignment=week2_assignment).values_list("candidate__username", flat=True)) \
        == ["dan", "erin"]
    assert not OutboxMessage.objects.pending().exists()
    # One publication per row: 1 try each before the outage; during it, 1 failed on commit + 1 failed drain + 1.
    assert list(OutboxMessage.objects.order_by("pk").values_list("attempts", flat=True)) == [1, 1, 3, 1]
    received = re.findall(r"Task coaching\.tasks\.send_assignment_notice\[[^\]]+\] received", output)
    assert len(received) == 4, output
    assert output.count("Subject: New assignment: Week 1") == 2 and output.count("Subject: New assignment: Week 2") == 2
    assert ReviewLog.objects.filter(user=dan).count() == 1 and Attempt.objects.filter(user=dan).count() == 1


def stop_worker(worker: subprocess.Popen) -> None:
    worker.terminate()
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_redis_killed_with_unrun_tasks_loses_nothing_the_republisher_delivers_once(on_private_redis, coach,
                                                                                      tmp_path):
    """No worker: the notice is published, Redis is killed and restarted empty; the re-publisher sends it again
    and a real worker mails it once; a second run of the same row (re-published anyway) mails nothing more."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker must share the test database: run with DATABASE_URL=postgres://… (as CI does)")
    server = on_private_redis
    dan = UserFactory(username="dan")
    cohort = coaching.create_cohort(coach, "Spring")
    coaching.accept_invitation(coaching.invite(cohort), dan)
    question_set = QuestionSet.objects.create(coach=coach, title="Week 1")
    coaching.add_entry(question_set, item=coaching.save_question(coach, {
        "prompt": "Why page the KV cache?", "model_answer": "Fragmentation.", "rubric": ["Fragmentation"],
        "tags": [], "misconceptions": [], "difficulty": 2}))
    coaching.assign(question_set, coach, cohort=cohort, due_at=timezone.now() + timedelta(days=3))
    row = OutboxMessage.objects.get()
    assert row.sent_at is not None and row.delivered_at is None  # published, not acknowledged: no worker
    assert redis.Redis(port=server.port).llen("celery") == 1

    server.kill()
    server.start()  # on the same port, without persistence: the message is gone
    assert redis.Redis(port=server.port).llen("celery") == 0
    assert outbox.drain(everything=True).republished == 0  # published moments ago: not yet
    later = timezone.now() + outbox.republish_after() + timedelta(seconds=1)
    drained = outbox.drain(now=later)
    assert (drained.republished, drained.sent, drained.failed) == (1, 1, 0)

    log = tmp_path / "worker.log"
    worker = start_worker(server.url(0), log)
    try:
        wait_for(lambda: finished(log) == 1 and OutboxMessage.objects.filter(delivered_at__isnull=False).exists(),
                 90, "the notice mailed and its row acknowledged", log)
        assert Notice.objects.filter(candidate=dan).count() == 1
        assert outbox.drain(now=later + outbox.republish_after()).republished == 0  # acknowledged: left alone

        # The same row run a second time (as if its acknowledgement had been lost): nothing is mailed twice.
        OutboxMessage.objects.update(delivered_at=None)
        assert outbox.drain(now=later + outbox.republish_after()).republished == 1
        wait_for(lambda: finished(log) == 2 and OutboxMessage.objects.filter(delivered_at__isnull=False).exists(),
                 90, "the second run finished and acknowledged", log)
    finally:
        stop_worker(worker)
    output = log.read_text()
    assert output.count("Subject: New assignment: Week 1") == 1, output
    assert Notice.objects.count() == 1 and OutboxMessage.objects.get().attempts == 3


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_frozen_redis_holds_an_enqueue_about_a_second_and_the_row_stays_pending(on_private_redis):
    """SIGSTOP: Redis accepts connections (the kernel does) but never answers; the commit returns within 1.5 s."""
    server = on_private_redis
    with transaction.atomic():  # warm the producer's connection pool while Redis answers
        outbox.enqueue("config.ping")
    assert OutboxMessage.objects.get().sent_at is not None
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with transaction.atomic():
            outbox.enqueue("config.ping")
        elapsed_s = time.monotonic() - started
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert elapsed_s < 1.5, elapsed_s
    frozen = OutboxMessage.objects.order_by("pk").last()
    assert frozen.sent_at is None and frozen.attempts == 1 and frozen.last_error
    assert list(OutboxMessage.objects.pending()) == [frozen]

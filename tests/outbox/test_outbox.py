"""The outbox: one way to queue a task, eager without a broker, kept in the database when the broker fails.

The broker here is kombu's in-process ``memory://`` transport (publishing
succeeds) or a closed port on 127.0.0.1 (publishing fails as with Redis down).
tests/outbox/test_redis_outage.py does the same against a real Redis and worker.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.utils import timezone

from coaching import services as coaching
from coaching.models import Notice, QuestionSet
from coaching.tasks import send_assignment_notice
from config import celery_app
from config.celery import ping
from outbox import services
from outbox.models import OutboxMessage
from outbox.tasks import drain_outbox
from tests.factories import UserFactory
from tests.ports import free_port

pytestmark = pytest.mark.django_db


class Broker:
    """Switches the Celery app from eager to a broker URL, and back at the end of the test."""

    def __init__(self, monkeypatch):
        self.saved = {name: celery_app.conf[name] for name in ("broker_url", "task_always_eager")}
        monkeypatch.setattr(services, "_paused_until", 0.0)

    def use(self, url: str) -> None:
        celery_app._after_fork()  # forget connection pools made for the previous URL
        celery_app.conf.update(broker_url=url, task_always_eager=False)

    def up(self) -> None:
        self.use("memory://")
        self.purge()

    def down(self) -> None:
        self.use(f"redis://:s3cret-password@127.0.0.1:{free_port()}/0")

    def purge(self) -> None:
        with celery_app.connection_for_write() as conn:
            conn.SimpleQueue("celery").clear()

    def published(self) -> list[tuple[str, list]]:
        """(task name, args) of every message waiting on the default queue, taken off it."""
        found = []
        with celery_app.connection_for_write() as conn:
            queue = conn.SimpleQueue("celery")
            while len(queue):
                message = queue.get(timeout=1)
                found.append((message.headers["task"], message.payload[0]))
                message.ack()
        return found

    def restore(self) -> None:
        celery_app._after_fork()
        celery_app.conf.update(self.saved)


@pytest.fixture
def broker(monkeypatch):
    switch = Broker(monkeypatch)
    yield switch
    switch.restore()


def make_assignment(coach, *names: str):
    """A cohort of ``names`` (candidates) and a one-question set of ``coach``, not yet assigned."""
    cohort = coaching.create_cohort(coach, "Spring")
    invitation = coaching.invite(cohort)
    members = []
    for name in names:
        user = UserFactory(username=name)
        coaching.accept_invitation(invitation, user)
        members.append(user)
    question = coaching.save_question(coach, {"prompt": "Why page the KV cache?", "model_answer": "Fragmentation.",
                                              "rubric": ["Fragmentation"], "tags": [], "misconceptions": [],
                                              "difficulty": 2})
    question_set = QuestionSet.objects.create(coach=coach, title="Week 1")
    coaching.add_entry(question_set, item=question)
    return cohort, question_set, members


def assign(coach, cohort, question_set):
    return coaching.assign(question_set, coach, cohort=cohort, due_at=timezone.now() + timedelta(days=3))


# --- no broker: eager, as before ------------------------------------------------------------------


class TestWithoutABroker:
    def test_the_task_runs_in_process_after_commit_and_no_row_is_written(self, coach, mailoutbox,
                                                                          django_capture_on_commit_callbacks):
        cohort, question_set, members = make_assignment(coach, "dan", "erin")
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assignment = assign(coach, cohort, question_set)
        # One task per candidate waits for the commit (the coach dashboard's version bump, coaching.signals,
        # waits for it too since 967be66: it is not the outbox's, so it is left out of the count).
        tasks = [callback for callback in callbacks if callback.__qualname__.startswith("enqueue.")]
        assert len(tasks) == 2 and mailoutbox == []  # nothing before the commit
        for callback in callbacks:
            callback()
        assert sorted(m.to[0] for m in mailoutbox) == ["dan@example.com", "erin@example.com"]
        assert Notice.objects.filter(assignment=assignment).count() == 2
        assert not OutboxMessage.objects.exists()

    def test_a_rolled_back_transaction_queues_nothing(self, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            with pytest.raises(RuntimeError), transaction.atomic():
                services.enqueue(ping)
                raise RuntimeError("rolled back")
        assert callbacks == [] and not OutboxMessage.objects.exists()

    def test_an_eager_task_error_surfaces_at_commit_as_before(self, django_capture_on_commit_callbacks):
        with pytest.raises(TypeError), django_capture_on_commit_callbacks(execute=True):
            services.enqueue(ping, kwargs={"unexpected": 1})  # ping takes no argument


# --- a broker -------------------------------------------------------------------------------------


class TestWithABroker:
    def test_the_row_is_written_in_the_transaction_and_published_after_commit(self, broker,
                                                                              django_capture_on_commit_callbacks):
        broker.up()
        with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
            services.enqueue(send_assignment_notice, [7, 8, Notice.ASSIGNED], queue="celery")
            message = OutboxMessage.objects.get()
            assert (message.task, message.args, message.sent_at) == ("coaching.tasks.send_assignment_notice",
                                                                     [7, 8, "assigned"], None)
        assert broker.published() == []  # not before the commit
        callbacks[0]()
        message.refresh_from_db()
        assert message.sent_at is not None and message.attempts == 1 and message.last_error == ""
        assert broker.published() == [("coaching.tasks.send_assignment_notice", [7, 8, "assigned"])]

    def test_a_rolled_back_transaction_leaves_neither_row_nor_message(self, broker,
                                                                      django_capture_on_commit_callbacks):
        broker.up()
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            with pytest.raises(RuntimeError), transaction.atomic():
                services.enqueue(ping)
                raise RuntimeError("rolled back")
        assert callbacks == [] and not OutboxMessage.objects.exists() and broker.published() == []

    def test_a_broker_error_keeps_the_row_logs_without_secrets_and_the_caller_goes_on(
            self, broker, coach, caplog, django_capture_on_commit_callbacks):
        cohort, question_set, members = make_assignment(coach, "dan", "erin")
        broker.down()
        caplog.set_level(logging.WARNING, logger="outbox.services")
        before = timezone.now()
        with django_capture_on_commit_callbacks(execute=True):
            assignment = assign(coach, cohort, question_set)  # no exception: the coach's request succeeds
        first, second = OutboxMessage.objects.order_by("pk")
        assert [m.args for m in (first, second)] == [[assignment.pk, members[0].pk, "assigned"],
                                                      [assignment.pk, members[1].pk, "assigned"]]
        assert first.sent_at is None and first.attempts == 1 and "OperationalError" in first.last_error
        assert first.available_at >= before + services.backoff(1)
        # The broker failed moments ago: the second row is left to the drain without a try.
        assert second.sent_at is None and second.attempts == 0 and second.last_error == ""
        warnings = [record.getMessage() for record in caplog.records if record.name == "outbox.services"]
        assert len(warnings) == 1 and "coaching.tasks.send_assignment_notice" in warnings[0]
        assert "s3cret" not in caplog.text and "s3cret" not in first.last_error
        assert not Notice.objects.exists()

    def test_the_pause_ends_and_a_success_clears_it(self, broker, monkeypatch, django_capture_on_commit_callbacks):
        broker.down()
        with django_capture_on_commit_callbacks(execute=True):
            services.enqueue(ping)
        assert services._paused_until > 0
        monkeypatch.setattr(services, "_paused_until", 0.0)  # the pause has run out
        broker.up()
        with django_capture_on_commit_callbacks(execute=True):
            services.enqueue(ping)
        assert OutboxMessage.objects.pending().count() == 1 and services._paused_until == 0.0


# --- the drain ------------------------------------------------------------------------------------


def pending(n: int = 1, task=send_assignment_notice, **fields) -> OutboxMessage:
    """A pending row: the "assigned" notice of assignment ``n`` to candidate ``n``."""
    return OutboxMessage.objects.create(task=task.name, args=[n, n, Notice.ASSIGNED], **fields)


NOTICE = "coaching.tasks.send_assignment_notice"


class TestDrain:
    def test_it_publishes_due_rows_oldest_first_and_respects_the_back_off(self, broker):
        broker.up()
        now = timezone.now()
        waiting = pending(1, attempts=2, available_at=now + timedelta(minutes=1))
        due = [pending(2, created_at=now - timedelta(minutes=5), available_at=now - timedelta(seconds=1)),
               pending(3, available_at=now)]
        assert services.drain(now=now) == services.Drained(sent=2, failed=0, pending=1)
        assert broker.published() == [(NOTICE, [2, 2, "assigned"]), (NOTICE, [3, 3, "assigned"])]
        assert all(row.attempts == 1 and row.sent_at
                   for row in OutboxMessage.objects.filter(pk__in=[d.pk for d in due]))
        assert services.drain(now=now).sent == 0  # already sent: not again
        assert services.drain(everything=True) == services.Drained(sent=1, failed=0, pending=0)
        waiting.refresh_from_db()
        assert waiting.attempts == 3 and broker.published() == [(NOTICE, [1, 1, "assigned"])]

    def test_it_stops_at_the_first_failure_and_backs_off_exponentially(self, broker):
        broker.down()
        rows = [pending(n, attempts=n) for n in range(3)]
        drained = services.drain()
        assert (drained.sent, drained.failed, drained.pending) == (0, 1, 3) and "OperationalError" in drained.error
        tried, *untouched = (OutboxMessage.objects.get(pk=row.pk) for row in rows)
        assert tried.attempts == 1 and tried.available_at > timezone.now() + timedelta(seconds=25)
        assert [row.attempts for row in untouched] == [1, 2] and all(not row.last_error for row in untouched)

    def test_back_off_doubles_up_to_ten_minutes(self):
        assert [services.backoff(n).total_seconds() for n in (1, 2, 3, 4, 5, 6, 7, 20)] == [
            30, 60, 120, 240, 480, 600, 600, 600]

    def test_it_is_idempotent_twice_the_same_notice_mails_once(self, coach, mailoutbox):
        """Eager mode: draining runs the task in-process; a duplicate row (a re-publication) mails nothing more."""
        cohort, question_set, (dan,) = make_assignment(coach, "dan")
        assignment = assign(coach, cohort, question_set)  # (its own mail is not sent: no commit in this test)
        for _ in range(2):
            OutboxMessage.objects.create(task=NOTICE, args=[assignment.pk, dan.pk, Notice.ASSIGNED])
        assert services.drain(everything=True) == services.Drained(sent=2, failed=0, pending=0)
        assert [m.to for m in mailoutbox] == [["dan@example.com"]] and Notice.objects.count() == 1
        assert services.drain(everything=True).sent == 0 and len(mailoutbox) == 1

    def test_it_deletes_rows_delivered_long_ago(self):
        now = timezone.now()
        long_ago = now - services.KEEP_SENT - timedelta(minutes=1)
        old = pending(sent_at=long_ago, delivered_at=long_ago)
        recent = pending(sent_at=now - timedelta(hours=1), delivered_at=now - timedelta(hours=1))
        services.drain(now=now)
        assert list(OutboxMessage.objects.all()) == [recent] and not OutboxMessage.objects.filter(pk=old.pk).exists()

    def test_rows_never_acknowledged_are_published_again_after_the_setting(self, broker, settings):
        """900 s after publication without a worker's acknowledgement the row goes out again; 899 s: not yet."""
        broker.up()
        settings.OUTBOX_REPUBLISH_AFTER_S = 900
        now = timezone.now()
        lost = pending(1, sent_at=now - timedelta(seconds=901), attempts=1)
        waiting = pending(2, sent_at=now - timedelta(seconds=899), attempts=1)
        done = pending(3, sent_at=now - timedelta(hours=2), delivered_at=now - timedelta(hours=2), attempts=1)
        drained = services.drain(now=now)
        assert (drained.sent, drained.republished, drained.pending) == (1, 1, 0)
        assert broker.published() == [(NOTICE, [1, 1, Notice.ASSIGNED])]
        assert [(m.pk, m.attempts) for m in OutboxMessage.objects.order_by("pk")] == \
            [(lost.pk, 2), (waiting.pk, 1), (done.pk, 1)]
        assert OutboxMessage.objects.get(pk=lost.pk).sent_at > now - timedelta(seconds=1)

    def test_the_task_id_names_the_row_and_acknowledging_is_idempotent(self, broker):
        broker.up()
        row = pending(4)
        assert services.drain(everything=True).sent == 1
        with celery_app.connection_for_write() as conn:
            message = conn.SimpleQueue("celery").get(timeout=1)
            task_id = message.headers["id"]
            message.ack()
        assert task_id.startswith(f"outbox-{row.pk}-")
        first = timezone.now() - timedelta(minutes=5)
        assert services.acknowledge(task_id, now=first) is True
        assert services.acknowledge(task_id) is True  # a second run of the same message: the first time stays
        assert OutboxMessage.objects.get(pk=row.pk).delivered_at == first
        assert services.acknowledge("5f0c-not-ours") is False and services.acknowledge("outbox-x-1") is False
        assert services.acknowledge(None) is False

    def test_the_worker_acknowledges_on_success_and_final_failure_not_on_retry(self):
        from outbox.tasks import acknowledge_outbox_row

        rows = [pending(n) for n in (1, 2, 3)]
        for row, state in zip(rows, ("SUCCESS", "FAILURE", "RETRY"), strict=True):
            acknowledge_outbox_row(task_id=f"outbox-{row.pk}-abc", state=state)
        assert [OutboxMessage.objects.get(pk=r.pk).delivered_at is not None for r in rows] == [True, True, False]

    def test_an_unknown_task_stays_pending_with_the_reason(self, broker):
        broker.up()
        OutboxMessage.objects.create(task="no.such.task")
        drained = services.drain(everything=True)
        assert drained.failed == 1 and "NotRegistered" in drained.error
        assert OutboxMessage.objects.pending().get().attempts == 1

    @pytest.mark.django_db(transaction=True)
    def test_two_drainers_never_take_the_same_row(self, broker):
        """A row locked by another drainer (or by its committing request) is skipped, not waited for."""
        if connection.vendor != "postgresql":
            pytest.skip("SELECT ... FOR UPDATE SKIP LOCKED needs PostgreSQL (SQLite serialises writers)")
        broker.up()
        locked, free = pending(1), pending(2)
        holding, release = threading.Event(), threading.Event()

        def other_drainer():
            from django.db import connection as own

            try:
                with transaction.atomic():
                    list(OutboxMessage.objects.select_for_update().filter(pk=locked.pk))
                    holding.set()
                    release.wait(10)
            finally:
                own.close()

        thread = threading.Thread(target=other_drainer)
        thread.start()
        try:
            assert holding.wait(10)
            assert services.drain(everything=True) == services.Drained(sent=1, failed=0, pending=1)
        finally:
            release.set()
            thread.join(10)
        assert broker.published() == [(NOTICE, [2, 2, "assigned"])]
        assert OutboxMessage.objects.get(pk=free.pk).sent_at and OutboxMessage.objects.get(pk=locked.pk).attempts == 0

    def test_the_command_publishes_and_reports(self, broker, capsys):
        broker.up()
        pending(available_at=timezone.now() + timedelta(minutes=5))
        call_command("drain_outbox")
        assert capsys.readouterr().out.strip() == "0 published, 1 pending."
        call_command("drain_outbox", "--all")
        assert capsys.readouterr().out.strip() == "1 published, 0 pending."

    def test_the_command_fails_when_the_broker_does(self, broker):
        broker.down()
        pending()
        with pytest.raises(CommandError, match=r"Could not publish a message \(OperationalError.*0 published, 1 "):
            call_command("drain_outbox", "--all")

    def test_the_beat_task_drains_every_minute(self, settings):
        from django_celery_beat.schedulers import ModelEntry

        entry = settings.CELERY_BEAT_SCHEDULE["outbox-drain"]
        assert entry["task"] == "outbox.tasks.drain_outbox" and entry["task"] in celery_app.tasks
        stored = ModelEntry.from_entry("outbox-drain", app=celery_app, **entry)  # as beat writes it at start
        assert (stored.model.interval.every, stored.model.interval.period) == (60, "seconds")
        assert stored.options["expires"] == 50
        pending()
        # (apply: run here, whichever Celery app another test left current)
        assert drain_outbox.apply(kwargs={"everything": True}).get() == {"sent": 1, "failed": 0, "pending": 0,
                                                                         "error": "", "republished": 0}
        assert OutboxMessage.objects.get().delivered_at is not None  # the eager run acknowledged it

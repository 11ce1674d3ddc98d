"""A real Celery worker on the shared Redis server (127.0.0.1:6379), for the tests marked ``integration``.

:func:`real_worker` runs ``celery -A config worker --pool=solo`` in a subprocess on a queue of its own
(:func:`new_queue`), so it takes no other run's tasks; tests/conftest.py also keeps every integration test on
one pytest-xdist worker. :func:`require_redis` skips the test without the server (fails it under CI:
:mod:`tests.needs`); :func:`worker_database_url` gives the worker the data the test wrote.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.db import connection

from tests import needs
from tests.paths import REPO_ROOT

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
#: The Celery broker's database on the shared Redis (and the result backend's).
BROKER_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def require_redis() -> None:
    """Skip the calling test unless Redis accepts connections on 127.0.0.1:6379 (under CI, fail it)."""
    try:
        socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1).close()
    except OSError:
        needs.missing("Redis is not answering on 127.0.0.1:6379")


def postgres_url() -> str:
    """A ``postgres://`` URL of the test database this process uses (it must be PostgreSQL's)."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_database_url(tmp_path: Path) -> tuple[str, Path | None]:
    """(URL, SQLite file or None): a database the worker can open onto the data this test wrote.

    PostgreSQL's test database itself (None: read the worker's writes through the ORM); on SQLite, whose test
    database is in memory, a file copy of it under ``tmp_path`` (read the worker's writes from that file).
    Another database skips the test.
    """
    if connection.vendor == "postgresql":
        return postgres_url(), None
    if connection.vendor == "sqlite":
        path = tmp_path / "worker.sqlite3"
        connection.ensure_connection()
        target = sqlite3.connect(path)
        connection.connection.backup(target)
        target.close()
        return f"sqlite:///{path}", path
    pytest.skip(f"no worker database for {connection.vendor}")


def worker_environment(*dropped: str, **env: str) -> dict[str, str]:
    """This process's environment without the variables whose names start with one of ``dropped``, plus ``env``."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(dropped)}
    environment.update(env)
    return environment


def new_queue(name: str = "") -> str:
    """A queue name no other run uses: ``test-<name>-<12 hex digits>`` (``test-<12 hex digits>`` without a name)."""
    return f"test-{name + '-' if name else ''}{uuid.uuid4().hex[:12]}"


@dataclass
class Worker:
    """A running worker: send it tasks with :meth:`send_task`; ``output`` (its log) and ``left`` (the keys of its
    prefix still in Redis after the clean-up) are filled when the ``with`` block of :func:`real_worker` ends."""

    queue: str
    broker: str
    key_prefix: str | None
    output: str = ""
    left: list[bytes] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    client: Any = None

    def send_task(self, name: str, args: list | None = None) -> Any:
        """Send task ``name`` with ``args`` to this worker's queue; the Celery ``AsyncResult``."""
        if self.client is None:
            from celery import Celery

            self.client = Celery(broker=self.broker, backend=self.broker)
            if self.key_prefix:
                self.client.conf.broker_transport_options = {"global_keyprefix": self.key_prefix}
                self.client.conf.result_backend_transport_options = {"global_keyprefix": self.key_prefix}
        result = self.client.send_task(name, args=args, queue=self.queue)
        self.results.append(result)
        return result


@contextmanager
def real_worker(queue: str, environment: dict[str, str], *, broker: str = BROKER_URL,
                prefixed: bool = False) -> Iterator[Worker]:
    """Run a Celery worker of ``config`` on ``queue`` for the ``with`` block, then stop it.

    ``environment`` is the worker's; ``DJANGO_SETTINGS_MODULE`` and ``CELERY_BROKER_URL`` (``broker``) are set
    here. ``prefixed``: every broker and result key of the run goes under ``<queue>:`` (``CELERY_KEY_PREFIX``
    and the client's transport options), and at the end those keys and the results of the tasks sent are
    deleted, so the shared Redis keeps nothing of the test; ``Worker.left`` then lists any key naming the queue.
    """
    prefix = f"{queue}:" if prefixed else None
    env = {**environment, "DJANGO_SETTINGS_MODULE": "config.settings", "CELERY_BROKER_URL": broker}
    if prefix:
        env["CELERY_KEY_PREFIX"] = prefix
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--queues", queue,
         "--hostname", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "--loglevel=INFO"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker = Worker(queue=queue, broker=broker, key_prefix=prefix)
    try:
        yield worker
    finally:
        process.terminate()
        try:
            worker.output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            worker.output, _ = process.communicate()
        if worker.client is not None:
            worker.client.close()
        if prefix:
            worker.left = _clean_up(broker, prefix, queue, [result.id for result in worker.results])


def _clean_up(broker: str, prefix: str, queue: str, result_ids: list[str]) -> list[bytes]:
    """Delete the keys under ``prefix`` and the results ``result_ids``; the keys still naming ``queue``."""
    shared = redis.Redis.from_url(broker)
    try:
        for key in shared.scan_iter(match=f"{prefix}*", count=500):
            shared.delete(key)
        for result_id in result_ids:
            # The result of a task sent from here is stored under Celery's own name for it.
            shared.delete(f"celery-task-meta-{result_id}", f"{prefix}celery-task-meta-{result_id}")
        return list(shared.scan_iter(match=f"*{queue}*", count=500))
    finally:
        shared.close()

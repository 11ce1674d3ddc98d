"""The Celery application, configured from Django settings.

Every ``CELERY_*`` setting in ``config/settings.py`` configures it, and tasks
are discovered in each installed app's ``tasks.py``. Without a
``CELERY_BROKER_URL`` the settings make tasks run eagerly, in-process.

The project's code queues tasks with :func:`outbox.services.enqueue` (never
``.delay()``): with a broker the call is written to the database first, in the
caller's transaction, and published after commit, so a broker outage delays a
task instead of losing it; the beat task ``outbox.tasks.drain_outbox`` (every
minute) and ``manage.py drain_outbox`` publish what is left, and publish again
what a worker never acknowledged (``outbox.tasks.acknowledge_outbox_row``).

Start a worker with ``celery -A config worker``.
"""

import os

from celery import Celery
from django.db import InterfaceError, OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The retry policy of every task that touches the database or a mail server: exponential back-off with jitter, up
# to ten minutes between tries, five tries; acknowledged after it ran, so a worker lost mid-task does not lose it.
RETRY = {"autoretry_for": (OperationalError, InterfaceError, OSError), "retry_backoff": True,
         "retry_backoff_max": 600, "retry_jitter": True, "max_retries": 5, "acks_late": True}


@app.task(name="config.ping")
def ping() -> str:
    """Answer ``"pong"``: proves a worker is consuming from the broker."""
    return "pong"

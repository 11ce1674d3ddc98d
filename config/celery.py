"""The Celery application, configured from Django settings.

Every ``CELERY_*`` setting in ``config/settings.py`` configures it, and tasks
are discovered in each installed app's ``tasks.py``. Without a
``CELERY_BROKER_URL`` the settings make tasks run eagerly, in-process.

The project's code queues tasks with :func:`outbox.services.enqueue` (never
``.delay()``): with a broker the call is written to the database first, in the
caller's transaction, and published after commit, so a broker outage delays a
task instead of losing it; the beat task ``outbox.tasks.drain_outbox`` (every
minute) and ``manage.py drain_outbox`` publish what is left.

Start a worker with ``celery -A config worker``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="config.ping")
def ping() -> str:
    """Answer ``"pong"``: proves a worker is consuming from the broker."""
    return "pong"

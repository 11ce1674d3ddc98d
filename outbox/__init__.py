"""A transactional outbox for Celery tasks: nothing is lost while the broker (Redis) is down.

:func:`outbox.services.enqueue` is the one way the project queues a task. With
a broker, it writes an :class:`~outbox.models.OutboxMessage` row in the
caller's transaction and publishes it once that transaction commits; a broker
error leaves the row pending (the request still succeeds) and the drain -- the
beat task ``outbox.tasks.drain_outbox`` every minute, or ``manage.py
drain_outbox`` -- publishes it later. Without a broker (tasks run eagerly) it
only defers the task to the commit, as before.
"""

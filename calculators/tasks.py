"""Celery tasks of the calculators app.

``simulate_point`` runs one rate of a simulator sweep for the page when a broker
is configured (:func:`calculators.simulation.queue_missing` enqueues it through
the outbox). It takes the cleaned inputs as JSON and the rate, is idempotent (the
result is cached under the inputs' hash; a cached point is not run again) and
stores a bad-input error as the point's result, so the page can say why.
"""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache

from calculators import simulation
from calculators.engine.errors import EngineError


@shared_task(name="calculators.simulate_point", acks_late=True)
def simulate_point(inputs: dict, rate: float | None) -> None:
    """Simulate ``inputs`` (cleaned, JSON) at ``rate`` req/s into the cache."""
    try:
        simulation.run_point(inputs, rate)
    except EngineError as exc:
        cache.set(simulation.point_key(inputs, rate), {"error": str(exc)}, simulation.QUEUED_TTL_S)

"""The Celery task that grades one answer with the user's model (:func:`llm_grading.services.run`).

Queued through the outbox with a broker (:func:`llm_grading.services.start`); run in-process by the page's
poll in the embedded default. It takes the grading's id and is idempotent: a grading already claimed or
finished is left as it is, so a message published twice grades once.
"""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name=services.TASK, ignore_result=True)
def grade(grading_id: int) -> str:
    """Grade the queued grading ``grading_id``; returns its final status."""
    return services.run(grading_id)

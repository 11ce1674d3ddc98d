"""Grading open answers with the user's model: which endpoint, what is sent, running it, what the candidate kept.

* :func:`endpoint_for` — the candidate's own endpoint, else the endpoint a coach set for a cohort the candidate
  is in (the candidate is told: :attr:`Grading.by_coach`), else none: then nothing changes (self-scoring).
* :func:`request` — snapshot the question, rubric and answer, build the prompt (:mod:`llm_grading.prompt`),
  store a queued :class:`~llm_grading.models.Grading` and start it (:func:`start`).
* :func:`start` — with a broker, the Celery task ``llm_grading.grade`` is queued through the outbox
  (:func:`outbox.services.enqueue`, sent after commit); in the embedded default (eager Celery, no worker) the
  page's first poll runs the same task in-process (:func:`run_here`), bounded by ``LLM_GRADING_TIMEOUT_S``,
  so the page that asked shows its progress either way.
* :func:`run` — the task's body, idempotent: claims a queued grading, calls the endpoint
  (:mod:`llm_grading.client`), validates the reply, stores the grade or one sentence; the answer is never lost.
* :func:`record_choice` — the score the candidate recorded (accepting the suggestion or choosing another).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config.celery import app as celery_app
from outbox import services as outbox

from . import client, prompt
from .keys import KeyUnreadable
from .models import Endpoint, Grading

logger = logging.getLogger(__name__)

TASK = "llm_grading.grade"

#: The sentence after every failure: nothing is lost, and scoring by hand is there.
KEPT = "Your answer is kept: score it yourself below, or try again."


def endpoint_for(user) -> Endpoint | None:
    """The endpoint that grades ``user``'s answers: their own, else their cohorts' (latest set), else ``None``."""
    if not user.is_authenticated:
        return None
    # One query: the own endpoint (no cohort) sorts first, then the cohorts' newest.
    return (endpoints_of(user).select_related("cohort")
            .order_by(F("cohort").asc(nulls_first=True), "-updated_at", "-pk").first())


def endpoints_of(user):
    """Every endpoint that may grade ``user``'s answers (their own and their cohorts'), unordered. ``user`` is a
    user, an id or an ``OuterRef`` to one: ``Exists(endpoints_of(OuterRef("user")))`` asks in the same query
    as another read whether :func:`endpoint_for` would find one."""
    return Endpoint.objects.filter(Q(owner=user, cohort__isnull=True) | Q(cohort__memberships__candidate=user))


def plain(markdown: str) -> str:
    """Markdown (shortcodes allowed) as the text a reader sees, numbers filled in."""
    from runbook.content import plain_text
    from runbook.shortcodes import ShortcodeError

    try:
        return plain_text(markdown or "")
    except ShortcodeError:
        return markdown or ""


def rubric_of(item) -> list[str]:
    """The rubric points of a bank item as plain text; a critique drill without one: its planted errors."""
    points = [plain(str(point)) for point in item.rubric or ()]
    if points or item.kind != "critique":
        return points
    return [f"Line {error.get('line')}: {plain(error.get('explanation', ''))}"
            for error in (item.details or {}).get("planted", [])]


def question_of(item) -> str:
    """The question as plain text; a critique drill's prompt is followed by its numbered document."""
    text = plain(item.prompt)
    lines = (item.details or {}).get("lines") if item.kind == "critique" else None
    if lines:
        text += "\n\nTHE DOCUMENT\n" + "\n".join(f"{n}. {plain(line)}" for n, line in enumerate(lines, start=1))
    return text


def request(user, item, answer: str, origin: str, origin_id: int, *, page_url: str, score_rule: str,
            rubric: list[str] | None = None, question: str | None = None,
            has_endpoint: bool | None = None) -> Grading | None:
    """Send ``answer`` to ``item`` (written at ``origin`` ``origin_id``) to the user's model; ``None`` when there
    is no endpoint, no written answer or no rubric (self-scoring then, as without this app). The same answer
    at the same place, already sent and not failed, is not sent again: that grading is returned.

    ``page_url`` is the page that shows the grading (where "grade again" leads back), ``score_rule`` the
    sentence of the review scale's rule (:func:`llm_grading.prompt.build`). ``rubric`` and ``question`` default
    to :func:`rubric_of` and :func:`question_of` of ``item``. ``has_endpoint``, when the caller already read it
    (``Exists`` of :func:`endpoints_of`), saves the endpoint's query when there is none. The grading is started
    after the transaction commits.
    """
    answer = (answer or "").strip()
    if has_endpoint is False or not answer:
        return None
    points = rubric if rubric is not None else rubric_of(item)
    endpoint = endpoint_for(user) if points else None
    if endpoint is None:
        return None
    question = question if question is not None else question_of(item)
    again = latest(user, origin, origin_id)
    if again is not None and again.answer == answer and again.status != Grading.FAILED:
        return again  # the same answer sent twice (a double submit, a reload): graded once
    built = prompt.build(question, points, answer, score_rule)
    return _create(user, item, origin, origin_id, page_url, question, points, answer, built, endpoint)


def _create(user, item, origin, origin_id, page_url, question, rubric, answer, built, endpoint) -> Grading:
    grading = Grading.objects.create(
        user=user, item=item, origin=origin, origin_id=origin_id, page_url=page_url, question=question,
        rubric=rubric, answer=answer, messages=built.messages, schema=built.schema, endpoint=endpoint,
        base_url=endpoint.base_url, model=endpoint.model, by_coach=endpoint.cohort_id is not None,
        cohort_name=endpoint.cohort.name if endpoint.cohort_id else "")
    start(grading)
    return grading


def retry(grading: Grading) -> Grading | None:
    """A new grading of the same answer with the same prompt (after a failure), sent to the endpoint that grades
    the user now; ``None`` when there is none any more."""
    endpoint = endpoint_for(grading.user)
    if endpoint is None:
        return None
    built = prompt.Request(grading.messages, grading.schema)
    return _create(grading.user, grading.item, grading.origin, grading.origin_id, grading.page_url,
                   grading.question, grading.rubric, grading.answer, built, endpoint)


def broker_configured() -> bool:
    """Whether a worker runs the tasks (a broker is set) rather than this process."""
    return not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True)


def start(grading: Grading) -> None:
    """Queue the grading task through the outbox when a worker runs tasks; else leave it to :func:`run_here`."""
    if broker_configured():
        outbox.enqueue(TASK, args=[grading.pk])


def run_here(grading: Grading) -> Grading:
    """Bring ``grading`` up to date for a page that polls it.

    Embedded default: a queued grading is run now, in this process, as the Celery task (eagerly). Either mode: a
    grading left running past its bound (:meth:`Grading.stale`) is failed with a sentence.
    """
    if grading.status == Grading.QUEUED and not broker_configured():
        _task().apply(args=[grading.pk])
        grading.refresh_from_db()
    elif grading.stale():
        _fail(grading.pk, client.TIMEOUT, "The grading did not finish (the worker stopped or took too long).")
        grading.refresh_from_db()
    return grading


def _task():
    """The grading task, by name from the project's Celery app (llm_grading.tasks imports this module)."""
    if TASK not in celery_app.tasks:
        celery_app.loader.import_default_modules()
    return celery_app.tasks[TASK]


def _fail(pk: int, kind: str, sentence: str) -> None:
    Grading.objects.filter(pk=pk, status__in=[Grading.QUEUED, Grading.RUNNING]).update(
        status=Grading.FAILED, failure=kind, error=sentence, finished_at=timezone.now())


def run(pk: int) -> str:
    """Grade one queued grading (the task's body); returns its final status. Idempotent: a grading already
    claimed or finished is left alone.

    Never raises for what the endpoint does: every failure is stored as one sentence (the kinds of
    :mod:`llm_grading.client`), and the answer stays with the grading and the page it came from.
    """
    claimed = Grading.objects.filter(pk=pk, status=Grading.QUEUED).update(status=Grading.RUNNING,
                                                                         started_at=timezone.now())
    if not claimed:
        return Grading.objects.filter(pk=pk).values_list("status", flat=True).first() or "missing"
    grading = Grading.objects.select_related("endpoint").get(pk=pk)
    endpoint = grading.endpoint
    if endpoint is None:
        _fail(pk, client.BLOCKED, "That endpoint was removed from the settings before the grading ran.")
        return Grading.FAILED
    try:
        api_key = endpoint.api_key()
    except KeyUnreadable as error:
        _fail(pk, client.WRONG_KEY, str(error))
        return Grading.FAILED
    request_ = prompt.Request(grading.messages, grading.schema)
    try:
        content = client.complete(endpoint.base_url, endpoint.model, api_key, grading.messages,
                                  request_.response_format(), timeout_s=settings.LLM_GRADING_TIMEOUT_S,
                                  max_bytes=settings.LLM_GRADING_MAX_REPLY_BYTES)
        result = prompt.read_reply(content, request_, grading.answer)
    except client.CallFailed as failed:
        logger.info("Grading %s failed: %s", pk, failed.kind)  # the kind only: never the key, never the answer
        _fail(pk, failed.kind, str(failed))
        return Grading.FAILED
    except prompt.Malformed as malformed:
        logger.info("Grading %s failed: malformed reply", pk)
        _fail(pk, client.MALFORMED, f"Your model's reply did not match the grading schema ({malformed}), so it "
                                    "was not used.")
        return Grading.FAILED
    with transaction.atomic():
        Grading.objects.filter(pk=pk, status=Grading.RUNNING).update(
            status=Grading.DONE, result=result, suggested_rating=result["suggested_score"],
            finished_at=timezone.now())
    return Grading.DONE


def latest(user, origin: str, origin_id: int) -> Grading | None:
    """The newest grading of ``user``'s answer at ``origin`` ``origin_id``."""
    return Grading.objects.of(user).at(origin, origin_id).select_related("item").first()


def accept_suggestion(user, grading_id) -> Grading | None:
    """Record that ``user`` took their finished grading ``grading_id`` as it was (its verdicts and score);
    the grading, or ``None`` for anything else (another user's, unfinished, not an id)."""
    found = Grading.objects.of(user).filter(pk=own_pk(grading_id), status=Grading.DONE).first()
    return record_choice(user, found.pk, found.suggested_rating) if found is not None else None


def own_pk(value) -> int:
    """A grading id posted by a form as an int (0, which names no grading, for anything else)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def record_choice(user, grading_id, rating: int | None) -> Grading | None:
    """Store ``rating`` (1–4) as the score ``user`` recorded for their finished grading ``grading_id``
    (text or int; anything else, or another user's grading, is ignored). Returns the grading, or ``None``."""
    if rating not in (1, 2, 3, 4):
        return None
    grading = Grading.objects.of(user).filter(pk=own_pk(grading_id), status=Grading.DONE).first()
    if grading is not None:
        grading.accepted_rating = rating
        grading.save(update_fields=["accepted_rating"])
    return grading

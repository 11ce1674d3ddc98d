"""Where a user's answers are graded (an endpoint) and each grading asked of it.

An :class:`Endpoint` is an OpenAI-compatible server: base URL, model name and an API key kept only as a
Fernet token (:mod:`llm_grading.keys`). A candidate's own has ``cohort`` empty; a coach's for a cohort names
the cohort and serves its members who have none of their own. ``owner`` is always the account that typed the
key, so deleting that account deletes the key with it (a deleted coach's cohorts go to a successor, their
endpoint does not).

A :class:`Grading` is one answer sent for grading: a snapshot of the question, the rubric, the answer, the
messages sent (shown to the user) and which endpoint took it (URL and model, never the key); its status; the
validated reply (``result``) or one sentence saying why there is none (``error``); and the score the candidate
accepted or chose instead. ``origin`` and ``origin_id`` say where the answer was written (a review card, a
round item, a critique attempt, a design prompt's page).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

RATINGS = [(1, "Again"), (2, "Hard"), (3, "Good"), (4, "Easy")]


class Endpoint(models.Model):
    """An OpenAI-compatible endpoint: a candidate's own (no cohort) or a coach's for one cohort."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="llm_endpoints",
                              help_text="Who gave the key: deleting the account deletes the endpoint.")
    cohort = models.OneToOneField("coaching.Cohort", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="llm_endpoint", help_text="Empty: the owner's own endpoint.")
    base_url = models.CharField(max_length=500, help_text="e.g. http://127.0.0.1:8000/v1")
    model = models.CharField(max_length=200)
    api_key_token = models.TextField(blank=True, editable=False,
                                     help_text="The API key, Fernet-encrypted (llm_grading.keys); never shown.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner"], condition=Q(cohort__isnull=True),
                                               name="one_own_llm_endpoint")]

    def __str__(self) -> str:
        return f"{self.model} at {self.base_url}"

    @property
    def has_key(self) -> bool:
        return bool(self.api_key_token)

    def api_key(self) -> str:
        """The decrypted key (raises :class:`llm_grading.keys.KeyUnreadable`); for the call only."""
        from .keys import decrypt

        return decrypt(self.api_key_token)

    def set_api_key(self, api_key: str) -> None:
        from .keys import encrypt

        self.api_key_token = encrypt(api_key)


class GradingQuerySet(models.QuerySet):
    """Gradings, by candidate and by where the answer was written."""

    def of(self, user) -> "GradingQuerySet":
        """One candidate's gradings (never anyone else's)."""
        return self.filter(user=user) if user.is_authenticated else self.none()

    def at(self, origin: str, origin_id: int) -> "GradingQuerySet":
        """The gradings of the answer written at ``origin`` (a :attr:`Grading.ORIGINS` value) ``origin_id``."""
        return self.filter(origin=origin, origin_id=origin_id)


class Grading(models.Model):
    """One open answer sent to an endpoint to be graded against its rubric."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(QUEUED, "Waiting"), (RUNNING, "Grading"), (DONE, "Graded"), (FAILED, "Not graded")]
    REVIEW, ROUND, CRITIQUE, DESIGN = "review", "round", "critique", "design"
    ORIGINS = [(REVIEW, "Review card"), (ROUND, "Round item"), (CRITIQUE, "Critique attempt"),
               (DESIGN, "Design prompt")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="llm_gradings")
    item = models.ForeignKey("drills.BankItem", null=True, on_delete=models.SET_NULL, related_name="+")
    origin = models.CharField(max_length=10, choices=ORIGINS)
    origin_id = models.BigIntegerField(help_text="The card, round item, critique attempt or bank item id.")
    page_url = models.CharField(max_length=300, blank=True, help_text="The page that shows this grading.")
    question = models.TextField(help_text="The question as sent (plain text).")
    rubric = models.JSONField(default=list, help_text="The rubric points as sent (plain text).")
    answer = models.TextField()
    messages = models.JSONField(default=list, help_text="The chat messages sent, shown to the user.")
    schema = models.JSONField(default=dict, help_text="The JSON schema the reply had to match.")
    endpoint = models.ForeignKey(Endpoint, null=True, on_delete=models.SET_NULL, related_name="gradings",
                                 help_text="The endpoint called; empty once removed.")
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    by_coach = models.BooleanField(default=False, help_text="Sent to the endpoint of a coach's cohort.")
    cohort_name = models.CharField(max_length=120, blank=True)
    status = models.CharField(max_length=8, choices=STATUSES, default=QUEUED)
    failure = models.CharField(max_length=16, blank=True, help_text="The kind of failure (llm_grading.client).")
    error = models.TextField(blank=True, help_text="One sentence: why there is no grade.")
    result = models.JSONField(null=True, blank=True, help_text="The validated reply (llm_grading.prompt).")
    suggested_rating = models.PositiveSmallIntegerField(choices=RATINGS, null=True, blank=True)
    accepted_rating = models.PositiveSmallIntegerField(choices=RATINGS, null=True, blank=True,
                                                       help_text="The score the candidate recorded.")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = GradingQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "origin", "origin_id"], name="llm_grading_origin")]

    def __str__(self) -> str:
        return f"{self.user} · {self.origin} {self.origin_id} · {self.status}"

    @property
    def pending(self) -> bool:
        return self.status in (self.QUEUED, self.RUNNING)

    @property
    def accepted(self) -> bool:
        """Whether the candidate recorded the suggested score as it was."""
        return self.accepted_rating is not None and self.accepted_rating == self.suggested_rating

    def stale(self, now: datetime | None = None) -> bool:
        """A grading left running (its worker died) for over twice the call's time bound."""
        bound = timedelta(seconds=2 * settings.LLM_GRADING_TIMEOUT_S + 30)
        return self.status == self.RUNNING and self.started_at is not None and (
            (now or timezone.now()) - self.started_at > bound)

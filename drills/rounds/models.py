"""Timed mock rounds (docs/architecture.md §6), registered with the app through :mod:`drills.models`.

A :class:`RoundTemplate` is a round kind as data — a title, a time limit and
an ordered list of *slots* saying which bank items to draw — so a coach can
copy one and change it. The built-in presets are templates with no owner
(:data:`drills.rounds.services.PRESETS`, synced on first use).

A :class:`Round` is one sitting: the server stamps ``started_at`` and
``deadline`` and is the only clock that counts. Each :class:`RoundItem` holds
one drawn bank item with its optional time box, when it was first opened, what
was typed (whiteboard scratch, an open answer or "said it aloud", step answers
or critique flags — autosaved on every change), the reveal, the rubric ticks,
the self-score and the grade. Anything that reaches the server after the
deadline is kept and the item flagged ``late``; ``version`` is bumped by the
one submission that counts, so a double submit records one answer.
The services live in :mod:`drills.rounds.services`.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

#: The kind of a round item that follows up the problem item before it (issue 33 item 1); its bank item is that
#: problem's template.
FOLLOWUP = "followup"


class RoundTemplate(models.Model):
    """A round kind as data: what to draw (``slots``) and how long it lasts.

    Each slot is a dict: ``{"family": "ladder"}`` (a problem template),
    ``{"families": ["ladder", "slo"]}`` (one of them), ``{"kind": "open", "role":
    "manager"}`` (a bank item of a kind, optionally for a role), ``{"weak": 4}``
    (up to four of the candidate's weak spots); any slot may carry ``"box_s"``
    (its time box in seconds) and ``"count"`` (how many such items).
    """

    slug = models.SlugField(max_length=80, unique=True)
    kind = models.CharField(max_length=20, help_text="The preset it is, or was copied from.")
    title = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    duration_s = models.PositiveIntegerField(help_text="The round's time limit in seconds.")
    slots = models.JSONField(default=list)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="round_templates", help_text="Empty for the built-in presets.")
    copied_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="copies")
    position = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.title

    @property
    def is_preset(self) -> bool:
        return self.owner_id is None

    def copy_for(self, coach, **changes) -> "RoundTemplate":
        """A copy owned by ``coach`` (same slots and limit unless ``changes`` say otherwise)."""
        base = f"{self.kind}-{coach.pk}"
        slug, n = base, 1
        while RoundTemplate.objects.filter(slug=slug).exists():
            n += 1
            slug = f"{base}-{n}"
        fields = {"kind": self.kind, "title": f"{self.title} (copy)", "description": self.description,
                  "duration_s": self.duration_s, "slots": [dict(slot) for slot in self.slots],
                  "position": self.position, **changes}
        return RoundTemplate.objects.create(slug=slug, owner=coach, copied_from=self, **fields)


class RoundQuerySet(models.QuerySet):
    """Rounds, by candidate and by whether they are still running."""

    def of(self, user) -> "RoundQuerySet":
        """One candidate's rounds (never anyone else's)."""
        return self.filter(user=user) if user.is_authenticated else self.none()

    def active(self) -> "RoundQuerySet":
        return self.filter(status=Round.ACTIVE)

    def closed(self) -> "RoundQuerySet":
        return self.exclude(status=Round.ACTIVE)


class Round(models.Model):
    """One timed sitting of a round template by a candidate."""

    ACTIVE, FINISHED, EXPIRED = "active", "finished", "expired"
    STATUSES = [(ACTIVE, "In progress"), (FINISHED, "Finished"), (EXPIRED, "Time ran out")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rounds")
    template = models.ForeignKey(RoundTemplate, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="rounds")
    kind = models.CharField(max_length=20, db_index=True)
    title = models.CharField(max_length=120)
    started_at = models.DateTimeField()
    deadline = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES, default=ACTIVE)
    score = models.FloatField(null=True, blank=True, help_text="Mean grade of the items, 0 to 1, once closed.")

    objects = RoundQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["user", "kind", "started_at"], name="round_user_kind_start")]

    def __str__(self) -> str:
        return f"{self.user} · {self.title} · {self.started_at:%Y-%m-%d %H:%M}"

    def get_absolute_url(self) -> str:
        return reverse("rounds:round", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.status == self.ACTIVE

    @property
    def duration_s(self) -> float:
        return (self.deadline - self.started_at).total_seconds()

    def remaining_s(self, now: datetime | None = None) -> int:
        """Whole seconds left by the server's clock (0 once past the deadline or closed)."""
        if not self.is_active:
            return 0
        left = (self.deadline - (now or timezone.now())).total_seconds()
        return max(0, int(left))

    def is_past_deadline(self, now: datetime | None = None) -> bool:
        return (now or timezone.now()) >= self.deadline

    @property
    def time_used_s(self) -> float | None:
        if self.finished_at is None:
            return None
        return (min(self.finished_at, self.deadline) - self.started_at).total_seconds()


class RoundItem(models.Model):
    """One bank item of a round: what was typed, revealed, ticked, scored and graded."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField()
    item = models.ForeignKey("drills.BankItem", null=True, on_delete=models.SET_NULL, related_name="round_items")
    item_slug = models.SlugField(max_length=120, help_text="Kept when the item is removed from the bank.")
    kind = models.CharField(max_length=10, help_text="The bank item's kind when drawn.")
    time_box_s = models.PositiveIntegerField(null=True, blank=True, help_text="Optional time box inside the round.")
    started_at = models.DateTimeField(null=True, blank=True, help_text="When the candidate first opened it.")
    problem = models.ForeignKey("drills.ProblemInstance", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+", help_text="Worked items: the variant drawn for this round.")
    scratch = models.TextField(blank=True, help_text="The whiteboard: working kept with the attempt.")
    answer = models.TextField(blank=True, help_text="Open items: the written answer.")
    said_aloud = models.BooleanField(default=False)
    answers = models.JSONField(default=dict, blank=True,
                               help_text="Worked items: step key → text. Critique items: line → reason.")
    saved_at = models.DateTimeField(null=True, blank=True, help_text="The last autosave.")
    revealed_at = models.DateTimeField(null=True, blank=True)
    ticked = models.JSONField(default=list, blank=True, help_text="Indexes of the rubric points ticked.")
    self_score = models.PositiveSmallIntegerField(null=True, blank=True, choices=[(1, "Again"), (2, "Hard"),
                                                                                 (3, "Good"), (4, "Easy")])
    grade = models.FloatField(null=True, blank=True, help_text="0 to 1: step score, rubric share or critique score.")
    submitted_at = models.DateTimeField(null=True, blank=True)
    auto_submitted = models.BooleanField(default=False, help_text="Graded when the round closed, from what was saved.")
    late = models.BooleanField(default=False, help_text="Something of this answer reached the server after the "
                                                        "deadline.")
    late_answers = models.JSONField(default=list, blank=True,
                                    help_text="Submissions that arrived after this item was graded: kept, not graded.")
    version = models.PositiveIntegerField(default=0, help_text="Bumped by the one submission that counts.")
    attempt = models.ForeignKey("drills.Attempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    critique_attempt = models.ForeignKey("drills.CritiqueAttempt", null=True, blank=True,
                                         on_delete=models.SET_NULL, related_name="+")
    review = models.ForeignKey("drills.ReviewLog", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+", help_text="The FSRS review this item recorded.")
    followup = models.PositiveSmallIntegerField(null=True, blank=True,
                                                help_text="Follow-up items: the link of the problem's chain, from 0.")
    followup_attempt = models.ForeignKey("drills.FollowUpAttempt", null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="+", help_text="Follow-up items: the graded follow-up.")

    class Meta:
        ordering = ["round", "position"]
        constraints = [models.UniqueConstraint(fields=["round", "position"], name="one_round_item_per_position")]

    def __str__(self) -> str:
        return f"{self.round_id}.{self.position} {self.item_slug}"

    def get_absolute_url(self) -> str:
        return reverse("rounds:item", args=[self.round_id, self.position])

    @property
    def is_worked(self) -> bool:
        return self.kind == "problem"

    @property
    def is_critique(self) -> bool:
        return self.kind == "critique"

    @property
    def is_followup(self) -> bool:
        """A follow-up on the round's problem item before it: which steps move, then their new values."""
        return self.kind == FOLLOWUP

    @property
    def is_open(self) -> bool:
        return self.kind in ("open", "design")

    @property
    def is_submitted(self) -> bool:
        return self.submitted_at is not None

    def time_taken_s(self, end: datetime | None = None) -> float | None:
        """Seconds from first opening to submission (or to ``end``, the round's close)."""
        stop = self.submitted_at or end
        if self.started_at is None or stop is None:
            return None
        if self.round.deadline and stop > self.round.deadline and not self.late:
            stop = self.round.deadline
        return max(0.0, (stop - self.started_at).total_seconds())

    @property
    def over_box(self) -> bool:
        taken = self.time_taken_s(self.round.finished_at)
        return bool(self.time_box_s and taken is not None and taken > self.time_box_s)

"""Coaching (docs/architecture.md §7): cohorts, invitations, question sets, assignments and the work they start.

- A :class:`Cohort` is a coach's named group of candidates; a candidate joins
  by accepting an :class:`Invitation` (a random token link) and may be in the
  cohorts of several coaches. A coach sees a candidate only while a
  :class:`Membership` ties them to one of the coach's cohorts.
- A :class:`QuestionSet` is an ordered list of :class:`SetEntry` rows: a bank
  item (open question, design prompt, critique drill), a problem template with
  optional fixed inputs and an optional chain of follow-ups (issue 33), or a round
  preset (:class:`drills.models.RoundTemplate`).
- An :class:`Assignment` gives a set to one candidate or to a cohort, with a
  due time and an optional time limit (which makes it a timed round).
- A :class:`Work` row records what an assignment started for a candidate (the
  problem drawn for an entry, or the round). The candidate's status is not
  stored: :mod:`coaching.services` computes it from their attempts.
- A :class:`Notice` row is one e-mail sent (assigned, or due reminder), which
  makes the Celery tasks idempotent.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from accounts.roles import is_coach


def new_token() -> str:
    """A fresh invitation token: 24 random bytes, URL-safe (32 characters)."""
    return secrets.token_urlsafe(24)


class Cohort(models.Model):
    """A coach's named group of candidates."""

    coach = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="coached_cohorts")
    name = models.CharField(max_length=120)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="cohorts",
                                     blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [models.UniqueConstraint(fields=["coach", "name"], name="one_cohort_name_per_coach")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("coaching:cohort", args=[self.pk])


class Invitation(models.Model):
    """A link that joins whoever accepts it (logged in) to the cohort."""

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="invitations")
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"invitation to {self.cohort}"

    def get_absolute_url(self) -> str:
        return reverse("coaching:invitation", args=[self.token])


class Membership(models.Model):
    """A candidate in a cohort (they accepted an invitation, or staff added them)."""

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="memberships")
    candidate = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    invitation = models.ForeignKey(Invitation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cohort", "candidate__username"]
        constraints = [models.UniqueConstraint(fields=["cohort", "candidate"], name="one_membership_per_cohort")]

    def __str__(self) -> str:
        return f"{self.candidate} in {self.cohort}"


class QuestionSet(models.Model):
    """A coach's ordered list of items to assign, with a title and instructions."""

    coach = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="question_sets")
    title = models.CharField(max_length=160)
    instructions = models.TextField(blank=True, help_text="Markdown, shown to the candidate.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-pk"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("coaching:set", args=[self.pk])


class SetEntry(models.Model):
    """One entry of a set: a bank item (with fixed inputs for a problem template) or a round preset."""

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="entries")
    position = models.PositiveSmallIntegerField()
    item = models.ForeignKey("drills.BankItem", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    fixed_inputs = models.JSONField(default=dict, blank=True,
                                    help_text='Problem templates: inputs held fixed, e.g. {"model": "llama-3.1-70b"}.')
    round_template = models.ForeignKey("drills.RoundTemplate", null=True, blank=True, on_delete=models.CASCADE,
                                       related_name="+")
    followups = models.PositiveSmallIntegerField(
        default=0, help_text="Problem templates: how many follow-ups the interviewer asks on the drawn problem's "
                             "stack (0: none; 2 to 4: a follow-up chain, done when the chain is answered).")

    class Meta:
        ordering = ["question_set", "position", "pk"]
        constraints = [models.CheckConstraint(
            condition=Q(item__isnull=False, round_template__isnull=True) | Q(item__isnull=True,
                                                                             round_template__isnull=False),
            name="set_entry_is_item_or_round")]
        verbose_name_plural = "set entries"

    def __str__(self) -> str:
        return f"{self.position}. {self.label}"

    @property
    def kind(self) -> str:
        """``open``, ``problem``, ``critique``, ``design`` (the item's kind), ``followups`` (a problem template
        with a follow-up chain) or ``round``."""
        if not self.item_id:
            return "round"
        return "followups" if self.followups and self.item.kind == "problem" else self.item.kind

    @property
    def label(self) -> str:
        if self.round_template_id:
            return f"Round: {self.round_template.title}"
        from drills.bank.services import item_title

        text = item_title(self.item, 90)
        if self.fixed_inputs:
            text += " (" + ", ".join(fixed_input_phrase(k, v) for k, v in sorted(self.fixed_inputs.items())) + ")"
        if self.followups:
            text += f", then a chain of {self.followups} follow-ups"
        return text


def fixed_input_phrase(name: str, value) -> str:
    """One fixed input in words: ``GPU H200 SXM 141GB``, ``context limit 32768`` (not ``gpu=h200-sxm-141gb``)."""
    from calculators.engine.catalog import default_catalog
    from calculators.families import input_label

    label = input_label(name)
    label = label if any(ch.isupper() for ch in label[1:]) else label[:1].lower() + label[1:]
    catalog = default_catalog()
    if name == "gpu" and value in catalog.gpus:
        value = catalog.gpus[value].name
    elif name == "model" and value in catalog.models:
        value = catalog.models[value].name
    return f"{label} {value}"


class AssignmentQuerySet(models.QuerySet):
    """Assignments, and the ones a candidate has (directly or through a cohort)."""

    def for_candidate(self, user) -> "AssignmentQuerySet":
        """Assignments given to ``user`` directly or to a cohort they are in now; none for a coach
        account (a membership from before it became one must not carry another coach's unpublished items)."""
        if not user.is_authenticated or is_coach(user):
            return self.none()
        return self.filter(Q(candidate=user) | Q(cohort__memberships__candidate=user)).distinct()


class Assignment(models.Model):
    """A set given to one candidate or a cohort, due at a time, optionally time-limited (a timed round)."""

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="assignments")
    coach = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments_given")
    candidate = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="assignments")
    cohort = models.ForeignKey(Cohort, null=True, blank=True, on_delete=models.CASCADE, related_name="assignments")
    due_at = models.DateTimeField()
    time_limit_s = models.PositiveIntegerField(null=True, blank=True,
                                               help_text="Seconds; set, the assignment is sat as one timed round.")
    created_at = models.DateTimeField()

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["due_at", "pk"]
        constraints = [models.CheckConstraint(
            condition=Q(candidate__isnull=False, cohort__isnull=True) | Q(candidate__isnull=True,
                                                                          cohort__isnull=False),
            name="assignment_to_candidate_or_cohort")]

    def __str__(self) -> str:
        return f"{self.question_set} → {self.candidate or self.cohort}"

    def get_absolute_url(self) -> str:
        return reverse("coaching:assignment", args=[self.pk])

    @property
    def target_label(self) -> str:
        return f"cohort {self.cohort.name}" if self.cohort_id else str(self.candidate)


class Work(models.Model):
    """What an assignment started for a candidate: the problem drawn for an entry, or the timed/preset round."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="works")
    candidate = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # RESTRICT, not CASCADE: an entry someone started cannot be deleted alone (the row is what hides this work
    # from the candidate's other coaches); deleting the whole assignment still takes its work with it.
    entry = models.ForeignKey(SetEntry, null=True, blank=True, on_delete=models.RESTRICT, related_name="+",
                              help_text="Empty for the timed round of a time-limited assignment.")
    problem = models.ForeignKey("drills.ProblemInstance", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    round = models.ForeignKey("drills.Round", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    started_at = models.DateTimeField()

    class Meta:
        ordering = ["assignment", "candidate", "pk"]
        constraints = [models.UniqueConstraint(fields=["assignment", "candidate", "entry"],
                                               name="one_work_per_entry"),
                       models.UniqueConstraint(fields=["assignment", "candidate"], condition=Q(entry__isnull=True),
                                               name="one_timed_round_per_assignment")]

    def __str__(self) -> str:
        return f"{self.candidate} · {self.assignment} · {self.entry_id or 'timed round'}"


class Notice(models.Model):
    """One e-mail sent about an assignment to a candidate (so the tasks send each at most once)."""

    ASSIGNED, REMINDER = "assigned", "reminder"
    KINDS = [(ASSIGNED, "Assigned"), (REMINDER, "Due reminder")]

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="notices")
    candidate = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=KINDS)
    sent_at = models.DateTimeField()

    class Meta:
        ordering = ["-sent_at"]
        constraints = [models.UniqueConstraint(fields=["assignment", "candidate", "kind"], name="one_notice_each")]

    def __str__(self) -> str:
        return f"{self.kind} → {self.candidate}"


class SharedCalibration(models.Model):
    """A coach's own calibration (:class:`calculators.models.Calibration`) shared with one of their cohorts:
    its members may apply it to their calculators and simulator."""

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="shared_calibrations")
    calibration = models.ForeignKey("calculators.Calibration", on_delete=models.CASCADE, related_name="shares")
    shared_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-shared_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["cohort", "calibration"], name="one_share_per_cohort")]

    def __str__(self) -> str:
        return f"{self.calibration.name} shared with {self.cohort}"

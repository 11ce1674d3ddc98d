"""A candidate's graded follow-ups (issue 33 item 1, DESIGN §14), registered with the app through :mod:`drills.models`.

A :class:`FollowUpAttempt` is one link of a follow-up chain answered on a problem: the change the interviewer
made (``change``, the engine's :class:`~calculators.engine.followup.Change` as data), the changed stack's inputs,
the steps the candidate marked as moving and the new values typed, the grade of both halves, and ``own``: the
candidate's values of every step after this link, which the next link carries error forward from.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class FollowUpAttempt(models.Model):
    """One graded follow-up of a problem: marks and new values, both graded."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="followups")
    problem = models.ForeignKey("drills.ProblemInstance", on_delete=models.CASCADE, related_name="followups")
    attempt = models.ForeignKey("drills.Attempt", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="followups", help_text="The attempt whose answers are the first ones.")
    position = models.PositiveSmallIntegerField(help_text="The link of the chain, 0 for the first follow-up.")
    change = models.JSONField(help_text="{input, before, after, sentence}: what the interviewer changed.")
    inputs = models.JSONField(help_text="The changed stack's inputs.")
    marked = models.JSONField(default=list, help_text="The step keys the candidate marked as moving.")
    answers = models.JSONField(default=dict, help_text="Step key → the new value as typed.")
    grade = models.JSONField(help_text="The engine's FollowUpGrade.to_json(): marks, values, scores.")
    own = models.JSONField(default=dict, help_text="The candidate's values of every step after this link.")
    marks_score = models.FloatField(help_text="Share of the steps marked right, 0 to 1.")
    values_score = models.FloatField(help_text="Mean credit of the graded values, 0 to 1.")
    score = models.FloatField(help_text="Marks and values weigh half each, 0 to 1.")
    submitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["problem", "position", "pk"]
        indexes = [models.Index(fields=["user", "problem", "position"], name="followup_user_problem_pos")]

    def __str__(self) -> str:
        return f"{self.user} on {self.problem}, follow-up {self.position + 1}: {self.score:.0%}"

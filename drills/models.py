"""Problem instances, attempts and per-step grades.

A problem instance is (family, seed) plus the generator's version; it stores
its resolved inputs and the catalog entries it was drawn from, so it shows the
same numbers every time it is opened, even after the catalog changes, and a
grade can be recomputed. An attempt stores what a logged-in candidate typed per
step, the parsed value, the verdict and the time taken.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from calculators.engine.catalog import catalog_from_entries
from calculators.engine.procedures import FAMILIES, Result


class ProblemInstance(models.Model):
    """One randomized problem of a calculator family.

    ``inputs`` are the family's snake-case inputs (``model`` is a catalog id);
    ``snapshot`` holds the raw ``models.json``/``gpus.json`` objects used, as
    ``{"models": [...], "gpus": [...]}``.
    """

    family = models.CharField(max_length=32, db_index=True)
    seed = models.BigIntegerField()
    generator_version = models.PositiveSmallIntegerField()
    inputs = models.JSONField()
    snapshot = models.JSONField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.family} #{self.pk} (seed {self.seed})"

    def get_absolute_url(self) -> str:
        return reverse("drills:problem", args=[self.family, self.pk])

    @property
    def family_info(self):
        """The engine's :class:`~calculators.engine.procedures.Family`."""
        return FAMILIES[self.family]

    def solve(self) -> Result:
        """The right answers, computed from the stored inputs and catalog snapshot."""
        catalog = catalog_from_entries(self.snapshot.get("models", []), self.snapshot.get("gpus", []))
        return self.family_info.run(dict(self.inputs), catalog)


class Attempt(models.Model):
    """A candidate's submitted answers to one problem, graded step by step."""

    problem = models.ForeignKey(ProblemInstance, on_delete=models.CASCADE, related_name="attempts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attempts")
    score = models.FloatField(help_text="Mean credit over the steps, 0 to 1.")
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    time_taken_s = models.FloatField(null=True, blank=True, help_text="Seconds from page load to submission.")

    class Meta:
        ordering = ["-submitted_at"]

    def __str__(self) -> str:
        return f"{self.user} on {self.problem}: {self.score:.0%}"


class StepAnswer(models.Model):
    """One step of an attempt: the raw text, what was read, and the verdict."""

    VERDICTS = [(v, v.replace("_", " ")) for v in
                ("correct", "carried_forward", "close", "misconception", "impossible", "wrong", "unreadable")]

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveSmallIntegerField()
    key = models.CharField(max_length=64)
    unit = models.CharField(max_length=16)
    raw_input = models.TextField(blank=True)
    parsed_value = models.FloatField(null=True, blank=True)
    verdict = models.CharField(max_length=20, choices=VERDICTS)
    credit = models.FloatField()
    misconception = models.CharField(max_length=64, blank=True)
    expected = models.FloatField()
    carried_expected = models.FloatField(null=True, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["attempt", "position"]
        constraints = [models.UniqueConstraint(fields=["attempt", "key"], name="one_answer_per_step")]

    def __str__(self) -> str:
        return f"{self.key}: {self.verdict}"

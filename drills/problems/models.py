"""Problem instances, attempts and per-step grades.

A problem instance is (family, seed) plus the generator's version; it stores
its resolved inputs and the catalog entries it was drawn from, so it shows the
same numbers every time it is opened, even after the catalog changes, and a
grade can be recomputed. An attempt stores what a logged-in candidate typed per
step, the parsed value, the verdict and the time taken.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings
from django.db import models
from django.urls import reverse

from calculators.engine.catalog import catalog_from_entries
from calculators.engine.procedures import Result
from calculators.families import FAMILIES


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
        """The saved problem's page; an unsaved one (an anonymous visitor's) is rebuilt from its seed."""
        if self.pk is None:
            return f"{reverse('drills:new', args=[self.family])}?seed={self.seed}"
        return reverse("drills:problem", args=[self.family, self.pk])

    @property
    def family_info(self):
        """The engine's :class:`~calculators.engine.procedures.Family`."""
        return FAMILIES[self.family]

    def solve(self) -> Result:
        """The right answers, computed from the stored inputs and catalog snapshot.

        Kept in this process for the last :data:`SOLVED_MEMO_SIZE` problems: a
        graded submission needs the steps twice (the form and the grader), and
        every submission and every view of a problem used to run the procedure
        (and format its worked substitutions) again for the same numbers. Treat
        the result as read-only.
        """
        key = (self.family, repr(self.inputs), repr(self.snapshot))
        return _solve(_Solvable(key, self.family, self.inputs, self.snapshot))


# How many solved problems each process keeps (a Result is a few kB: 256 of them is under a megabyte).
SOLVED_MEMO_SIZE = 256


class _Solvable:
    """A problem's family, inputs and snapshot, hashed and compared by their ``repr`` (dicts are unhashable)."""

    __slots__ = ("key", "family", "inputs", "snapshot")

    def __init__(self, key, family, inputs, snapshot):
        self.key, self.family, self.inputs, self.snapshot = key, family, inputs, snapshot

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Solvable) and self.key == other.key


@lru_cache(maxsize=SOLVED_MEMO_SIZE)
def _solve(problem: _Solvable) -> Result:
    catalog = catalog_from_entries(problem.snapshot.get("models", []), problem.snapshot.get("gpus", []))
    return FAMILIES[problem.family].run(dict(problem.inputs), catalog)


def _earlier_attempt(user_ref: str, problem_ref: str, pk_ref: str) -> models.Exists:
    return models.Exists(Attempt.objects.filter(user=models.OuterRef(user_ref), problem=models.OuterRef(problem_ref),
                                                pk__lt=models.OuterRef(pk_ref)))


class AttemptQuerySet(models.QuerySet):
    """Attempts, and the ones that are evidence of what a candidate knows."""

    def first_graded(self) -> "AttemptQuerySet":
        """Each candidate's first graded attempt of each problem only (issue 20, item 4).

        Grading shows the expected value of every step, so a later attempt of
        the same problem is practice with the answers seen, not evidence.
        """
        return self.exclude(_earlier_attempt("user", "problem", "pk"))

    def with_practice(self) -> "AttemptQuerySet":
        """Annotate ``practice``: ``True`` for a re-grade (an earlier attempt of the same problem by the same
        candidate exists), so not counted by :meth:`first_graded`; ``False`` for the attempt that counts."""
        return self.annotate(practice=_earlier_attempt("user", "problem", "pk"))


class StepAnswerQuerySet(models.QuerySet):
    """Graded steps, and the ones that are evidence (of a first graded attempt)."""

    def first_graded(self) -> "StepAnswerQuerySet":
        """Only the steps of each candidate's first graded attempt of a problem (see ``Attempt.first_graded``)."""
        return self.exclude(_earlier_attempt("attempt__user", "attempt__problem", "attempt_id"))

    def slips(self) -> "StepAnswerQuerySet":
        """The misconceptions shown, once per attempt: the first step of each attempt graded as a given
        misconception (``verdict`` ``misconception`` with its id), never a later step of the same attempt with the
        same one. A later step computed from an earlier one repeats its mistake (weights typed at 4 bits are off
        on the weights step and again on the memory-left step that uses them): one slip, counted once wherever
        misconceptions are counted (the progress page, the coach's dashboard and report, the home page, the weak
        spots a round draws)."""
        earlier = StepAnswer.objects.filter(attempt_id=models.OuterRef("attempt_id"), verdict="misconception",
                                            misconception=models.OuterRef("misconception"),
                                            position__lt=models.OuterRef("position"))
        return self.filter(verdict="misconception").exclude(misconception="").exclude(models.Exists(earlier))


class Attempt(models.Model):
    """A candidate's submitted answers to one problem, graded step by step."""

    objects = AttemptQuerySet.as_manager()

    problem = models.ForeignKey(ProblemInstance, on_delete=models.CASCADE, related_name="attempts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attempts")
    score = models.FloatField(help_text="Mean credit over the steps, 0 to 1.")
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    time_taken_s = models.FloatField(null=True, blank=True, help_text="Seconds from page load to submission.")

    class Meta:
        ordering = ["-submitted_at"]
        # "Is there an earlier attempt of this problem by this candidate?" (first_graded, the drill page's
        # practice note, the dashboard and progress) probes this index instead of scanning the problem's attempts.
        indexes = [models.Index(fields=["user", "problem", "id"], name="attempt_user_problem_id")]

    def __str__(self) -> str:
        return f"{self.user} on {self.problem}: {self.score:.0%}"


class StepAnswer(models.Model):
    """One step of an attempt: the raw text, what was read, and the verdict."""

    objects = StepAnswerQuerySet.as_manager()

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

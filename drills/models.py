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


class BankItemQuerySet(models.QuerySet):
    def published(self) -> "BankItemQuerySet":
        """Items candidates may see."""
        return self.filter(published=True)

    def visible_to(self, user) -> "BankItemQuerySet":
        """Published items, plus (for a candidate) items authored by a coach of a cohort they are in now,
        (for a coach) their own items, and (for staff) everything."""
        if user is not None and getattr(user, "is_staff", False):
            return self.all()
        if user is None or not user.is_authenticated:
            return self.published()
        from django.contrib.auth import get_user_model

        coaches = get_user_model().objects.filter(coached_cohorts__memberships__candidate=user).values("pk")
        return self.filter(models.Q(published=True) | models.Q(author=user) | models.Q(author__in=coaches))

    def from_fixtures(self) -> "BankItemQuerySet":
        """Items loaded by ``load_content`` (no author), which a reload may update or remove."""
        return self.filter(author__isnull=True)


class BankItem(models.Model):
    """A question of the bank: prompt, model answer (Markdown with shortcodes) and rubric points.

    Items with no ``author`` come from ``fixtures/questions/`` and are kept in
    step with the files by ``load_content``; items a coach writes carry the
    coach as ``author`` and are never touched by a reload. A chapter's
    questions are ``chapter.questions``.
    """

    OPEN, PROBLEM, CRITIQUE, DESIGN = "open", "problem", "critique", "design"
    KINDS = [(OPEN, "Open question"), (PROBLEM, "Problem template"), (CRITIQUE, "Critique drill"),
             (DESIGN, "Design prompt")]
    DIFFICULTIES = [(1, "Warm-up"), (2, "Core"), (3, "Stretch")]
    ROLES = ("architect", "engineer", "manager")

    kind = models.CharField(max_length=10, choices=KINDS, default=OPEN)
    slug = models.SlugField(max_length=120, unique=True)
    prompt = models.TextField(help_text="Markdown.")
    model_answer = models.TextField(help_text="Markdown; shortcodes allowed.")
    rubric = models.JSONField(default=list, blank=True, help_text="The points a good answer makes.")
    chapter = models.ForeignKey("runbook.Chapter", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="questions")
    track = models.CharField(max_length=1, blank=True, help_text="The chapter's track, A–E.")
    topic = models.CharField(max_length=80, blank=True)
    difficulty = models.PositiveSmallIntegerField(choices=DIFFICULTIES, default=2)
    roles = models.JSONField(default=list, blank=True, help_text="architect, engineer, manager.")
    misconceptions = models.JSONField(default=list, blank=True, help_text="Misconception ids it probes.")
    family = models.CharField(max_length=32, blank=True,
                              help_text="Problem templates: the calculator family whose problems it draws.")
    fixed_inputs = models.JSONField(default=dict, blank=True,
                                    help_text="Problem templates: inputs held fixed, e.g. {\"model\": \"llama-3.1-70b\"}.")
    details = models.JSONField(default=dict, blank=True,
                               help_text="Design prompts: levels, follow-ups, numbers, resources. "
                                         "Critique drills: the document's lines and planted errors.")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="bank_items", help_text="Empty for items loaded from fixtures.")
    published = models.BooleanField(default=True)
    position = models.PositiveSmallIntegerField(default=0, help_text="Order within the chapter.")
    source_path = models.CharField(max_length=300, blank=True)
    search_text = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BankItemQuerySet.as_manager()

    class Meta:
        ordering = ["chapter__number", "position", "slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def from_fixtures(self) -> bool:
        return self.author_id is None

    def save(self, *args, **kwargs):
        self.search_text = self.plain_text()
        super().save(*args, **kwargs)

    def plain_text(self) -> str:
        """Prompt, model answer and rubric as a reader sees them (numbers filled in), for search."""
        from runbook.content import plain_text
        from runbook.shortcodes import ShortcodeError

        parts = [self.prompt, self.model_answer, *[str(point) for point in self.rubric or ()]]
        try:
            return "\n".join(plain_text(part) for part in parts if part)
        except ShortcodeError:
            return "\n".join(part for part in parts if part)


from .models_reviews import *  # noqa: E402,F401,F403 - Card, ReviewLog, ReviewSettings (spaced repetition)
from .models_critique import CritiqueAttempt, CritiqueMark  # noqa: E402,F401 - critique drills
from .models_lab import LabRun  # noqa: E402,F401 - the lab's runs
from .models_rounds import Round, RoundItem, RoundTemplate  # noqa: E402,F401 - timed mock rounds

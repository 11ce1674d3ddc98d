"""The question bank's items: open questions, problem templates, critique drills and design prompts."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.roles import is_coach, oversees_all


class BankItemQuerySet(models.QuerySet):
    """The bank's items, filtered by who may see them and where they came from."""

    def published(self) -> "BankItemQuerySet":
        """Items candidates may see."""
        return self.filter(published=True)

    def visible_to(self, user) -> "BankItemQuerySet":
        """Published items, plus (for a candidate) items authored by a coach of a cohort they are in now,
        (for a coach) their own items, (for anyone) the archived items in their deck (:func:`archived_held_by`),
        and (for a superuser) everything."""
        return self.filter(visible_condition(user))

    def from_fixtures(self) -> "BankItemQuerySet":
        """Items loaded by ``load_content`` (no author, a fixture file's path), which a reload may update or remove.

        A deleted coach's questions also have no author but no source path: they are archived, not fixtures.
        """
        return self.filter(author__isnull=True).exclude(source_path="")


def visible_condition(user, through: str = "") -> models.Q:
    """The condition of :meth:`BankItemQuerySet.visible_to` on the items reached through ``through`` (a lookup
    path ending in ``__``, e.g. ``"item__"`` from a card; empty on the items themselves).

    Filtering cards on ``visible_condition(user, "item__")`` uses the join to their item instead of an
    ``item IN (the visible items)`` subquery: the same rows, a query that is cheaper to build and to plan.
    An empty condition (everything) for a superuser; ``user`` may be ``None`` or anonymous (published items only).
    """
    if user is not None and oversees_all(user):
        return models.Q()
    if user is None or not user.is_authenticated:
        return models.Q(**{f"{through}published": True})
    own = (models.Q(**{f"{through}published": True}) | models.Q(**{f"{through}author": user})
           | archived_held_by(user, through))
    if is_coach(user):
        # A coach never reads another coach's unpublished items, even one who joined a cohort as a candidate
        # before coaches were refused (coaching.services.accept_invitation) or was made a coach after joining.
        return own
    from django.contrib.auth import get_user_model

    coaches = get_user_model().objects.filter(coached_cohorts__memberships__candidate=user).values("pk")
    return own | models.Q(**{f"{through}author__in": coaches})


def archived_held_by(user, through: str = "") -> models.Q:
    """The archived items (a deleted coach's questions: no author, no fixture file) ``user`` holds a card of.

    Whoever had one in their deck when its author deleted their account keeps answering it
    (:mod:`home.deletion`); nobody else sees it.
    """
    from django.apps import apps

    held = apps.get_model("drills", "Card").objects.filter(user=user).values("item_id")
    return models.Q(**{f"{through}author__isnull": True, f"{through}source_path": "", f"{through}pk__in": held})


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
                                    help_text="Problem templates: inputs held fixed, "
                                              "e.g. {\"model\": \"llama-3.1-70b\"}.")
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
        """Whether ``load_content`` wrote it (no author, a fixture file's path); see ``BankItemQuerySet``."""
        return self.author_id is None and bool(self.source_path)

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

"""The reading room: the sixteen documents, their tracks and paths, chapters, glossary, errata and reading list.

Every row here is loaded from ``fixtures/`` by ``manage.py load_content``
(:mod:`runbook.loading`); nothing is authored in the app, so the loader may
create, update and remove any of them by slug. Markdown fields are rendered by
:mod:`runbook.content`; ``search_text`` is their plain text with the live
numbers filled in, kept by the loader for search.

A document (one of the sixteen of ``tracks.yaml``) exists before it is written;
its :class:`Chapter` appears when ``runbook/NN-slug.md`` does. The interview
questions at the end of a chapter are ``chapter.questions`` (the bank lives in
``drills``; this app never imports it).
"""

from __future__ import annotations

from django.db import models
from django.urls import reverse


class Numbered:
    """Shared by the sixteen documents and the written chapters: printed as the map numbers them."""

    number: int
    title: str

    def __str__(self) -> str:
        return f"{self.number:02d} · {self.title}"

    @property
    def label(self) -> str:
        """``06`` — the number as the map writes it."""
        return f"{self.number:02d}"


class Track(models.Model):
    """One of the five tracks A–E: what it settles and what skipping it costs."""

    letter = models.CharField(max_length=1, unique=True)
    title = models.CharField(max_length=200)
    settles = models.TextField(help_text="Markdown: what the track settles.")
    skip_cost = models.TextField(help_text="Markdown: what skipping it costs.")

    class Meta:
        ordering = ["letter"]

    def __str__(self) -> str:
        return f"{self.letter} · {self.title}"


# A chapter's Markdown body and its search text: some 25-40 kB each per chapter. A page that only names or links
# chapters (the rail, a card's heading, a review queue) leaves them in the database: reading them was most of the
# time of those queries (the rail read all sixteen bodies, the review queue one per due card).
CHAPTER_TEXT_FIELDS = ("body", "search_text")


def chapter_text(path: str) -> tuple[str, ...]:
    """The lookups of a related chapter's text fields, for ``defer()``: ``chapter_text("item__chapter")``."""
    return tuple(f"{path}__{name}" for name in CHAPTER_TEXT_FIELDS)


class DocumentQuerySet(models.QuerySet):
    """The map's sixteen documents (written chapters or still in preparation) in reading order."""

    def in_order(self) -> "DocumentQuerySet":
        """All documents by number, with their track and chapter (without the chapter's text)."""
        return self.select_related("track", "chapter").defer(*chapter_text("chapter")).order_by("number")


class Document(Numbered, models.Model):
    """One of the sixteen documents of the map, written or still in preparation."""

    number = models.PositiveSmallIntegerField(unique=True)
    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    track = models.ForeignKey(Track, null=True, blank=True, on_delete=models.SET_NULL, related_name="documents")
    chapter = models.OneToOneField("Chapter", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="document")

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["number"]


    @property
    def written(self) -> bool:
        return self.chapter_id is not None

    def get_absolute_url(self) -> str | None:
        """The chapter's page, or ``None`` while the document is in preparation."""
        return reverse("runbook:chapter", args=[self.slug]) if self.chapter_id else None


class ReadingPath(models.Model):
    """A suggested way through the runbook (the cram path, the one-week path, the full path)."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(help_text="Markdown.")
    document_numbers = models.JSONField(default=list, help_text="Document numbers, in reading order.")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.title


class ChapterQuerySet(models.QuerySet):
    """Chapters in reading order."""

    def in_order(self) -> "ChapterQuerySet":
        return self.order_by("number")


class Chapter(Numbered, models.Model):
    """A written document: front matter and a Markdown body with live-number shortcodes."""

    number = models.PositiveSmallIntegerField(unique=True)
    slug = models.SlugField(max_length=80, unique=True)
    track = models.CharField(max_length=1, blank=True, help_text="A–E; blank for 00, the map.")
    title = models.CharField(max_length=200)
    summary = models.TextField()
    reading_minutes = models.PositiveSmallIntegerField()
    prerequisites = models.JSONField(default=list, blank=True, help_text="Chapter slugs.")
    body = models.TextField(help_text="Markdown with shortcodes.")
    source_path = models.CharField(max_length=300, blank=True)
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the source file.")
    search_text = models.TextField(blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ChapterQuerySet.as_manager()

    class Meta:
        ordering = ["number"]


    def get_absolute_url(self) -> str:
        return reverse("runbook:chapter", args=[self.slug])


class GlossaryTerm(models.Model):
    """A term of the quick-reference sheet: its one-line answer and the chapter that defines it."""

    slug = models.SlugField(max_length=80, unique=True)
    term = models.CharField(max_length=120)
    aliases = models.JSONField(default=list, blank=True,
                               help_text="Spellings linked automatically in chapter text.")
    answer = models.TextField(help_text="Markdown: the one-line answer.")
    chapter_slug = models.SlugField(max_length=80, blank=True)
    section = models.CharField(max_length=80, blank=True, help_text="The anchor of the defining section.")
    search_text = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["term"]

    def __str__(self) -> str:
        return self.term

    def get_absolute_url(self) -> str:
        return reverse("runbook:glossary") + f"#{self.slug}"

    @property
    def spellings(self) -> list[str]:
        """The term and its aliases, as matched in chapter text."""
        return [self.term, *[alias for alias in self.aliases if alias]]


class ErratumEntry(models.Model):
    """An entry of the errata register, a claim checked and found right, or one our engine adds."""

    ERRATUM, CHECKED, ENGINE = "erratum", "checked", "engine"
    KINDS = [(ERRATUM, "Erratum"), (CHECKED, "Checked and found right"), (ENGINE, "Added by our engine")]

    slug = models.SlugField(max_length=80, unique=True)
    kind = models.CharField(max_length=10, choices=KINDS, default=ERRATUM)
    title = models.CharField(max_length=200)
    claimed = models.TextField(blank=True, help_text="Markdown: what the earlier source claimed.")
    truth = models.TextField(blank=True, help_text="Markdown: what is true.")
    why = models.TextField(blank=True, help_text="Markdown: why it matters.")
    proof = models.TextField(blank=True, help_text="Markdown with shortcodes: the engine computation.")
    position = models.PositiveSmallIntegerField(default=0)
    search_text = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["position", "slug"]
        verbose_name_plural = "errata entries"

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("runbook:errata") + f"#{self.slug}"


class Stage(models.Model):
    """A stage of the learning path (seed 004)."""

    number = models.PositiveSmallIntegerField(unique=True)
    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"Stage {self.number}: {self.title}"


class BarTopic(models.Model):
    """A topic of the senior-staff bar: a design prompt a senior candidate must carry."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.title


class Resource(models.Model):
    """A paper, post or tool of the reading list, with what it gives a senior candidate."""

    slug = models.SlugField(max_length=80, unique=True)
    stage = models.ForeignKey(Stage, null=True, blank=True, on_delete=models.SET_NULL, related_name="resources",
                              help_text="Empty for a resource the senior-staff bar names but no stage lists.")
    title = models.CharField(max_length=300)
    authors = models.CharField(max_length=300, blank=True)
    year = models.CharField(max_length=20, blank=True)
    kind = models.CharField(max_length=40, blank=True)
    level = models.CharField(max_length=40, blank=True)
    time = models.CharField(max_length=60, blank=True, help_text="How long it takes, as the seed gives it.")
    summary = models.TextField(blank=True)
    gives = models.TextField(blank=True, help_text="What it gives a senior candidate.")
    topics = models.ManyToManyField(BarTopic, blank=True, related_name="resources")
    position = models.PositiveSmallIntegerField(default=0)
    search_text = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["stage__number", "position", "slug"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("runbook:reading") + f"#{self.slug}"

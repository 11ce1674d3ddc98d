"""The reading room's pages: the runbook's index, a chapter, glossary, errata, reading list and search.

Views only gather rows and hand them to templates; Markdown is rendered (and
cached) by :mod:`runbook.content`, search is :mod:`runbook.search`. Every page
works without JavaScript; the reading list's filters also update in place
through htmx (the ``results`` partial of ``runbook/reading.html``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from runbook.content import render_chapter
from runbook.models import BarTopic, Chapter, Document, ErratumEntry, GlossaryTerm, ReadingPath, Resource, Stage, Track
from runbook.rail import RailItem, chapter_map, chapter_questions
from runbook.search import KINDS, MAX_QUERY, query_terms
from runbook.search import search as run_search
from runbook.spelling import respelled


def documents() -> list[RailItem]:
    """All documents in order: from ``tracks.yaml``'s rows, or the written chapters if there are none."""
    rows = list(Document.objects.in_order())
    if rows:
        return [RailItem(d.number, d.slug, d.title, d.summary, d.track.letter if d.track else "",
                         d.get_absolute_url(), d.chapter.reading_minutes if d.chapter else None) for d in rows]
    return [RailItem(c.number, c.slug, c.title, c.summary, c.track, c.get_absolute_url(), c.reading_minutes)
            for c in Chapter.objects.in_order()]


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """The five tracks with their documents, what each settles and costs to skip, and the paths."""
    items = documents()
    by_number = {item.number: item for item in items}
    tracks = [(track, [item for item in items if item.track == track.letter]) for track in Track.objects.all()]
    untracked = [item for item in items if not item.track]
    paths = [(path, [by_number[n] for n in path.document_numbers if n in by_number])
             for path in ReadingPath.objects.all()]
    written = sum(1 for item in items if item.written)
    context = {"tracks": tracks, "untracked": untracked, "paths": paths, "written": written, "total": len(items)}
    return render(request, "runbook/index.html", context)


@require_safe
def chapter(request: HttpRequest, slug: str) -> HttpResponse:
    """A chapter: the rail, its contents, the body with live numbers, its interview questions."""
    try:
        current = Chapter.objects.defer("search_text").get(slug=slug)  # the search's text: not shown here
    except Chapter.DoesNotExist:
        raise Http404(f"No chapter '{slug}' has been written.") from None
    rendered = render_chapter(current)
    shared = chapter_map()
    written = shared.written
    position = next(i for i, row in enumerate(written) if row.pk == current.pk)
    # The chapter's track is in the rail already (read with it), unless no document of the track is listed.
    track = next((group for group, _ in shared.rail if group is not None and group.letter == current.track), None)
    if track is None and current.track:
        track = Track.objects.filter(letter=current.track).first()
    questions, questions_html = chapter_questions(current)
    context = {
        "chapter": current,
        "body": mark_safe(rendered.html),
        "toc": rendered.toc,
        "track": track,
        "previous": written[position - 1] if position > 0 else None,
        "next": written[position + 1] if position + 1 < len(written) else None,
        "prerequisites": [shared.by_slug[slug] for slug in current.prerequisites if slug in shared.by_slug],
        "questions": questions,
        "questions_html": questions_html,
        # The rail appears twice (beside the article, and folded above it on narrow screens): rendered once.
        "rail_html": shared.rail_html(current),
    }
    return render(request, "runbook/chapter.html", context)


@require_safe
def glossary(request: HttpRequest) -> HttpResponse:
    """Every term with its one-line answer and a link to the section that defines it."""
    by_slug = {item.slug: item for item in documents()}
    terms = []
    for term in GlossaryTerm.objects.all():
        document = by_slug.get(term.chapter_slug)
        url = None
        if document and document.url:
            url = document.url + (f"#{term.section}" if term.section else "")
        aliases = [alias for alias in term.aliases if alias.lower() != term.term.lower()]
        terms.append({"term": term, "aliases": aliases, "document": document, "url": url})
    letters = [(letter, list(group)) for letter, group in groupby(terms, key=lambda t: t["term"].term[:1].upper())]
    return render(request, "runbook/glossary.html", {"letters": letters, "count": len(terms)})


@require_safe
def errata(request: HttpRequest) -> HttpResponse:
    """The errata register, then what was checked and found right, then what our engine adds."""
    entries = list(ErratumEntry.objects.all())
    titles = {ErratumEntry.ERRATUM: "The errata register"}
    sections = [(kind, titles.get(kind, label), [entry for entry in entries if entry.kind == kind])
                for kind, label in ErratumEntry.KINDS]
    return render(request, "runbook/errata.html", {"sections": sections, "count": len(entries)})


@dataclass
class ReadingFilters:
    """The reading list's filters as read from the query string (unknown values ignored)."""

    stage: Stage | None
    kind: str
    level: str

    @property
    def active(self) -> bool:
        return bool(self.stage or self.kind or self.level)

    def apply(self, resources):
        if self.stage:
            resources = resources.filter(stage=self.stage)
        if self.kind:
            resources = resources.filter(kind__iexact=self.kind)
        if self.level:
            resources = resources.filter(level__iexact=self.level)
        return resources


def _options(field: str) -> list[str]:
    values = Resource.objects.exclude(**{field: ""}).values_list(field, flat=True)
    return sorted({value.strip() for value in values}, key=str.lower)


@require_safe
def reading(request: HttpRequest) -> HttpResponse:
    """The learning path: stages and their resources, the senior-staff bar's topics; filter by stage, kind, level."""
    stages = list(Stage.objects.all())
    wanted = request.GET.get("stage", "").strip()
    stage = next((s for s in stages if wanted in (s.slug, str(s.number))), None) if wanted else None
    kinds, levels = _options("kind"), _options("level")
    kind = request.GET.get("kind", "").strip()
    level = request.GET.get("level", "").strip()
    filters = ReadingFilters(stage, kind if kind.lower() in {k.lower() for k in kinds} else "",
                             level if level.lower() in {lv.lower() for lv in levels} else "")
    resources = filters.apply(Resource.objects.select_related("stage").prefetch_related("topics"))
    by_stage = {s.pk: [] for s in stages}
    unstaged = []
    for resource in resources:
        (by_stage.get(resource.stage_id, unstaged) if resource.stage_id else unstaged).append(resource)
    stage_rows = [(s, by_stage[s.pk]) for s in stages if not filters.stage or s == filters.stage]
    topics = BarTopic.objects.prefetch_related(Prefetch("resources", queryset=filters.apply(
        Resource.objects.select_related("stage")), to_attr="shown"))
    context = {
        "stages": stages, "stage_rows": stage_rows, "unstaged": [] if filters.stage else unstaged,
        "topics": topics, "filters": filters, "kinds": kinds, "levels": levels,
        "count": len(resources),
    }
    template = "runbook/reading.html"
    if request.htmx and request.htmx.target == "reading-results":
        template += "#results"
    return render(request, template, context)


@require_safe
def search(request: HttpRequest) -> HttpResponse:
    """Search chapters, glossary, errata, interview questions and the reading list (``?q=``)."""
    query = request.GET.get("q", "").strip()[:MAX_QUERY]
    fixes = respelled(query_terms(query), KINDS) if query else {}
    # A typo ("quantisaton") is searched as the closest word the runbook uses, and the page says so.
    searched = " ".join(fixes.get(term, term) for term in query_terms(query)) if fixes else query
    hits = run_search(searched) if query else []
    return render(request, "runbook/search.html", {"query": query, "hits": hits,
                                                   "searched": searched if fixes else ""})

"""What every chapter page shares: the documents in the rail, the written chapters in order, a chapter's questions.

The rows are read on every request (a reload of the content may change any of them at any time), but only the
columns a chapter page shows, as tuples; what is built from them — the rail's items and groups, the previous
and next chapters, the rail's HTML, the questions' HTML — is memoised in this process under those very rows,
so a memoised entry is never stale and a page whose rows have not changed renders none of it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from runbook.models import Chapter, Document, Track


@dataclass
class RailItem:
    """One of the sixteen documents as the rail and the index show it."""

    number: int
    slug: str
    title: str
    summary: str
    track: str
    url: str | None
    reading_minutes: int | None = None

    @property
    def label(self) -> str:
        return f"{self.number:02d}"

    @property
    def written(self) -> bool:
        return self.url is not None


def grouped(items: list[RailItem], tracks: dict[str, Track]) -> list[tuple[Track | None, list[RailItem]]]:
    """``items`` grouped by consecutive track letter, each group with its track (``None`` for no track)."""
    return [(tracks.get(letter), list(group)) for letter, group in groupby(items, key=lambda item: item.track)]


# The columns read for the map: a document with its track (all of it: it is what the page's `track` is) and
# whether it is written; every written chapter (previous/next, and the rail when tracks.yaml lists nothing).
_DOCUMENT_COLUMNS = ("number", "slug", "title", "summary", "chapter_id", "chapter__reading_minutes",
                     "track_id", "track__letter", "track__title", "track__settles", "track__skip_cost")
_CHAPTER_COLUMNS = ("id", "number", "slug", "title", "summary", "track", "reading_minutes")
_TRACK_COLUMNS = ("id", "letter", "title", "settles", "skip_cost")


@dataclass
class ChapterMap:
    """The rail (items grouped by track), the documents by slug, the written chapters in order (number, slug
    and title loaded, as ``only()`` would) and the rail's HTML per current chapter, filled on first use."""

    rail: list[tuple[Track | None, list[RailItem]]]
    by_slug: dict[str, RailItem]
    written: list[Chapter]
    _rail_html: dict[str, SafeString] = field(default_factory=dict)

    def rail_html(self, current: Chapter) -> SafeString:
        """The rail's list with ``current`` marked (``runbook/chapter.html#rail_list``), rendered once per chapter."""
        html = self._rail_html.get(current.slug)
        if html is None:
            html = self._rail_html[current.slug] = mark_safe(render_to_string(
                "runbook/chapter.html#rail_list", {"rail": self.rail, "chapter": current}))
        return html


_MAPS: dict[tuple, ChapterMap] = {}
_QUESTIONS: dict[tuple, SafeString] = {}
MEMO_SIZE = 64  # entries per memo, oldest dropped first: a reload of the content leaves one stale entry each


def _remember(memo: dict, key: tuple, value):
    while len(memo) >= MEMO_SIZE:
        memo.pop(next(iter(memo)), None)
    memo[key] = value
    return value


def chapter_map() -> ChapterMap:
    """The documents, the tracks and the written chapters as a chapter page shows them (two queries; three when
    ``tracks.yaml`` lists no document and the rail is the written chapters, grouped by the tracks' rows)."""
    documents = tuple(Document.objects.order_by("number").values_list(*_DOCUMENT_COLUMNS))
    chapters = tuple(Chapter.objects.in_order().values_list(*_CHAPTER_COLUMNS))
    tracks = () if documents else tuple(Track.objects.values_list(*_TRACK_COLUMNS))
    key = (documents, chapters, tracks)
    found = _MAPS.get(key)
    return found if found is not None else _remember(_MAPS, key, _build_map(documents, chapters, tracks))


def _loaded(model, columns: tuple[str, ...], row: tuple):
    """An instance of ``model`` with only ``columns`` loaded from ``row`` (the others deferred, as ``only()``
    leaves them); ``from_db`` takes the values in the model's field order."""
    values = dict(zip(columns, row))
    names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db("default", names, [values[name] for name in names])


def _chapter_url(slug: str) -> str:
    return reverse("runbook:chapter", args=[slug])


def _build_map(documents: tuple, chapters: tuple, track_rows: tuple) -> ChapterMap:
    if documents:
        # As runbook.views.documents and rail_groups read them: the rail's track of a document is its own track
        # row (letters are unique and never empty, as the loader requires), so the tracks come with the documents.
        items, tracks = [], {}
        for (number, slug, title, summary, chapter_id, minutes, track_id, letter, track_title, settles,
             skip_cost) in documents:
            if track_id is not None:
                tracks[letter] = Track(id=track_id, letter=letter, title=track_title, settles=settles,
                                       skip_cost=skip_cost)
            items.append(RailItem(number, slug, title, summary, letter if track_id is not None else "",
                                  _chapter_url(slug) if chapter_id is not None else None,
                                  minutes if chapter_id is not None else None))
    else:
        items = [RailItem(number, slug, title, summary, track, _chapter_url(slug), minutes)
                 for _, number, slug, title, summary, track, minutes in chapters]
        tracks = {row[1]: Track(**dict(zip(_TRACK_COLUMNS, row))) for row in track_rows}
    written = [_loaded(Chapter, _CHAPTER_COLUMNS[:4], row[:4]) for row in chapters]
    return ChapterMap(grouped(items, tracks), {item.slug: item for item in items}, written)


# The fields of a question the chapter page shows (runbook/_question.html), in the order of the memo's key.
_QUESTION_COLUMNS = ("id", "slug", "topic", "difficulty", "roles", "prompt", "model_answer", "rubric")


def chapter_questions(chapter: Chapter) -> tuple[list[tuple], SafeString]:
    """The chapter's published questions in order (as rows of the columns shown) and their list items' HTML.

    One query, whether or not this process has seen the rows: the HTML (``runbook/chapter.html#question_list``,
    the same markup as rendering ``runbook/_question.html`` for each) is memoised under the rows themselves, and
    built from them (questions with only those fields loaded) when they are new.
    """
    rows = list(chapter.questions.filter(published=True).order_by("position", "slug").values_list(*_QUESTION_COLUMNS))
    key = (repr(rows),)  # the rows hold lists (roles, rubric): their repr is the key
    html = _QUESTIONS.get(key)
    if html is None:
        model = chapter.questions.model
        questions = [_loaded(model, _QUESTION_COLUMNS, row) for row in rows]
        html = _remember(_QUESTIONS, key, mark_safe(render_to_string(
            "runbook/chapter.html#question_list", {"questions": questions})))
    return rows, html

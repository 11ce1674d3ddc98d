"""Search across chapters, glossary, errata, interview questions and the reading list.

On PostgreSQL it is full-text search: a weighted ``SearchVector`` per kind (title
first), a ``websearch`` ``SearchQuery``, ``SearchRank`` to order and
``SearchHeadline`` for the passage. Elsewhere (SQLite, the embedded default) a
fallback ranks rows by how many of the query's words they contain and how often
(title matches weigh more), and cuts the passage around the first match.
Both search each row's ``search_text``: its plain text with the live numbers
filled in, kept by ``load_content``.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from functools import reduce
from operator import add, or_
from typing import Callable

from django.db import connection, models
from django.db.models import Q
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from runbook.models import Chapter, ErratumEntry, GlossaryTerm, Resource

MAX_QUERY = 200
PER_KIND = 20
SNIPPET_CHARS = 260
START, STOP = "\u27e6", "\u27e7"  # ⟦ ⟧ around matches in a PostgreSQL headline


@dataclass
class Hit:
    """One result: what it is, where it lives, the matching passage (safe HTML) and its rank."""

    kind: str
    label: str
    title: str
    url: str
    snippet: SafeString
    rank: float


@dataclass(frozen=True)
class _Kind:
    kind: str
    label: str
    queryset: Callable[[], models.QuerySet]
    title: Callable[[models.Model], str]
    url: Callable[[models.Model], str]
    fields: tuple[tuple[str, str], ...]  # (field, weight A–D)
    boost: float = 1.0


def _questions() -> models.QuerySet:
    """Published bank items that belong to a chapter, reached through ``Chapter.questions``."""
    bank = Chapter._meta.get_field("questions").related_model
    return bank._default_manager.filter(published=True, chapter__isnull=False).select_related("chapter")


def _question_title(item) -> str:
    text = re.sub(r"\s+", " ", item.search_text.split("\n", 1)[0]).strip()
    return text if len(text) <= 120 else text[:117].rsplit(" ", 1)[0] + " …"


KINDS = (
    _Kind("glossary", "Glossary", GlossaryTerm.objects.all, lambda t: t.term, lambda t: t.get_absolute_url(),
          (("term", "A"), ("search_text", "B")), boost=1.5),
    _Kind("chapter", "Chapter", Chapter.objects.all, lambda c: f"{c.label} · {c.title}",
          lambda c: c.get_absolute_url(), (("title", "A"), ("summary", "B"), ("search_text", "C"))),
    _Kind("erratum", "Errata", ErratumEntry.objects.all, lambda e: e.title, lambda e: e.get_absolute_url(),
          (("title", "A"), ("search_text", "B"))),
    _Kind("question", "Interview question", _questions, _question_title,
          lambda q: reverse("runbook:chapter", args=[q.chapter.slug]) + f"#q-{q.slug}",
          (("topic", "A"), ("search_text", "B"))),
    _Kind("resource", "Reading", Resource.objects.all, lambda r: r.title, lambda r: r.get_absolute_url(),
          (("title", "A"), ("authors", "B"), ("search_text", "C"))),
)


def search(query: str, limit: int = 50) -> list[Hit]:
    """The best ``limit`` hits for ``query`` across every kind, best first."""
    query = query.strip()[:MAX_QUERY]
    if not query:
        return []
    finder = _postgres_hits if connection.vendor == "postgresql" else _fallback_hits
    hits = [hit for kind in KINDS for hit in finder(kind, query)]
    hits.sort(key=lambda hit: (-hit.rank, hit.kind, hit.title))
    return hits[:limit]


# --- PostgreSQL -----------------------------------------------------------------------


def _postgres_hits(kind: _Kind, query: str) -> list[Hit]:
    from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank, SearchVector

    search_query = SearchQuery(query, search_type="websearch", config="english")
    vector = reduce(add, [SearchVector(name, weight=weight, config="english") for name, weight in kind.fields])
    rows = (kind.queryset().annotate(search_vector=vector).filter(search_vector=search_query)
            .annotate(rank=SearchRank(vector, search_query),
                      headline=SearchHeadline("search_text", search_query, config="english", start_sel=START,
                                              stop_sel=STOP, max_words=45, min_words=20, max_fragments=2,
                                              fragment_delimiter=" … "))
            .order_by("-rank")[:PER_KIND])
    return [Hit(kind.kind, kind.label, kind.title(row), kind.url(row), _marked(row.headline),
                float(row.rank) * kind.boost) for row in rows]


def _marked(headline: str) -> SafeString:
    """A headline with its ⟦matches⟧ as ``<mark>``, everything else escaped."""
    escaped = html.escape(re.sub(r"\s+", " ", headline or "").strip())
    return mark_safe(escaped.replace(START, "<mark>").replace(STOP, "</mark>"))


# --- the fallback ---------------------------------------------------------------------

_WORD = re.compile(r"[\w][\w.+/'-]*\w|\w")
_STOP_WORDS = {"a", "an", "and", "the", "of", "to", "in", "is", "on", "for", "or", "what", "how", "why", "with"}
WEIGHTS = {"A": 6.0, "B": 3.0, "C": 1.0, "D": 0.5}


def query_terms(query: str) -> list[str]:
    """The query's words, lowercased, without stop words (all of them if nothing else is left)."""
    words = [word.lower() for word in _WORD.findall(query)][:10]
    kept = [word for word in words if word not in _STOP_WORDS]
    return list(dict.fromkeys(kept or words))


def _term_pattern(terms: list[str]) -> re.Pattern:
    """Words starting with any of the terms (so "preempt" finds "preemption")."""
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(term) for term in terms) + r")\w*", re.IGNORECASE)


def _fallback_hits(kind: _Kind, query: str) -> list[Hit]:
    terms = query_terms(query)
    if not terms:
        return []
    names = [name for name, _ in kind.fields]
    any_term = reduce(or_, [Q(**{f"{name}__icontains": term}) for term in terms for name in names])
    scored = []
    for row in kind.queryset().filter(any_term)[:500]:
        texts = {name: str(getattr(row, name) or "") for name in names}
        matched = 0
        score = 0.0
        for term in terms:
            pattern = _term_pattern([term])
            counts = {name: len(pattern.findall(text)) for name, text in texts.items()}
            if any(counts.values()):
                matched += 1
            score += sum(WEIGHTS[weight] * math.log1p(counts[name]) for name, weight in kind.fields)
        if matched:
            scored.append((matched, score, row))
    if not scored:
        return []
    best = max(matched for matched, _, _ in scored)
    hits = []
    for matched, score, row in sorted(scored, key=lambda item: (-item[0], -item[1]))[:PER_KIND]:
        if matched < best:
            continue  # rows holding every word come first; partial matches only when none holds them all
        rank = (matched / len(terms)) * (1 + math.log1p(score) / 4) * kind.boost
        hits.append(Hit(kind.kind, kind.label, kind.title(row), kind.url(row),
                        snippet(row.search_text or kind.title(row), terms), rank))
    return hits


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> SafeString:
    """The passage of ``text`` around the first match of any term, escaped, matches in ``<mark>``."""
    text = re.sub(r"\s+", " ", text).strip()
    pattern = _term_pattern(terms)
    match = pattern.search(text)
    start = 0
    if match and match.start() > width // 3:
        start = text.rfind(" ", 0, match.start() - width // 3) + 1
    end = min(len(text), start + width)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        end = cut if cut > start else end
    passage = text[start:end]
    escaped = html.escape(passage)
    marked = _term_pattern([html.escape(term) for term in terms]).sub(lambda m: f"<mark>{m.group(0)}</mark>",
                                                                      escaped)
    prefix = "… " if start > 0 else ""
    suffix = " …" if end < len(text) else ""
    return mark_safe(prefix + marked + suffix)

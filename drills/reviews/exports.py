"""Exports: a candidate's deck and review history as CSV, the question bank as an Anki deck (``.apkg``).

The Anki deck is made with ``genanki``: one note per bank item, the prompt on
the front (a critique drill's with the document's numbered lines) and the model
answer (Markdown rendered, live numbers filled in) with its rubric (a critique
drill's planted errors, by line) on the back. Ids are derived from fixed strings and slugs, so
importing a fresh export again updates the notes instead of duplicating them.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Iterable

from django.db.models import Exists, OuterRef
from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import mark_safe

from core.csv_export import write_csv
from drills.bank.services import item_title
from drills.models import BankItem, Card, ReviewLog, ReviewSettings
from drills.reviews.scheduling import state_label
from runbook.content import render_cached
from runbook.models import chapter_text
from runbook.shortcodes import ShortcodeError

DECK_COLUMNS = ["item", "kind", "title", "chapter", "track", "state", "due", "stability_days", "difficulty", "reps",
                "lapses", "last_review", "added_via", "added_at", "in_deck"]
HISTORY_COLUMNS = ["reviewed_at", "item", "rating", "suggested_rating", "grade", "duration_s", "state_before",
                   "retrievability", "stability_after_days", "due_after", "said_aloud", "rubric_ticked",
                   "problem_seed", "answer"]


def _stable_id(text: str) -> int:
    """A 31-bit id from a string (Anki wants model and deck ids that do not change between exports)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") >> 1 | (1 << 30)


def _local(moment, tz) -> str:
    return moment.astimezone(tz).isoformat(timespec="seconds") if moment else ""


def _csv(header: list[str], rows: Iterable[list]) -> str:
    return write_csv(header, rows)  # formula-looking text neutralised: core/csv_export.py


def deck_csv(user) -> str:
    """Every card the user has (in the deck or taken out), times in their time zone.

    The title of an item the user may no longer read (a coach's unpublished question, once they left the
    coach's cohort or became a coach themselves) is left blank: its slug and the card's history stay theirs.
    """
    tz = ReviewSettings.for_user(user).tz
    cards = (Card.objects.filter(user=user).select_related("item", "item__chapter")
             .defer(*chapter_text("item__chapter"))
             .annotate(readable=Exists(BankItem.objects.visible_to(user).filter(pk=OuterRef("item_id"))))
             .order_by("due", "pk"))
    return _csv(DECK_COLUMNS, (
        [card.item.slug, card.item.kind, item_title(card.item) if card.readable else "",
         card.item.chapter.slug if card.item.chapter else "",
         card.item.track, state_label(card.state), _local(card.due, tz),
         "" if card.stability is None else round(card.stability, 3),
         "" if card.difficulty is None else round(card.difficulty, 3), card.reps, card.lapses,
         _local(card.last_review, tz), card.added_via, _local(card.added_at, tz), "no" if card.suspended else "yes"]
        for card in cards))


def history_csv(user) -> str:
    """Every review the user made, oldest first."""
    tz = ReviewSettings.for_user(user).tz
    labels = dict(ReviewLog.RATINGS)
    logs = ReviewLog.objects.of(user).select_related("problem").order_by("reviewed_at", "pk")
    return _csv(HISTORY_COLUMNS, (
        [_local(log.reviewed_at, tz), log.item_slug, labels[log.rating], labels.get(log.suggested_rating, ""),
         "" if log.grade is None else round(log.grade, 4),
         "" if log.duration_ms is None else round(log.duration_ms / 1000, 1), state_label(log.state_before),
         "" if log.retrievability is None else round(log.retrievability, 4),
         "" if log.stability_after is None else round(log.stability_after, 3), _local(log.due_after, tz),
         "yes" if log.said_aloud else "no", " ".join(str(i + 1) for i in log.rubric_ticked or ()),
         log.problem.seed if log.problem else "", log.answer]
        for log in logs))


# --- Anki ------------------------------------------------------------------------------------

ANKI_CSS = """.card { font-family: system-ui, sans-serif; font-size: 18px; line-height: 1.45; color: #1d2125;
  background: #fff; text-align: left; max-width: 46em; margin: 0 auto; }
.meta { font-size: 13px; color: #5c636a; margin-bottom: .6em; }
.rubric { border-top: 1px solid #ccc; margin-top: 1em; padding-top: .4em; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
ol.doc { font-family: ui-monospace, monospace; font-size: 15px; }"""


def _html(markdown: str) -> str:

    try:
        return render_cached(markdown).html
    except ShortcodeError:
        return f"<p>{escape(markdown)}</p>"


def _anki_model():
    import genanki

    return genanki.Model(
        _stable_id("llm-serving-prep:model:v1"), "LLM Serving Prep question",
        fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Meta"}, {"name": "Slug"}],
        templates=[{"name": "Question",
                    "qfmt": '<div class="meta">{{Meta}}</div>{{Front}}',
                    "afmt": '{{FrontSide}}<hr id="answer">{{Back}}'}],
        css=ANKI_CSS,
        sort_field_index=3,
    )


def _front(item: BankItem) -> str:
    """The note's front: the prompt; for a critique drill also the document's numbered lines it asks about."""
    if item.kind != BankItem.CRITIQUE or not (item.details or {}).get("lines"):
        return _html(item.prompt)
    details = item.details
    return render_to_string("reviews/anki/critique_front.html", {
        "prompt": mark_safe(_html(item.prompt)),  # noqa: S308 (sanitised by the Markdown renderer)
        "title": details.get("title") or item_title(item),
        "lines": [mark_safe(_inline(str(line))) for line in details["lines"]]})  # noqa: S308 (sanitised)


def _inline(markdown: str) -> str:
    """One document line as HTML without its paragraph (the line sits in a numbered list item)."""
    html = _html(markdown).strip()
    return html[3:-4] if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1 else html


def _back(item: BankItem) -> str:
    parts = [_html(item.model_answer)]
    if item.kind == BankItem.CRITIQUE:
        parts.append(render_to_string("reviews/anki/critique_back.html",
                                      {"planted": (item.details or {}).get("planted") or []}))
    if item.rubric:
        label = "Steps" if item.kind == BankItem.PROBLEM else "Rubric: a strong answer"
        points = "".join(f"<li>{_html(str(point))}</li>" for point in item.rubric)
        parts.append(f'<div class="rubric"><strong>{label}</strong><ul>{points}</ul></div>')
    return "".join(parts)


def _meta(item: BankItem) -> str:
    bits = [item.get_kind_display()]
    if item.chapter:
        bits.append(f"{item.chapter.label} · {item.chapter.title}")
    if item.topic:
        bits.append(item.topic)
    bits.append(item.get_difficulty_display())
    return escape(" · ".join(bits))


def _tag(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text.strip())[:60]


def bank_apkg(items: Iterable[BankItem], deck_name: str) -> bytes:
    """An Anki package of ``items`` as the deck ``deck_name``."""
    import genanki

    model = _anki_model()
    deck = genanki.Deck(_stable_id(f"llm-serving-prep:deck:{deck_name}"), deck_name)
    for item in items:
        tags = [_tag(item.kind)] + ([_tag(item.chapter.slug)] if item.chapter else []) + (
            [_tag(item.topic)] if item.topic else [])
        deck.add_note(genanki.Note(model=model, fields=[_front(item), _back(item), _meta(item), item.slug],
                                   guid=genanki.guid_for("llm-serving-prep", item.slug), tags=tags))
    handle, path = tempfile.mkstemp(suffix=".apkg")
    os.close(handle)
    try:
        genanki.Package(deck).write_to_file(path)
        with open(path, "rb") as stream:
            return stream.read()
    finally:
        os.unlink(path)

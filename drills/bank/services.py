"""The question bank's items as candidates see them: short titles and names."""

from __future__ import annotations

from functools import lru_cache

from calculators.families import FAMILIES
from drills.models import BankItem
from runbook.content import plain_text
from runbook.shortcodes import ShortcodeError


@lru_cache(maxsize=4096)
def _first_line(prompt: str) -> str:

    try:
        text = plain_text(prompt)
    except ShortcodeError:
        text = prompt
    return " ".join(text.split())


def item_title(item: BankItem, length: int = 110) -> str:
    """A one-line title: the family for a problem template, else the prompt's opening words."""
    if item.kind == BankItem.PROBLEM and item.family in FAMILIES:
        return f"{FAMILIES[item.family].title} — a fresh problem each time"
    if item.kind == BankItem.CRITIQUE and (item.details or {}).get("title"):
        return f"Critique: {item.details['title']}"
    text = _first_line(item.prompt or "")
    return text if len(text) <= length else text[: length - 1].rsplit(" ", 1)[0] + "…"


def item_name(item: BankItem, length: int = 80) -> str:
    """A short name for lists, breadcrumbs and buttons: "Capacity ladder", not the slug "ladder".

    Like :func:`item_title` without the "a fresh problem each time" tail, which reads well in the bank but
    is noise where the item is one row of a round or a log.
    """
    if item.kind == BankItem.PROBLEM and item.family in FAMILIES:
        return FAMILIES[item.family].title
    return item_title(item, length)

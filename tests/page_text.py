"""The text a reader sees on a page: tags dropped, entities decoded, white space folded."""

from __future__ import annotations

import html
import re


def visible_text(page: str) -> str:
    """The text of the HTML ``page`` without tags, entities decoded, runs of white space made one space."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def visible(response) -> str:
    """:func:`visible_text` of a Django test response's body."""
    return visible_text(response.content.decode())

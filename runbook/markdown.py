"""The Markdown parsers (markdown-it) and their rules: heading ids, glossary links, alignment, off-site link marks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.anchors.index import slugify, unique_slug
from mdit_py_plugins.attrs import attrs_block_plugin
from mdit_py_plugins.attrs.parse import ParseError
from mdit_py_plugins.attrs.parse import parse as parse_attrs
from mdit_py_plugins.footnote import footnote_plugin

ALIGN_CLASSES = {"left": "text-start", "center": "text-center", "right": "text-end"}

EXTERNAL_REL = "noopener noreferrer nofollow"

_TRAILING_ATTRS = re.compile(r"\s*(\{[^{}]*\})\s*$")

@dataclass(frozen=True)
class GlossaryEntry:
    """What the auto-linker needs of a glossary term."""

    slug: str
    spellings: tuple[str, ...]
    answer: str = ""


class GlossaryMatcher:
    """Finds glossary spellings in running text: whole words, an optional plural ``s``.

    A spelling with a capital after its first letter (``TTFT``, ``KV cache``,
    ``RoPE``) matches in that case only; the others match in any case.
    """

    def __init__(self, entries: Iterable[GlossaryEntry], url: str):
        self.by_spelling: dict[str, GlossaryEntry] = {}
        parts = []
        for entry in entries:
            for spelling in entry.spellings:
                spelling = spelling.strip()
                key = spelling.lower()
                if not spelling or key in self.by_spelling:
                    continue
                self.by_spelling[key] = entry
                parts.append(spelling)
        parts.sort(key=len, reverse=True)
        alternatives = [re.escape(p) if _case_sensitive(p) else f"(?i:{re.escape(p)})" for p in parts]
        self.regex = (re.compile(r"(?<![\w-])(?P<term>" + "|".join(alternatives) + r")(?:s|es)?(?![\w-])")
                      if alternatives else None)
        self.url = url

    def __bool__(self) -> bool:
        return self.regex is not None

    def entry(self, match: re.Match) -> GlossaryEntry:
        return self.by_spelling[match["term"].lower()]


def _case_sensitive(spelling: str) -> bool:
    return any(char.isupper() for char in spelling[1:])


# --- markdown-it rules ---------------------------------------------------------------


def _explicit_heading_ids(state: StateCore) -> None:
    """``## Title {#anchor}`` → ``<h2 id="anchor">Title</h2>`` (before inline parsing)."""
    for index, token in enumerate(state.tokens):
        if token.type != "heading_open":
            continue
        inline = state.tokens[index + 1]
        match = _TRAILING_ATTRS.search(inline.content)
        if not match:
            continue
        try:
            _, attrs = parse_attrs(match.group(1))
        except ParseError:
            continue
        if "id" not in attrs:
            continue
        token.attrSet("id", attrs["id"])
        if attrs.get("class"):
            token.attrSet("class", attrs["class"])
        inline.content = inline.content[: match.start()]


def _heading_text(inline: Token) -> str:
    return "".join(child.content for child in inline.children or () if child.type in ("text", "code_inline"))


def _heading_slugs(state: StateCore) -> None:
    """Give ``##`` and ``###`` headings without an explicit id one made from their text."""
    used = {str(token.attrs["id"]) for token in state.tokens if token.type == "heading_open" and "id" in token.attrs}
    for index, token in enumerate(state.tokens):
        if token.type == "heading_open" and token.tag in ("h2", "h3") and "id" not in token.attrs:
            slug = slugify(_heading_text(state.tokens[index + 1])) or "section"
            token.attrSet("id", unique_slug(slug, used))


def _glossary_links(state: StateCore) -> None:
    """Link the first occurrence per ``##`` section of each glossary term in ordinary text."""
    matcher: GlossaryMatcher | None = state.env.get("glossary")
    if not matcher:
        return
    linked: set[str] = set()
    in_heading = False
    for token in state.tokens:
        if token.type == "heading_open":
            in_heading = True
            if token.tag in ("h1", "h2"):
                linked = set()
        elif token.type == "heading_close":
            in_heading = False
        elif token.type == "inline" and not in_heading and token.children:
            token.children = _link_children(token.children, matcher, linked)


def _link_children(children: list[Token], matcher: GlossaryMatcher, linked: set[str]) -> list[Token]:
    out: list[Token] = []
    link_depth = 0
    for child in children:
        if child.type == "link_open":
            link_depth += 1
        elif child.type == "link_close":
            link_depth -= 1
        if child.type != "text" or link_depth > 0 or not child.content:
            out.append(child)
            continue
        out.extend(_split_text(child, matcher, linked))
    return out


def _text_token(content: str) -> Token:
    return Token("text", "", 0, content=content)


def _split_text(child: Token, matcher: GlossaryMatcher, linked: set[str]) -> list[Token]:
    text = child.content
    pieces: list[Token] = []
    position = 0
    for match in matcher.regex.finditer(text):
        entry = matcher.entry(match)
        if entry.slug in linked:
            continue
        linked.add(entry.slug)
        if match.start() > position:
            pieces.append(_text_token(text[position:match.start()]))
        link_open = Token("link_open", "a", 1)
        link_open.attrSet("href", f"{matcher.url}#{entry.slug}")
        link_open.attrSet("class", "glossary-link")
        if entry.answer:
            link_open.attrSet("title", entry.answer)
        pieces += [link_open, _text_token(match.group(0)), Token("link_close", "a", -1)]
        position = match.end()
    if not pieces:
        return [child]
    if position < len(text):
        pieces.append(_text_token(text[position:]))
    return pieces


def _alignment_classes(state: StateCore) -> None:
    """Table cells' ``style="text-align:…"`` → a Bootstrap class (no inline style under the CSP)."""
    for token in state.tokens:
        if token.type in ("td_open", "th_open"):
            style = str(token.attrs.pop("style", "") or "")
            align = style.partition(":")[2].strip().rstrip(";")
            if align in ALIGN_CLASSES:
                token.attrSet("class", ALIGN_CLASSES[align])


def is_external(url: str) -> bool:
    """Whether ``url`` leaves the site: an absolute ``http(s)`` or protocol-relative address."""
    lowered = url.strip().lower()
    return lowered.startswith(("http://", "https://", "//"))


def _external_marks(state: StateCore) -> None:
    """Authored text only: mark links to other sites, replace images from other sites by their alt text."""
    for token in state.tokens:
        if token.type != "inline" or not token.children:
            continue
        children: list[Token] = []
        for child in token.children:
            if child.type == "image" and (is_external(str(child.attrs.get("src", "")))
                                          or not str(child.attrs.get("src", "")).startswith("/")):
                alt = "".join(grand.content for grand in child.children or ()) or "image"
                children.append(_text_token(f"[image from another site not shown: {alt}]"))
                continue
            children.append(child)
            if child.type == "link_open" and is_external(str(child.attrs.get("href", ""))):
                child.attrSet("rel", EXTERNAL_REL)
                child.attrSet("title", "Another site: " + str(child.attrs["href"])[:200])
                child.meta = {**(child.meta or {}), "external": True}
        token.children = _with_link_marks(children)


def _with_link_marks(children: list[Token]) -> list[Token]:
    """Put a visible ↗ (with a spoken "(another site)") before the closing tag of each external link."""
    out: list[Token] = []
    stack: list[bool] = []
    for child in children:
        if child.type == "link_open":
            stack.append(bool((child.meta or {}).get("external")))
        elif child.type == "link_close" and stack and stack.pop():
            mark = Token("html_inline", "", 0,
                         content='<span class="ext-mark" aria-hidden="true"> ↗</span>'
                                 '<span class="visually-hidden"> (another site)</span>')
            out.append(mark)
        out.append(child)
    return out


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """The configured parser (shared; rules read per-render data from ``env``)."""
    md = MarkdownIt("commonmark", {"html": True, "typographer": True})
    md.enable(["table", "strikethrough", "replacements", "smartquotes"])
    md.use(footnote_plugin)
    md.use(attrs_block_plugin, allowed=["id", "class"])
    md.core.ruler.before("inline", "heading_ids", _explicit_heading_ids)
    md.core.ruler.push("heading_slugs", _heading_slugs)
    md.core.ruler.push("glossary_links", _glossary_links)
    md.core.ruler.push("alignment_classes", _alignment_classes)
    return md


@lru_cache(maxsize=1)
def authored_parser() -> MarkdownIt:
    """The parser for fields (what a coach may write): raw HTML is text, other sites' links marked, and quotes,
    dashes and ``(c)`` left as typed (no typographer: pasted JSON or a command must copy back out unchanged)."""
    md = MarkdownIt("commonmark", {"html": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.core.ruler.push("alignment_classes", _alignment_classes)
    md.core.ruler.push("external_marks", _external_marks)
    return md

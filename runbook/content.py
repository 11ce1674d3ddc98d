"""Markdown → sanitised HTML for the runbook: live numbers, heading anchors, glossary links, contents.

The pipeline for one Markdown text:

1. **Shortcodes** (:mod:`runbook.shortcodes`). Inline ones (``value``, ``worked``,
   ``note``, ``convert``, ``gpu``, ``config``) are replaced by the engine's text,
   with Markdown and HTML specials escaped, so the parser sees plain prose.
   Block ones (``formula`` → MathML, ``calculator`` → an embedded widget) become
   an alphanumeric placeholder carrying a per-render nonce, which Markdown and
   the sanitiser leave alone; the trusted HTML replaces it at the very end.
2. **markdown-it-py** (CommonMark + tables + strikethrough + typographic quotes)
   with mdit-py-plugins' footnotes and block attributes. ``## Title {#anchor}``
   sets the heading's id (the stable anchors grader and glossary link to);
   ``##``/``###`` headings without one get a slug of their text.
3. **Glossary links**, on the token stream: the first occurrence per ``##``
   section of each term or alias in ordinary text (never in headings, links,
   code or raw HTML) links to ``/glossary/#<slug>``.
4. **nh3** with an explicit allowlist of tags, attributes and URL schemes.
5. The placeholders are swapped for the trusted HTML.

Fields (questions, answers, glossary answers, anything a coach may write) are
rendered *authored* (:data:`AUTHORED`): no raw HTML, no ``class``, ``id`` or
``style`` (a ``position-fixed`` overlay could draw a fake login over a
candidate's page), no image from another site, and every link to another site
marked (``rel="noopener noreferrer nofollow"`` and a visible ↗). Chapters,
which only the fixture files write, keep the full allowlist. A coach's text
holds at most :data:`MAX_AUTHORED_SHORTCODES` shortcodes (each runs the
engine): :func:`check_shortcode_budget`. Table alignment is a Bootstrap class
(``text-end``), never a ``style`` attribute, so the Content-Security-Policy
needs no inline styles.

A chapter's rendering (HTML and table of contents) is cached under a key made
of its content hash, the glossary's digest and :func:`engine_version` (the
catalog, the engine's source and this renderer), so a page render costs a
cache lookup.
"""

from __future__ import annotations

import functools
import hashlib
import html as html_lib
import itertools
import re
import secrets
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import nh3
from django.core.cache import cache
from django.urls import reverse

from runbook.markdown import (
    ALIGN_CLASSES,
    GlossaryEntry,
    GlossaryMatcher,
    _heading_text,
    authored_parser,
    markdown_parser,
)
from runbook.shortcodes import SHORTCODE, resolve

# Bump when the output of this module changes for the same input.
RENDER_VERSION = "4"
CACHE_TIMEOUT = 60 * 60 * 24 * 7

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details",
    "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "section", "small", "span", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}
ALLOWED_ATTRIBUTES = {
    "*": {"id", "class", "title", "lang"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "ol": {"start", "reversed"},
    "td": {"style", "colspan", "rowspan"},
    "th": {"style", "colspan", "rowspan", "scope"},
    "details": {"open"},
    "abbr": {"title"},
}
URL_SCHEMES = {"http", "https", "mailto"}

# Authored fields: the same tags, no class/id/style (alignment classes excepted), links marked.
AUTHORED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "width", "height"},
    "ol": {"start", "reversed"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "details": {"open"},
    "abbr": {"title"},
    "span": {"aria-hidden"},
}
# nh3's allowed_classes: the only class values kept (and ``class`` must not be in the attributes above).
AUTHORED_CLASSES = {"td": set(ALIGN_CLASSES.values()), "th": set(ALIGN_CLASSES.values()),
                    "span": {"ext-mark", "visually-hidden"}}

# Shortcodes one coach-written text may hold: each runs the engine (an embedded calculator ~11 ms,
# 500 of them 14 s of CPU per render); the fixture chapters, written by the team, have no cap.
MAX_AUTHORED_SHORTCODES = 10

# Shortcode kinds rendered as HTML (placeholders) rather than text.
BLOCK_KINDS = ("formula", "calculator", "figure")

# Characters escaped in a shortcode's text before Markdown sees it.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]<>&|~])")
# A trailing ``{#anchor}`` (or ``{#anchor .class}``) on a heading line.
_BLOCK_END = re.compile(r"</(p|h[1-6]|li|tr|pre|blockquote|div|section|dt|dd|td|th|summary)>")


@dataclass(frozen=True)
class Heading:
    """A ``##`` heading: its anchor and its text (the table of contents)."""

    anchor: str
    title: str


@dataclass
class Rendered:
    """A rendered Markdown text: sanitised HTML and the ``##`` headings in order."""

    html: str
    toc: list[Heading] = field(default_factory=list)


# --- shortcodes ------------------------------------------------------------------------


def escape_markdown(text: str) -> str:
    """``text`` as literal Markdown: its emphasis, link, HTML and table characters escaped."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def _render_block(resolved, embed_ids: itertools.count) -> str:
    if resolved.calculator is not None:
        from calculators.embed import render_embed  # Django templates: only when a chapter embeds one

        family, inputs = resolved.calculator
        return render_embed(family, inputs, embed_id=f"calc-{family}-{next(embed_ids)}")
    if resolved.figure:
        return resolved.html
    return f'<div class="rb-formula">{resolved.html}</div>'


def substitute_shortcodes(markdown: str, *, blocks: bool = True) -> tuple[str, dict[str, str]]:
    """Replace every shortcode: inline ones by escaped text, block ones by placeholders.

    Returns the new Markdown and the placeholders' HTML. With ``blocks=False``
    block shortcodes are dropped (plain text for search). Raises
    :class:`~runbook.shortcodes.ShortcodeError` for an unresolvable one.
    """
    nonce = secrets.token_hex(6)
    placeholders: dict[str, str] = {}
    counter = itertools.count(1)
    embed_ids = itertools.count(1)

    def replace(match: re.Match) -> str:
        kind, body = match["kind"], match["body"]
        resolved = resolve(kind, body)
        if kind not in BLOCK_KINDS:
            return escape_markdown(resolved.text)
        if not blocks:
            return ""
        token = f"rbsc{nonce}x{next(counter)}"
        placeholders[token] = _render_block(resolved, embed_ids)
        return token

    return SHORTCODE.sub(replace, markdown), placeholders


def _swap_placeholders(html: str, placeholders: dict[str, str]) -> str:
    for token, block in placeholders.items():
        html = html.replace(f"<p>{token}</p>", block).replace(token, block)
    return html


# --- rendering -------------------------------------------------------------------------


def sanitise(html: str) -> str:
    """Keep only the allowlisted tags, attributes and URL schemes."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel=None,
        filter_style_properties={"text-align"},
    )


def sanitise_authored(html: str) -> str:
    """Authored fields: the same tags, no ``class``/``id``/``style`` (alignment and the link mark excepted)."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes={**AUTHORED_ATTRIBUTES, "a": AUTHORED_ATTRIBUTES["a"] | {"rel"}},
        allowed_classes=AUTHORED_CLASSES,
        url_schemes=URL_SCHEMES,
        link_rel=None,
    )


def shortcode_count(markdown: str) -> int:
    """How many shortcodes ``markdown`` holds (each one a run of the engine)."""
    return len(SHORTCODE.findall(markdown or ""))


def check_shortcode_budget(markdown: str) -> None:
    """Raise :class:`~runbook.shortcodes.ShortcodeError` when a coach's text holds more than
    :data:`MAX_AUTHORED_SHORTCODES` shortcodes."""
    from runbook.shortcodes import ShortcodeError

    count = shortcode_count(markdown)
    if count > MAX_AUTHORED_SHORTCODES:
        raise ShortcodeError(f"This text holds {count} shortcodes; a coach's text may hold at most "
                             f"{MAX_AUTHORED_SHORTCODES} (each one runs the calculator).")


def render_markdown(markdown: str, glossary: GlossaryMatcher | None = None, *, authored: bool = False) -> Rendered:
    """Render one Markdown text (uncached). Raises ``ShortcodeError`` for a bad shortcode.

    ``authored``: a field anyone with an account may have written (:func:`authored_parser`,
    :func:`sanitise_authored`); ``False`` only for the fixture chapters.
    """
    source, placeholders = substitute_shortcodes(markdown)
    md = authored_parser() if authored else markdown_parser()
    env = {"glossary": glossary} if glossary and not authored else {}
    tokens = md.parse(source, env)
    toc = [Heading(str(token.attrs["id"]), _heading_text(tokens[index + 1]))
           for index, token in enumerate(tokens)
           if token.type == "heading_open" and token.tag == "h2" and "id" in token.attrs]
    rendered = md.renderer.render(tokens, md.options, env)
    html = sanitise_authored(rendered) if authored else sanitise(rendered)
    return Rendered(_swap_placeholders(html, placeholders), toc)


def render_authored(markdown: str) -> Rendered:
    """A coach's text: :func:`check_shortcode_budget`, then :func:`render_markdown` authored."""
    check_shortcode_budget(markdown)
    return render_markdown(markdown, authored=True)


def heading_anchors(markdown: str) -> list[str]:
    """Every heading id of a Markdown text (to check the sections the glossary names)."""
    source, _ = substitute_shortcodes(markdown, blocks=False)
    tokens = markdown_parser().parse(source, {})
    return [str(token.attrs["id"]) for token in tokens if token.type == "heading_open" and "id" in token.attrs]


def plain_text(markdown: str) -> str:
    """The text a reader sees, numbers filled in, formulas and calculators left out (for search)."""
    source, _ = substitute_shortcodes(markdown, blocks=False)
    html = markdown_parser().render(source)
    html = _BLOCK_END.sub("\n", html)
    text = html_lib.unescape(nh3.clean(html, tags=set()))
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"\n\s*\n+", "\n", text).strip()


@functools.lru_cache(maxsize=1)
def engine_version() -> str:
    """A digest of what the numbers depend on: the catalog, the engine's and the serving simulator's
    source (the load-sweep figure runs it), the figures, the embed and this renderer. Read once per process (a code
    change restarts the process)."""
    import calculators.engine as engine
    from calculators.engine.catalog import DEFAULT_CATALOG_DIR

    digest = hashlib.sha256(RENDER_VERSION.encode())
    root = Path(__file__).resolve().parent.parent
    paths = sorted(Path(DEFAULT_CATALOG_DIR).glob("*.json")) + sorted(Path(engine.__file__).parent.rglob("*.py"))
    paths += sorted((root / "calculators" / "sim").glob("*.py"))
    paths += sorted((root / "runbook" / "figures").glob("*.py"))
    paths += [root / "templates" / "calculators" / "_embed.html", root / "calculators" / "forms.py",
              Path(__file__)]
    for path in paths:
        if path.exists():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_key(kind: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
    return f"runbook:{kind}:{engine_version()}:{digest}"


def render_cached(markdown: str) -> Rendered:
    """:func:`render_markdown` (authored: no glossary links, no class/id/style) through the cache, keyed by the text.

    Two levels: this process's memory first, then the shared cache. A page shows a
    field per question (prompt, model answer, each rubric point), so one Redis round
    trip per field would cost a chapter dozens of them; the rendering of a given
    text never changes within a process (:func:`engine_version` is read once).
    """
    html, toc = _render_cached_pairs(markdown)
    return Rendered(html, [Heading(*pair) for pair in toc])


@lru_cache(maxsize=4096)
def _render_cached_pairs(markdown: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    cache_key = _cache_key("md", markdown)
    stored = cache.get(cache_key)
    if stored is None:
        rendered = render_markdown(markdown, authored=True)
        stored = {"html": rendered.html, "toc": [(h.anchor, h.title) for h in rendered.toc]}
        cache.set(cache_key, stored, CACHE_TIMEOUT)
    return stored["html"], tuple(tuple(pair) for pair in stored["toc"])


def strip_paragraph(html: str) -> str:
    """The HTML of a one-paragraph rendering without its ``<p>`` (for short fields)."""
    stripped = html.strip()
    if stripped.startswith("<p>") and stripped.endswith("</p>") and stripped.count("<p>") == 1:
        return stripped[3:-4]
    return stripped


# --- the runbook's rows ----------------------------------------------------------------


def _glossary_rows() -> list[tuple]:
    from runbook.models import GlossaryTerm

    return list(GlossaryTerm.objects.order_by("slug").values_list("slug", "term", "aliases", "answer"))


def glossary_matcher(rows: Sequence[tuple]) -> GlossaryMatcher:
    """The auto-linker for glossary rows ``(slug, term, aliases, answer)``; a link's title is the answer."""
    entries = [GlossaryEntry(slug, tuple([term, *(aliases or [])]), plain_text(answer))
               for slug, term, aliases, answer in rows]
    return GlossaryMatcher(entries, reverse("runbook:glossary"))


# Rendered chapters this process has read from the shared cache, by cache key (oldest dropped first). The key
# names the body, its source's hash, the glossary and the engine, so a memoised entry is never stale; the memo
# spares each chapter page a Redis round trip carrying some 100 kB of HTML.
_CHAPTER_MEMO: dict[str, dict] = {}
CHAPTER_MEMO_SIZE = 64


def forget_rendered_chapters() -> None:
    """Empty this process's memo of rendered chapters (the shared cache keeps its copies).

    Tests call it to make the next chapter page go to the shared cache, e.g. to see it survive Redis stopping.
    """
    _CHAPTER_MEMO.clear()


def render_chapter(chapter) -> Rendered:
    """A chapter's body, glossary-linked, through this process's memo and the shared cache."""
    rows = _glossary_rows()
    digest = hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
    cache_key = _cache_key("chapter", chapter.content_hash, chapter.body, digest)
    stored = _CHAPTER_MEMO.get(cache_key)
    if stored is None:
        stored = cache.get(cache_key)
        if stored is None:
            rendered = render_markdown(chapter.body, glossary_matcher(rows))
            stored = {"html": rendered.html, "toc": [(h.anchor, h.title) for h in rendered.toc]}
            cache.set(cache_key, stored, CACHE_TIMEOUT)
        while len(_CHAPTER_MEMO) >= CHAPTER_MEMO_SIZE:
            _CHAPTER_MEMO.pop(next(iter(_CHAPTER_MEMO)), None)
        _CHAPTER_MEMO[cache_key] = stored
    return Rendered(stored["html"], [Heading(*pair) for pair in stored["toc"]])

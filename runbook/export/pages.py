"""Write the runbook as self-contained HTML files: one per chapter plus ``index.html``.

Each file is the chapter as the site renders it (:func:`runbook.content.render_chapter`,
the same Markdown, shortcodes, MathML and figures) in a standalone template that
inlines everything it needs: Bootstrap and ``app.css`` (print rules included),
``figures.js``, the offline calculator driver, the calculators' formulas printed
to JavaScript and their data as JSON. Nothing is fetched: links between
chapters point at the sibling files, and links to the rest of the site (the
glossary, problems, reviews) become absolute ``SITE_URL`` addresses marked
``data-online``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from runbook.content import render_chapter
from runbook.export.calculators import FormulaTable, build_programs, formulas_script, left_out, page_data
from runbook.models import Chapter

STYLESHEETS = ("vendor/bootstrap/css/bootstrap.min.css", "css/app.css", "css/a11y.css")
SCRIPTS = ("js/figures.js", "js/print.js")
DRIVER = "js/offline-calculator.js"

EMBED = re.compile(r'<aside class="calc-embed" id="calc-(?P<family>[a-z0-9_]+)-\d+"')
HTMX_ATTRIBUTE = re.compile(r'\s+hx-[a-z-]+="[^"]*"')
RESET_LINK = re.compile(r'<a class="btn btn-sm btn-outline-secondary" href="[^"]*">Reset</a>')
LINK = re.compile(r'<a(?P<before>[^>]*?)\shref="(?P<href>[^"]*)"(?P<after>[^>]*)>')
ACTION = re.compile(r'(<form\b[^>]*?\saction=")(?P<url>/[^"]*)(")')
CSS_URL = re.compile(r"url\((?P<quote>['\"]?)(?P<url>[^'\")]*)(?P=quote)\)")
SOURCE_MAP = re.compile(r"/\*# sourceMappingURL=[^*]*\*/")
CHAPTER_PATH = re.compile(r"^/runbook/(?P<slug>[-\w]+)/(?P<rest>[^#]*)(?P<fragment>#.*)?$")
SIBLING = re.compile(r"^[-\w]+\.html(#.*)?$")  # a file of the export itself
ONLINE_TITLE = "On the site: needs the network"


@dataclass
class ExportedFile:
    """One written file: its path and size in bytes."""

    path: Path
    size: int


def _static_text(path: str) -> str:
    """A static file's text; ``FileNotFoundError`` when it is missing."""
    found = finders.find(path)
    if not found:
        raise FileNotFoundError(f"Static file {path} is missing.")
    return Path(found).read_text(encoding="utf-8")


def inline_css() -> str:
    """Bootstrap and ``app.css`` as they are now, without source maps or any non-``data:`` ``url()``.

    A ``url()`` to a file (a font, an image) would need the network or a missing file next to the
    export: it is replaced by ``none`` so the rule degrades instead of fetching."""
    css = "\n".join(_static_text(path) for path in STYLESHEETS)
    css = SOURCE_MAP.sub("", css)

    def keep_data(match: re.Match) -> str:
        return match.group(0) if match["url"].strip().startswith("data:") else "none"

    return CSS_URL.sub(keep_data, css).replace("</style", "<\\/style")


def rewrite_links(html: str, slugs: set[str], site_url: str) -> str:
    """Chapter links → sibling files; other site paths → absolute ``site_url`` marked ``data-online``."""

    def link(match: re.Match) -> str:
        href = match["href"]
        before, after = match["before"], match["after"]
        if href.startswith(("#", "mailto:")) or not href or SIBLING.match(href):
            return match.group(0)
        if href.startswith(("http://", "https://")):
            new = href
        elif href.startswith("/"):
            chapter = CHAPTER_PATH.match(href)
            if href in ("/runbook/", "/runbook"):
                return f'<a{before} href="index.html"{after}>'
            if chapter and chapter["slug"] in slugs and not chapter["rest"]:
                return f'<a{before} href="{chapter["slug"]}.html{chapter["fragment"] or ""}"{after}>'
            new = site_url + href
        else:
            new = site_url + "/" + href
        attributes = before + after
        extra = "" if "data-online" in attributes else ' data-online="true"'
        if extra and "title=" not in attributes:  # keep a glossary link's own title (the definition)
            extra += f' title="{ONLINE_TITLE}"'
        return f'<a{before} href="{new}"{after}{extra}>'

    html = LINK.sub(link, html)
    return ACTION.sub(lambda m: f'{m.group(1)}{site_url}{m["url"]}{m.group(3)}', html)


def offline_calculators(html: str) -> tuple[str, list[str]]:
    """Embedded calculators made offline: htmx attributes gone, the family named on the ``<aside>``,
    Reset a real reset button. Returns the HTML and the families it embeds, in order."""
    families = [match["family"] for match in EMBED.finditer(html)]
    html = EMBED.sub(lambda m: f'{m.group(0)} data-family="{m["family"]}"', html)
    html = HTMX_ATTRIBUTE.sub("", html)
    html = RESET_LINK.sub('<button type="reset" class="btn btn-sm btn-outline-secondary">Reset</button>', html)
    return html, families


def _script(code: str) -> str:
    return code.replace("</script", "<\\/script")


INLINED = ("css", "scripts", "driver", "formulas")


def _render_page(template: str, context: dict, slugs: set[str], site_url: str) -> str:
    """Render ``template`` with its links rewritten (:func:`rewrite_links`); the inlined stylesheets and
    scripts are put in only afterwards, so the rewriting never touches them."""
    tokens = {name: f"@@export-{name}@@" for name in INLINED if context.get(name)}
    html = render_to_string(template, {**context, **{name: mark_safe(token) for name, token in tokens.items()}})
    html = rewrite_links(html, slugs, site_url)
    for name, token in tokens.items():
        html = html.replace(token, str(context[name]), 1)
    return html


def export_runbook(out_dir: Path, site_url: str | None = None) -> list[ExportedFile]:
    """Write every chapter in the database and ``index.html`` to ``out_dir`` (created if needed).

    Raises :class:`~runbook.export.calculators.ExportError` if a calculator's offline program
    disagrees with its procedure, and ``FileNotFoundError`` if a static file is missing."""
    site_url = (site_url or settings.SITE_URL).rstrip("/")
    out_dir.mkdir(parents=True, exist_ok=True)
    chapters = list(Chapter.objects.in_order())
    slugs = {chapter.slug for chapter in chapters}
    css = inline_css()
    static_js = "\n".join(_static_text(path) for path in SCRIPTS)
    driver = _static_text(DRIVER)
    # The simulated drills have no offline calculator: the index names them, and so does the chapter teaching each.
    omitted = left_out()
    written = []
    for position, chapter in enumerate(chapters):
        rendered = render_chapter(chapter)
        body, families = offline_calculators(rendered.html)
        table = FormulaTable()
        programs = build_programs(sorted(set(families)), table) if families else {}
        questions = list(chapter.questions.filter(published=True).order_by("position", "slug"))
        context = {
            "chapter": chapter,
            "body": mark_safe(body),
            "toc": rendered.toc,
            "chapters": chapters,
            "previous": chapters[position - 1] if position > 0 else None,
            "next": chapters[position + 1] if position + 1 < len(chapters) else None,
            "questions": questions,
            "site_url": site_url,
            "online_url": f"{site_url}{chapter.get_absolute_url()}",
            "css": mark_safe(css),
            "scripts": mark_safe(_script(static_js)),
            "driver": mark_safe(_script(driver)) if families else "",
            "formulas": mark_safe(_script(formulas_script(table))) if families else "",
            "data": page_data(programs, table) if families else None,
            "left_out": [family for family in omitted if family.chapter == chapter.slug],
        }
        html = _render_page("runbook/export/chapter.html", context, slugs, site_url)
        path = out_dir / f"{chapter.slug}.html"
        path.write_text(html, encoding="utf-8")
        written.append(ExportedFile(path, path.stat().st_size))
    index_context = {"chapters": chapters, "site_url": site_url, "css": css, "left_out": omitted}
    index = _render_page("runbook/export/index.html", index_context, slugs, site_url)
    path = out_dir / "index.html"
    path.write_text(index, encoding="utf-8")
    written.append(ExportedFile(path, path.stat().st_size))
    return written

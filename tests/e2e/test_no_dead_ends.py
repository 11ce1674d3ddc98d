"""No dead ends (issue 28): as each role, every link of the home page and every link of those pages answers.

Per role — a visitor, a candidate with due cards and an assignment, their coach — the home page is opened in
Chromium and every link on it is followed in the browser (level 1); every link found on those pages is then
fetched with the same browser context's session (level 2). No answer may be a 5xx or a 405 (a link to an
address that only takes POST), and every HTML page must offer a way back: the site's main menu, or a link
home. Links off the site, to static files and anchors within a page are left out. Each role's count of
addresses is printed; the whole test takes about a minute.
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urlsplit

import pytest

from tests import needs

from .test_candidate import log_in
from .test_phone_width import busy_candidate, people  # noqa: F401 (fixtures)

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

LINKS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
# A page with a way back: the site's main menu, or (a page standing alone) a link to the home page.
WAY_BACK = re.compile(r'<nav class="navbar[^"]*app-navbar"|<a [^>]*href="/"')
PAGE_WAY_BACK = "nav.app-navbar, a[href='/']"


def same_site(base: str, url: str) -> str | None:
    """``url``'s path and query when it is a page of the live server (no fragment, no static file), else None."""
    url, _ = urldefrag(url)
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != base or parts.path.startswith("/static/"):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def crawl(context, base: str) -> tuple[dict[str, list[str]], int]:
    """Follow every link of the home page, then every link of those pages: the problems found per address,
    and how many addresses were visited."""
    page = context.new_page()
    page.goto(base + "/")
    level_1 = sorted({p for p in (same_site(base, url) for url in page.evaluate(LINKS)) if p})
    seen = {"/", *level_1}
    level_2: set[str] = set()
    problems: dict[str, list[str]] = {}

    for path in level_1:
        response = page.goto(base + path)
        status = response.status if response else 0
        if status >= 500 or status == 405:
            problems.setdefault(path, []).append(f"answered {status}")
            continue
        if "text/html" in (response.headers.get("content-type", "") if response else ""):
            if page.locator(PAGE_WAY_BACK).count() == 0:
                problems.setdefault(path, []).append("no way back (no menu, no link home)")
            level_2 |= {p for p in (same_site(base, url) for url in page.evaluate(LINKS)) if p}

    for path in sorted(level_2 - seen):
        seen.add(path)
        response = context.request.get(base + path, max_redirects=5)
        if response.status >= 500 or response.status == 405:
            problems.setdefault(path, []).append(f"answered {response.status}")
        elif "text/html" in response.headers.get("content-type", "") and not WAY_BACK.search(response.text()):
            problems.setdefault(path, []).append("no way back (no menu, no link home)")
    page.close()
    return problems, len(seen)


def test_a_visitor_meets_no_dead_end(live_server, new_context, content):
    context = new_context()
    problems, visited = crawl(context, live_server.url)
    print(f"visitor: {visited} addresses")
    assert problems == {}
    assert visited > 40


def test_a_candidate_meets_no_dead_end(live_server, new_context, busy_candidate):  # noqa: F811
    context = new_context()
    log_in(context.new_page(), live_server.url, "alice", "/")
    problems, visited = crawl(context, live_server.url)
    print(f"candidate: {visited} addresses")
    assert problems == {}
    assert visited > 40


def test_a_coach_meets_no_dead_end(live_server, new_context, busy_candidate):  # noqa: F811
    context = new_context()
    log_in(context.new_page(), live_server.url, "carol", "/coach/")
    problems, visited = crawl(context, live_server.url)
    print(f"coach: {visited} addresses")
    assert problems == {}
    assert visited > 40


def test_the_crawl_catches_a_405_and_a_page_without_a_way_back(live_server, new_context, content):
    """The checks themselves: a GET to a POST-only address is a 405; a bare response has no way back."""
    context = new_context()
    response = context.request.get(live_server.url + "/accounts/logout/")
    assert response.status == 405
    assert not WAY_BACK.search("<html><body><p>Nothing here.</p></body></html>")
    assert WAY_BACK.search(context.request.get(live_server.url + "/no-such-page/").text())

"""An anonymous reader in a real browser: track page → chapter → calculator changed in place → glossary → errata."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser]

CHAPTER = "/runbook/06-kv-cache/"
LADDER_EMBED = "aside.calc-embed:has(form[action$='/calculators/ladder/'])"


def users_headline(embed):
    """The embed's headline card about users (its title names them)."""
    return embed.locator(".calc-embed-headline").filter(
        has=embed.page.locator(".calc-embed-headline-title", has_text=re.compile("user", re.I))).first


def test_reader_walks_from_the_track_page_to_the_errata(content, live_server, page):
    page.goto(f"{live_server.url}/runbook/")
    page.locator(f"a[href='{CHAPTER}']").first.click()
    page.wait_for_url(re.compile(re.escape(CHAPTER) + "$"))
    assert page.locator("h1").first.is_visible()

    # The ladder calculator in the chapter: change the model, the results swap in place (htmx, no page load).
    embed = page.locator(LADDER_EMBED)
    embed.scroll_into_view_if_needed()
    headline = users_headline(embed)
    before = headline.locator(".calc-embed-headline-number .tabular-nums").inner_text().strip()
    assert before == "53"
    page.evaluate("window.__noReload = 'still here'")
    url = page.url
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and "embed=calc-" in r.url) as response:
        embed.locator("select[name='model']").select_option("qwen2.5-7b")
    assert response.value.ok
    headline.locator(".calc-badge", has_text="changed").wait_for()
    after = headline.locator(".calc-embed-headline-number .tabular-nums").inner_text().strip()
    assert after != before
    assert page.url == url
    assert page.evaluate("window.__noReload") == "still here"
    assert embed.locator(".calc-embed-step.is-changed").count() > 0

    # A glossary link in the chapter's running text lands on the term's anchor.
    link = page.locator(".rb-chapter a.glossary-link, article a.glossary-link, main a.glossary-link").first
    href = link.get_attribute("href")
    assert href.startswith("/glossary/#")
    slug = href.split("#", 1)[1]
    link.click()
    page.wait_for_url(re.compile(r"/glossary/#" + re.escape(slug) + "$"))
    assert page.locator(f"[id='{slug}']").is_visible()

    # The errata: the reference stack's 53 users and a proof the engine computes live.
    page.locator("a[href='/errata/']").first.click()
    page.wait_for_url(re.compile(r"/errata/$"))
    assert re.search(r"\b53\b", page.locator("main").inner_text())
    proof = page.locator(".rb-proof").first
    assert proof.is_visible()
    text = proof.text_content()
    assert "computed live" in text.lower()
    assert re.search(r"= [\d,.]+", text), "the proof shows a computed result"

"""History and state in a real browser (issue 20): Back after a pushed swap, a reload keeping a calculator's state.

- A filter swap pushes its address; after leaving for another page, Back shows the whole page (layout and all),
  with the filter and its results agreeing; so does Back when htmx has no snapshot left and asks the server.
- A calculator's inputs go into its address as they change: a reload, or Back from another page, shows the
  same inputs beside the results computed from them, and the embedded calculator's "open the full calculator"
  carries what was chosen in the chapter.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from .conftest import catalog_entry

pytestmark = [pytest.mark.browser]

LADDER = "/calculators/ladder/"


def headline_number(page, key: str) -> str:
    return page.locator(f"#headline-{key} .calc-headline-number .tabular-nums").inner_text().strip()


def server_headline(page, base: str, query: str, key: str) -> str:
    """The headline the server renders for ``query`` in a fresh page of the same context (the expected value)."""
    other = page.context.new_page()
    other.goto(f"{base}{LADDER}?{query}")
    number = headline_number(other, key)
    other.close()
    return number


def test_back_after_a_pushed_filter_swap_shows_the_whole_page(content, live_server, page):
    page.goto(f"{live_server.url}/bank/")
    total = page.locator("#bank-count strong").inner_text()
    with page.expect_response(lambda r: "/bank/?" in r.url and "kind=open" in r.url):
        page.locator("select[name='kind']").select_option("open")
    page.wait_for_url(re.compile(r"/bank/\?.*kind=open"))
    filtered = page.locator("#bank-count strong").inner_text()
    assert filtered != total

    page.locator("a[href='/glossary/']").first.click()
    page.wait_for_url(re.compile(r"/glossary/$"))
    page.go_back()
    page.wait_for_url(re.compile(r"/bank/\?.*kind=open"))

    assert page.locator("nav.app-navbar").count() == 1  # the layout, not a bare fragment
    assert page.locator("h1", has_text="Question bank").is_visible()
    assert page.locator("select[name='kind']").input_value() == "open"
    assert page.locator("#bank-count strong").inner_text() == filtered


def test_back_without_an_htmx_snapshot_asks_the_server_for_the_whole_page(content, live_server, page):
    page.goto(f"{live_server.url}/bank/")
    with page.expect_response(lambda r: "kind=open" in r.url):
        page.locator("select[name='kind']").select_option("open")
    page.wait_for_url(re.compile(r"kind=open"))
    open_count = page.locator("#bank-count strong").inner_text()
    with page.expect_response(lambda r: "kind=problem" in r.url):
        page.locator("select[name='kind']").select_option("problem")
    page.wait_for_url(re.compile(r"kind=problem"))
    page.evaluate("sessionStorage.removeItem('htmx-history-cache')")  # no snapshot: htmx must ask the server

    with page.expect_response(lambda r: "kind=open" in r.url and r.request.headers.get("hx-history-restore-request")
                              == "true") as restore:
        page.go_back()
    assert restore.value.ok and "<html" in restore.value.text()
    page.wait_for_url(re.compile(r"kind=open"))
    page.locator("#bank-count strong", has_text=open_count).wait_for()

    assert page.locator("nav.app-navbar").count() == 1  # the page's body swapped once, not a page in a page
    assert page.locator("select[name='kind']").input_value() == "open"


def test_a_reload_and_back_keep_the_calculator_state(content, live_server, page):
    page.goto(f"{live_server.url}{LADDER}")
    reference = headline_number(page, "users_paged")
    with page.expect_response(lambda r: LADDER in r.url and "model=llama-3.1-70b" in r.url):
        page.locator("select[name='model']").select_option("llama-3.1-70b")
    page.wait_for_url(re.compile(r"model=llama-3\.1-70b"))
    with page.expect_response(lambda r: LADDER in r.url and "gpu=h200" in r.url):
        page.locator("select[name='gpu']").select_option("h200-sxm-141gb")
    page.wait_for_url(re.compile(r"gpu=h200-sxm-141gb"))
    query = page.url.split("?", 1)[1]
    assert "previous=" not in query
    expected = server_headline(page, live_server.url, query, "users_paged")
    assert headline_number(page, "users_paged") == expected != reference

    page.reload()
    assert page.locator("select[name='model']").input_value() == "llama-3.1-70b"
    assert page.locator("select[name='gpu']").input_value() == "h200-sxm-141gb"
    assert headline_number(page, "users_paged") == expected

    page.locator("a[href='/glossary/']").first.click()
    page.wait_for_url(re.compile(r"/glossary/$"))
    page.go_back()
    page.wait_for_url(re.compile(r"gpu=h200-sxm-141gb"))
    assert page.locator("select[name='model']").input_value() == "llama-3.1-70b"
    assert headline_number(page, "users_paged") == expected


def test_a_pasted_config_disables_the_model_dropdown_and_a_reload_never_mixes_them(content, live_server, page):
    page.goto(f"{live_server.url}{LADDER}")
    page.locator("details.calc-config").evaluate("details => { details.open = true; }")
    with page.expect_response(lambda r: LADDER in r.url and r.request.method == "POST"):
        page.locator("textarea[name='config']").fill(json.dumps(catalog_entry("models", "llama-2-7b")["config"]))
        page.locator("textarea[name='config']").dispatch_event("change")
    page.locator(".calc-steps", has_text="524,288").wait_for()
    assert page.locator("select[name='model']").is_disabled()
    assert page.locator("#model-replaced").is_visible()
    assert "the pasted config" in page.locator("#results").inner_text()

    page.reload()
    page.wait_for_load_state("networkidle")
    pasted = page.locator("textarea[name='config']").input_value().strip() != ""
    results = page.locator("#results").inner_text()
    # Whatever the browser restored, the form and the results agree.
    assert ("the pasted config" in results) is pasted
    assert page.locator("select[name='model']").is_disabled() is pasted

    page.locator("details.calc-config").evaluate("details => { details.open = true; }")
    page.locator("textarea[name='config']").fill("")
    assert not page.locator("select[name='model']").is_disabled()
    assert not page.locator("#model-replaced").is_visible()


def test_the_embedded_calculator_opens_the_full_one_with_its_inputs(content, live_server, page):
    page.goto(f"{live_server.url}/runbook/06-kv-cache/")
    embed = page.locator("aside.calc-embed:has(form[action$='/calculators/ladder/'])").first
    embed.scroll_into_view_if_needed()
    with page.expect_response(lambda r: LADDER in r.url and "embed=calc-" in r.url):
        embed.locator("select[name='model']").select_option("qwen2.5-7b")
    link = embed.locator("a.calc-embed-open")
    # The link is replaced out of band when htmx settles the response, so wait on the locator
    # (re-resolved on every poll), never on a handle that may be the element about to be removed.
    expect(link).to_have_attribute("href", re.compile(r"model=qwen2\.5-7b"))
    worst = embed.locator("[data-step='users_worst_case'] .calc-embed-step-value").inner_text().split()[0]

    link.click()
    page.wait_for_url(re.compile(re.escape(LADDER) + r"\?.*model=qwen2\.5-7b"))
    assert page.locator("select[name='model']").input_value() == "qwen2.5-7b"
    assert page.locator("#step-users_worst_case .calc-value .tabular-nums").inner_text().split()[0] == worst


def test_typing_recomputes_without_leaving_the_field_and_no_request_is_aborted(content, live_server, page):
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(f"{live_server.url}{LADDER}")
    field = page.locator("input[name='context']")
    field.click()
    field.fill("")
    with page.expect_response(lambda r: LADDER in r.url and "context=16384" in r.url):
        field.type("16384")  # no blur, no Enter: the pause after typing sends it
    page.wait_for_url(re.compile(r"context=16384"))
    expected = server_headline(page, live_server.url, page.url.split("?", 1)[1], "users_worst_case")
    assert headline_number(page, "users_worst_case") == expected
    assert page.evaluate("document.activeElement.name") == "context"  # focus stays where the user types

    with page.expect_response(lambda r: LADDER in r.url and "context=4096" in r.url):
        field.fill("4096")
        page.get_by_role("button", name=re.compile("Calculate")).click()  # blur (change) and submit together
    page.wait_for_timeout(800)
    assert not [e for e in errors if "htmx" in e], errors

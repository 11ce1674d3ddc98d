"""With JavaScript off the calculator and a problem still work as plain HTML forms."""

from __future__ import annotations

import re

import pytest

from tests import needs

from .conftest import DRAWN_PROBLEM
from .test_candidate import EXPECTED_VERDICTS, SLIPPED_ANSWERS, log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

LADDER_EMBED = "aside.calc-embed:has(form[action$='/calculators/ladder/'])"


@pytest.fixture
def page(new_context):
    """A page in a context with JavaScript disabled."""
    context = new_context(java_script_enabled=False)
    return context.new_page()


def test_the_chapter_calculator_submits_as_a_plain_get(content, live_server, page):
    page.goto(f"{live_server.url}/runbook/06-kv-cache/")
    assert page.evaluate("1 + 1") == 2  # evaluate still works: only the page's own scripts are off
    embed = page.locator(LADDER_EMBED)
    with page.expect_navigation() as navigation:
        embed.locator("button[type='submit']", has_text="Calculate").click()
    response = navigation.value
    assert response.ok and response.request.method == "GET"
    assert "/calculators/ladder/?" in page.url
    assert "model=llama-3.1-8b" in page.url
    text = page.locator("main").inner_text() if page.locator("main").count() else page.inner_text("body")
    assert re.search(r"\b53 users\b", text), text[:2000]
    assert re.search(r"\b191 users\b", text)


def test_a_problem_grades_on_a_plain_post(live_server, page, candidate, reference_problem):
    """The log-in and the grading are plain form posts. A stored problem is its owner's page (d3ef58c), so its
    owner logs in first and the attempt is saved (a visitor's answers are graded on a drawn problem, unsaved)."""
    from drills.models import Attempt

    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)
    for key, answer in SLIPPED_ANSWERS.items():
        page.fill(f"#answers input[name='{key}']", answer)
    with page.expect_navigation() as navigation:
        page.locator("#answers [type='submit']").click()
    response = navigation.value
    assert response.ok and response.request.method == "POST"
    assert "hx-request" not in response.request.headers
    assert page.url == f"{live_server.url}{path}"
    for key, verdict in EXPECTED_VERDICTS.items():
        expect(page.locator(f"#step-{key}")).to_have_class(re.compile(rf"(^|\s)verdict-{verdict}(\s|$)"))
    assert page.locator("#step-weights_gib a[href='/errata/#gb-gib-mix']").is_visible()
    assert page.locator("#answers .alert-success", has_text="Saved").is_visible()
    assert Attempt.objects.filter(user=candidate, problem=reference_problem).count() == 1


def test_a_visitors_drawn_problem_grades_unsaved_on_a_plain_post(content, live_server, page):
    from drills.models import Attempt, ProblemInstance

    page.goto(f"{live_server.url}{DRAWN_PROBLEM}")
    page.fill("#answers input[name='card_gib']", "79.6")
    with page.expect_navigation():
        page.locator("#answers [type='submit']").first.click()
    page.locator("#not-recorded").wait_for()  # the blank steps: nothing graded yet, the boxes marked
    with page.expect_navigation() as navigation:
        page.locator("#answers button[name='blanks']").click()
    assert navigation.value.ok and navigation.value.request.method == "POST"
    assert page.locator("#answers .alert-info", has_text="Graded but not saved").is_visible()
    assert not ProblemInstance.objects.exists() and not Attempt.objects.exists()

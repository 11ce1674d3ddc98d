"""The session ends in another tab while an answer is typed: the answer survives logging in again (issue 28).

"Reveal the model answer" is an htmx POST. With the session gone it used to draw the whole log-in page inside
the card, lose the answer, and after logging in land on the POST-only endpoint (405). Now the browser loads the
log-in page as a page, with ``next`` the review page, and the typed text comes back into the box.
"""

from __future__ import annotations

import re

import pytest

from tests import needs
from tests.factories import PASSWORD

from .test_reviews import candidate, two_due_cards  # noqa: F401 (fixtures)

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

ANSWER = "Weights, then the KV cache per user at the full context, then divide what is left."


def test_an_answer_typed_before_the_session_ended_is_back_after_logging_in(
        live_server, page, candidate, two_due_cards):  # noqa: F811 (the fixtures imported above)
    from django.contrib.sessions.models import Session

    from .test_candidate import log_in

    log_in(page, live_server.url, "alice", "/review/")
    page.fill("#review-card textarea[name='answer']", ANSWER)

    Session.objects.all().delete()  # logged out elsewhere: the cookie names a session that no longer exists
    with page.expect_navigation(url=re.compile(r"/accounts/login/\?next=/review/$")):
        page.locator(".review-answer-form [type='submit']").click()
    expect(page.locator("#review-card")).to_have_count(0)  # a whole page, not the log-in form inside the card

    page.fill("input[name='username']", "alice")
    page.fill("input[name='password']", PASSWORD)
    with page.expect_navigation(url=re.compile(r"/review/$")) as navigation:
        page.locator("form:has(input[name='password']) [type='submit']").click()
    assert navigation.value.status == 200

    expect(page.locator("#review-card textarea[name='answer']")).to_have_value(ANSWER)
    expect(page.locator(".keep-typed-restored")).to_contain_text("What you had typed is back in its box.")
    # Restored once: a reload shows the card as the server has it.
    page.reload()
    expect(page.locator("#review-card textarea[name='answer']")).to_have_value("")


def test_with_every_cookie_gone_the_answer_also_survives(live_server, page, candidate, two_due_cards):  # noqa: F811
    """Cookies cleared: the POST now fails its CSRF check first (403); the page reloads, asks for a log-in, and the
    answer comes back all the same."""
    from .test_candidate import log_in

    log_in(page, live_server.url, "alice", "/review/")
    page.fill("#review-card textarea[name='answer']", ANSWER)

    page.context.clear_cookies()
    with page.expect_navigation(url=re.compile(r"/accounts/login/\?next=/review/$")):
        page.locator(".review-answer-form [type='submit']").click()
    page.fill("input[name='username']", "alice")
    page.fill("input[name='password']", PASSWORD)
    with page.expect_navigation(url=re.compile(r"/review/$")):
        page.locator("form:has(input[name='password']) [type='submit']").click()

    expect(page.locator("#review-card textarea[name='answer']")).to_have_value(ANSWER)

"""A fresh sign-up in a real browser (issue 20): the home page's first-run steps, then the candidate's day."""

from __future__ import annotations

import re

import pytest

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser]


def test_a_new_candidate_is_guided_from_sign_up_to_a_first_review(content, live_server, new_context):
    from accounts.models import TimeZonePreference
    from drills.models import ReviewSettings

    page = new_context(timezone_id="Europe/Paris").new_page()
    page.goto(f"{live_server.url}/accounts/signup/")
    page.fill("#id_username", "newcomer")
    page.fill("#id_email", "newcomer@example.com")
    page.fill("#id_password1", "a-long-passphrase-2026")
    page.fill("#id_password2", "a-long-passphrase-2026")
    page.locator("form button[type=submit]").last.click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("h2", has_text="Three steps to start").is_visible()

    # 1. The browser's zone, offered in one click.
    button = page.locator("#first-run-zone-button")
    assert button.inner_text() == "Use this browser's time zone (Europe/Paris)"
    button.click()
    page.wait_for_url(f"{live_server.url}/")
    assert "times in Europe/Paris" in page.locator("header").inner_text()

    # 2. A path: the cram path.
    page.locator("form:has(input[name='path'][value='cram']) button").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("form:has(input[name='path'][value='cram']) button[aria-pressed='true']").count() == 1
    assert (TimeZonePreference.objects.get(user__username="newcomer").time_zone,
            ReviewSettings.objects.get(user__username="newcomer").reading_path) == ("Europe/Paris", "cram")

    # 3. The first chapter of the path's questions into the deck: the guidance goes, the day shows them due.
    page.locator("form:has(input[name='chapter']) button").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("h2", has_text="Three steps to start").count() == 0
    due = int(page.locator("#home-due-today").inner_text())
    assert due > 0
    assert page.locator("a", has_text="Review now").is_visible()
    next_up = page.locator("section[aria-labelledby='next-title'] a.fw-semibold").inner_text()
    assert re.match(r"\d\d · ", next_up)  # the next chapter on the cram path
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "home-signed-in.png"), full_page=True)

    page.locator("a", has_text="Review now").click()
    page.wait_for_url(re.compile(r"/review/$"))
    assert f"{due} card" in page.locator("main, body").first.inner_text()

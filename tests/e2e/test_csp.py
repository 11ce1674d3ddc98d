"""The Content-Security-Policy holds on the main pages: no violation reported, logged out, as a candidate, as a coach.

Every page answers with ``Content-Security-Policy`` (scripts, styles and fetches from the site only, no
inline script or style attribute, no eval) and ``Permissions-Policy`` (config/middleware.py). A script
injected before any page script (Playwright's init script, which the policy does not govern) records each
``securitypolicyviolation`` event; the console's CSP messages are collected too. The pages are visited in the
states that run their scripts: a calculator after an htmx recompute and after a pasted config (POST), a
chapter with its embedded calculator and figure, a review card revealed, the coach dashboard polling.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import needs
from tests.factories import CohortFactory, UserFactory

from .conftest import DRAWN_PROBLEM
from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile}:${event.lineNumber} ${event.sample || ""}`);
});
"""
CHAPTER = "/runbook/06-kv-cache/"
CONFIG = Path(__file__).resolve().parents[2] / "fixtures" / "catalog" / "models.json"


class Watch:
    """Collects CSP violations (events and console messages) over the pages a test opens."""

    def __init__(self, page, base_url: str):
        self.page, self.base_url = page, base_url
        self.problems: list[str] = []
        self.visited: list[str] = []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", self._console)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.problems.append(f"{self.page.url}: console: {message.text[:300]}")

    def read(self, label: str) -> None:
        """Record the violations of the page as it is now."""
        self.page.wait_for_load_state("load")
        self.page.wait_for_timeout(150)  # a violation event is dispatched asynchronously
        found = self.page.evaluate("window.__cspViolations || []")
        self.problems += [f"{label}: {line}" for line in found]
        self.visited.append(label)

    def visit(self, path: str) -> None:
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.status == 200, (path, response and response.status)
        headers = response.headers
        assert "script-src 'self'" in headers.get("content-security-policy", ""), path
        assert "camera=()" in headers.get("permissions-policy", ""), path
        self.read(path)

    def check(self) -> None:
        assert not self.problems, f"{len(self.problems)} CSP violation(s):\n" + "\n".join(self.problems)


def test_public_pages_report_no_violation(content, live_server, page):
    watch = Watch(page, live_server.url)
    for path in ("/", "/runbook/", CHAPTER, "/glossary/", "/errata/", "/reading/", "/search/?q=kv+cache",
                 "/calculators/", "/calculators/ladder/", "/drills/", "/bank/", "/accounts/login/",
                 "/accounts/signup/", DRAWN_PROBLEM):
        watch.visit(path)

    # The calculator after an htmx recompute (htmx's indicator classes, the swapped results).
    page.goto(f"{live_server.url}/calculators/ladder/")
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.headers.get("hx-request")):
        page.select_option("select[name='model']", "qwen2.5-7b")
    expect(page.locator("#results .calc-badge").first).to_be_visible()
    watch.read("calculator after a recompute")

    # A pasted config.json goes by POST (htmx switches the verb while the config box holds text).
    config = next(m for m in json.loads(CONFIG.read_text()) if m["id"] == "llama-3.1-8b")["config"]
    page.locator("details.calc-config summary").click()
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.method == "POST") as info:
        page.fill("textarea[name='config']", json.dumps(config, indent=2))
        page.locator("textarea[name='config']").dispatch_event("change")
    assert info.value.status == 200
    expect(page.locator("#results")).to_contain_text("the pasted config")
    watch.read("calculator with a pasted config")
    watch.check()
    assert len(watch.visited) == 16


def test_candidate_and_coach_pages_report_no_violation(content, live_server, new_context):
    coach, candidate = UserFactory(username="carol", role="coach"), UserFactory(username="alice", role="candidate")
    CohortFactory(coach=coach, name="Autumn cohort", members=[candidate])

    page = new_context().new_page()
    watch = Watch(page, live_server.url)
    log_in(page, live_server.url, "alice", "/review/")
    for path in ("/review/", "/review/settings/", "/progress/", "/assignments/", "/drills/ladder/new/"):
        watch.visit(path)

    coach_page = new_context().new_page()
    coach_watch = Watch(coach_page, live_server.url)
    log_in(coach_page, live_server.url, "carol", "/coach/")
    for path in ("/coach/", "/coach/questions/new/", "/coach/sets/"):
        coach_watch.visit(path)
    # The dashboard's tables, polled by htmx without a trigger filter (no eval).
    coach_page.goto(f"{live_server.url}/coach/")
    with coach_page.expect_response(lambda r: "/coach/tables/" in r.url, timeout=15_000):
        coach_page.evaluate("document.dispatchEvent(new CustomEvent('dashboard-visible'))")
    coach_watch.read("dashboard after a refresh")
    watch.check()
    coach_watch.check()

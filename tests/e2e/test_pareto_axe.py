"""axe-core on the pareto calculator: its chart and table pass, before and after an htmx recompute."""

from __future__ import annotations

import pytest

from tests import needs

from .test_axe import AXE, Scanner

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]


def test_the_curve_page_is_accessible(live_server, page):
    needs.file(AXE, "run `npm ci` at the repository root (.ci/run does)")
    page.set_default_timeout(60_000)  # the shared machine can be slow; this is not a timing test
    scanner = Scanner(page, live_server.url)
    scanner.visit("/calculators/pareto/")
    expect(page.locator(".calc-curve svg[role='img']")).to_have_count(1)
    with page.expect_response(lambda r: "/calculators/pareto/" in r.url and r.request.headers.get("hx-request")):
        page.select_option("select[name='model']", "mistral-7b-v0.1")
    expect(page.locator(".calc-curve-table caption")).to_contain_text("mistral-7b-v0.1", timeout=60_000)
    scanner.scan("pareto after a recompute")
    scanner.check()

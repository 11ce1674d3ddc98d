"""A visitor works a knee drill in Chromium: after grading, the worked solution shows the sweep behind the knee
(why it is there, the chart, every swept rate in a table), swapped in by htmx, and passes axe.

A screenshot of the worked page is kept in ``test-artifacts/knee-drill.png``."""

import pytest
from django.core.cache import cache

from tests import needs

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_graded_knee_drill_shows_its_sweep_and_why_the_knee_is_there(live_server, page):
    from .test_axe import AXE, Scanner

    cache.clear()
    page.goto(live_server.url + "/drills/knee/new/?seed=3")
    page.fill("#id_decode_step_batch_ms", "8.3 ms")
    page.fill("#id_knee_req_s", "20 req/s")
    page.click("text=Grade my working")
    page.wait_for_selector(".knee-sweep svg[role=img]")

    assert page.inner_text("#step-knee_req_s .step-tolerance") == "±5 %"
    reason = page.inner_text(".knee-reason")
    assert reason.startswith(("TPOT is the target that starts failing", "TTFT is the target that starts failing",
                              "At ")), reason
    rows = page.eval_on_selector_all(".knee-sweep-table tbody tr", "rows => rows.map(r => r.cells[7].textContent)")
    assert 9 <= len(rows) <= 12 and rows.count("refined") >= 1
    assert sum("last keeping 0.9" in mark for mark in rows) == 1
    assert sum("first below 0.9" in mark for mark in rows) == 1
    box = page.locator(".knee-sweep svg").bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 300
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#answers").screenshot(path=str(ARTIFACTS / "knee-drill.png"))

    needs.file(AXE, "run `npm ci` at the repository root (.ci/run does)")
    scanner = Scanner(page, live_server.url)
    scanner.scan("knee drill, graded")
    scanner.check()

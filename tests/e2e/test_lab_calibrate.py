"""/lab/calibrate/ in Chromium at a phone's 390 px and at a desktop's width: paste a vllm bench serve sweep, see the
replay and the fit; a bad paste's sentence beside the box; logged in, save, apply, and the simulator says so.
Screenshots go to test-artifacts/phone/ and test-artifacts/lab/."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache

from tests.factories import UserFactory

from .conftest import ARTIFACTS
from .test_candidate import log_in
from .test_phone_width import MEASURE, PHONE, SMALLEST_TEXT_PX, phone, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SWEEP = (Path(__file__).resolve().parents[2] / "fixtures" / "lab" / "benchmarks"
         / "vllm_bench_serve_summary.txt").read_text()
SHOTS = ARTIFACTS / "lab"


@pytest.fixture(autouse=True)
def no_cached_runs():
    cache.clear()
    yield
    cache.clear()


def fits(page) -> list[str]:
    measured = page.evaluate(MEASURE)
    found = []
    if measured["scrollWidth"] > PHONE["width"]:
        found.append(f"the page is {measured['scrollWidth']} px wide: {measured['outside']}")
    if measured["smallest"] < SMALLEST_TEXT_PX:
        found.append(f"{measured['smallest']} px text: {measured['smallestText']!r}")
    return found


def test_a_visitor_fits_a_sweep_on_a_phone(live_server, new_context):
    page = phone(new_context, live_server).new_page()
    page.goto("/lab/calibrate/")
    page.fill("#id_output", "input=1024 output=128 concurency=4 tpot=7\n")
    page.click("button[name='fit']")
    error = page.locator("#id_output-error")
    error.wait_for()
    assert error.inner_text().startswith("Line 1, “input=1024 output=128 concurency=4 tpot=7”: expected key=value")
    assert page.input_value("#id_output") == "input=1024 output=128 concurency=4 tpot=7\n"
    shoot(page, "lab-calibrate-refused")
    assert fits(page) == []

    page.fill("#id_output", SWEEP)
    page.click("button[name='fit']")
    page.locator("#replay").wait_for(timeout=60_000)
    assert page.locator("#fit-constants tbody tr").count() == 3
    assert page.locator(".replay-point").count() == 3
    assert "log in" in page.inner_text("#calibrate").lower()
    shoot(page, "lab-calibrate-fitted")
    assert fits(page) == []


def test_a_candidate_saves_applies_and_the_simulator_uses_it_at_desktop_width(live_server, new_context):
    from calculators.models import Calibration

    UserFactory(username="alice")
    page = new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page, live_server.url, "alice", "/lab/calibrate/")
    page.fill("#id_output", SWEEP)
    page.fill("#id_name", "H100 sweep")
    page.click("button[name='save']")
    page.wait_for_url("**/lab/calibrations/*/", timeout=60_000)
    page.locator("#replay").wait_for(timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "calibration-saved-desktop.png"), full_page=True, timeout=60_000)
    page.click("text=Apply to the calculators and the simulator")
    page.locator(".badge:has-text('In use')").wait_for()
    calibration = Calibration.objects.get(name="H100 sweep")
    page.goto(live_server.url + "/simulator/")
    banner = page.locator("#calibration-in-use")
    assert "Calibration in use: H100 sweep" in banner.inner_text()
    assert page.input_value("#id_bandwidth_efficiency") == f"{calibration.values['bandwidth_efficiency']:.4g}"
    page.screenshot(path=str(SHOTS / "simulator-calibrated-desktop.png"), full_page=True, timeout=60_000)

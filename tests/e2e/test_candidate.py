"""A candidate in a real browser: log in, work a ladder problem with a slip in step 3, see it carried forward."""

from __future__ import annotations

import re

import pytest

from tests import needs
from tests.factories import PASSWORD, UserFactory

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

# The reference stack with the weights' GB figure typed as GiB in step 3, and every later step consistent with it.
SLIPPED_ANSWERS = {
    "card_gib": "81559/1024",
    "usable_gib": "71.68 GiB",
    "weights_gib": "16.06",        # 8,030,261,248 × 2 B = 16.06 GB, typed as GiB: gb-gib-mix
    "kv_budget_gib": "52.62",      # own 71.68 − 16.06 − 3
    "kv_bytes_per_token": "128 KiB",
    "per_user_gib": "1",
    "users_worst_case": "52",      # ⌊52.62 / 1⌋
    "users_paged": "187",          # ⌊52.62 / 0.28125⌋
}
EXPECTED_VERDICTS = {
    "card_gib": "correct", "usable_gib": "correct", "weights_gib": "misconception",
    "kv_budget_gib": "carried_forward", "kv_bytes_per_token": "correct", "per_user_gib": "correct",
    "users_worst_case": "carried_forward", "users_paged": "carried_forward",
}


@pytest.fixture
def candidate(transactional_db):
    """alice, a candidate (the suite's fixture of that name uses ``db``; the live server needs transactions)."""
    return UserFactory(username="alice", role="candidate")


def log_in(page, base_url: str, username: str, next_path: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next={next_path}")
    page.fill("input[name='username']", username)
    page.fill("input[name='password']", PASSWORD)
    page.locator("form:has(input[name='password']) [type='submit']").click()
    page.wait_for_url(re.compile(re.escape(next_path) + "$"))


def test_a_slip_in_step_3_is_named_and_carried_forward(live_server, page, candidate, reference_problem):
    from drills.models import Attempt

    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)

    url = page.url
    page.evaluate("window.__noReload = 'still here'")
    for key, answer in SLIPPED_ANSWERS.items():
        page.fill(f"#answers input[name='{key}']", answer)
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith(path)) as response:
        page.locator("#answers [type='submit']").click()
    assert response.value.request.headers.get("hx-request") == "true"
    page.locator("#answers .score").wait_for()
    assert page.url == url
    assert page.evaluate("window.__noReload") == "still here"

    for key, verdict in EXPECTED_VERDICTS.items():
        # htmx settles the swapped-in classes a moment after the swap: let expect() wait for them.
        expect(page.locator(f"#step-{key}")).to_have_class(re.compile(rf"(^|\s)verdict-{verdict}(\s|$)"))
    step3 = page.locator("#step-weights_gib")
    assert step3.locator("a[href='/errata/#gb-gib-mix']").is_visible()
    assert page.locator("#answers .alert-success", has_text="Saved").is_visible()

    attempt = Attempt.objects.get(user=candidate)
    weights = attempt.steps.get(key="weights_gib")
    assert (weights.verdict, weights.misconception) == ("misconception", "gb-gib-mix")
    assert sorted(attempt.steps.filter(verdict="carried_forward").values_list("key", flat=True)) == [
        "kv_budget_gib", "users_paged", "users_worst_case"]

    # "Read why" leads to the named misconception in the errata.
    step3.locator("a[href='/errata/#gb-gib-mix']").click()
    page.wait_for_url(re.compile(r"/errata/#gb-gib-mix$"))
    assert page.locator("[id='gb-gib-mix']").is_visible()

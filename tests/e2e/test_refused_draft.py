"""A refused grade's working survives leaving the problem (a new user's finding; static/js/keep-typed.js).

When a step cannot be read, the problem page records nothing and answers with the error, the typed values shown
again. They used to live only in that response: a candidate who went to look something up and came back found
empty boxes. Now the refused form keeps a draft in the tab's sessionStorage under the problem's address; a fresh
sheet of that problem puts it back into its empty boxes, and a stored grade clears it.
"""

from __future__ import annotations

import pytest

from tests import needs

from .test_candidate import SLIPPED_ANSWERS, candidate, log_in  # noqa: F401 (fixture)

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

UNREADABLE = "52..62"  # two decimal points: "Could not read '52..62': a number cannot have two decimal points."


def test_a_refused_grade_s_working_is_back_after_leaving_and_returning(live_server, page, candidate,  # noqa: F811
                                                                        reference_problem):
    from drills.followups.services import attempt_answers
    from drills.models import Attempt

    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)
    typed = {**SLIPPED_ANSWERS, "kv_budget_gib": UNREADABLE}
    for key, answer in typed.items():
        page.fill(f"#answers input[name='{key}']", answer)
    page.locator("#answers [type='submit']").first.click()
    expect(page.locator("#not-recorded")).to_contain_text("could not be read")
    expect(page.locator("#answers .invalid-feedback")).to_contain_text("a number cannot have two decimal points")
    assert not Attempt.objects.filter(problem=reference_problem).exists()

    page.goto(live_server.url + "/drills/")  # away, then back by the problem's address
    page.goto(live_server.url + path)
    for key, answer in typed.items():
        expect(page.locator(f"#answers input[name='{key}']")).to_have_value(answer)
    expect(page.locator(".keep-typed-restored")).to_contain_text("Your ungraded working is back in its boxes")

    # Fixed and graded: the grade is stored and the draft goes with it, so a blank sheet stays blank.
    page.fill("#answers input[name='kv_budget_gib']", SLIPPED_ANSWERS["kv_budget_gib"])
    page.locator("#answers [type='submit']").first.click()
    page.locator("#answers .score").wait_for()
    attempt = Attempt.objects.get(problem=reference_problem)
    assert attempt_answers(attempt) == SLIPPED_ANSWERS
    page.goto(live_server.url + path + "?clear=1")
    for key in typed:
        expect(page.locator(f"#answers input[name='{key}']")).to_have_value("")
    expect(page.locator(".keep-typed-restored")).to_have_count(0)

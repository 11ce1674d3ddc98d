"""A candidate in a real browser grades a problem, starts its follow-up, reloads, and finds the follow-up where
they left it (not a dead end); opening the problem again from a link shows it too."""

from __future__ import annotations

import pytest

from tests import needs
from tests.factories import UserFactory

from .test_candidate import SLIPPED_ANSWERS, log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]


@pytest.fixture
def candidate(transactional_db):
    return UserFactory(username="alice", role="candidate")


def test_the_follow_up_survives_a_reload_and_a_new_visit(live_server, page, candidate, reference_problem):
    from drills.followups.services import chain
    from drills.models import FollowUpAttempt

    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)
    for key, answer in SLIPPED_ANSWERS.items():
        page.fill(f"#answers input[name='{key}']", answer)
    page.locator("#answers [type='submit']").first.click()
    page.locator("#answers .score").wait_for()
    links = chain(reference_problem)
    first = links[0]
    for key in first.moves:
        page.locator(f"#fu-mark-{key}").check()
    page.get_by_role("button", name="These steps move").click()
    expect(page.locator("#followup")).to_contain_text("Then: the new values")

    page.reload()
    section = page.locator("#followup")
    expect(section).to_contain_text("Follow-up 1 of 3")
    expect(section).to_contain_text(first.change.sentence)
    expect(page.locator("#answers .score")).to_be_visible()  # the graded attempt, as left
    expect(page.locator("#answers input[name='weights_gib']")).to_have_value("16.06")

    # Answer the first follow-up, then come back from a link: the chain goes on at the second.
    for key in first.moves:
        page.locator(f"#fu-mark-{key}").check()
    page.get_by_role("button", name="These steps move").click()
    for key in first.moves:
        page.fill(f"#followup input[name='value-{key}']", repr(float(first.result.values[key])))
    page.get_by_role("button", name="Grade the follow-up").click()
    page.locator("#followup .followup-score").wait_for()
    assert FollowUpAttempt.objects.filter(user=candidate, position=0).count() == 1
    page.goto(live_server.url + "/drills/")
    page.goto(live_server.url + path)
    expect(page.locator("#followup")).to_contain_text("Follow-up 2 of 3")
    expect(page.locator("#followup")).to_contain_text(links[1].change.sentence)
    expect(page.locator("#followup-answered")).to_contain_text(f"Follow-up 1: {first.change.sentence}")

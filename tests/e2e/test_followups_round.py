"""A candidate in a real browser sits a "Follow-ups" round to its debrief (issue 33 item 1): the problem, then each
follow-up (tick what moves, type the new values), then the report's follow-up section.

The change each follow-up draws depends on the catalog, so the answers are read from the engine
(``followup_link``); the hand-derived values are in tests/engine/test_followup.py.
"""

from __future__ import annotations

import re

import pytest

from tests import needs
from tests.factories import UserFactory

from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

ITEM_URL = re.compile(r"/rounds/(\d+)/(\d+)/$")


@pytest.fixture
def candidate(transactional_db):
    return UserFactory(username="alice", role="candidate")


def test_sit_a_follow_ups_round_to_its_debrief(live_server, page, candidate, content):
    from drills.models import Round
    from drills.rounds.services import followup_link
    from drills.templatetags.drills_tags import step_choices

    log_in(page, live_server.url, "alice", "/rounds/")
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Follow-ups\s*$")))
    with page.expect_navigation(url=ITEM_URL):
        preset.locator("[type='submit']").click()
    round_ = Round.objects.get(user=candidate)
    items = list(round_.items.select_related("problem").order_by("position"))
    assert items[0].kind == "problem" and {item.kind for item in items[1:]} == {"followup"}

    # The problem, every step right (the preset draws from every family with inputs: a verdict step is a choice).
    solution = items[0].problem.solve()
    for spec, step in zip(solution.specs, solution.steps):
        choices = step_choices(spec, repr(step.value))
        if choices:
            page.select_option(f"#item-form select[name='{step.key}']",
                               next(choice["word"] for choice in choices if choice["selected"]))
        else:
            page.fill(f"#item-form input[name='{step.key}']", repr(step.value))
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/2/$")):
        page.get_by_role("button", name="Submit this item").click()

    # Each follow-up: the change is stated; tick the steps that move, then type their new values.
    for item in items[1:]:
        link = followup_link(item)
        expect(page.locator(".followup-change")).to_have_text(link.change.sentence)
        for key in link.moves:
            page.check(f"#fu-mark-{key}")
            page.fill(f"#value-{key}", repr(link.result.values[key]))
        if item is items[-1]:
            # The last item in ends the round with time left: htmx asks in place first, the page stays, the
            # typed values too; confirming submits them and the whole page goes to the report.
            url = page.url
            page.get_by_role("button", name="Submit this item").click()
            expect(page.locator("#submit-ask #confirm-last")).to_contain_text("ends the round now")
            assert page.url == url
            expect(page.locator(f"#value-{link.moves[0]}")).to_have_value(repr(link.result.values[link.moves[0]]))
            with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/report/$")):
                page.get_by_role("button", name="Submit and end the round").click()
        else:
            with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/{item.position + 1}/$")):
                page.get_by_role("button", name="Submit this item").click()

    # The debrief: one entry per follow-up, each scored in full, and the round at 100 %.
    debrief = page.locator("#report-followups")
    expect(debrief).to_be_visible()
    expect(debrief.locator(".followup-debrief")).to_have_count(len(items) - 1)
    for number, item in enumerate(items[1:], start=1):
        entry = page.locator(f"#followup-{number}")
        expect(entry.locator("h3")).to_contain_text(followup_link(item).change.sentence)
        expect(entry).to_contain_text("Which steps move: 100 % · their new values: 100 %")
    expect(page.locator("#round-score")).to_have_text("100 %")

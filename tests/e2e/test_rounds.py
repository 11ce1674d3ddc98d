"""A candidate in a real browser sits a phone-screen round: reload mid-round (the countdown continues), expire, report."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from .test_candidate import PASSWORD, log_in

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

ITEM_URL = re.compile(r"/rounds/(\d+)/1/$")


@pytest.fixture
def candidate(transactional_db):
    user = get_user_model().objects.create_user(username="alice", email="alice@example.com", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="candidate")[0])
    return user


def remaining(page) -> int:
    return int(page.locator("#round-clock").get_attribute("data-remaining"))


@pytest.fixture
def problem_templates(content):
    """The bank's problem templates (one per drill family) and the round presets, as load_content writes them."""
    from drills.bank.problem_templates import sync_problem_templates
    from drills.rounds.presets import sync_presets

    sync_problem_templates()
    sync_presets()


def test_reload_mid_round_then_expire(live_server, page, candidate, problem_templates):
    from drills.rounds.models import Round

    log_in(page, live_server.url, "alice", "/rounds/")
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Phone screen\s*$")))
    with page.expect_navigation(url=ITEM_URL):
        preset.locator("[type='submit']").click()
    round_pk = int(ITEM_URL.search(page.url).group(1))
    round_ = Round.objects.get(pk=round_pk, user=candidate)
    assert round_.is_active

    # Type into the first item's first step: htmx autosaves it after a short pause.
    first = page.locator("#item-form .answer-input").first
    field_id = first.get_attribute("id")
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/1/save/")):
        first.fill("71.68")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    before = remaining(page)
    assert 0 < before <= 30 * 60

    page.wait_for_timeout(2_100)
    page.reload()
    after = remaining(page)
    assert after < before, (before, after)      # the clock went on...
    assert after > 30 * 60 - 120                 # ...and was not reset to a fresh 30 minutes either
    expect(page.locator(f"#{field_id}")).to_have_value("71.68")

    # The deadline passes: reloading the item now leads to the report.
    Round.objects.filter(pk=round_pk).update(deadline=timezone.now() - timedelta(seconds=5))
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_pk}/report/$")):
        page.reload()
    expect(page.locator("h1")).to_contain_text("Phone screen")
    expect(page.locator("#report-items")).to_be_visible()
    assert not Round.objects.get(pk=round_pk).is_active

"""The answer clock runs from the first view, a reload included (README): a candidate opens a problem or a review
card, waits, reloads, answers, and the time recorded counts from the first opening (static/js/first-view.js).

Each page signs when it was shown (a hidden ``started``); a reload used to sign a new moment, so 15 s spent before
reloading were lost ("Saved: 0 s from opening the problem", "Time on the card 1 s").
"""

from __future__ import annotations

import re
import time

import pytest

from tests import needs

from .test_candidate import SLIPPED_ANSWERS, log_in
from .test_reviews import candidate, two_due_cards  # noqa: F401 (fixtures)

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

WAIT_S = 2.0  # between the first view and the reload: the recorded time is at least this


def test_a_reload_keeps_the_problem_s_first_view(live_server, page, candidate, reference_problem):  # noqa: F811
    from drills.models import Attempt

    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)
    started = page.locator("#answers input[name='started']")
    first = started.input_value()
    time.sleep(WAIT_S)
    page.reload()
    expect(started).to_have_value(first)  # the reload's own token replaced by the first view's

    for key, answer in SLIPPED_ANSWERS.items():
        page.fill(f"#answers input[name='{key}']", answer)
    page.locator("#answers [type='submit']").first.click()
    page.locator("#answers .score").wait_for()
    attempt = Attempt.objects.get(user=candidate, problem=reference_problem)
    assert WAIT_S <= attempt.time_taken_s < 60  # from the first view, not the reload (then well under a second)


def test_a_new_view_after_answering_starts_a_new_clock(live_server, page, candidate, reference_problem):  # noqa: F811
    """Sending the answers forgets the first view: grading the problem again later is timed from that page."""
    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)
    first = page.locator("#answers input[name='started']").input_value()
    for key, answer in SLIPPED_ANSWERS.items():
        page.fill(f"#answers input[name='{key}']", answer)
    page.locator("#answers [type='submit']").first.click()
    page.locator("#answers .score").wait_for()
    graded = page.locator("#answers input[name='started']").input_value()
    assert graded == first  # the graded form carries the token it was sent with
    page.goto(live_server.url + "/drills/")
    page.goto(live_server.url + path + "?clear=1")
    expect(page.locator("#answers input[name='started']")).not_to_have_value(first)


def test_a_reload_keeps_the_review_card_s_first_view(live_server, page, candidate, two_due_cards):  # noqa: F811
    from drills.models import ReviewLog

    log_in(page, live_server.url, "alice", "/review/")
    started = page.locator("#review-card .review-answer-form input[name='started']")
    first = started.input_value()
    time.sleep(WAIT_S)
    page.reload()
    expect(started).to_have_value(first)

    page.fill("#review-card textarea[name='answer']", "Weights plus KV cache per user, divided into what is left.")
    page.locator("#review-card .review-answer-form [type='submit']").click()
    expect(page.locator("#review-card .review-model-answer")).to_be_visible()
    with page.expect_navigation(url=re.compile(r"/review/$")):
        page.locator("#ratings button[name='rating'][value='3']").click()
    log = ReviewLog.objects.get(user=candidate)
    assert WAIT_S * 1000 <= log.duration_ms < 60_000


def test_a_reload_keeps_a_round_item_s_first_view(live_server, page, candidate, content):  # noqa: F811
    """A round's item (a timed assignment's too) starts its time box when first opened, not when reloaded."""
    from django.utils import timezone

    from drills.bank.problem_templates import sync_problem_templates
    from drills.rounds.models import RoundItem
    from drills.rounds.presets import sync_presets

    sync_problem_templates()
    sync_presets()
    log_in(page, live_server.url, "alice", "/rounds/")
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Phone screen\s*$")))
    with page.expect_navigation(url=re.compile(r"/rounds/\d+/1/$")):
        preset.locator("[type='submit']").click()
    second = re.sub(r"/1/$", "/2/", page.url)
    before_first_view = timezone.now()
    page.goto(second)
    opened = page.locator("#item-form input[name='opened']")
    first = opened.input_value()
    time.sleep(WAIT_S)
    reloaded_at = timezone.now()
    page.reload()
    expect(opened).to_have_value(first)

    box = page.locator("#item-form .answer-input, #item-form textarea").first
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/2/save/")):
        box.fill("71.68")
    item = RoundItem.objects.get(round__user=candidate, position=2)
    assert before_first_view <= item.started_at < reloaded_at

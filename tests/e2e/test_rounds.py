"""A candidate in a real browser sits a phone-screen round: reload mid-round (the countdown goes on), expire, report."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests import needs
from tests.factories import UserFactory

from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

ITEM_URL = re.compile(r"/rounds/(\d+)/1/$")


@pytest.fixture
def candidate(transactional_db):
    return UserFactory(username="alice", role="candidate")


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

    # The deadline passes: reloading the item now leads to the report's address, which shows the round as closing
    # (a GET never grades since ab440a0); its 'See the report' button closes it and shows the report.
    Round.objects.filter(pk=round_pk).update(deadline=timezone.now() - timedelta(seconds=5))
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_pk}/report/$")):
        page.reload()
    expect(page.locator("h1")).to_contain_text("Time is up: the round is closing")
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_pk}/report/$")):
        page.get_by_role("button", name="See the report").click()
    expect(page.locator("h1")).to_contain_text("Phone screen")
    expect(page.locator("#report-items")).to_be_visible()
    assert not Round.objects.get(pk=round_pk).is_active


def _step_rows(page, position: int) -> dict[str, list[str]]:
    """The report's step table of item ``position``: step label → [typed, expected, verdict, misconception]."""
    rows = page.locator(f"#steps-{position} tbody tr")
    cells = [[" ".join(cell.split()) for cell in rows.nth(i).locator("td").all_inner_texts()]
             for i in range(rows.count())]
    return {row[0]: row[1:] for row in cells}


def test_round_debrief_after_finishing_early(live_server, page, candidate, problem_templates):
    """Answer the ladder with one slip, submit it, finish early (confirmed), read every step, work it again.

    The ladder is pinned by its inputs (tests/pinned.py: Qwen2.5-7B, one B300, FP8 KV cache, 16384-token
    context): KV cache per token 2 × 28 layers × 4 KV heads × 128 dims × 1 byte = 28672 B; 200704 B is 7× that,
    the 28 query heads used for the 4 KV heads; per user 28672 × 16384 / 2³⁰ = 0.4375 GiB.
    """
    from drills.models import ProblemInstance
    from drills.problems.generation import create_problem
    from drills.rounds.models import Round
    from tests.pinned import QWEN25_7B_LADDER

    log_in(page, live_server.url, "alice", "/rounds/")
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Phone screen\s*$")))
    with page.expect_navigation(url=ITEM_URL):
        preset.locator("[type='submit']").click()
    round_ = Round.objects.get(pk=int(ITEM_URL.search(page.url).group(1)), user=candidate)
    ladder = round_.items.get(position=1)
    ladder.problem = create_problem("ladder", seed=7, user=candidate, fixed_inputs=QWEN25_7B_LADDER)
    ladder.save(update_fields=["problem"])
    page.reload()

    page.fill("#item-form input[name='kv_bytes_per_token']", "200704")
    page.fill("#item-form input[name='per_user_gib']", "0.4375")
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/2/$")):
        page.locator("#item-form button", has_text="Submit this item").click()

    # Finish now asks first; the question lists what is still unsubmitted.
    page.locator("a", has_text="Finish the round now").click()
    expect(page.locator("h1")).to_have_text("Finish the round now?")
    expect(page.locator("main")).to_contain_text("Item 2:")
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/report/$")):
        page.locator("button", has_text="Yes, finish now").click()
    round_.refresh_from_db()
    assert round_.status == Round.FINISHED
    expect(page.locator("#round-ending")).to_contain_text("finished early")
    expect(page.locator("#round-ending")).not_to_contain_text("at the deadline")
    expect(page.locator("#late-rule")).to_contain_text("up to 5 seconds after the deadline")

    steps = _step_rows(page, 1)
    assert len(steps) == 8  # every ladder step, typed or not
    assert steps["KV cache per token"] == ["200704", "28,672 B", "Misconception", "Query heads used for K/V heads"]
    assert steps["KV cache per user at the context limit"] == ["0.4375", "0.438 GiB", "Correct", "—"]
    assert steps["Card memory"] == ["blank", "268.59 GiB", "No answer", "—"]
    roofline = _step_rows(page, 2)  # the item left untouched: graded from what was saved, every step blank
    assert roofline and all(typed == "blank" for typed, *_ in roofline.values())
    misconception = page.locator("#steps-1 a", has_text="Query heads used for K/V heads")
    assert misconception.get_attribute("href")
    expect(page.locator("#report-misconceptions")).to_contain_text("Query heads used for K/V heads")

    # Work it again: a fresh variant of the same template, a blank problem page (not the round's numbers).
    with page.expect_navigation(url=re.compile(r"/drills/ladder/\d+/$")):
        page.locator("button", has_text="Work it again").first.click()
    fresh = ProblemInstance.objects.get(pk=int(re.search(r"/drills/ladder/(\d+)/$", page.url).group(1)))
    assert fresh.pk != ladder.problem_id and fresh.family == "ladder" and fresh.seed != 7
    expect(page.locator("#answers input[name='kv_bytes_per_token']")).to_have_value("")
    expect(page.locator("#answers .score")).to_have_count(0)


def test_two_tabs_of_one_item_keep_what_each_typed(live_server, page, candidate, problem_templates):
    """Tab A types card and usable memory, tab B (opened before, never reloaded) the weights: each autosave writes
    only its own boxes (drills.rounds.services.typed), so the reload shows all three; tab A then types again and
    its earlier boxes, now its twins' values (static/js/rounds.js), are not taken for changes."""
    from drills.rounds.models import Round

    log_in(page, live_server.url, "alice", "/rounds/")
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Phone screen\s*$")))
    with page.expect_navigation(url=ITEM_URL):
        preset.locator("[type='submit']").click()
    round_ = Round.objects.get(pk=int(ITEM_URL.search(page.url).group(1)), user=candidate)
    other = page.context.new_page()
    other.goto(page.url)

    def typed(tab, name: str, text: str) -> None:
        with tab.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/1/save/")):
            tab.fill(f"#item-form input[name='{name}']", text)

    typed(page, "card_gib", "79.65")
    typed(page, "usable_gib", "71.68")
    typed(other, "weights_gib", "14.96")
    assert page.locator("#item-form input[name='base-usable_gib']").input_value() == "71.68"
    typed(page, "kv_budget_gib", "50")  # tab A again, still showing no weights: tab B's weights stay
    page.wait_for_timeout(1_500)  # the save caught above may be the blur's; the typing's own follows in 0.7 s

    answers = round_.items.get(position=1).answers
    assert {key: value for key, value in answers.items() if value} == {
        "card_gib": "79.65", "usable_gib": "71.68", "weights_gib": "14.96", "kv_budget_gib": "50"}
    other.reload()
    for name, value in (("card_gib", "79.65"), ("usable_gib", "71.68"), ("weights_gib", "14.96")):
        expect(other.locator(f"#item-form input[name='{name}']")).to_have_value(value)


def test_an_all_blank_item_asks_before_it_is_submitted(live_server, page, candidate, problem_templates):
    """Submit this item with every step blank: nothing is recorded and the page asks, with the drill page's words
    beside each box; 'Submit, counting blanks as unanswered' then moves on to item 2."""
    from drills.problems.grading import BLANK
    from drills.rounds.models import Round

    log_in(page, live_server.url, "alice", "/rounds/")
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Phone screen\s*$")))
    with page.expect_navigation(url=ITEM_URL):
        preset.locator("[type='submit']").click()
    round_ = Round.objects.get(pk=int(ITEM_URL.search(page.url).group(1)), user=candidate)
    page.locator("#item-form button", has_text="Submit this item").click()
    expect(page.locator("#unreadable-steps")).to_contain_text("Every step is blank: nothing was recorded.")
    expect(page.locator("#item-form .invalid-feedback").first).to_have_text(BLANK)
    assert round_.items.get(position=1).submitted_at is None
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/2/$")):
        page.get_by_role("button", name="Submit, counting blanks as unanswered").click()
    assert round_.items.get(position=1).grade == 0.0

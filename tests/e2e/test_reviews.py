"""A candidate in a real browser reviews two due cards: an open question (answer, reveal, rubric, rate) and another."""

from __future__ import annotations

import re

import pytest

from tests import needs
from tests.factories import UserFactory

from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]


@pytest.fixture
def candidate(transactional_db):
    return UserFactory(username="alice", role="candidate")


@pytest.fixture
def two_due_cards(content, candidate):
    """Two open questions with rubrics, put in alice's deck through the product's own service (due at once)."""
    from drills.models import BankItem
    from drills.reviews.scheduling import add_to_deck

    items = list(BankItem.objects.filter(kind=BankItem.OPEN, published=True).exclude(rubric=[]).order_by("pk")[:2])
    assert len(items) == 2
    assert add_to_deck(candidate, items) == 2
    return items


def test_review_two_due_cards(live_server, page, candidate, two_due_cards):
    from drills.models import Card, ReviewLog

    log_in(page, live_server.url, "alice", "/review/")
    left = page.locator("#left-count")
    expect(left).to_contain_text("2 cards due now (none relearning)")

    # The first card: write an answer, reveal the model answer in place (htmx), tick rubric points, rate.
    card = page.locator("#review-card")
    page.fill("#review-card textarea[name='answer']", "Weights plus KV cache per user, divided into what is left.")
    page.evaluate("window.__noReload = 'still here'")
    with page.expect_response(lambda r: r.request.method == "POST" and "/reveal/" in r.url) as response:
        card.locator(".review-answer-form [type='submit']").click()
    assert response.value.request.headers.get("hx-request") == "true"
    expect(card.locator(".review-model-answer")).to_be_visible()
    expect(card.locator(".review-answer-text")).to_contain_text("Weights plus KV cache")
    assert page.evaluate("window.__noReload") == "still here"

    points = card.locator(".review-rubric input[name='ticked']")
    total = points.count()
    assert total >= 1
    with page.expect_response(lambda r: "/suggest/" in r.url):
        points.nth(0).check()
    expect(page.locator("#ratings .review-suggestion")).to_contain_text(f"of {total} point")
    # Easy: a new card rated Good only moves to a learning step minutes away, still due today.
    with page.expect_navigation(url=re.compile(r"/review/$")):
        page.locator("#ratings button[name='rating'][value='4']").click()
    expect(left).to_contain_text("1 card due now (none relearning)")

    first = ReviewLog.objects.get(user=candidate)
    assert first.rating == ReviewLog.EASY and first.rubric_ticked == [0]
    assert "Weights plus KV cache" in first.answer

    # The second card: said out loud, revealed, rated Easy; the queue is then empty.
    page.locator("#review-card input[name='said_aloud']").check()
    page.locator("#review-card .review-answer-form [type='submit']").click()
    expect(page.locator("#review-card .review-model-answer")).to_be_visible()
    with page.expect_navigation(url=re.compile(r"/review/$")):
        page.locator("#ratings button[name='rating'][value='4']").click()  # Easy
    expect(left).to_contain_text("Nothing left for today")
    expect(page.locator("#review-card.review-empty")).to_contain_text("Nothing more is due today")

    assert ReviewLog.objects.filter(user=candidate).count() == 2
    assert Card.objects.filter(user=candidate, reps=1).count() == 2


@pytest.fixture
def due_ladder(content, candidate):
    """The capacity ladder's problem template in alice's deck, due at once."""
    from drills.bank.problem_templates import sync_problem_templates
    from drills.models import BankItem, Card
    from drills.reviews.scheduling import add_to_deck

    sync_problem_templates()  # what the load_content command does after loading the runbook
    item = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    assert add_to_deck(candidate, [item]) == 1
    return Card.objects.get(user=candidate, item=item)


def answer_the_chain(form, problem) -> None:
    """Tick the moving steps of each follow-up the card asks with its problem and type their new values (the
    chain is the card, issue 33)."""
    from drills.followups.services import chain

    for position, link in enumerate(chain(problem)):
        for key in link.moves:
            form.locator(f"#fu{position}-mark-{key}").check()
            form.locator(f"input[name='fu{position}-value-{key}']").fill(repr(link.result.values[key]))


def test_a_typo_in_a_problem_review_is_sent_back_in_place_and_the_fix_is_recorded(live_server, page, candidate,
                                                                                  due_ladder):
    """Step 1 typed "7O GiB" (letter O), step 2 "65,5": nothing recorded, the card swapped back (htmx) with the
    parser's messages, every answer kept and focus on the first unreadable box; fixed, it records one review."""
    from drills.models import Attempt, ReviewLog
    from drills.reviews.services import drawn_problem

    log_in(page, live_server.url, "alice", "/review/")
    due_ladder.refresh_from_db()
    # The variant the card shows is drawn from its seed on read and stored only when answered (ab440a0).
    right = {step.key: repr(step.value) for step in drawn_problem(due_ladder).solve().steps}
    form = page.locator("#review-card .review-problem-form")
    for key, value in {**right, "card_gib": "7O GiB", "usable_gib": "65,5"}.items():
        form.locator(f"input[name='{key}']").fill(value)
    answer_the_chain(form, drawn_problem(due_ladder))
    page.evaluate("window.__noReload = 'still here'")
    with page.expect_response(lambda r: r.request.method == "POST" and "/answer/" in r.url) as response:
        form.get_by_role("button", name="Grade and record").click()
    assert response.value.request.headers.get("hx-request") == "true"

    expect(form.locator(".review-not-recorded")).to_contain_text("Nothing was recorded: 2 answers could not be read")
    expect(form.locator(".invalid-feedback")).to_have_count(2)
    expect(form.locator(".invalid-feedback").nth(0)).to_contain_text("Could not read '7O GiB': 'O' is not a unit")
    expect(form.locator(".invalid-feedback").nth(1)).to_contain_text("for a decimal, write 65.5")
    expect(form.locator("input[name='card_gib']")).to_have_value("7O GiB")
    expect(form.locator("input[name='weights_gib']")).to_have_value(right["weights_gib"])
    expect(form.locator("input[name='card_gib']")).to_be_focused()
    assert page.evaluate("window.__noReload") == "still here"
    assert not ReviewLog.objects.exists() and not Attempt.objects.exists()

    form.locator("input[name='card_gib']").fill(right["card_gib"])
    form.locator("input[name='usable_gib']").fill(right["usable_gib"])
    with page.expect_navigation(url=re.compile(r"/review/result/\d+/$")):
        form.get_by_role("button", name="Grade and record").click()
    expect(page.locator("#messages")).to_contain_text("Recorded:")
    expect(page.locator(".review-result .score")).to_have_text("100 %")
    log = ReviewLog.objects.get(user=candidate)
    assert (log.grade, log.card_version) == (1.0, 0) and Attempt.objects.count() == 1


def test_without_javascript_a_typo_in_a_problem_review_comes_back_as_a_page(live_server, new_context, candidate,
                                                                            due_ladder):
    from drills.models import ReviewLog
    from drills.reviews.services import drawn_problem

    page = new_context(java_script_enabled=False).new_page()
    log_in(page, live_server.url, "alice", "/review/")
    due_ladder.refresh_from_db()
    # The variant the card shows is drawn from its seed on read and stored only when answered (ab440a0).
    right = {step.key: repr(step.value) for step in drawn_problem(due_ladder).solve().steps}
    form = page.locator("#review-card .review-problem-form")
    for key, value in {**right, "usable_gib": "65,5"}.items():
        form.locator(f"input[name='{key}']").fill(value)
    answer_the_chain(form, drawn_problem(due_ladder))
    with page.expect_navigation():
        form.get_by_role("button", name="Grade and record").click()
    expect(form.locator(".review-not-recorded")).to_contain_text("1 answer could not be read")
    expect(form.locator("input[name='usable_gib']")).to_have_value("65,5")
    assert not ReviewLog.objects.exists()

    form.locator("input[name='usable_gib']").fill(right["usable_gib"])
    with page.expect_navigation(url=re.compile(r"/review/result/\d+/$")):
        form.get_by_role("button", name="Grade and record").click()
    assert ReviewLog.objects.get(user=candidate).grade == 1.0

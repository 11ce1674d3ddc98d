"""A candidate in a real browser reviews two due cards: an open question (answer, reveal, rubric, rate) and another."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from .test_candidate import PASSWORD, log_in

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]


@pytest.fixture
def candidate(transactional_db):
    user = get_user_model().objects.create_user(username="alice", email="alice@example.com", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="candidate")[0])
    return user


@pytest.fixture
def two_due_cards(content, candidate):
    """Two open questions with rubrics, put in alice's deck through the product's own service (due at once)."""
    from drills.models import BankItem
    from drills.scheduling import add_to_deck

    items = list(BankItem.objects.filter(kind=BankItem.OPEN, published=True).exclude(rubric=[]).order_by("pk")[:2])
    assert len(items) == 2
    assert add_to_deck(candidate, items) == 2
    return items


def test_review_two_due_cards(live_server, page, candidate, two_due_cards):
    from drills.models import Card, ReviewLog

    log_in(page, live_server.url, "alice", "/review/")
    left = page.locator("#left-count")
    expect(left).to_contain_text("2 cards left today")

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
    expect(left).to_contain_text("1 card left today")

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

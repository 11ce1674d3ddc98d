"""The dashboard's review columns: every review counts in "Reviews (30 days)"; retention only learned cards.

Regression: the column "Reviews (30 days)" showed 0 for a candidate who had just reviewed four new cards,
because it counted only the reviews of learned cards (the ones retention is measured on).
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from coaching import candidate_report, dashboard, services
from drills.models import Card, ReviewLog
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import record_open_review

pytestmark = pytest.mark.django_db


def _questions(world, n):
    return [services.save_question(world.coach, {
        "prompt": f"Question {i}: what does the KV cache hold?", "model_answer": "Keys and values.",
        "rubric": ["Keys", "Values"], "tags": [], "misconceptions": [], "difficulty": 2}) for i in range(n)]


def _summary(client) -> dict[str, dict[str, str]]:
    response = client.get(reverse("coaching:dashboard"), {"export": "candidates"})
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    return {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}


def test_four_new_cards_reviewed_count_four_reviews_and_no_retention(client, world):
    now = timezone.now()  # the page counts back from the real clock
    add_to_deck(world.demo, _questions(world, 4), now=now)
    for card in Card.objects.filter(user=world.demo, item__prompt__startswith="Question "):
        record_open_review(world.demo, card.pk, card.version, ReviewLog.GOOD, answer="Keys and values.",
                           ticked=[0, 1], now=now)
    assert ReviewLog.objects.filter(user=world.demo).count() == 4
    assert set(ReviewLog.objects.filter(user=world.demo).values_list("state_before", flat=True)) == {Card.LEARNING}

    activity = dashboard.review_activity([world.demo.pk, world.demo2.pk], now + timedelta(hours=1))
    assert activity == {world.demo.pk: dashboard.ReviewActivity(total=4, learned=0, retention=None)}

    client.force_login(world.coach)
    summary = _summary(client)
    assert summary["demo"]["Reviews (30 days)"] == "4"
    assert summary["demo"]["Retention (learned cards, 30 days)"] == ""
    assert summary["demo2"]["Reviews (30 days)"] == "0"
    page = client.get(reverse("coaching:dashboard")).content.decode()
    assert "<th scope=\"col\">Reviews (30 days)</th>" in page
    assert "<th scope=\"col\">Retention (learned cards, 30 days)</th>" in page


def test_retention_counts_learned_cards_only_and_says_how_many(world):
    now = world.T0 + timedelta(days=1)
    card = Card.objects.get(user=world.demo, item=world.question)
    base = {"user": world.demo, "card": card, "item": world.question, "item_slug": world.question.slug,
            "due_after": now}
    # Three reviews of a learned card (one forgotten), one of a card still being learned, one older than 30 days.
    for version, (state, rating, days_ago) in enumerate([(Card.REVIEW, ReviewLog.GOOD, 1),
                                                         (Card.REVIEW, ReviewLog.AGAIN, 2),
                                                         (Card.REVIEW, ReviewLog.EASY, 3),
                                                         (Card.LEARNING, ReviewLog.GOOD, 4),
                                                         (Card.REVIEW, ReviewLog.GOOD, 31)], start=100):
        ReviewLog.objects.create(**base, card_version=version, rating=rating, state_before=state,
                                 reviewed_at=now - timedelta(days=days_ago))
    found = dashboard.review_activity([world.demo.pk], now)[world.demo.pk]
    assert (found.total, found.learned) == (4, 3)
    assert found.retention == pytest.approx(2 / 3)

    overview = dashboard.overview(world.coach, now=now)
    summary = next(t for t in overview.tables if t.name == "candidates")
    row = {h: c.text for h, c in zip(summary.headers, next(r for r in summary.rows if r[0].text == "demo"))}
    assert (row["Reviews (30 days)"], row["Retention (learned cards, 30 days)"]) == ("4", "67% of 3")
    assert next(b for b in overview.behind if b["user"] == world.demo)["reasons"][-1] == \
        "retention 67% on learned cards"

    note = candidate_report.candidate_tables(world.coach, world.demo, now=now)[0].note
    assert note == "Reviews in the last 30 days: 4. Retention of learned cards: 67% of 3 reviews."

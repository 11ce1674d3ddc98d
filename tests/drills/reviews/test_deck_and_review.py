"""Deck and review (issue 28, item 6).

A bulk add of many cards asks first (all of them would be due today) and can be undone; the bank's bulk button
counts only what is not in the deck yet and is gone when everything is; the review page's head says how many
cards are left to finish today and how many of them are relearning; a chapter never reviewed has no expected
recall; the Anki note of a critique drill carries the document's lines.
"""

from __future__ import annotations

import html
import io
import sqlite3
import zipfile
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from drills.models import BankItem, Card
from drills.reviews.bank_views import CONFIRM_ABOVE
from drills.reviews.scheduling import add_to_deck, retention_on_day
from tests.factories import BankItemFactory, ChapterFactory

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def big_bank(bank):
    """The bank fixture plus 25 questions of a chapter of their own: well over the confirmation threshold."""
    chapter = ChapterFactory(number=9, slug="09-batching", track="C", title="Batching")
    for number in range(25):
        BankItemFactory(slug=f"batch-{number:02d}", chapter=chapter, rubric=["Throughput", "Latency"])
    return bank


def test_adding_the_whole_bank_asks_first_and_can_be_undone(big_bank, candidate):
    client = _client(candidate)
    total = BankItem.objects.published().count()
    assert total > CONFIRM_ABOVE == 20
    page = html.unescape(client.get("/bank/").content.decode())
    assert f"Add all {total} to my deck" in page
    asked = client.post("/bank/deck/add/", {"filtered": "1", "next": "/bank/"})
    text = html.unescape(asked.content.decode())
    assert asked.status_code == 200 and f"Add {total} cards to your deck?" in text
    assert "would be due <strong>today</strong>" in text and 'name="confirmed" value="1"' in text
    assert not Card.objects.filter(user=candidate).exists()  # nothing added before the confirmation
    done = client.post("/bank/deck/add/", {"filtered": "1", "next": "/bank/", "confirmed": "1"}, follow=True)
    assert Card.objects.of(candidate).count() == total
    shown = html.unescape(done.content.decode())
    assert f"Added {total} cards from this search to your deck; they are all due today." in shown
    assert 'action="/bank/deck/undo/"' in shown
    undone = client.post("/bank/deck/undo/", {"next": "/bank/"}, follow=True)
    assert Card.objects.of(candidate).count() == 0
    assert f"Took {total} cards back out of your deck." in html.unescape(undone.content.decode())
    again = client.post("/bank/deck/undo/", {"next": "/bank/"}, follow=True)  # once only
    assert "There is no bulk add to undo." in html.unescape(again.content.decode())


def test_undo_keeps_what_was_reviewed_since_and_puts_revived_cards_back_out(bank, candidate):
    from drills.reviews.scheduling import add_batch, remove_from_deck, undo_batch

    add_to_deck(candidate, [bank["ridge"]])
    remove_from_deck(candidate, bank["ridge"])  # suspended: the batch revives it
    now = timezone.now()
    batch = add_batch(candidate, [bank["ridge"], bank["kv-fp8"], bank["kv-paged"]], Card.VIA_FILTER, now)
    assert batch.added == 3 and len(batch.revived) == 1
    from drills.reviews.services import record_open_review

    reviewed = Card.objects.get(user=candidate, item=bank["kv-fp8"])
    record_open_review(candidate, reviewed.pk, reviewed.version, 3, now=now + timedelta(minutes=1))
    assert undo_batch(candidate, batch.at, batch.revived) == (2, 1)
    assert set(Card.objects.of(candidate).values_list("item__slug", flat=True)) == {"kv-fp8"}


def test_add_these_shows_only_what_is_missing_and_not_when_all_are_in_the_deck(bank, candidate):
    client = _client(candidate)
    chapter = "06-kv-cache"  # three questions
    page = html.unescape(client.get(f"/bank/?chapter={chapter}&kind=open").content.decode())
    assert "Add these 3 to my deck" in page
    add_to_deck(candidate, [bank["kv-formula"]])
    page = html.unescape(client.get(f"/bank/?chapter={chapter}&kind=open").content.decode())
    assert "Add the 2 not in my deck" in page and "Add these 3" not in page
    add_to_deck(candidate, [bank["kv-paged"], bank["kv-fp8"]])
    page = html.unescape(client.get(f"/bank/?chapter={chapter}&kind=open").content.decode())
    assert "to my deck</button>" not in page and "not in my deck</button>" not in page
    assert "All 3 are in your deck." in page


def test_the_review_head_counts_what_is_left_today_and_the_relearning_cards(bank, candidate):
    now = timezone.now()
    add_to_deck(candidate, [bank["kv-formula"], bank["kv-paged"]], now=now - timedelta(minutes=5))
    relearning = Card.objects.get(user=candidate, item=bank["kv-paged"])
    Card.objects.filter(pk=relearning.pk).update(state=Card.RELEARNING, stability=0.4, difficulty=7.0, reps=3,
                                                 lapses=1, last_review=now - timedelta(minutes=20),
                                                 due=now - timedelta(minutes=1))
    text = html.unescape(_client(candidate).get("/review/").content.decode())
    head = text[text.index('id="left-count"'):]
    head = " ".join(head[:head.index("</p>")].split())
    assert "<strong class=\"text-body\">2</strong> cards due now" in head
    assert "(<strong class=\"text-body\">1</strong> relearning)" in head


def test_a_chapter_never_reviewed_has_no_expected_recall(bank, candidate, h):
    now = timezone.now()
    h.settings(candidate, interview_date=(now + timedelta(days=10)).date())
    add_to_deck(candidate, [bank["kv-formula"], bank["ridge"]], now=now - timedelta(days=2))
    Card.objects.filter(user=candidate, item=bank["ridge"]).update(
        state=Card.REVIEW, stability=20.0, difficulty=5.0, reps=2, last_review=now - timedelta(days=1),
        due=now + timedelta(days=19))
    rows = {row.label.split(" · ")[0]: row for row in retention_on_day(candidate, now)}
    never, reviewed = rows["06"], rows["04"]
    assert (never.cards, never.reviewed, never.if_stopped, never.if_kept_up) == (1, 0, None, None)
    assert reviewed.reviewed == 1 and 0.5 < reviewed.if_stopped < 1.0
    text = html.unescape(_client(candidate).get("/progress/").content.decode())
    table = text[text.index('id="table-retention"'):]
    row = table[table.index("The KV cache"):]
    assert "not reviewed yet" in row[:row.index("</tr>")] and '<td class="num">0 of 1</td>' in row[:row.index("</tr>")]
    roofline = table[table.index("The GPU and the roofline"):]
    assert '<td class="num">1 of 1</td>' in roofline[:roofline.index("</tr>")]


def test_the_anki_note_of_a_critique_drill_holds_the_documents_lines(bank, tmp_path):
    from tests.url_table import CRITIQUE_DETAILS

    BankItem.objects.create(slug="tiny-doc", kind=BankItem.CRITIQUE, prompt="Find the errors in this design doc.",
                            model_answer="Line 3 uses query heads.", details=CRITIQUE_DETAILS)
    response = Client().get("/bank/export.apkg?kind=critique")
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    path = tmp_path / "collection.anki2"
    path.write_bytes(archive.read("collection.anki2"))
    with sqlite3.connect(path) as db:
        front, back, *_ = db.execute("select flds from notes where sfld = 'tiny-doc'").fetchone()[0].split("\x1f")
    assert "Find the errors in this design doc." in front and "A tiny design doc" in front
    assert '<ol class="doc">' in front and front.count("<li>") == 5
    assert "<li><strong>Design</strong></li>" in front
    assert "<li>KV per token: 2 × 80 × 64 × 128 × 2 bytes.</li>" in html.unescape(front)
    assert "Line 3: Query heads for KV heads. Use 8 KV heads. Corrected: 2 × 80 × 8 × 128 × 2" in html.unescape(back)
    assert "Line 5: Big-bang rollout." in back


def test_the_review_page_says_how_many_of_a_chapters_cards_its_recall_covers(bank, candidate, h):
    now = timezone.now()
    h.settings(candidate, interview_date=(now + timedelta(days=10)).date())
    add_to_deck(candidate, [bank["kv-formula"], bank["kv-fp8"]], now=now - timedelta(days=2))
    Card.objects.filter(user=candidate, item=bank["kv-formula"]).update(
        state=Card.REVIEW, stability=20.0, difficulty=5.0, reps=2, last_review=now - timedelta(days=1),
        due=now + timedelta(days=19))
    text = html.unescape(_client(candidate).get("/review/").content.decode())
    assert "Expected recall on the day, over each chapter's reviewed cards" in text
    table = text[text.index("over each chapter's reviewed cards"):]
    row = table[table.index("06 · The KV cache"):]
    assert '<span class="text-body-secondary">(1 of 2)</span>' in row[:row.index("</tr>")]

"""Concurrency on PostgreSQL and the embedded SQLite default: many submissions at once lose nothing and double nothing.

Each scenario starts real threads, each with its own database connection
(closed when the thread ends), and releases them together with a
:class:`threading.Barrier` so their transactions overlap:

- 50 review submissions for one candidate — five due cards (four open
  questions and one problem template) × ten submissions of the same card
  version — record exactly one review per card, the other 45 are duplicates
  (not errors), and each card's state is the one its single log describes;
- 50 submissions of 50 different cards all land;
- the same 5 × 10 through the real views (one Django test client per thread);
- two tabs submitting different answers for the same round item and version:
  one answer is recorded, the other is kept aside and the losing tab is told
  which one counts (no 500).

On SQLite the same scenarios run on the file test database (config/settings.py:
WAL, ``BEGIN IMMEDIATE``, a busy timeout), where the threads' connections race
for the one write lock: none may answer "database is locked" (issue 20).
"""

from __future__ import annotations

import threading
import traceback
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from drills.bank.problem_templates import sync_problem_templates
from drills.models import (
    Attempt,
    BankItem,
    Card,
    ProblemInstance,
    ReviewLog,
    ReviewSettings,
    Round,
    RoundItem,
    RoundTemplate,
)
from drills.problems.grading import UnreadableAnswers
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import problem_for, problem_seed, record_open_review, record_problem_review
from drills.rounds.services import start_round, submit
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

THREADS_PER_CARD = 10
CARDS = 5


@pytest.fixture(autouse=True)
def real_connections():
    """PostgreSQL, or SQLite on a file in WAL mode: never an in-memory database, whose threads share one connection."""
    if connection.vendor == "sqlite":
        assert not connection.is_in_memory_db(), "the SQLite test database must be a file (settings TEST NAME)"
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
    else:
        assert connection.vendor == "postgresql"


@pytest.fixture(autouse=True)
def no_fuzz(monkeypatch):
    monkeypatch.setattr("drills.reviews.scheduling.FUZZ", False)


def run_together(calls):
    """Run each ``(function, args)`` of ``calls`` in its own thread, all released at once by a barrier.

    Each thread opens its database connection before the barrier (so connecting
    does not stagger them) and closes every connection it opened at the end.
    Returns the results in the order of ``calls``; raises ``AssertionError``
    listing every exception a thread raised (with its traceback).
    """
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    errors: list[str] = []

    def work(index, function, args):
        try:
            connection.ensure_connection()
            barrier.wait(timeout=60)
            results[index] = function(*args)
        except Exception:
            errors.append(f"thread {index} {args!r}:\n{traceback.format_exc()}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i, f, a), name=f"submit-{i}") for i, (f, a) in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a submission thread hung (a lock never released?)"
    assert not errors, "\n".join(errors)
    return results


def open_question(slug: str) -> BankItem:
    return BankItem.objects.create(slug=slug, kind=BankItem.OPEN, prompt=f"Explain {slug}.",
                                   model_answer=f"The model answer of {slug}.",
                                   rubric=["Factor 2 for K and V", "KV heads", "Bytes"], topic="kv cache")


def right_answers(problem: ProblemInstance) -> dict[str, str]:
    return {step.key: repr(step.value) for step in problem.solve().steps}


@pytest.fixture
def alice(transactional_db):
    return UserFactory(username="alice")


@pytest.fixture
def five_cards(alice):
    """Four open questions and the ladder template in alice's deck, due now; the ladder's variant drawn."""
    sync_problem_templates()
    items = [open_question(f"open-{n}") for n in range(CARDS - 1)]
    items.append(BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder"))
    now = timezone.now() - timedelta(minutes=1)
    add_to_deck(alice, items, now=now)
    cards = list(Card.objects.filter(user=alice).select_related("item").order_by("pk"))
    assert len(cards) == CARDS and not ReviewSettings.objects.filter(user=alice).exists()
    problem = problem_for(next(card for card in cards if card.item.kind == BankItem.PROBLEM))
    return cards, problem


def assert_one_log_per_card(cards, expected_ratings=None):
    """Exactly one log per card at version 0; the card's state is what that log recorded."""
    logs = list(ReviewLog.objects.filter(card__in=cards))
    assert Counter((log.card_id, log.card_version) for log in logs) == {(card.pk, 0): 1 for card in cards}
    by_card = {log.card_id: log for log in logs}
    for card in cards:
        card.refresh_from_db()
        log = by_card[card.pk]
        assert (card.version, card.reps) == (1, 1)
        assert card.stability == pytest.approx(log.stability_after) and card.stability > 0
        assert card.due == log.due_after and card.last_review == log.reviewed_at
        # A late duplicate through the view may already draw the next review's variant (version 1's seed),
        # exactly what the next page would draw; never the variant just graded.
        assert card.pending_problem_id is None or (card.pending_problem.seed == problem_seed(card)
                                                   and card.pending_problem_id != log.problem_id)
        if expected_ratings is not None:
            assert log.rating in expected_ratings[card.pk]
    return by_card


def _open_review(user, card_id, rating, answer, now):
    """An open question's review of version 0, as a page sends it."""
    return record_open_review(user, card_id, 0, rating, answer=answer, now=now)


class TestReviews:
    def test_50_submissions_on_5_cards_record_one_review_each_and_45_duplicates(self, alice, five_cards):
        cards, problem = five_cards
        now = timezone.now()
        calls, sent = [], {}
        for card in cards:
            for n in range(THREADS_PER_CARD):
                if card.item.kind == BankItem.PROBLEM:
                    calls.append((record_problem_review, (alice, card.pk, 0, right_answers(problem))))
                else:
                    rating = 1 + n % 4  # every tab rates differently: the log must be one of them, whole
                    answer = f"tab {n} on card {card.pk}"
                    sent[answer] = rating
                    calls.append((_open_review, (alice, card.pk, rating, answer, now)))

        outcomes = run_together(calls)

        assert len(outcomes) == CARDS * THREADS_PER_CARD and all(o is not None for o in outcomes)
        by_card = assert_one_log_per_card(cards)
        created = [o for o in outcomes if o.created]
        duplicates = [o for o in outcomes if o.duplicate]
        assert len(created) == CARDS and len(duplicates) == CARDS * (THREADS_PER_CARD - 1)
        assert {o.log.pk for o in created} == {log.pk for log in by_card.values()}
        for outcome, (_, args) in zip(outcomes, calls):
            assert outcome.log.pk == by_card[args[1]].pk  # each duplicate names the review that counts
        for card in cards:
            log = by_card[card.pk]
            if card.item.kind == BankItem.PROBLEM:
                assert log.grade == 1.0 and log.problem_id == problem.pk
            else:
                assert log.rating == sent[log.answer]  # the winner's rating and answer, not a mix of two tabs
        # The problem was graded once: one attempt, not ten.
        assert Attempt.objects.filter(user=alice).count() == 1
        assert ReviewLog.objects.count() == CARDS
        assert ReviewSettings.objects.filter(user=alice).count() == 1  # get_or_create raced fifty times

    def test_50_submissions_on_50_cards_all_land(self, alice):
        items = [open_question(f"q-{n:02d}") for n in range(50)]
        add_to_deck(alice, items, now=timezone.now() - timedelta(minutes=1))
        cards = list(Card.objects.filter(user=alice).order_by("pk"))
        now = timezone.now()

        outcomes = run_together([(_open_review, (alice, card.pk, 1 + i % 4, f"answer {i}", now))
                                 for i, card in enumerate(cards)])

        assert [o.created for o in outcomes] == [True] * 50
        assert_one_log_per_card(cards, {card.pk: {1 + i % 4} for i, card in enumerate(cards)})
        assert ReviewLog.objects.filter(user=alice).count() == 50
        assert sorted(ReviewLog.objects.values_list("answer", flat=True)) == sorted(f"answer {i}" for i in range(50))

    def test_50_posts_through_the_views_record_one_review_per_card(self, alice, five_cards):
        cards, problem = five_cards
        clients, calls = [], []
        for card in cards:
            for n in range(THREADS_PER_CARD):
                client = Client()
                client.force_login(alice)
                clients.append((client, card))
                if card.item.kind == BankItem.PROBLEM:
                    data = {"version": "0", **right_answers(problem)}
                    calls.append((client.post, (reverse("reviews:answer", args=[card.pk]), data)))
                else:
                    data = {"version": "0", "answer": f"tab {n}", "ticked": ["0", "1"][: n % 3],
                            "rating": ["auto", "1", "2", "3", "4"][n % 5]}
                    calls.append((client.post, (reverse("reviews:rate", args=[card.pk]), data)))

        responses = run_together(calls)

        assert [r.status_code for r in responses] == [302] * len(calls)
        by_card = assert_one_log_per_card(cards)
        problem_card = next(card for card in cards if card.item.kind == BankItem.PROBLEM)
        told = defaultdict(Counter)
        for (client, card), response in zip(clients, responses):
            if card.pk == problem_card.pk:  # winner and duplicates alike land on the one recorded result
                assert response["Location"] == reverse("reviews:result", args=[by_card[card.pk].pk])
            else:
                assert response["Location"] == reverse("reviews:review")
            page = client.get(response["Location"])
            assert page.status_code == 200
            (message,) = [str(m) for m in page.context["messages"]]
            told[card.pk][message.split(":")[0]] += 1
        assert {pk: dict(kinds) for pk, kinds in told.items()} == {
            card.pk: {"Recorded": 1, "Already recorded": THREADS_PER_CARD - 1} for card in cards}
        assert Attempt.objects.filter(user=alice).count() == 1

    def test_tabs_with_typos_racing_right_answers_record_one_review_and_lose_no_lock(self, alice, five_cards):
        """Five tabs send the ladder with unreadable steps, five with every step right, all at once.

        A typo that takes the row lock first is sent back (``UnreadableAnswers``) and releases the lock; one
        that comes after the review gets it as a duplicate. Either way one log, one attempt, graded 100 %.
        """
        cards, problem = five_cards
        card = next(card for card in cards if card.item.kind == BankItem.PROBLEM)
        right = right_answers(problem)
        typos = {**right, "card_gib": "7O GiB", "usable_gib": "65,5"}

        def submit(answers):
            try:
                return record_problem_review(alice, card.pk, 0, answers)
            except UnreadableAnswers as unreadable:
                return unreadable

        outcomes = run_together([(submit, (typos if n % 2 else right,)) for n in range(THREADS_PER_CARD)])

        log = ReviewLog.objects.get(card=card)
        sent_right, sent_typos = outcomes[0::2], outcomes[1::2]
        assert sorted(o.created for o in sent_right) == [False] * 4 + [True]
        assert all(o.log.pk == log.pk for o in sent_right)
        for outcome in sent_typos:
            if isinstance(outcome, UnreadableAnswers):
                assert list(outcome.messages) == ["card_gib", "usable_gib"]
            else:
                assert outcome.duplicate and outcome.log.pk == log.pk
        assert (log.grade, log.card_version) == (1.0, 0)
        assert Attempt.objects.filter(user=alice).count() == 1 and Card.objects.get(pk=card.pk).version == 1


@pytest.fixture
def ladder_round(alice):
    """An active round for alice: a ladder problem (item 1), then an open question (item 2)."""
    sync_problem_templates()
    open_question("kv-open")
    template = RoundTemplate.objects.create(slug="two-tabs", kind="phone", title="Two tabs", duration_s=1800,
                                            slots=[{"family": "ladder", "box_s": 600}, {"kind": "open"}])
    started = start_round(alice, template)
    return started, started.items.get(position=1)


class TestRoundItemInTwoTabs:
    def test_two_tabs_submitting_different_answers_record_one_and_tell_the_other(self, alice, ladder_round):
        round_, item = ladder_round
        right = right_answers(item.problem)
        wrong = {key: "1" for key in right}
        tabs = []
        for answers in (right, wrong):
            client = Client()
            client.force_login(alice)
            tabs.append((client, answers))
        url = reverse("rounds:submit", args=[round_.pk, 1])

        responses = run_together([(client.post, (url, {"version": "0", **answers})) for client, answers in tabs])

        assert [r.status_code for r in responses] == [302, 302]
        item.refresh_from_db()
        assert item.version == 1 and item.submitted_at is not None
        assert item.answers in (right, wrong)
        winner = 0 if item.answers == right else 1
        assert Attempt.objects.filter(user=alice).count() == 1
        assert (item.attempt.score == 1.0) is (winner == 0) and item.grade == item.attempt.score
        loser = 1 - winner
        # The other tab's answer is not lost: it is kept aside, ungraded.
        assert len(item.late_answers) == 1 and item.late_answers[0]["answers"] == tabs[loser][1]
        # The winner goes on to the next item; the loser comes back to this one, shown what counts.
        assert responses[winner]["Location"] == reverse("rounds:item", args=[round_.pk, 2])
        assert responses[loser]["Location"] == reverse("rounds:item", args=[round_.pk, 1])
        page = tabs[loser][0].get(responses[loser]["Location"])
        assert page.status_code == 200
        (message,) = [str(m) for m in page.context["messages"]]
        assert "another tab" in message.lower() and "kept aside" in message
        html = page.content.decode()
        for value in tabs[winner][1].values():  # the recorded answers fill the (read-only) step boxes
            assert f'value="{value}"' in html
        assert Round.objects.get(pk=round_.pk).is_active

    def test_ten_identical_submissions_of_the_last_item_close_the_round_once(self, alice, ladder_round):
        round_, first = ladder_round
        submit(alice, first.pk, 0, {**right_answers(first.problem), "version": "0"})
        last = RoundItem.objects.get(round=round_, position=2)
        data = {"version": "0", "answer": "Two for K and V, KV heads, bytes.", "present": "1", "self_score": "3"}

        outcomes = run_together([(submit, (alice, last.pk, 0, _querydict(data))) for _ in range(10)])

        assert sorted(o.created for o in outcomes) == [False] * 9 + [True]
        assert not any(o.kept_aside for o in outcomes)  # identical double clicks: nothing to keep aside
        last.refresh_from_db()
        assert last.version == 1 and last.self_score == 3 and last.late_answers == []
        round_.refresh_from_db()
        assert round_.status == Round.FINISHED and round_.score == pytest.approx((1.0 + last.grade) / 2)

    def test_a_submission_racing_the_deadline_close_is_graded_or_kept_never_lost(self, alice, ladder_round):
        round_, item = ladder_round
        RoundItem.objects.filter(pk=item.pk).update(answers={key: "7" for key in right_answers(item.problem)})
        Round.objects.filter(pk=round_.pk).update(deadline=timezone.now() - timedelta(seconds=1))
        answers = right_answers(item.problem)
        tab, poller = Client(), Client(headers={"HX-Request": "true"})
        tab.force_login(alice)
        poller.force_login(alice)

        posted, polled = run_together([
            (tab.post, (reverse("rounds:submit", args=[round_.pk, 1]), {"version": "0", **answers})),
            (poller.get, (reverse("rounds:clock", args=[round_.pk]),)),
        ])

        assert polled.status_code == 200 and polled["HX-Redirect"] == round_.get_absolute_url()
        assert posted.status_code == 302 and posted["Location"] == reverse("rounds:report", args=[round_.pk])
        item.refresh_from_db()
        round_.refresh_from_db()
        assert round_.status == Round.EXPIRED and item.version == 1 and Attempt.objects.count() == 1
        message = [str(m) for m in tab.get(posted["Location"]).context["messages"]]
        if item.auto_submitted:  # the close won: graded from the autosave, the late answer kept aside
            assert item.answers == {key: "7" for key in answers} and item.late_answers[0]["answers"] == answers
            assert message[0].startswith("The round closed before this arrived") and "kept aside" in message[0]
        else:  # the submission won: recorded, flagged late, graded
            assert item.answers == answers and item.late and item.grade == 1.0 and item.late_answers == []
            assert message == ["Recorded after the deadline: your answer is kept and flagged late."]


def _querydict(data: dict):
    from django.http import QueryDict

    query = QueryDict(mutable=True)
    query.update(data)
    return query

"""A problem card's follow-up chain is part of the card (issue 33 item 1, DESIGN §14): the card asks its
variant's chain with the problem, each link is graded with error carried forward and stored with the review's
attempt, and the chain's score (the problem and each link weigh the same) is the rating that FSRS schedules.

The change drawn depends on the catalog, so the links' right answers are read from the engine (``chain``); the
hand-derived values are in tests/engine/test_followup.py. The schedule is fsrs's own: no mock.
"""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from fsrs import State

from drills.followups.services import chain
from drills.models import Card, FollowUpAttempt, ReviewLog
from drills.reviews.scheduling import AGAIN, EASY, GOOD, add_to_deck, next_outcomes
from drills.reviews.services import problem_for, record_problem_review

pytestmark = pytest.mark.django_db


def right_replies(problem) -> list[dict]:
    """Every link answered right: the moving steps marked, with their exact new values."""
    return [{"marked": list(link.moves), "values": {key: repr(link.result.values[key]) for key in link.moves}}
            for link in chain(problem)]


def wrong_replies(problem) -> list[dict]:
    """Every link answered wrong: the still steps marked (each mark wrong) with a value no step has."""
    return [{"marked": list(link.still), "values": {key: "7777777" for key in link.still}}
            for link in chain(problem)]


def test_a_card_answered_with_its_chain_stores_the_links_and_rates_by_the_chain(bank, candidate, h):
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    problem = problem_for(card)
    links = chain(problem)
    assert len(links) >= 2
    outcome = record_problem_review(candidate, card.pk, 0, h.answers(problem), followups=right_replies(problem),
                                    started_at=h.T0 - timedelta(seconds=90), now=h.T0)
    log = outcome.log
    assert (log.grade, log.rating) == (1.0, EASY)
    stored = list(FollowUpAttempt.objects.filter(attempt=log.attempt).order_by("position"))
    assert [f.position for f in stored] == list(range(len(links))) and all(f.score == 1.0 for f in stored)
    assert [f.change["sentence"] for f in stored] == [link.change.sentence for link in links]


def test_right_on_the_problem_but_wrong_on_the_follow_ups_is_a_lapse(bank, candidate, h):
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    first = problem_for(card)
    record_problem_review(candidate, card.pk, 0, h.answers(first), followups=right_replies(first),
                          started_at=h.T0 - timedelta(seconds=90), now=h.T0)
    card.refresh_from_db()
    assert card.state == State.Review.value and card.lapses == 0  # Easy took the new card straight to review

    later = card.due
    problem = problem_for(card)
    good = next_outcomes(card, h.settings(candidate), later)[GOOD]
    outcome = record_problem_review(candidate, card.pk, 1, h.answers(problem), followups=wrong_replies(problem),
                                    started_at=later - timedelta(seconds=90), now=later)
    log = outcome.log
    links = len(chain(problem))
    # Every step of the problem right (1), every link 0 (each mark wrong, each value wrong): 1 / (1 + links).
    assert log.attempt.score == 1.0 and log.grade == pytest.approx(1 / (1 + links)) and log.rating == AGAIN
    card.refresh_from_db()
    assert card.lapses == 1 and card.state == State.Relearning.value  # fsrs's lapse, not the problem's Easy
    assert card.due - later < timedelta(hours=1) < good.interval  # relearning in minutes; Good would be days
    assert all(f.score == 0.0 for f in FollowUpAttempt.objects.filter(attempt=log.attempt))


def test_the_card_page_asks_the_chain_and_the_result_reads_it_back(bank, candidate, candidate_client, h):
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    page = html.unescape(candidate_client.get(reverse("reviews:card", args=[card.pk])).content.decode())
    assert "Then the interviewer follows up" in page
    problem = problem_for(card)
    links = chain(problem)
    assert all(link.change.sentence in page for link in links)
    assert FollowUpAttempt.objects.count() == 0  # showing the card stores nothing

    data = {"version": "0", **h.answers(problem)}
    for position, reply in enumerate(right_replies(problem)):
        data[f"fu{position}-marked"] = reply["marked"]
        data.update({f"fu{position}-value-{key}": text for key, text in reply["values"].items()})
    data["fu0-value-" + links[0].moves[0]] = "12 foo"  # an unreadable new value records nothing
    refused = html.unescape(candidate_client.post(reverse("reviews:answer", args=[card.pk]), data).content.decode())
    assert "Nothing was recorded" in refused and "12 foo" in refused and FollowUpAttempt.objects.count() == 0

    data["fu0-value-" + links[0].moves[0]] = repr(links[0].result.values[links[0].moves[0]])
    done = candidate_client.post(reverse("reviews:answer", args=[card.pk]), data)
    assert done.status_code == 302
    result = html.unescape(candidate_client.get(done["Location"]).content.decode())
    assert FollowUpAttempt.objects.count() == len(links)
    assert "The follow-ups" in result and all(link.change.sentence in result for link in links)
    assert f"Follow-up {len(links)}:" in result


def test_an_open_card_has_no_follow_up(bank, candidate, candidate_client, h):
    from drills.reviews.services import record_open_review

    add_to_deck(candidate, [bank["kv-fp8"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    log = record_open_review(candidate, card.pk, 0, 3, answer="Halves it.", now=h.T0).log
    page = candidate_client.get(reverse("reviews:result", args=[log.pk])).content.decode()
    assert 'id="review-followups"' not in page


def test_a_reply_without_the_follow_ups_is_graded_as_leaving_them_unanswered(bank, candidate, candidate_client, h):
    """The chain cannot be skipped by editing the form: a reply with the problem alone grades every link
    unanswered (0), so a right problem still lapses: 1 / (1 + 3) = 0.25."""
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    problem = problem_for(card)
    links = chain(problem)

    done = candidate_client.post(reverse("reviews:answer", args=[card.pk]), {"version": "0", **h.answers(problem)})

    assert done.status_code == 302
    log = ReviewLog.objects.get(card=card)
    assert log.attempt.score == 1.0 and log.rating == AGAIN and FollowUpAttempt.objects.count() == len(links)
    assert log.grade == pytest.approx(1 / (1 + len(links))) == 0.25


def test_untouched_follow_ups_score_0_for_every_step(bank, candidate, candidate_client, h):
    """The tester's steps: the Capacity ladder card, "100 GiB" in step 1 only, the other steps and the three
    follow-ups left as shown (their value boxes post blank, no box ticked). 100 GiB for the card's 79.65 GiB is
    wrong, so the problem scores 0; each untouched follow-up is unanswered, 0 for every step (it scored its
    still steps' share of the marks, halved: 0.3750 and 0.1875 for the second and third, 0.2969 in all before).
    So the card is 0 and lapses (Again), and the result says "Not answered" for every follow-up step."""
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    problem = problem_for(card)
    links = chain(problem)
    assert len(links) == 3
    steps = [step.key for step in problem.solve().steps]
    data = {"version": "0", steps[0]: "100 GiB", **{key: "" for key in steps[1:]}}
    for position, link in enumerate(links):  # the boxes as shown: blank, and no "moves" box ticked
        data.update({f"fu{position}-value-{spec.key}": "" for spec in link.result.specs})

    done = candidate_client.post(reverse("reviews:answer", args=[card.pk]), data)

    assert done.status_code == 302
    log = ReviewLog.objects.get(card=card)
    assert (log.attempt.score, log.grade, log.rating) == (0.0, 0.0, AGAIN)
    stored = list(FollowUpAttempt.objects.filter(attempt=log.attempt).order_by("position"))
    assert [(f.marks_score, f.values_score, f.score) for f in stored] == [(0.0, 0.0, 0.0)] * 3
    assert all(mark["verdict"] == "unanswered" for f in stored for mark in f.grade["marks"])
    result = html.unescape(candidate_client.get(done["Location"]).content.decode())
    followups = result[result.index("The follow-ups"):]
    assert "Not answered" in followups and ">Right<" not in followups


def test_a_follow_up_answered_in_part_is_graded_as_before(bank, candidate, h):
    """One moving step of the first link ticked with its right value, the other links untouched: the first is
    an answer (its unticked still steps are right), the other two are unanswered (0)."""
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    problem = problem_for(card)
    links = chain(problem)
    first = links[0]
    key = first.moves[0]
    replies = [{"marked": [key], "values": {key: repr(first.result.values[key])}}, {}, {}]
    outcome = record_problem_review(candidate, card.pk, 0, h.answers(problem), followups=replies,
                                    started_at=h.T0 - timedelta(seconds=90), now=h.T0)
    stored = list(FollowUpAttempt.objects.filter(attempt=outcome.log.attempt).order_by("position"))
    steps = len(first.result.specs)
    marks = (1 + len(first.still)) / steps
    values = 1 / len(first.moves)
    assert stored[0].marks_score == pytest.approx(marks) and stored[0].values_score == pytest.approx(values)
    assert [f.score for f in stored[1:]] == [0.0, 0.0]
    assert outcome.log.grade == pytest.approx((1 + (marks + values) / 2) / 4)


def test_a_value_typed_without_its_tick_answers_the_follow_up(bank, candidate, candidate_client, h):
    """Typing a new value is an answer even with its box unticked (the value itself is not graded, as before):
    that link is graded as now, its unticked still steps right, so it scores half their share of the steps;
    the links left as shown score 0."""
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    problem = problem_for(card)
    links = chain(problem)
    second = links[1]
    data = {"version": "0", **h.answers(problem), f"fu1-value-{second.moves[0]}": "12345"}

    candidate_client.post(reverse("reviews:answer", args=[card.pk]), data)

    stored = list(FollowUpAttempt.objects.filter(user=candidate).order_by("position"))
    share = len(second.still) / len(second.result.specs)
    assert [f.score for f in stored] == [0.0, pytest.approx(share / 2), 0.0]
    assert stored[1].marked == [] and stored[1].values_score == 0.0

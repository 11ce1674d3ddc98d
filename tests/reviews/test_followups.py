"""A problem card's review ends with the interviewer's follow-ups on its variant (issue 33 item 1): the result
page asks the chain's next link, which posts to the drill's follow-up address and is stored.

The change drawn depends on the catalog, so the answers are read from the engine (``chain``); the hand-derived
values are in tests/engine/test_followup.py.
"""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from drills.followups.services import chain
from drills.models import Card, FollowUpAttempt
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import problem_for, record_problem_review

pytestmark = pytest.mark.django_db


def test_the_review_result_follows_up_link_after_link(bank, candidate, candidate_client, h):
    add_to_deck(candidate, [bank["ladder"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    problem = problem_for(card)
    outcome = record_problem_review(candidate, card.pk, 0, h.answers(problem), now=h.T0)
    result_url = reverse("reviews:result", args=[outcome.log.pk])
    links = chain(problem)
    page = html.unescape(candidate_client.get(result_url).content.decode())
    assert links[0].change.sentence in page and "Follow-up 1 of" in page
    assert FollowUpAttempt.objects.count() == 0  # reading the result stores nothing

    url = reverse("drills:followup", args=["ladder", problem.pk])
    link = links[0]
    done = candidate_client.post(url, {"phase": "values", "link": "0", "marked": list(link.moves),
                                       **{f"value-{k}": repr(link.result.values[k]) for k in link.moves}})
    assert "Score 100 %" in html.unescape(done.content.decode())
    stored = FollowUpAttempt.objects.get()
    assert stored.attempt == outcome.log.attempt and stored.score == 1.0

    # Opened again, the result asks the next link of the chain.
    again = html.unescape(candidate_client.get(result_url).content.decode())
    assert links[1].change.sentence in again and "Follow-up 2 of" in again


def test_an_open_card_has_no_follow_up(bank, candidate, candidate_client, h):
    from drills.reviews.services import record_open_review

    add_to_deck(candidate, [bank["kv-fp8"]], now=h.T0)
    card = Card.objects.get(user=candidate)
    log = record_open_review(candidate, card.pk, 0, 3, answer="Halves it.", now=h.T0).log
    assert 'id="followup"' not in candidate_client.get(reverse("reviews:result", args=[log.pk])).content.decode()

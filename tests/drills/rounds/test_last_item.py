"""Submitting the last item not yet in ends the round: with time left it asks first (issue: "Submit this item"
on the only item ended a 5-minute round at 35 s without asking). The question is a page of its own without
JavaScript and a fragment for htmx; what was typed is saved meanwhile and kept on "keep working"."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.urls import reverse

from drills.models import Round
from drills.rounds.services import start_round

pytestmark = pytest.mark.django_db


def _last_open(candidate, clock) -> tuple[Round, object]:
    """A phone round started at T0 with every item but the first already in: item 1 is the last one open."""
    round_ = start_round(candidate, "phone")
    round_.items.exclude(position=1).update(submitted_at=clock.now, version=1)
    return round_, round_.items.get(position=1)


def _text(response) -> str:
    return html.unescape(response.content.decode())


def test_the_last_item_asks_before_ending_the_round_and_keeps_what_was_typed(candidate_client, candidate, bank,
                                                                             clock, h):
    round_, item = _last_open(candidate, clock)
    clock.advance(seconds=35)
    url = reverse("rounds:submit", args=[round_.pk, 1])
    answers = h.answers(item.problem)
    asked = candidate_client.post(url, {"version": 0, "scratch": "my working", **answers})
    assert asked.status_code == 200
    text = _text(asked)
    assert "Submit the last item and end the round?" in text and 'id="confirm-last"' in text
    left = round_.remaining_s(clock.now)
    assert left > 0 and "still on the clock" in text
    round_.refresh_from_db()
    item.refresh_from_db()
    assert round_.is_active and item.submitted_at is None  # nothing ended, nothing graded
    assert item.answers == answers  # what was typed is saved (autosave), shown again on "keep working"
    # The page re-posts every field with confirm=yes.
    for key, value in answers.items():
        assert f'<input type="hidden" name="{key}" value="{value}">' in text
    assert '<input type="hidden" name="confirm" value="yes">' in text
    keep = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1]))
    assert f'value="{next(iter(answers.values()))}"' in keep.content.decode()

    done = candidate_client.post(url, {"version": 0, "scratch": "my working", "confirm": "yes", **answers})
    assert done.status_code == 302 and done["Location"] == reverse("rounds:report", args=[round_.pk])
    round_.refresh_from_db()
    item.refresh_from_db()
    assert round_.status == Round.FINISHED and item.grade == pytest.approx(1.0)


def test_with_htmx_the_question_is_a_fragment_and_the_confirmed_submit_redirects_the_page(
        candidate_client, candidate, bank, clock, h):
    round_, item = _last_open(candidate, clock)
    url = reverse("rounds:submit", args=[round_.pk, 1])
    htmx = {"HX-Request": "true"}
    asked = candidate_client.post(url, {"version": 0, **h.answers(item.problem)}, headers=htmx)
    body = asked.content.decode()
    assert asked.status_code == 200 and asked["X-Round-Asks"] == "end"
    assert body.lstrip().startswith('<div class="alert alert-warning') and "<html" not in body
    # The item page's Submit button posts through htmx only when it is the last item open.
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1])).content.decode()
    assert f'hx-post="{url}" hx-target="#submit-ask"' in page and '<div id="submit-ask"></div>' in page
    done = candidate_client.post(url, {"version": 0, "confirm": "yes", **h.answers(item.problem)}, headers=htmx)
    assert done.status_code == 204 and done["HX-Redirect"] == reverse("rounds:report", args=[round_.pk])


def test_an_item_that_is_not_the_last_and_a_late_last_item_do_not_ask(candidate_client, candidate, bank, clock, h):
    round_ = start_round(candidate, "phone")
    first = round_.items.get(position=1)
    url = reverse("rounds:submit", args=[round_.pk, 1])
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1])).content.decode()
    assert 'hx-target="#submit-ask"' not in page  # other items are open: no question on this one
    response = candidate_client.post(url, {"version": 0, **h.answers(first.problem)})
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.submitted_at is not None
    # Past the deadline the round is over anyway: the last item is recorded late, without a question.
    round_.items.exclude(position__in=(1, 2)).update(submitted_at=clock.now, version=1)
    second = round_.items.get(position=2)
    clock.set(round_.deadline + timedelta(seconds=5))
    late = candidate_client.post(reverse("rounds:submit", args=[round_.pk, 2]), {"version": 0})
    assert late.status_code == 302
    round_.refresh_from_db()
    second.refresh_from_db()
    assert not round_.is_active and second.submitted_at is not None

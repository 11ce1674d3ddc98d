"""A worked round item typed with an unreadable step is refused before the deadline, as the drill and review pages
refuse it: the parser's message beside the box, nothing graded, and the text kept. After the deadline what arrived
is graded as it stands (the clock has run out; the report shows the step as unreadable)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from drills.models import Attempt, Round

pytestmark = pytest.mark.django_db


@pytest.fixture
def ladder(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    return round_, round_.items.get(item__slug="ladder")


def test_an_unreadable_step_is_refused_with_the_parsers_words_and_kept(candidate_client, candidate, ladder, clock,
                                                                         h):
    round_, item = ladder
    url = reverse("rounds:submit", args=[round_.pk, item.position])
    typed = {**h.answers(item.problem), "card_gib": "12 foo", "weights_gib": ""}
    response = candidate_client.post(url, {"confirm": "yes", "version": item.version, **typed})

    page = response.content.decode()
    assert response.status_code == 200 and 'id="unreadable-steps"' in page
    assert "1 step could not be read: nothing was recorded." in page
    error = page.split('id="step-card_gib-error">', 1)[1].split("</div>", 1)[0]
    assert "12 foo" in error  # the parser says what it read
    assert 'aria-describedby="step-card_gib-error"' in page and 'value="12 foo"' in page
    assert "step-weights_gib-error" not in page  # a blank step is unanswered, not unreadable
    item.refresh_from_db()
    assert item.submitted_at is None and item.grade is None and not Attempt.objects.filter(user=candidate).exists()
    assert item.answers["card_gib"] == "12 foo"  # saved, as autosave keeps it

    right = h.answers(item.problem)["card_gib"]
    fixed = candidate_client.post(url, {"confirm": "yes", "version": item.version, **typed, "card_gib": right})
    assert fixed.status_code == 302
    item.refresh_from_db()
    assert item.submitted_at is not None and item.attempt.steps.get(key="card_gib").verdict == "correct"


def test_after_the_deadline_an_unreadable_step_is_graded_as_it_stands(candidate_client, ladder, clock, h):
    round_, item = ladder
    clock.advance(seconds=(round_.deadline - round_.started_at).total_seconds() + 1)
    response = candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                                     {"confirm": "yes",
                                      "version": item.version, **h.answers(item.problem), "card_gib": "12 foo"})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.submitted_at is not None

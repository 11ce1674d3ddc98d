"""One round item open in two tabs: each autosave writes only the boxes its page changed, so the tabs merge box by
box and nothing typed in either is lost (drills.rounds.services.typed); a box cleared on purpose is written blank.
An all-blank worked item asks before it is submitted, with the drill page's words (grading.BLANK)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from drills.models import Attempt, Round
from drills.problems.grading import BLANK

pytestmark = pytest.mark.django_db


class _Form(HTMLParser):
    """The named inputs, selects and textareas of the page's ``#item-form`` as a browser would send them."""

    def __init__(self):
        super().__init__()
        self.fields: dict[str, str] = {}
        self.inside = False
        self.open: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == "item-form"
        elif self.inside and tag == "input" and attrs.get("name") and attrs.get("type") != "submit":
            self.fields[attrs["name"]] = attrs.get("value") or ""
        elif self.inside and tag in ("textarea", "select") and attrs.get("name"):
            self.open = attrs["name"]
            self.fields[self.open] = ""
        elif self.inside and tag == "option" and self.open and "selected" in attrs:
            self.fields[self.open] = attrs.get("value") or ""

    def handle_data(self, data):
        if self.inside and self.open in self.fields and self.open == "scratch":
            self.fields["scratch"] += data

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag in ("textarea", "select"):
            self.open = None


def _tab(client, item) -> dict[str, str]:
    """What a freshly loaded tab of ``item`` would send, before anything is typed in it."""
    parser = _Form()
    parser.feed(client.get(item.get_absolute_url()).content.decode())
    parser.fields.pop("csrfmiddlewaretoken", None)
    return parser.fields


@pytest.fixture
def ladder(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    return round_, round_.items.get(item__slug="ladder")


def test_two_tabs_autosaving_different_boxes_keep_both(candidate_client, ladder):
    round_, item = ladder
    save = reverse("rounds:save", args=[round_.pk, item.position])
    a, b = _tab(candidate_client, item), _tab(candidate_client, item)
    assert a["base-card_gib"] == "" and a["base-weights_gib"] == "" and a["base-scratch"] == ""

    # Tab A types card and usable memory (autosaved), then tab B, which never saw them, types the weights.
    candidate_client.post(save, {**a, "card_gib": "79.65", "usable_gib": "71.68"}, headers={"HX-Request": "true"})
    candidate_client.post(save, {**b, "weights_gib": "14.96"}, headers={"HX-Request": "true"})

    item.refresh_from_db()
    assert {k: v for k, v in item.answers.items() if v} == {"card_gib": "79.65", "usable_gib": "71.68",
                                                           "weights_gib": "14.96"}
    reloaded = _tab(candidate_client, item)  # the page shows all three, each with its twin
    assert (reloaded["card_gib"], reloaded["usable_gib"], reloaded["weights_gib"]) == ("79.65", "71.68", "14.96")
    assert reloaded["base-usable_gib"] == "71.68"


def test_a_box_cleared_on_purpose_is_written_blank_and_a_whiteboard_is_not_wiped_by_another_tab(
        candidate_client, ladder):
    round_, item = ladder
    save = reverse("rounds:save", args=[round_.pk, item.position])
    a, b = _tab(candidate_client, item), _tab(candidate_client, item)
    candidate_client.post(save, {**a, "card_gib": "79.65", "usable_gib": "71.68", "scratch": "80 GB card"})
    candidate_client.post(save, {**b, "weights_gib": "14.96"})  # tab B's whiteboard is still blank: left alone
    item.refresh_from_db()
    assert item.scratch == "80 GB card"

    # Tab A, after its save (rounds.js moved its twins on), clears usable memory: that box goes blank.
    moved = {**a, "card_gib": "79.65", "base-card_gib": "79.65", "usable_gib": "", "base-usable_gib": "71.68",
             "scratch": "80 GB card", "base-scratch": "80 GB card"}
    candidate_client.post(save, moved)
    item.refresh_from_db()
    assert (item.answers["card_gib"], item.answers["usable_gib"], item.answers["weights_gib"]) == ("79.65", "",
                                                                                                    "14.96")


def test_a_submission_from_a_tab_that_did_not_see_the_other_grades_both_tabs_answers(candidate_client, ladder, h):
    round_, item = ladder
    right = h.answers(item.problem)
    a, b = _tab(candidate_client, item), _tab(candidate_client, item)
    candidate_client.post(reverse("rounds:save", args=[round_.pk, item.position]),
                          {**a, "card_gib": right["card_gib"], "usable_gib": right["usable_gib"]})
    response = candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                                     {**b, "weights_gib": right["weights_gib"], "confirm": "yes"})
    assert response.status_code == 302
    item.refresh_from_db()
    verdicts = dict(item.attempt.steps.values_list("key", "verdict"))
    assert [verdicts[key] for key in ("card_gib", "usable_gib", "weights_gib")] == ["correct"] * 3


def test_an_all_blank_item_asks_before_it_is_submitted_and_counts_blanks_when_told(candidate_client, candidate,
                                                                                    ladder):
    round_, item = ladder
    url = reverse("rounds:submit", args=[round_.pk, item.position])
    blank = _tab(candidate_client, item)
    steps = len(item.problem.solve().specs)

    asked = candidate_client.post(url, blank)
    page = asked.content.decode()
    assert asked.status_code == 200 and "Every step is blank: nothing was recorded." in page
    assert page.count(BLANK) == steps == 8  # the drill page's words beside each box
    assert '<button type="submit" name="blanks" value="count"' in page
    item.refresh_from_db()
    assert item.submitted_at is None and not Attempt.objects.filter(user=candidate).exists()

    counted = candidate_client.post(url, {**blank, "blanks": "count", "confirm": "yes"})  # the round's last item
    assert counted.status_code == 302
    item.refresh_from_db()
    assert item.submitted_at is not None and item.grade == 0.0


def test_a_partly_answered_item_is_submitted_without_asking(candidate_client, ladder, h):
    round_, item = ladder
    typed = {**_tab(candidate_client, item), "card_gib": h.answers(item.problem)["card_gib"], "confirm": "yes"}
    response = candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]), typed)
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.submitted_at is not None and item.grade == pytest.approx(1 / 8)

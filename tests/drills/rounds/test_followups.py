"""The "Follow-ups" round (issue 33 item 1): a problem, then follow-ups on its stack, graded and debriefed.

The change each follow-up draws depends on the catalog, so the tests read it from the engine (``followup_link``)
and answer it; the engine's hand-derived values are in tests/engine/test_followup.py.
"""

from __future__ import annotations

import random

import pytest
from django.urls import reverse

from drills.models import FollowUpAttempt, Round
from drills.rounds.drawing import draw_items
from drills.rounds.presets import FOLLOWUP_FAMILIES, PRESETS
from drills.rounds.services import close, followup_link, start_round

pytestmark = pytest.mark.django_db


def _start(candidate, h, seed: int = 3) -> Round:
    round_ = start_round(candidate, "followups", h.T0, rng=random.Random(seed))
    return round_


def _answer_base(client, round_, h):
    base = round_.items.get(position=1)
    assert base.is_worked
    client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes",
                                                                "version": base.version, **h.answers(base.problem)})
    return base


def _right(link) -> dict:
    return {"present_marks": "1", "marked": list(link.moves),
            **{f"value-{key}": repr(link.result.values[key]) for key in link.moves}}


def test_the_round_is_a_problem_and_its_follow_ups(candidate, bank, h):
    round_ = _start(candidate, h)
    items = list(round_.items.order_by("position"))
    assert items[0].kind == "problem" and items[0].item.family in PRESET_FAMILIES
    followups = items[1:]
    assert 2 <= len(followups) <= 3
    assert [item.followup for item in followups] == list(range(len(followups)))
    assert all(item.kind == "followup" and item.problem_id == items[0].problem_id for item in followups)
    changed = [followup_link(item).change.input for item in followups]
    assert len(set(changed)) == len(changed)  # each follow-up changes another input


PRESET_FAMILIES = set(FOLLOWUP_FAMILIES)


def test_the_preset_draws_from_every_family_with_inputs():
    # Every drill family with inputs, the simulated ones among them (issue 33 item 1), not six of them.
    from calculators.families import FAMILIES

    slot = PRESETS["followups"]["slots"][0]
    assert slot["families"] == sorted(k for k, f in FAMILIES.items() if f.generate is not None and f.inputs)
    assert {"ladder", "kv", "params", "formats", "knee", "ttftp99", "tpotbatch", "preemptrate", "moe"} <= set(
        slot["families"])


def test_a_template_with_no_chain_is_passed_over_for_the_slots_next(candidate, bank, h):
    # params problems give at most one follow-up (only a named MoE sibling changes them), so the slot's next
    # template is drawn: the round still opens with a problem and two or three follow-ups.
    from drills.models import BankItem, RoundTemplate

    template = RoundTemplate.objects.create(slug="params-first", kind="followups", title="Params first",
                                            duration_s=600, slots=[{"families": ["params", "ladder"],
                                                                    "followups": 3, "followup_box_s": 240}])
    start_round(candidate, "capacity", h.T0)  # a ladder sat once: the least sat, params, is drawn first
    round_ = start_round(candidate, template, h.T0, rng=random.Random(1))
    items = list(round_.items.order_by("position"))
    assert draw_items(candidate, template, h.T0, random.Random(1))[0].item.family == "params"
    assert items[0].item == BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    assert [item.kind for item in items[1:]] == ["followup"] * (len(items) - 1) and len(items) >= 3


def test_the_chain_is_the_cards_review_rated_by_its_score(candidate_client, candidate, bank, clock, h):
    # A right problem and wrong follow-ups: the card's one review carries the chain's score, not the problem's,
    # and the follow-up items carry that review (issue 33 item 1: the chain is the card).
    from drills.models import Card, ReviewLog
    from drills.reviews.scheduling import AGAIN, add_to_deck

    round_ = _start(candidate, h)
    base = round_.items.get(position=1)
    add_to_deck(candidate, [base.item], now=h.T0)
    clock.set(h.T0)
    _answer_base(candidate_client, round_, h)
    for item in round_.items.filter(kind="followup").order_by("position"):
        link = followup_link(item)  # every mark wrong: the still steps marked, given a value no step has
        candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                              {"confirm": "yes",
                               "version": item.version, "present_marks": "1", "marked": list(link.still),
                               **{f"value-{key}": "7777777" for key in link.still}})
    round_.refresh_from_db()
    assert round_.status == Round.FINISHED
    base.refresh_from_db()
    chain = list(round_.items.filter(kind="followup"))
    log = ReviewLog.objects.get(user=candidate)
    assert base.grade == 1.0 and all(item.grade == 0.0 for item in chain)
    assert log.grade == pytest.approx(1 / (1 + len(chain))) and log.rating == AGAIN
    assert base.review_id == log.pk and all(item.review_id == log.pk for item in chain)
    assert Card.objects.get(user=candidate, item=base.item).version == 1  # one review for the chain


def test_the_item_page_asks_which_steps_move_then_the_values(candidate_client, candidate, bank, clock, h):
    round_ = _start(candidate, h)
    clock.set(h.T0)
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 2])).content.decode()
    link = followup_link(round_.items.get(position=2))
    assert link.change.sentence.replace("'", "&#x27;") in page
    assert "First: which steps move?" in page and "Then: the new values of the steps you ticked" in page
    for spec in link.result.specs:
        assert f'name="marked" value="{spec.key}"' in page and f'name="value-{spec.key}"' in page


def test_a_right_chain_scores_full_and_the_debrief_shows_it(candidate_client, candidate, bank, clock, h):
    round_ = _start(candidate, h)
    clock.set(h.T0)
    _answer_base(candidate_client, round_, h)
    for item in round_.items.filter(kind="followup").order_by("position"):
        clock.advance(seconds=30)
        candidate_client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                              {"confirm": "yes", "version": item.version, **_right(followup_link(item))})
    round_.refresh_from_db()
    assert round_.status == Round.FINISHED and round_.score == pytest.approx(1.0)
    stored = list(FollowUpAttempt.objects.filter(user=candidate).order_by("position"))
    assert [attempt.position for attempt in stored] == list(range(len(stored))) and len(stored) >= 2
    assert all(attempt.score == 1.0 for attempt in stored)
    base = round_.items.get(position=1)
    assert all(attempt.attempt_id == base.attempt_id for attempt in stored)
    report = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    assert 'id="report-followups"' in report
    for attempt in stored:
        assert f"Follow-up {attempt.position + 1}: " in report


def test_wrong_marks_are_named_in_the_debrief(candidate_client, candidate, bank, clock, h):
    round_ = _start(candidate, h)
    clock.set(h.T0)
    _answer_base(candidate_client, round_, h)
    item = round_.items.get(position=2)
    link = followup_link(item)
    skipped = link.moves[0]
    answer = _right(link)
    answer["marked"] = [key for key in link.moves if key != skipped]
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 2]), {"confirm": "yes",
                                                                          "version": item.version, **answer})
    close(round_, h.T0.replace(minute=5))
    item.refresh_from_db()
    assert item.grade < 1
    marks = {mark["key"]: mark["verdict"] for mark in item.followup_attempt.grade["marks"]}
    assert marks[skipped] == "left_unmoved"
    report = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    label = next(spec.label for spec in link.result.specs if spec.key == skipped)
    assert f"A moved step left unmoved: {label}" in report


def test_an_unreadable_value_is_refused_before_the_deadline(candidate_client, candidate, bank, clock, h):
    round_ = _start(candidate, h)
    clock.set(h.T0)
    item = round_.items.get(position=2)
    key = followup_link(item).moves[0]
    page = candidate_client.post(reverse("rounds:submit", args=[round_.pk, 2]),
                                 {"confirm": "yes", "version": item.version, "present_marks": "1", "marked": [key],
                                  f"value-{key}": "7O GiB"})
    assert page.status_code == 200 and 'id="unreadable-steps"' in page.content.decode()
    item.refresh_from_db()
    assert not item.is_submitted and item.answers["values"][key] == "7O GiB"  # saved, not graded
    assert FollowUpAttempt.objects.count() == 0


def test_closing_grades_the_saved_follow_ups(candidate, bank, h):
    round_ = _start(candidate, h)
    base = round_.items.get(position=1)
    base.answers = h.answers(base.problem)
    base.save()
    for item in round_.items.filter(kind="followup"):
        link = followup_link(item)
        item.answers = {"marked": list(link.moves),
                        "values": {key: repr(link.result.values[key]) for key in link.moves}}
        item.save()
    close(round_, h.T0.replace(minute=3))
    graded = list(round_.items.filter(kind="followup").order_by("position"))
    assert all(item.auto_submitted and item.grade == pytest.approx(1.0) for item in graded)


def test_closing_grades_untouched_follow_ups_unanswered(candidate, bank, h):
    """A round closed with its follow-ups never opened, or opened and left as shown (the value boxes saved
    blank, nothing ticked): each is unanswered, 0, and the debrief says "Not answered" for every step; the
    round's score is the right problem's alone over the 1 + N items."""
    round_ = _start(candidate, h)
    base = round_.items.get(position=1)
    base.answers = h.answers(base.problem)
    base.save()
    first = round_.items.filter(kind="followup").order_by("position").first()
    first.answers = {"marked": [], "values": {spec.key: "" for spec in followup_link(first).result.specs}}
    first.save()
    close(round_, h.T0.replace(minute=3))
    graded = list(round_.items.filter(kind="followup").order_by("position"))
    assert [item.grade for item in graded] == [0.0] * len(graded)
    assert all({mark["verdict"] for mark in item.followup_attempt.grade["marks"]} == {"unanswered"}
               for item in graded)
    round_.refresh_from_db()
    assert round_.score == pytest.approx(1 / (1 + len(graded)))

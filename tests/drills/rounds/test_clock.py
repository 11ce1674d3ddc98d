"""The server's clock is the only one: expiry, late answers, reload mid-round, autosave kept and graded."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from drills.models import Attempt, Round, RoundItem
from drills.rounds.services import autosave, close_if_due, start_round, submit

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def form(data: dict):
    from django.http import QueryDict

    query = QueryDict(mutable=True)
    for key, value in data.items():
        query.setlist(key, value if isinstance(value, list) else [value])
    return query


def test_a_reload_mid_round_continues_the_servers_countdown(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    url = reverse("rounds:item", args=[round_.pk, 1])

    clock.advance(minutes=4)
    first = candidate_client.get(url)
    assert first["X-Round-Remaining"] == str(26 * 60)
    assert 'data-remaining="1560"' in first.content.decode()
    clock.advance(minutes=7, seconds=30)  # "reload" after a lost connection
    again = candidate_client.get(url)
    assert again["X-Round-Remaining"] == str(18 * 60 + 30)
    assert "18:30" in again.content.decode()
    assert candidate_client.get(reverse("rounds:clock", args=[round_.pk]))["X-Round-Remaining"] == "1110"


def test_without_javascript_the_page_shows_the_deadline_and_plain_forms(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    html = candidate_client.get(reverse("rounds:item", args=[round_.pk, 1])).content.decode()
    assert "ends 09:05:00" in html
    assert f'action="{reverse("rounds:submit", args=[round_.pk, 1])}"' in html
    assert "Submit this item" in html and ">Save</button>" in html
    assert "js/rounds.js" in html


def test_autosave_then_expiry_keeps_the_typed_text_and_grades_it(candidate_client, candidate, bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    answers = h.answers(item.problem)
    clock.advance(minutes=3)
    response = candidate_client.post(reverse("rounds:save", args=[round_.pk, 1]),
                                     {"scratch": "70B × 2 bytes = 140 GB", **answers}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "Saved 09:03:00" in response.content.decode()
    assert response["X-Round-Remaining"] == "120"

    clock.advance(minutes=2, seconds=1)  # past the deadline: the pages show it closing, their button closes it
    assert candidate_client.get(round_.get_absolute_url())["Location"] == reverse("rounds:report", args=[round_.pk])
    closing = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    assert "See the report" in closing and f'action="{reverse("rounds:finish", args=[round_.pk])}"' in closing
    round_.refresh_from_db()
    assert round_.is_active  # reading graded nothing
    candidate_client.post(reverse("rounds:finish", args=[round_.pk]))
    round_.refresh_from_db()
    item.refresh_from_db()
    assert round_.status == Round.EXPIRED and round_.finished_at == round_.deadline
    assert item.scratch == "70B × 2 bytes = 140 GB" and item.answers == answers
    assert item.auto_submitted and not item.late and item.grade == pytest.approx(1.0)
    assert item.submitted_at == round_.deadline and Attempt.objects.get(user=candidate).score == pytest.approx(1.0)
    report = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    assert "Time ran out" in report and "graded from what was saved" in report


def test_expiry_with_an_open_answer_written_waits_for_the_self_score_which_is_not_late(candidate, bank, h):
    round_ = start_round(candidate, "phone", h.T0)
    open_item = round_.items.get(position=3)
    autosave(candidate, open_item.pk, form({"answer": "Two K and V per layer.", "present": "1"}),
             h.T0 + timedelta(minutes=20))
    round_ = close_if_due(round_, h.T0 + timedelta(minutes=31))
    open_item.refresh_from_db()
    assert round_.status == Round.EXPIRED and open_item.grade is None and open_item.answer == "Two K and V per layer."
    assert round_.items.get(position=4).grade == 0  # nothing written at all scores zero

    submitted = submit(candidate, open_item.pk, open_item.version,
                       form({"present_ticks": "1", "ticked": ["0", "1", "2", "3"], "self_score": "3"}),
                       h.T0 + timedelta(hours=1))
    assert submitted.created and submitted.item.grade == 1 and submitted.item.self_score == 3
    assert not submitted.item.late  # only the self-score came after the deadline, not the answer


def test_an_answer_arriving_within_the_grace_is_flagged_late_and_counts_in_full(candidate_client, candidate, bank,
                                                                               clock, h):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    clock.advance(minutes=5, seconds=3)  # the click at 0:00 reaches the server 3 s after the deadline
    response = candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]),
                                     {"version": item.version, **h.answers(item.problem)}, follow=True)
    item.refresh_from_db()
    round_.refresh_from_db()
    assert item.late and item.grade == pytest.approx(1.0) and not item.auto_submitted and item.late_answers == []
    assert item.submitted_at == clock.now and round_.status == Round.EXPIRED and round_.score == pytest.approx(1.0)
    assert "flagged late" in response.content.decode()
    report = _text(candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode())
    assert "late arrived within the grace: counted" in report
    assert "up to 5 seconds after the deadline is flagged late and counts in full" in report


def test_an_answer_arriving_after_the_grace_is_kept_shown_and_scores_zero(candidate_client, candidate, bank, clock,
                                                                          h):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    candidate_client.post(reverse("rounds:save", args=[round_.pk, 1]), {"scratch": "started"},
                          headers={"HX-Request": "true"})
    clock.advance(minutes=5, seconds=20)  # the connection dropped; the submission arrives 20 s late
    answers = h.answers(item.problem)
    response = candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]),
                                     {"version": item.version, **answers}, follow=True)
    item.refresh_from_db()
    round_.refresh_from_db()
    # Graded from what was saved in time (nothing in the steps): 0; the late answer is kept with the item.
    assert item.late and item.grade == 0 and round_.score == 0 and not item.auto_submitted
    assert (not any(item.answers.values()) and item.late_answers[0]["answers"] == answers
            and item.late_answers[0]["late"])
    assert item.submitted_at == clock.now and round_.status == Round.EXPIRED
    assert "flagged late" in response.content.decode()
    report = _text(candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode())
    assert "late arrived after the grace: kept below, scores 0" in report
    assert "Late, 09:05:20: kept, scores 0" in report
    first_key = next(iter(answers))
    label = {spec.key: spec.label for spec in item.problem.solve().specs}[first_key]
    assert f"{label}: {answers[first_key]}" in report  # the late answer is shown under its step's label


def test_a_late_autosave_within_the_grace_is_graded_and_one_past_it_is_kept_aside(candidate, bank, h):
    round_ = start_round(candidate, "capacity", h.T0)
    item = round_.items.get()
    keys = list(h.answers(item.problem))
    saved = autosave(candidate, item.pk, form({keys[0]: "42"}), h.T0 + timedelta(minutes=5, seconds=4))
    assert saved.late and saved.answers[keys[0]] == "42" and saved.late_answers == []
    # A minute late: kept aside (each autosave replaces the last late draft), the in-time "42" is graded.
    autosave(candidate, item.pk, form({keys[0]: "4"}), h.T0 + timedelta(minutes=6))
    saved = autosave(candidate, item.pk, form({keys[0]: "43"}), h.T0 + timedelta(minutes=6, seconds=1))
    assert saved.answers[keys[0]] == "42" and len(saved.late_answers) == 1
    assert saved.late_answers[0]["answers"][keys[0]] == "43" and saved.late_answers[0]["late"]
    round_ = close_if_due(round_, h.T0 + timedelta(minutes=6, seconds=2))
    item.refresh_from_db()
    assert round_.status == Round.EXPIRED and item.grade is not None and item.answers[keys[0]] == "42"
    assert item.attempt.steps.get(key=keys[0]).raw_input == "42"


def test_the_beat_waits_for_the_grace_a_request_closes_at_the_deadline(candidate, bank, h):
    round_ = start_round(candidate, "capacity", h.T0)
    assert close_if_due(round_, h.T0 + timedelta(minutes=5, seconds=4), grace=True).is_active
    assert not close_if_due(round_, h.T0 + timedelta(minutes=5, seconds=5), grace=True).is_active


def test_a_submission_after_the_round_graded_an_item_is_kept_not_dropped(candidate, bank, h):
    round_ = start_round(candidate, "capacity", h.T0)
    item = round_.items.get()
    close_if_due(round_, h.T0 + timedelta(minutes=10))
    outcome = submit(candidate, item.pk, item.version, form(h.answers(item.problem)), h.T0 + timedelta(minutes=11))
    item.refresh_from_db()
    assert not outcome.created and item.late and item.grade == 0
    assert item.late_answers and item.late_answers[0]["answers"] == h.answers(item.problem)


def test_the_round_is_open_up_to_its_deadline_and_not_a_second_longer(candidate, bank, h):
    round_ = start_round(candidate, "capacity", h.T0)
    assert close_if_due(round_, h.T0 + timedelta(minutes=4, seconds=59)).is_active
    assert round_.remaining_s(h.T0 + timedelta(minutes=4, seconds=59)) == 1
    assert not close_if_due(round_, h.T0 + timedelta(minutes=5)).is_active


def test_the_item_time_box_runs_from_when_it_was_opened(candidate_client, candidate, bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    clock.advance(minutes=10)
    page = candidate_client.get(reverse("rounds:item", args=[round_.pk, 2])).content.decode()
    opened_at = clock.now
    second = RoundItem.objects.get(round=round_, position=2)
    assert second.started_at is None  # opening the page stores nothing: its form carries the moment
    opened = re.search(r'name="opened" value="([^"]+)"', page).group(1)
    clock.advance(minutes=8)
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 2]),
                          {"version": second.version, "opened": opened, **h.answers(second.problem)})
    second.refresh_from_db()
    assert second.started_at == opened_at
    assert second.time_taken_s() == 8 * 60 and second.time_box_s == 7 * 60 and second.over_box

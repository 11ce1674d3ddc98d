"""Double submits, other users, FSRS cards on finish, the report, the deck and the history."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from drills.models import Attempt, Card, ReviewLog, Round, RoundItem
from drills.reviews.scheduling import add_to_deck, rating_for_rubric
from drills.rounds.report import report_for
from drills.rounds.services import close, start_round

pytestmark = pytest.mark.django_db


def test_a_double_submit_records_one_answer(candidate_client, candidate, bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get(position=1)
    url = reverse("rounds:submit", args=[round_.pk, 1])
    data = {"confirm": "yes", "version": item.version, **h.answers(item.problem)}
    candidate_client.post(url, data)
    second = candidate_client.post(url, {**data, "scratch": "a second click"}, follow=True)
    item.refresh_from_db()
    assert Attempt.objects.filter(user=candidate).count() == 1
    assert item.version == 1 and item.grade == pytest.approx(1.0) and item.late_answers == []
    assert "Already recorded" in second.content.decode()


def test_a_second_tab_with_other_answers_is_kept_but_not_graded_twice(candidate_client, candidate, bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get(position=1)
    url = reverse("rounds:submit", args=[round_.pk, 1])
    candidate_client.post(url, {"confirm": "yes", "version": 0, **h.answers(item.problem)})
    candidate_client.post(url, {"confirm": "yes", "version": 0, **{key: "1" for key in h.answers(item.problem)}})
    item.refresh_from_db()
    assert Attempt.objects.count() == 1 and item.grade == pytest.approx(1.0)
    assert len(item.late_answers) == 1 and not item.late  # kept, and not late: the round is still on


def test_another_user_cannot_see_or_touch_a_round(client, candidate, bob, bank, clock):
    round_ = start_round(candidate, "phone")
    client.force_login(bob)
    for name, args in [("round", [round_.pk]), ("item", [round_.pk, 1]), ("report", [round_.pk]),
                       ("clock", [round_.pk])]:
        assert client.get(reverse(f"rounds:{name}", args=args)).status_code == 404
    for name, args in [("save", [round_.pk, 1]), ("submit", [round_.pk, 1]), ("reveal", [round_.pk, 3]),
                       ("finish", [round_.pk]), ("deck", [round_.pk])]:
        assert client.post(reverse(f"rounds:{name}", args=args), {"confirm": "yes",
                                                                  "version": 0, "scratch": "bob"}).status_code == 404
    assert "No rounds yet" in client.get(reverse("rounds:index")).content.decode()
    round_.refresh_from_db()
    assert round_.is_active and not round_.items.exclude(scratch="").exists()


def test_pages_need_a_login(client, bank):
    assert client.get(reverse("rounds:index")).status_code == 302


def test_finishing_a_round_updates_the_fsrs_cards_of_its_items(candidate_client, candidate, bank, clock, h):
    add_to_deck(candidate, [bank["ladder"], bank["roofline"], bank["kv-formula"], bank["kv-paged"], bank["kv-fp8"],
                            bank["cost-per-token"]], now=h.T0 - timedelta(days=1))
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    ladder = round_.items.get(position=1)
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes",
                                                                          "version": 0, **h.answers(ladder.problem)})
    opened = round_.items.get(position=3)
    candidate_client.post(reverse("rounds:reveal", args=[round_.pk, 3]), {"answer": "Mine.", "present": "1"})
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 3]),
                          {"confirm": "yes", "version": 0, "present_ticks": "1", "ticked": ["0"], "self_score": "2"})
    assert not ReviewLog.objects.exists()  # nothing is reviewed until the round ends
    clock.advance(minutes=12)
    candidate_client.post(reverse("rounds:finish", args=[round_.pk]), {"confirm": "yes"})

    round_.refresh_from_db()
    assert round_.status == Round.FINISHED
    logs = {log.item_slug: log for log in ReviewLog.objects.filter(user=candidate)}
    assert set(logs) == {item.item_slug for item in round_.items.all()}
    assert logs["ladder"].rating >= ReviewLog.GOOD and logs["ladder"].grade == pytest.approx(1.0)
    assert logs[opened.item_slug].rating == ReviewLog.HARD and logs[opened.item_slug].answer == "Mine."
    assert logs["roofline"].rating == ReviewLog.AGAIN  # nothing typed: graded zero
    for item in round_.items.all():
        card = Card.objects.get(user=candidate, item=item.item)
        assert card.reps == 1 and card.version == 1 and item.review_id == logs[item.item_slug].pk
    close(round_, clock.now + timedelta(minutes=1))  # closing twice reviews nothing twice
    assert ReviewLog.objects.count() == 4


def test_a_worked_item_is_reviewed_with_the_grade_and_attempt_the_report_shows(candidate_client, candidate, bank,
                                                                               clock, h):
    """Three of the ladder's eight steps right: 38 % in the report, and the same 38 % (not 3 of its rubric points,
    nor the whiteboard as an open answer) in the review log that progress, the exports and the coach read."""
    add_to_deck(candidate, [bank["ladder"]], now=h.T0 - timedelta(days=1))
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    ladder = round_.items.get(item__slug="ladder")
    right = h.answers(ladder.problem)
    typed = {key: right[key] for key in ("card_gib", "usable_gib", "weights_gib")}
    candidate_client.post(reverse("rounds:save", args=[round_.pk, ladder.position]),
                          {"confirm": "yes", "version": 0, "scratch": "weights first, then the KV budget"})
    ladder.refresh_from_db()
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, ladder.position]),
                          {"confirm": "yes", "version": ladder.version, **typed})
    candidate_client.post(reverse("rounds:finish", args=[round_.pk]), {"confirm": "yes"})

    ladder.refresh_from_db()
    log = ReviewLog.objects.get(user=candidate, item_slug="ladder")
    assert ladder.grade == pytest.approx(3 / 8) == ladder.attempt.score
    assert (log.grade, log.attempt_id, log.problem_id) == (ladder.grade, ladder.attempt_id, ladder.problem_id)
    assert (log.rubric_ticked, log.answer, log.rating) == ([], "", ReviewLog.AGAIN)  # under 50 %: Again
    assert ladder.scratch == "weights first, then the KV budget"  # kept with the round, not logged as an answer


def test_items_outside_the_deck_are_not_added_by_a_round_but_offered_in_the_report(
        candidate_client, candidate, bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["capacity"]))
    round_ = Round.objects.get(user=candidate)
    item = round_.items.get()
    answers = h.answers(item.problem)
    answers["weights_gib"] = repr(item.problem.solve().values["weights_gib"] * 2**30 / 1e9)  # GB typed as GiB
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes", "version": 0, **answers})
    assert not Card.objects.exists() and not ReviewLog.objects.exists()

    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    assert "GB" in page and 'href="/' in page.split('id="report-misconceptions"')[1].split("</ul>")[0]
    report = report_for(round_)
    assert [entry["id"] for entry in report.misconceptions] == ["gb-gib-mix"]
    assert [item.slug for item in report.to_review] == ["ladder"]

    response = candidate_client.post(reverse("rounds:deck", args=[round_.pk]), {"item": [str(bank["ladder"].pk),
                                                                                         str(bank["kv-fp8"].pk)]})
    assert response.status_code == 302
    assert list(Card.objects.filter(user=candidate).values_list("item__slug", flat=True)) == ["ladder"]  # only its own


def test_the_report_compares_with_earlier_rounds_of_the_same_kind(candidate_client, candidate, bank, clock, h):
    scores = []
    for day, right in enumerate((False, True)):
        clock.set(h.T0 + timedelta(days=day))
        candidate_client.post(reverse("rounds:start", args=["capacity"]))
        round_ = Round.objects.of(candidate).first()
        item = round_.items.get()
        answers = h.answers(item.problem) if right else {key: "1" for key in h.answers(item.problem)}
        candidate_client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes",
                                                                              "version": 0, **answers})
        round_.refresh_from_db()
        scores.append(round_.score)
    start_round(candidate, "critique", clock.now)  # another kind is not compared
    report = report_for(round_)
    assert [r.score for r in report.earlier] == [scores[0]] and report.previous.score == scores[0]
    page = candidate_client.get(reverse("rounds:report", args=[round_.pk])).content.decode()
    assert scores[0] < 0.5 and scores[1] == pytest.approx(1.0)
    points = round((scores[1] - scores[0]) * 100)
    assert f"Last time {scores[0] * 100:.0f} %" in page and f"+{points} points" in page

    history = candidate_client.get(reverse("rounds:index")).content.decode()
    assert history.count("Report</a>") == 2 and "Resume" in history  # the critique round is in progress


def test_an_open_item_is_answered_revealed_ticked_and_self_scored(candidate_client, candidate, bank, clock):
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    url = reverse("rounds:item", args=[round_.pk, 3])
    before = candidate_client.get(url).content.decode()
    assert "Reveal the model answer" in before and "The model answer of" not in before
    candidate_client.post(reverse("rounds:save", args=[round_.pk, 3]), {"answer": "Draft", "present": "1"},
                          headers={"HX-Request": "true"})
    candidate_client.post(reverse("rounds:reveal", args=[round_.pk, 3]),
                          {"answer": "Final", "said_aloud": "on", "present": "1"})
    after = candidate_client.get(url).content.decode()
    assert "The model answer of" in after and "Rubric: tick the points you covered" in after
    item = RoundItem.objects.get(round=round_, position=3)
    assert item.answer == "Final" and item.said_aloud and item.revealed_at == clock.now
    candidate_client.post(reverse("rounds:save", args=[round_.pk, 3]), {"answer": "Changed after the reveal",
                                                                        "present": "1"})
    item.refresh_from_db()
    assert item.answer == "Final"  # the answer is fixed once the model answer is shown
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 3]),
                          {"confirm": "yes",
                           "version": 0, "present_ticks": "1", "ticked": ["0", "1"], "self_score": ""})
    item.refresh_from_db()
    total = len(item.item.rubric)
    assert item.grade == pytest.approx(2 / total) and item.self_score == rating_for_rubric(2, total)


@pytest.mark.parametrize("self_score, grade", [("1", 0.0), ("2", 1 / 3), ("3", 2 / 3), ("4", 1.0)])
def test_an_answer_said_aloud_scores_as_its_self_rating(candidate_client, candidate, bank, clock, self_score, grade):
    """Said aloud, nothing typed and no rubric point ticked: the self-rating is the score, not 0 % (issue 20)."""
    candidate_client.post(reverse("rounds:start", args=["phone"]))
    round_ = Round.objects.get(user=candidate)
    candidate_client.post(reverse("rounds:reveal", args=[round_.pk, 3]), {"answer": "", "said_aloud": "on",
                                                                          "present": "1"})
    candidate_client.post(reverse("rounds:submit", args=[round_.pk, 3]),
                          {"confirm": "yes", "version": 0, "present_ticks": "1", "self_score": self_score})
    item = RoundItem.objects.get(round=round_, position=3)
    assert item.said_aloud and item.ticked == [] and item.self_score == int(self_score)
    assert item.grade == pytest.approx(grade)

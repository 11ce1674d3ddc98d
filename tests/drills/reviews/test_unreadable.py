"""A typo in a problem review ("7O GiB", "65,5") is sent back to fix, never recorded as a failed review.

The capacity ladder's first two steps are typed unreadably and the other six
right. Nothing is written (no attempt, no review log, the card's version,
schedule and variant unchanged); the card comes back with what was typed, the
parser's message beside each unreadable box and the signed start time of the
first view; once fixed, the review is graded and recorded once, its duration
counted from that first view. A blank step is unanswered, not a typo: it is
recorded as before.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from drills.models import Attempt, Card, ReviewLog, StepAnswer
from drills.problems.forms import sign_start
from drills.problems.grading import UnreadableAnswers
from drills.reviews.scheduling import AGAIN, EASY, HARD, add_to_deck
from drills.reviews.services import drawn_problem, problem_for, record_problem_review

SEVEN_O = "Could not read '7O GiB': 'O' is not a unit I know; this step expects a memory size in GiB"
COMMA = ("Could not read '65,5': commas only separate groups of three digits, as in 1,024; for a decimal, "
         "write 65.5.")


def ladder_card(user, bank, **kwargs) -> Card:
    add_to_deck(user, [bank["ladder"]], **kwargs)
    return Card.objects.get(user=user, item=bank["ladder"])


def with_typos(answers: dict[str, str]) -> dict[str, str]:
    """The right answers with step 1 typed with a letter O and step 2 with a decimal comma."""
    return {**answers, "card_gib": "7O GiB", "usable_gib": "65,5"}


def assert_nothing_recorded(card: Card, problem) -> None:
    fresh = Card.objects.get(pk=card.pk)
    assert Attempt.objects.count() == 0 and StepAnswer.objects.count() == 0 and ReviewLog.objects.count() == 0
    assert (fresh.version, fresh.reps, fresh.lapses, fresh.state, fresh.due, fresh.last_review) == (
        card.version, card.reps, card.lapses, card.state, card.due, card.last_review)
    assert fresh.pending_problem_id == problem.pk  # the same numbers to correct, not a new variant


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def input_tag(html: str, name: str) -> str:
    return re.search(rf'<input[^>]*name="{name}"[^>]*>', html).group(0)


class TestService:
    def test_an_unreadable_step_records_nothing_then_the_fix_records_once(self, bank, candidate, h):
        card = ladder_card(candidate, bank, now=h.T0)
        problem = problem_for(card)
        answers = h.answers(problem)
        started = h.T0 - timedelta(seconds=100)

        with pytest.raises(UnreadableAnswers) as raised:
            record_problem_review(candidate, card.pk, 0, with_typos(answers), started_at=started, now=h.T0)

        assert list(raised.value.messages) == ["card_gib", "usable_gib"]  # in step order
        assert raised.value.messages["card_gib"].startswith(SEVEN_O)
        assert raised.value.messages["usable_gib"] == COMMA
        assert str(raised.value) == ("Nothing was recorded: 2 answers could not be read. Fix the marked steps and "
                                     "grade again.")
        assert_nothing_recorded(card, problem)

        # Fixed 30 s later: graded and recorded, timed from the first view (130 s, inside the 6-minute box).
        outcome = record_problem_review(candidate, card.pk, 0, answers, started_at=started,
                                        now=h.T0 + timedelta(seconds=30))
        assert outcome.created
        log = ReviewLog.objects.get()
        assert (log.grade, log.rating, log.duration_ms, log.card_version) == (1.0, EASY, 130_000, 0)
        assert log.problem_id == problem.pk and Attempt.objects.get().time_taken_s == 130
        assert Card.objects.get(pk=card.pk).version == 1

    def test_one_unreadable_step_is_named_in_the_singular(self, bank, candidate, h):
        card = ladder_card(candidate, bank, now=h.T0)
        answers = {**h.answers(problem_for(card)), "weights_gib": "1" * 201}
        with pytest.raises(UnreadableAnswers) as raised:
            record_problem_review(candidate, card.pk, 0, answers, now=h.T0)
        assert raised.value.messages == {
            "weights_gib": f"'{'1' * 39}…' is 201 characters long; answers are limited to 200 characters."}
        assert str(raised.value) == ("Nothing was recorded: 1 answer could not be read. Fix the marked step and "
                                     "grade again.")

    def test_blank_steps_are_unanswered_and_recorded(self, bank, candidate, h):
        card = ladder_card(candidate, bank, now=h.T0)
        answers = {**h.answers(problem_for(card)), "card_gib": "", "usable_gib": "   "}

        outcome = record_problem_review(candidate, card.pk, 0, answers, now=h.T0)

        assert outcome.created and outcome.log.grade == pytest.approx(6 / 8) and outcome.log.rating == HARD
        blank = StepAnswer.objects.get(key="card_gib")
        assert (blank.raw_input, blank.verdict, blank.credit) == ("", "unreadable", 0.0)
        assert blank.message.startswith("No answer given")

    def test_every_step_blank_is_a_failed_review_not_a_typo(self, bank, candidate, h):
        card = ladder_card(candidate, bank, now=h.T0)
        outcome = record_problem_review(candidate, card.pk, 0, {}, now=h.T0)
        assert outcome.created and (outcome.log.grade, outcome.log.rating) == (0.0, AGAIN)

    def test_a_typo_from_a_page_older_than_the_review_gets_the_review_already_recorded(self, bank, candidate, h):
        card = ladder_card(candidate, bank, now=h.T0)
        answers = h.answers(problem_for(card))
        first = record_problem_review(candidate, card.pk, 0, answers, now=h.T0)

        second = record_problem_review(candidate, card.pk, 0, with_typos(answers), now=h.T0)

        assert second.duplicate and second.log.pk == first.log.pk
        assert ReviewLog.objects.count() == 1 and Attempt.objects.count() == 1


class TestPage:
    def test_without_javascript_the_card_comes_back_as_typed_then_the_fix_records_one_review(
            self, candidate_client, candidate, bank, h):
        card = ladder_card(candidate, bank)
        html = candidate_client.get("/review/").content.decode()
        card.refresh_from_db()
        problem = drawn_problem(card)
        answers = h.answers(problem)
        # The page was first shown 100 s ago (the token the page carries, signed then).
        first_view = sign_start(timezone.now() - timedelta(seconds=100))

        response = candidate_client.post(f"/review/card/{card.pk}/answer/", {
            "version": hidden(html, "version"), "started": first_view, **with_typos(answers)})

        assert response.status_code == 200
        page = response.content.decode()
        assert escape(SEVEN_O) in page and escape(COMMA) in page
        assert "Nothing was recorded: 2 answers could not be read. Fix the marked steps and grade again." in page
        assert hidden(page, "started") == first_view and hidden(page, "version") == "0"
        assert f"seed {problem.seed}" in page  # the same variant
        for key, typed in with_typos(answers).items():
            tag = input_tag(page, key)
            assert f'value="{escape(typed)}"' in tag  # every answer kept, the readable ones too
            assert ('aria-invalid="true"' in tag) == (key in ("card_gib", "usable_gib"))
        assert_nothing_recorded(card, problem)

        fixed = candidate_client.post(f"/review/card/{card.pk}/answer/", {
            "version": hidden(page, "version"), "started": hidden(page, "started"), **answers, **h.chain(problem)})

        log = ReviewLog.objects.get()
        assert fixed.status_code == 302 and fixed["Location"] == f"/review/result/{log.pk}/"
        assert (log.grade, log.card_version, log.problem.seed) == (1.0, 0, problem.seed)
        assert 100_000 <= log.duration_ms < 160_000  # from the first view, not from the corrected page
        assert Attempt.objects.count() == 1 and Card.objects.get(pk=card.pk).version == 1

    def test_with_htmx_the_card_is_swapped_in_place_then_the_fix_navigates_to_the_result(
            self, client, candidate, bank, h):
        client.force_login(candidate)
        card = ladder_card(candidate, bank)
        html = client.get("/review/").content.decode()
        assert f'hx-post="/review/card/{card.pk}/answer/"' in html
        card.refresh_from_db()
        problem = drawn_problem(card)
        answers = h.answers(problem)
        started = hidden(html, "started")
        htmx = {"HX-Request": "true", "HX-Target": "review-card"}

        response = client.post(f"/review/card/{card.pk}/answer/", {
            "version": "0", "started": started, **with_typos(answers)}, headers=htmx)

        fragment = response.content.decode()
        assert response.status_code == 200 and "<html" not in fragment
        assert fragment.lstrip().startswith('<article class="card shadow-sm review-card" id="review-card"')
        assert escape(SEVEN_O) in fragment and escape(COMMA) in fragment
        assert 'value="7O GiB"' in input_tag(fragment, "card_gib") and hidden(fragment, "started") == started
        assert_nothing_recorded(card, problem)

        fixed = client.post(f"/review/card/{card.pk}/answer/",
                            {"version": "0", "started": started, **answers, **h.chain(problem)}, headers=htmx)

        log = ReviewLog.objects.get()
        assert fixed.status_code == 200 and fixed["HX-Redirect"] == f"/review/result/{log.pk}/"
        assert log.grade == 1.0 and Attempt.objects.count() == 1
        assert "Recorded: Easy." in client.get(fixed["HX-Redirect"]).content.decode()

    def test_a_blank_step_is_recorded_at_once(self, candidate_client, candidate, bank, h):
        card = ladder_card(candidate, bank)
        html = candidate_client.get("/review/").content.decode()
        card.refresh_from_db()
        problem = drawn_problem(card)
        answers = {**h.answers(problem), "card_gib": ""}
        response = candidate_client.post(f"/review/card/{card.pk}/answer/", {
            "version": hidden(html, "version"), "started": hidden(html, "started"), **answers, **h.chain(problem)})
        log = ReviewLog.objects.get()
        # The problem scores 7/8 (the blank step unanswered); its three follow-ups are answered right: the card's
        # grade is (7/8 + 3) ÷ 4 (issue 33: the chain is the card).
        assert response.status_code == 302 and log.attempt.score == pytest.approx(7 / 8)
        assert log.grade == pytest.approx((7 / 8 + 3) / 4)

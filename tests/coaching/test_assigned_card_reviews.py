"""A review of a card a coach assigned counts toward that assignment, on its pages and on the coach's dashboard.

Regression: the demo candidate reviewed the ladder card that "Week 1" had put in their deck and the coach still read
"Not started 0/3": a problem-template entry was done only by an attempt on the problem the assignment's Start drew,
and a review draws its own variant. The tests commit (``transaction=True``), as requests do, so the dashboard's
cached versions are bumped when each review commits.
"""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from coaching import progress, services
from coaching.models import Assignment, QuestionSet
from drills.bank.problem_templates import sync_problem_templates
from drills.followups.services import chain as followup_chain
from drills.models import BankItem, Card, ReviewLog
from drills.problems.forms import sign_start
from drills.problems.grading import submit
from drills.reviews.services import drawn_problem, record_problem_review
from tests.factories import BankItemFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def _half_right(problem) -> dict[str, str]:
    """The first four of the ladder's eight steps typed right, the last four left blank: a score of 4/8 = 0.5."""
    steps = problem.solve().steps
    assert len(steps) == 8
    return {step.key: repr(step.value) for step in steps[:4]}


def _all_right(problem) -> dict[str, str]:
    return {step.key: repr(step.value) for step in problem.solve().steps}


def _ladder_card(world, user) -> Card:
    return Card.objects.get(user=user, item=world.ladder)


def _results(world, user, now):
    assignment = services.assignments_for(user).get(pk=world.assignment.pk)
    found = progress.progress_for([(assignment, user)], now)[(assignment.pk, user.pk)]
    return found, {r.entry.item_id: r for r in found.results}


def test_a_review_of_the_assigned_template_card_completes_its_entry(world):
    now = world.T0 + timedelta(hours=2)
    card = _ladder_card(world, world.demo)
    answers = _half_right(drawn_problem(card))
    log = record_problem_review(world.demo, card.pk, card.version, answers, started_at=now - timedelta(seconds=90),
                                now=now).log

    found, results = _results(world, world.demo, now)
    ladder = results[world.ladder.pk]
    assert (ladder.done, ladder.started, ladder.score, ladder.seconds) == (True, True, 0.5, 90.0)
    assert (ladder.review_id, ladder.attempt_id, ladder.finished_at) == (log.pk, log.attempt_id, now)
    assert log.attempt.score == 0.5  # the attempt the coach's link opens: the variant the review drew
    assert results[world.question.pk].done is False
    assert (found.status, found.done_count, found.total, found.score) == (progress.IN_PROGRESS, 1, 2, 0.5)
    # demo2 did nothing: the review is demo's alone.
    other, _ = _results(world, world.demo2, now)
    assert (other.status, other.done_count) == (progress.NOT_STARTED, 0)


def test_a_review_made_before_the_assignment_does_not_count(world):
    before = world.assignment.created_at - timedelta(minutes=5)
    card = _ladder_card(world, world.demo)
    record_problem_review(world.demo, card.pk, card.version, _all_right(drawn_problem(card)), now=before)

    found, results = _results(world, world.demo, world.T0)
    assert (results[world.ladder.pk].done, found.status, found.done_count) == (False, progress.NOT_STARTED, 0)


@pytest.mark.parametrize("review_first", [True, False])
def test_the_earlier_of_the_started_problem_and_a_review_counts(world, review_first):
    entry = world.set.entries.get(item=world.ladder)
    start, review_at = world.T0 + timedelta(minutes=10), world.T0 + timedelta(minutes=20)
    attempt_at = review_at + (timedelta(minutes=30) if review_first else -timedelta(minutes=5))
    services.start_entry(world.assignment, world.demo, entry, now=start)
    work = world.assignment.works.get(candidate=world.demo, entry=entry)
    attempt = submit(work.problem, world.demo, _all_right(work.problem), now=attempt_at, time_taken_s=300).attempt
    card = _ladder_card(world, world.demo)
    log = record_problem_review(world.demo, card.pk, card.version, _half_right(drawn_problem(card)),
                                started_at=review_at - timedelta(seconds=60), now=review_at).log

    _, results = _results(world, world.demo, world.T0 + timedelta(hours=1))
    ladder = results[world.ladder.pk]
    if review_first:  # the half-right review, 60 s on the card
        assert (ladder.score, ladder.seconds, ladder.review_id, ladder.attempt_id) == (0.5, 60.0, log.pk,
                                                                                       log.attempt_id)
    else:  # the started problem, all right in 300 s
        assert (ladder.score, ladder.seconds, ladder.review_id, ladder.attempt_id) == (1.0, 300.0, None, attempt.pk)


def _cell(html: str, username: str) -> str:
    """The text of ``username``'s row (after the name) in the first cohort completion table."""
    body = html.split('id="table-cohort-', 1)[1].split("</table>", 1)[0]
    row = next(r for r in body.split("<tr>") if f">{username}<" in r)
    return re.sub(r"<[^>]+>|\s+", " ", row.split("</td>", 1)[1]).strip()


def test_the_demo_candidate_reviewing_week_one_shows_on_the_coach_dashboard(client):
    """End to end on the demo data: ``create_demo_accounts`` assigns "Week 1" (the ladder on the 70B and an H200,
    two open questions); demo works the ladder card on the review page; the coach's dashboard, built and cached
    before, shows it on its next load."""
    sync_problem_templates()
    for slug in ("demo-open-a", "demo-open-b"):
        BankItemFactory(slug=slug)
    call_command("create_demo_accounts", stdout=StringIO())
    demo, coach = User.objects.get(username="demo"), User.objects.get(username="coach")
    week1 = Assignment.objects.get(question_set=QuestionSet.objects.get(title="Week 1: KV cache and capacity"))
    assert sorted(e.kind for e in week1.question_set.entries.all()) == ["open", "open", "problem"]

    client.login(request=HttpRequest(), username="coach", password="demo-coach-2026")
    before = client.get(reverse("coaching:dashboard_tables"), headers={"HX-Request": "true"}).content.decode()
    assert _cell(before, "demo") == _cell(before, "demo2") == "Not started 0/3"

    client.login(request=HttpRequest(), username="demo", password="demo-candidate-2026")
    card = Card.objects.get(user=demo, item__kind=BankItem.PROBLEM, item__family="ladder")
    assert card.due <= timezone.now()  # in the deck and due now, as the README says
    problem = drawn_problem(card)
    response = client.post(reverse("reviews:answer", args=[card.pk]), {
        **_half_right(problem), "version": card.version,
        "started": sign_start(timezone.now() - timedelta(seconds=100))})
    log = ReviewLog.objects.get(user=demo, card=card)
    assert response.status_code == 302 and response["Location"] == reverse("reviews:result", args=[log.pk])
    # The card is the ladder and its chain of three follow-ups, left unanswered (0 each): (0.5 + 0 + 0 + 0) / 4.
    assert len(followup_chain(problem)) == 3
    assert (log.attempt.score, log.grade) == (0.5, 0.125)

    client.login(request=HttpRequest(), username="coach", password="demo-coach-2026")
    after = client.get(reverse("coaching:dashboard_tables"), headers={"HX-Request": "true"}).content.decode()
    assert _cell(after, "demo") == "In progress 1/3 · 12%"  # 0.125 shown as a whole percent
    assert _cell(after, "demo2") == "Not started 0/3"
    page = client.get(reverse("coaching:assignment", args=[week1.pk])).content.decode()
    assert reverse("coaching:attempt", args=[log.attempt_id]) in page
    assert coach.pk == week1.coach_id

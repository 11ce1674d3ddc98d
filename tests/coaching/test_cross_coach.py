"""A candidate in two coaches' cohorts: each coach sees the candidate's own practice on items that coach may see
and the work on their own assignments, never the other coach's unpublished items or assignment work.

carol (the ``world`` coach) has an unpublished question and an assignment for her cohort; demo also joins
dave's cohort, where dave assigns his own unpublished question. Every coach page and CSV export is read for
the other coach's marker strings.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from coaching import services
from coaching.models import QuestionSet
from drills.bank.services import item_name
from drills.models import BankItem, Card, ProblemInstance, ReviewLog
from drills.problems.grading import grade_problem
from drills.problems.storage import store_attempt
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import record_open_review

pytestmark = pytest.mark.django_db

CAROL_ANSWER = "carol-assignment-answer-7f3a"
DAVE_PROMPT = "Dave secret prompt 91bd: why does MLA cache a latent?"
DAVE_ANSWER = "dave-assignment-answer-c210"
OWN_ANSWER = "own-practice-answer-55e1"


@pytest.fixture
def two_coaches(world, h, django_capture_on_commit_callbacks):
    """demo works carol's assignment (open question + ladder), dave's assignment, and a published question alone."""
    demo, dave = world.demo, world.dave
    autumn = services.create_cohort(dave, "Autumn")
    services.accept_invitation(services.invite(autumn), demo, now=world.T0)

    card = Card.objects.get(user=demo, item=world.question)
    record_open_review(demo, card.pk, card.version, None, answer=CAROL_ANSWER, ticked=[0], now=world.T0)
    carol_review = ReviewLog.objects.get(user=demo, item=world.question)
    url = services.start_entry(world.assignment, demo, world.set.entries.get(item=world.ladder), now=world.T0)
    problem = ProblemInstance.objects.get(pk=int(url.rstrip("/").split("/")[-1]))
    carol_attempt = store_attempt(problem, demo, grade_problem(problem, h.answers(problem)), None)

    dave_question = services.save_question(dave, {
        "prompt": DAVE_PROMPT, "model_answer": "A compressed latent per token.", "rubric": ["latent", "absorbed"],
        "tags": ["mla"], "difficulty": 3})
    dave_set = QuestionSet.objects.create(coach=dave, title="Dave week", instructions="")
    services.add_entry(dave_set, item=dave_question)
    with django_capture_on_commit_callbacks(execute=True):
        dave_assignment = services.assign(dave_set, dave, cohort=autumn, due_at=world.T0 + timedelta(days=3),
                                          now=world.T0)
    services.start_entry(dave_assignment, demo, dave_set.entries.get(), now=world.T0 + timedelta(minutes=5))
    card = Card.objects.get(user=demo, item=dave_question)
    record_open_review(demo, card.pk, card.version, None, answer=DAVE_ANSWER, ticked=[0, 1],
                       now=world.T0 + timedelta(minutes=6))
    dave_review = ReviewLog.objects.get(user=demo, item=dave_question)

    published = BankItem.objects.create(slug="own-practice-question", kind=BankItem.OPEN, published=True,
                                        prompt="What does paged attention page?", model_answer="KV blocks.",
                                        rubric=["blocks", "fragmentation"])
    add_to_deck(demo, [published], now=world.T0)
    card = Card.objects.get(user=demo, item=published)
    record_open_review(demo, card.pk, card.version, None, answer=OWN_ANSWER, ticked=[1],
                       now=world.T0 + timedelta(minutes=7))
    own_review = ReviewLog.objects.get(user=demo, item=published)
    return world, dave_question, carol_review, carol_attempt, dave_review, own_review


def _pages(client, coach, candidate) -> str:
    """Everything a coach can read about the candidate: pages, partials and every CSV export."""
    client.force_login(coach)
    texts = []
    for url in (reverse("coaching:dashboard"), reverse("coaching:dashboard_tables"),
                reverse("coaching:candidate", args=[candidate.pk])):
        response = client.get(url)
        assert response.status_code == 200
        texts.append(response.content.decode())
    for table in ("assignments", "ladder", "misconceptions", "attempts", "answers"):
        response = client.get(reverse("coaching:candidate", args=[candidate.pk]), {"export": table})
        assert response.status_code == 200, table
        texts.append(response.content.decode())
    return "\n".join(texts)


def test_dave_never_reads_carols_unpublished_question_or_her_assignment_work(two_coaches, client):
    world, dave_question, carol_review, carol_attempt, dave_review, own_review = two_coaches
    client.force_login(world.dave)
    assert client.get(reverse("coaching:review", args=[carol_review.pk])).status_code == 404
    assert client.get(reverse("coaching:attempt", args=[carol_attempt.pk])).status_code == 404
    text = _pages(client, world.dave, world.demo)
    assert world.question.slug not in text and item_name(world.question) not in text
    assert CAROL_ANSWER not in text
    assert reverse("coaching:attempt", args=[carol_attempt.pk]) not in text
    # His own assignment's work and the candidate's own practice on a published question: visible.
    assert item_name(dave_question) in text  # the candidate page names a question as the bank does
    assert item_name(own_review.item) in text
    assert client.get(reverse("coaching:review", args=[dave_review.pk])).status_code == 200
    assert DAVE_ANSWER in client.get(reverse("coaching:review", args=[dave_review.pk])).content.decode()
    assert client.get(reverse("coaching:review", args=[own_review.pk])).status_code == 200


def test_carol_never_reads_daves_question_but_sees_her_own_work(two_coaches, client):
    world, dave_question, carol_review, carol_attempt, dave_review, own_review = two_coaches
    client.force_login(world.coach)
    assert client.get(reverse("coaching:review", args=[dave_review.pk])).status_code == 404
    text = _pages(client, world.coach, world.demo)
    assert dave_question.slug not in text and DAVE_PROMPT not in text and DAVE_ANSWER not in text
    assert item_name(world.question) in text and item_name(own_review.item) in text
    assert reverse("coaching:attempt", args=[carol_attempt.pk]) in text
    page = client.get(reverse("coaching:review", args=[carol_review.pk]))
    assert page.status_code == 200 and CAROL_ANSWER in page.content.decode()
    assert client.get(reverse("coaching:attempt", args=[carol_attempt.pk])).status_code == 200


def test_staff_see_both(two_coaches, client):
    world, dave_question, carol_review, carol_attempt, dave_review, own_review = two_coaches
    text = _pages(client, world.sam, world.demo)
    assert item_name(world.question) in text and item_name(dave_question) in text
    for log in (carol_review, dave_review, own_review):
        assert client.get(reverse("coaching:review", args=[log.pk])).status_code == 200


def test_the_invitation_page_states_the_rule(world, client):
    client.force_login(world.eve)
    page = client.get(reverse("coaching:invitation", args=[world.invitation.token])).content.decode()
    assert "never another coach" in page

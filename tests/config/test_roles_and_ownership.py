"""Who may act on what (issue 28, item 4): staff status alone is no coach, a stored problem is its owner's,
and taking an item out of the deck finds it through the visibility rule.

The cast: alice (candidate) in carol's cohort, carol (coach) with one unpublished question of her own, sam
(staff, no permissions, no group) and bob (another candidate).
"""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.roles import is_coach, oversees_all
from coaching import services
from drills.bank.problem_templates import sync_problem_templates
from drills.models import Attempt, BankItem, Card, ProblemInstance, StepAnswer
from drills.problems.generation import create_problem
from drills.reviews.scheduling import add_to_deck
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def cast(candidate, coach):
    staff = UserFactory(username="sam", is_staff=True)
    bob = UserFactory(username="bob")
    question = services.save_question(coach, {"prompt": "Why page the KV cache?", "model_answer": "Fragmentation.",
                                              "rubric": ["fragmentation"], "tags": ["kv"], "difficulty": 2})
    cohort = services.create_cohort(coach, "Spring")
    services.accept_invitation(services.invite(cohort), candidate)
    return staff, bob, question, cohort


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_staff_status_alone_grants_no_coach_rights(cast, candidate):
    staff, _bob, question, cohort = cast
    assert not is_coach(staff) and not oversees_all(staff)
    client = _client(staff)
    for path in ("/coach/", f"/coach/candidates/{candidate.pk}/", f"/coach/cohorts/{cohort.pk}/",
                 f"/coach/questions/{question.pk}/edit/"):
        assert client.get(path).status_code == 403, path
    published = BankItem.objects.create(slug="published-q", prompt="Published?", model_answer="Yes.", published=True)
    response = client.post(f"/coach/questions/{published.pk}/edit/",
                           {"prompt": "Defaced", "model_answer": "Defaced", "rubric": "x", "difficulty": "2"})
    assert response.status_code == 403
    published.refresh_from_db()
    assert published.prompt == "Published?"
    # The bank's visibility rule gives staff what any candidate outside the cohort sees: published items only.
    assert not BankItem.objects.visible_to(staff).filter(pk=question.pk).exists()
    assert client.get(f"/bank/{question.slug}/").status_code == 404
    # A superuser still oversees everything (the admin's owner), and a coach is a coach by the group.
    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    assert is_coach(root) and oversees_all(root)
    assert _client(root).get(f"/coach/candidates/{candidate.pk}/").status_code == 200


def test_a_stored_problem_answers_404_to_anyone_but_its_owner(cast, candidate, coach):
    staff, bob, _question, _cohort = cast
    problem = create_problem("ladder", seed=7, user=candidate)
    url = f"/drills/ladder/{problem.pk}/"
    assert _client(candidate).get(url).status_code == 200
    for user in (bob, coach, staff):  # her coach reads it through the coaching pages, not here
        assert _client(user).get(url).status_code == 404
    visitor = Client().get(url)  # sent to log in (the owner's session may have ended), then the same rule
    assert visitor.status_code == 302 and visitor["Location"].startswith("/accounts/login/")
    orphan = create_problem("ladder", seed=8)  # no owner (a deleted account's): nobody's page
    assert _client(candidate).get(f"/drills/ladder/{orphan.pk}/").status_code == 404


def test_a_foreign_post_to_a_problem_stores_nothing(cast, candidate):
    _staff, bob, _question, _cohort = cast
    problem = create_problem("ladder", seed=7, user=candidate)
    answers = {step.key: repr(step.value) for step in problem.solve().steps}
    response = _client(bob).post(f"/drills/ladder/{problem.pk}/", answers)
    assert response.status_code == 404
    assert not Attempt.objects.exists() and not StepAnswer.objects.exists()
    response = _client(candidate).post(f"/drills/ladder/{problem.pk}/", answers)  # the control: the owner's counts
    assert response.status_code == 200
    attempt = Attempt.objects.get()
    assert attempt.user == candidate and attempt.problem == ProblemInstance.objects.get(pk=problem.pk)
    assert attempt.score == 1.0


def test_deck_remove_answers_404_alike_for_an_invisible_and_an_unknown_slug(cast, candidate):
    _staff, bob, question, _cohort = cast
    sync_problem_templates()
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    add_to_deck(bob, [ladder])
    add_to_deck(candidate, [question])
    bob_client = _client(bob)
    invisible = bob_client.post("/bank/deck/remove/", {"item": question.slug})
    unknown = bob_client.post("/bank/deck/remove/", {"item": "no-such-item"})
    assert invisible.status_code == unknown.status_code == 404
    assert Card.objects.filter(user=candidate, item=question, suspended=False).exists()  # alice's card untouched
    # The control: an item one may see comes out of the deck (suspended; its history is kept).
    assert bob_client.post("/bank/deck/remove/", {"item": ladder.slug}).status_code == 302
    assert Card.objects.get(user=bob, item=ladder).suspended
    assert _client(candidate).post("/bank/deck/remove/", {"item": question.slug}).status_code == 302

"""The dashboard's queries are bounded: the same few whether a cohort has 2 candidates or 100."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from coaching import services
from coaching.models import Membership
from drills.models import Card
from drills.problems.grading import grade_problem
from drills.problems.storage import store_attempt
from drills.reviews.services import record_open_review
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

MAX_QUERIES = 40


def _grow(world, h, n: int) -> None:
    people = [UserFactory(username=f"cand{i:03d}", role="candidate") for i in range(n)]
    Membership.objects.bulk_create([Membership(cohort=world.cohort, candidate=p) for p in people])
    entry = world.set.entries.get(item=world.ladder)
    for person in people[::10]:  # some work, so every evidence query has rows
        url = services.start_entry(world.assignment, person, entry, now=world.T0)
        from drills.models import ProblemInstance

        problem = ProblemInstance.objects.get(pk=int(url.rstrip("/").split("/")[-1]))
        store_attempt(problem, person, grade_problem(problem, {"card_gib": "1"}), None)
        services.add_to_deck(person, [world.question], now=world.T0)
        card = Card.objects.get(user=person, item=world.question)
        record_open_review(person, card.pk, card.version, None, answer="x", ticked=[0], now=world.T0)


@pytest.mark.parametrize("url_name", ["coaching:dashboard", "coaching:dashboard_tables", "coaching:cohort",
                                      "coaching:assignment"])
def test_it_keeps_the_dashboard_queries_bounded_for_100_candidates(client, world, h, url_name,
                                                                    django_assert_max_num_queries):
    _grow(world, h, 100)
    services.assign(world.set, world.coach, cohort=world.cohort, due_at=h.now() + timedelta(days=1))
    client.force_login(world.coach)
    args = {"coaching:cohort": [world.cohort.pk], "coaching:assignment": [world.assignment.pk]}.get(url_name, [])
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse(url_name, args=args))
    assert response.status_code == 200
    assert "cand099" in response.content.decode()

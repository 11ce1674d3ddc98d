"""Coaches can start alone (issue 28, item 5; DESIGN §7).

Sign-up offers "I coach candidates"; a coach lands on the coach dashboard after logging in or signing up; the
same set is never given twice to one candidate while one copy is open (directly and through their cohort); a
timed assignment whose round ended with an item never opened is "Ended incomplete", never "Done" at 0 %.
(The set editor's search box is tested in test_set_add_forms.py.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from accounts.roles import is_coach
from coaching import services
from coaching.models import Assignment, QuestionSet
from coaching.progress import DONE, INCOMPLETE, progress_for
from drills.rounds.services import close
from tests import factories

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-pass-phrase-2026"


def _sign_up(username: str, **extra):
    return Client().post(reverse("signup"), {"username": username, "email": f"{username}@example.com",
                                             "password1": PASSWORD, "password2": PASSWORD, **extra})


def test_sign_up_offers_i_coach_candidates_and_a_new_coach_lands_on_the_dashboard(db):
    page = Client().get(reverse("signup")).content.decode()
    assert "I coach candidates" in page and 'name="coaches"' in page
    response = _sign_up("greta", coaches="on")
    assert response.status_code == 302 and response["Location"] == reverse("coaching:dashboard")
    assert is_coach(get_user_model().objects.get(username="greta"))
    response = _sign_up("hugo")  # unticked: a candidate, sent to their day
    assert response.status_code == 302 and response["Location"] == "/"
    assert not is_coach(get_user_model().objects.get(username="hugo"))
    greta = Client()
    greta.force_login(get_user_model().objects.get(username="greta"))
    assert greta.get(reverse("coaching:dashboard")).status_code == 200


def test_a_coach_lands_on_the_dashboard_after_logging_in_and_a_candidate_on_their_day(world):
    for user, landing in ((world.coach, reverse("coaching:dashboard")), (world.demo, "/")):
        response = Client().post(reverse("login"), {"username": user.username, "password": factories.PASSWORD})
        assert response.status_code == 302 and response["Location"] == landing, user
    # A "next" still wins (an invitation link, the page a session ended on).
    response = Client().post(reverse("login") + "?next=/coach/sets/",
                             {"username": "carol", "password": factories.PASSWORD, "next": "/coach/sets/"})
    assert response["Location"] == "/coach/sets/"


def _week2(world):
    question_set = QuestionSet.objects.create(coach=world.coach, title="Week 2")
    services.add_entry(question_set, item=world.question)
    return question_set


def test_a_set_given_to_a_cohort_is_not_given_again_to_one_of_its_candidates(world, h):
    week2, due = _week2(world), h.now() + timedelta(days=3)
    services.assign(week2, world.coach, cohort=world.cohort, due_at=due)
    client = Client()
    client.force_login(world.coach)
    response = client.post(reverse("coaching:set_assign", args=[week2.pk]),
                           {"target": f"candidate:{world.demo.pk}", "due_at": (due + timedelta(days=1))
                            .strftime("%Y-%m-%dT%H:%M")})
    assert response.status_code == 200
    assert "“Week 2” is already assigned to demo through cohort Spring" in response.content.decode()
    assert Assignment.objects.filter(question_set=week2).count() == 1
    rows = Client()
    rows.force_login(world.demo)
    assert rows.get(reverse("coaching:my_assignments")).content.decode().count("Week 2") == 1


def test_a_set_given_to_a_candidate_is_not_given_again_to_their_cohort_until_it_is_due(world, h):
    week2, now = _week2(world), h.now()
    services.assign(week2, world.coach, candidate=world.demo2, due_at=now + timedelta(days=1), now=now)
    with pytest.raises(services.CoachingError, match="already assigned to demo2 directly"):
        services.assign(week2, world.coach, cohort=world.cohort, due_at=now + timedelta(days=5), now=now)
    later = now + timedelta(days=2)  # the first copy is past its due time: a second round of the same set is fine
    services.assign(week2, world.coach, cohort=world.cohort, due_at=later + timedelta(days=5), now=later)
    assert Assignment.objects.filter(question_set=week2).count() == 2


def test_a_timed_assignment_with_an_item_never_opened_is_not_done_at_zero(world, h):
    now = h.now()
    timed = services.assign(_week2(world), world.coach, candidate=world.demo, due_at=now + timedelta(days=3),
                            time_limit_s=600, now=now)
    services.add_entry(timed.question_set, item=world.ladder, fixed_inputs={"model": "llama-3.1-8b"})
    round_ = services.start_timed(timed, world.demo, now=now)
    assert [item.started_at is not None for item in round_.items.order_by("position")] == [True, False]
    close(round_, now=now + timedelta(minutes=11))  # the first item opened, the second never
    timed = services.assignments_for(world.demo).get(pk=timed.pk)
    progress = progress_for([(timed, world.demo)], now + timedelta(minutes=12))[(timed.pk, world.demo.pk)]
    assert progress.status == INCOMPLETE != DONE and progress.status_label == "Ended incomplete"
    assert [(r.done, r.missed) for r in progress.results] == [(True, False), (False, True)]
    assert progress.done_count == 1 and progress.score == 0.0  # the opened item's zero, not the unopened one's
    page = Client()
    page.force_login(world.demo)
    text = page.get(reverse("coaching:my_assignments")).content.decode()
    row = text[text.index(f'href="/assignments/{timed.pk}/"'):]
    row = row[:row.index("</tr>")]
    assert "Ended incomplete" in row and ">Done</" not in row and ">1/2<" in row

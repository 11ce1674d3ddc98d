"""A candidate's own data (issue 21, finding 7): the full export, leaving a cohort, deleting the account.

The export is one zip with ``data.json`` and one CSV per table, holding every attempt with its steps, every
review, round, critique, lab run and assignment of the candidate -- and nothing of anyone else. Deleting the
account says on the page what it deletes and keeps, asks for the password, and leaves other people's data,
a coach's questions and the coach's cohorts in place.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.url_table import build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(candidate, coach):
    return build_world(candidate, coach)


def _zip(response) -> zipfile.ZipFile:
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith("attachment;")
    return zipfile.ZipFile(io.BytesIO(response.content))


def test_the_export_holds_everything_the_candidate_did_and_nothing_of_others(world, candidate):
    from drills.models import Attempt, CritiqueAttempt, ReviewLog, Round, StepAnswer

    client = Client()
    client.force_login(candidate)
    archive = _zip(client.get("/account/export/"))
    names = set(archive.namelist())
    assert {"data.json", "README.txt", "attempts.csv", "attempt_steps.csv", "reviews.csv", "rounds.csv",
            "critiques.csv", "lab_runs.csv", "assignments.csv", "memberships.csv"} <= names
    tables = json.loads(archive.read("data.json"))["tables"]
    assert tables["account"][0]["username"] == "alice"
    assert {row["id"] for row in tables["attempts"]} == set(
        Attempt.objects.filter(user=candidate).values_list("pk", flat=True))
    assert len(tables["attempt_steps"]) == StepAnswer.objects.filter(attempt__user=candidate).count()
    assert len(tables["reviews"]) == ReviewLog.objects.filter(user=candidate).count()
    assert {row["id"] for row in tables["rounds"]} == set(
        Round.objects.filter(user=candidate).values_list("pk", flat=True))
    assert len(tables["rounds"]) == 2  # phone and critique; bob's capacity round is his
    assert len(tables["critiques"]) == CritiqueAttempt.objects.filter(user=candidate).count() == 1
    assert len(tables["assignments"]) == 1 and len(tables["memberships"]) == 1
    bob = world.objects.bob.pk
    for name, rows in tables.items():
        for row in rows:
            assert row.get("user_id", candidate.pk) == candidate.pk, (name, row)
            assert row.get("candidate_id") in (candidate.pk, None), (name, row)  # None: a cohort assignment
    rounds_csv = list(csv.DictReader(io.StringIO(archive.read("rounds.csv").decode())))
    assert {int(r["id"]) for r in rounds_csv} == {r["id"] for r in tables["rounds"]}
    assert all(int(r["user_id"]) != bob for r in rounds_csv)


def test_the_export_needs_a_log_in():
    response = Client().get("/account/export/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_candidate_leaves_a_cohort_and_its_coach_no_longer_sees_her(world, candidate, coach):
    from coaching.models import Membership

    cohort = world.objects.cohort
    client = Client()
    client.force_login(candidate)
    assert "Leave Spring" in client.get("/account/").content.decode()
    response = client.post(f"/account/cohorts/{cohort.pk}/leave/")
    assert response.status_code == 302
    assert not Membership.objects.filter(candidate=candidate, cohort=cohort).exists()
    coach_client = Client()
    coach_client.force_login(coach)
    assert coach_client.get(f"/coach/candidates/{candidate.pk}/").status_code in (403, 404)


def test_the_delete_page_states_what_it_deletes_and_keeps(world, candidate):
    client = Client()
    client.force_login(candidate)
    page = client.get("/account/delete/").content.decode()
    assert "Deleted, at once and for good" in page and "Kept" in page
    assert "every review you made" in page and "questions you wrote as a coach" in page


def test_deleting_needs_the_password_and_then_removes_the_account_and_its_reviews(world, candidate):
    from drills.models import Attempt, ReviewLog, ReviewLogErasure

    bob = world.objects.bob
    bob_reviews = ReviewLog.objects.filter(user=bob).count()
    client = Client()
    client.force_login(candidate)
    assert client.post("/account/delete/", {"password": "wrong"}).status_code == 200
    assert get_user_model().objects.filter(pk=candidate.pk).exists()
    response = client.post("/account/delete/", {"password": "correct-horse-battery-staple-9"})
    assert response.status_code == 302
    assert not get_user_model().objects.filter(pk=candidate.pk).exists()
    assert not ReviewLog.objects.filter(user_id=candidate.pk).exists()
    assert not Attempt.objects.filter(user_id=candidate.pk).exists()
    assert ReviewLog.objects.filter(user=bob).count() == bob_reviews
    assert not ReviewLogErasure.objects.exists()  # the marker does not outlive the deletion


def test_deleting_a_coach_keeps_their_questions_cohorts_and_the_candidates_work(world, coach):
    from accounts.data import delete_account
    from coaching.models import Assignment, Cohort
    from drills.models import BankItem

    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-12345")
    question, cohort = world.objects.own_question, world.objects.cohort
    assignments = Assignment.objects.filter(coach=coach).count()
    delete_account(coach)
    question.refresh_from_db()
    assert question.author_id is None and not question.published and question.source_path == ""
    assert not question.from_fixtures
    assert Cohort.objects.get(pk=cohort.pk).coach_id == admin.pk
    assert Assignment.objects.filter(coach=admin).count() == assignments > 0
    assert BankItem.objects.from_fixtures().filter(pk=question.pk).count() == 0


def test_a_coach_with_cohorts_and_no_superuser_is_not_deleted(world, coach):
    from accounts.data import delete_account
    from accounts.deletion import HandOverError

    with pytest.raises(HandOverError):
        delete_account(coach)
    assert get_user_model().objects.filter(pk=coach.pk).exists()

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

from tests.factories import UserFactory
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
    assert "every review you made" in page and "the record of your log-ins" in page
    assert "Hand my cohorts to" not in page  # a candidate coaches nobody


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


def _coach_with_a_held_question(world, candidate, coach):
    """carol's unpublished question, in alice's deck (alice is in carol's cohort, so she may hold it)."""
    from drills.reviews.scheduling import add_to_deck

    question = world.objects.own_question
    assert add_to_deck(candidate, [question]) == 1
    return question


def test_a_coach_with_no_superuser_deletes_their_account_and_the_cohort_closes(world, candidate, coach, settings,
                                                                             django_capture_on_commit_callbacks):
    from django.core import mail

    from coaching.models import Assignment, Cohort, Membership, QuestionSet
    from drills.models import Attempt, BankItem, Card
    from home.data import delete_account

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert not get_user_model().objects.filter(is_superuser=True).exists()
    question = _coach_with_a_held_question(world, candidate, coach)
    attempts = Attempt.objects.filter(user=candidate).count()
    with django_capture_on_commit_callbacks(execute=True):
        delete_account(coach)
    assert not get_user_model().objects.filter(pk=coach.pk).exists()
    assert not Cohort.objects.exists() and not Membership.objects.exists()
    assert not QuestionSet.objects.exists() and not Assignment.objects.exists()
    assert Attempt.objects.filter(user=candidate).count() == attempts  # her own work stays hers
    question.refresh_from_db()
    assert question.author_id is None and not question.published and question.source_path == ""
    assert BankItem.objects.from_fixtures().filter(pk=question.pk).count() == 0
    # Archived, not 404: alice still holds it and can open and review it; bob, who never held it, cannot.
    alice, bob = Client(), Client()
    alice.force_login(candidate)
    bob.force_login(world.objects.bob)
    assert alice.get(f"/bank/{question.slug}/").status_code == 200
    card = Card.objects.get(user=candidate, item=question)
    assert alice.get(f"/review/card/{card.pk}/").status_code == 200
    assert bob.get(f"/bank/{question.slug}/").status_code == 404
    # Alice is told, once, that the cohort closed.
    told = [m for m in mail.outbox if m.to == [candidate.email]]
    assert len(told) == 1 and told[0].subject == "Spring has closed"
    assert "carol, the coach of your cohort “Spring”, has deleted their account" in told[0].body
    assert "The cohort is closed" in told[0].body


def test_a_coach_hands_their_cohorts_to_another_coach_and_the_candidates_are_told(
        world, candidate, coach, settings, django_capture_on_commit_callbacks):
    from django.core import mail

    from coaching import services
    from coaching.models import Assignment, Cohort, QuestionSet

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    dave = UserFactory(username="dave", role="coach")
    services.create_cohort(dave, "Spring")  # dave has a Spring of his own: carol's is renamed
    question = _coach_with_a_held_question(world, candidate, coach)
    cohort, assignments = world.objects.cohort, Assignment.objects.filter(coach=coach).count()
    client = Client()
    client.force_login(coach)
    page = client.get("/account/delete/").content.decode()
    assert "Hand my cohorts to" in page and "Spring (1 candidate)" in page
    assert "your cohorts close" in page and "each candidate is told by e-mail" in page
    refused = client.post("/account/delete/", {"password": "correct-horse-battery-staple-9", "successor": "alice"})
    assert refused.status_code == 200 and "“alice” is not a coach" in refused.content.decode()
    assert 'value="alice"' in refused.content.decode()  # what was typed is kept
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/account/delete/", {"password": "correct-horse-battery-staple-9",
                                                    "successor": "Dave"})
    assert response.status_code == 302
    moved = Cohort.objects.get(pk=cohort.pk)
    assert moved.coach == dave and moved.name == "Spring (from carol)"
    assert moved.memberships.filter(candidate=candidate).exists()
    assert Assignment.objects.filter(coach=dave).count() == assignments > 0
    assert QuestionSet.objects.get(pk=world.objects.question_set.pk).coach == dave
    question.refresh_from_db()
    assert question.author == dave and not question.published
    told = [m for m in mail.outbox if m.to == [candidate.email]]
    assert len(told) == 1 and told[0].subject == "Spring (from carol) is now coached by dave"
    assert "dave sees your practice" in told[0].body and "/account/" in told[0].body


def test_a_coachs_export_holds_their_cohorts_invitations_sets_and_assignments(world, coach):
    from coaching.models import Assignment, Invitation, QuestionSet, SetEntry

    client = Client()
    client.force_login(coach)
    tables = json.loads(_zip(client.get("/account/export/")).read("data.json"))["tables"]
    assert [row["name"] for row in tables["cohorts_coached"]] == ["Spring"]
    assert {row["token"] for row in tables["invitations"]} == set(
        Invitation.objects.filter(cohort__coach=coach).values_list("token", flat=True))
    assert [row["title"] for row in tables["question_sets"]] == ["Week 1"]
    assert len(tables["set_entries"]) == SetEntry.objects.filter(question_set__coach=coach).count() == 2
    assert {row["id"] for row in tables["assignments_given"]} == set(
        Assignment.objects.filter(coach=coach).values_list("pk", flat=True))
    assert QuestionSet.objects.count() == 1  # nothing of another coach to leave out here; the filter is the coach


def test_log_in_records_are_exported_and_deleted_with_the_account(candidate, password):
    from axes.models import AccessAttempt, AccessLog

    client = Client()
    assert client.post("/accounts/login/", {"username": "alice", "password": "wrong-one"},
                       REMOTE_ADDR="203.0.113.5").status_code == 200
    assert client.post("/accounts/login/", {"username": "alice", "password": password},
                       REMOTE_ADDR="203.0.113.6").status_code == 302
    other = Client()  # someone else's record stays
    other.post("/accounts/login/", {"username": "mallory", "password": "x"}, REMOTE_ADDR="198.51.100.1")
    assert AccessLog.objects.filter(username="alice").count() == 1
    client.post("/accounts/login/", {"username": "alice", "password": "wrong-again"}, REMOTE_ADDR="203.0.113.7")
    client.force_login(candidate)
    tables = json.loads(_zip(client.get("/account/export/")).read("data.json"))["tables"]
    log_ins = [row["ip_address"] for row in tables["log_ins"]]  # force_login's own row has no address
    assert "203.0.113.6" in log_ins and len(log_ins) == AccessLog.objects.filter(username="alice").count() == 2
    failed = {(row["ip_address"], row["failures_since_start"]) for row in tables["failed_log_ins"]}
    assert ("203.0.113.7", 1) in failed and all(ip != "198.51.100.1" for ip, _ in failed)
    assert "post_data" not in tables["failed_log_ins"][0]
    response = client.post("/account/delete/", {"password": password})
    assert response.status_code == 302
    assert not AccessLog.objects.filter(username="alice").exists()
    assert not AccessAttempt.objects.filter(username="alice").exists()
    assert AccessAttempt.objects.filter(username="mallory").exists()

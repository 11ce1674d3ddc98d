"""Work done for one coach's assignment stays out of another coach's sight, however it is reached afterwards.

demo is in carol's cohort Spring (the ``world``) and in dave's cohort Autumn. Each test is a path by which dave's
assignment work once reached carol's pages (a security audit of this session): an edit of dave's set, a re-grade
of the problem of dave's timed round, carol's own assignment of the same question, and a coach joining another
coach's cohort to read her unpublished questions.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone

from coaching import services
from coaching.models import QuestionSet, Work
from coaching.services import COACH_CANNOT_JOIN, CoachingError
from coaching.visibility import hidden_work
from drills.critique.services import grade_critique
from drills.models import Attempt, BankItem, Card, CritiqueAttempt, ProblemInstance, ReviewLog, Round
from drills.problems.grading import submit
from drills.reviews.services import record_open_review
from drills.rounds import services as rounds

pytestmark = pytest.mark.django_db


@pytest.fixture
def autumn(world):
    cohort = services.create_cohort(world.dave, "Autumn")
    services.accept_invitation(services.invite(cohort), world.demo, now=world.T0)
    return cohort


def _assign(question_set, coach, cohort, capture, now, **extra):
    with capture(execute=True):
        return services.assign(question_set, coach, cohort=cohort, due_at=now + timedelta(days=3), now=now, **extra)


def _both_assign(world, autumn, item, capture):
    """carol assigns ``item`` to Spring at T0, dave to Autumn a minute later, and demo starts dave's at T0+5 min:
    (carol's assignment, carol's entry, dave's assignment)."""
    carol_set = QuestionSet.objects.create(coach=world.coach, title=f"Carol {item.kind}")
    carol_entry = services.add_entry(carol_set, item=item)
    mine = _assign(carol_set, world.coach, world.cohort, capture, world.T0)
    dave_set = QuestionSet.objects.create(coach=world.dave, title=f"Dave {item.kind}")
    dave_entry = services.add_entry(dave_set, item=item)
    daves = _assign(dave_set, world.dave, autumn, capture, world.T0 + timedelta(minutes=1))
    services.start_entry(daves, world.demo, dave_entry, now=world.T0 + timedelta(minutes=5))
    return mine, carol_entry, daves


def _csv_rows(client, url, table):
    return list(csv.reader(io.StringIO(client.get(url, {"export": table}).content.decode())))


def test_an_entry_someone_started_cannot_be_removed(world, h, autumn, client, django_capture_on_commit_callbacks):
    dave_set = QuestionSet.objects.create(coach=world.dave, title="Dave week")
    entry = services.add_entry(dave_set, item=world.ladder, fixed_inputs={"model": "llama-3.1-8b"})
    assignment = _assign(dave_set, world.dave, autumn, django_capture_on_commit_callbacks, world.T0)
    url = services.start_entry(assignment, world.demo, entry, now=world.T0)
    problem = ProblemInstance.objects.get(pk=int(url.rstrip("/").split("/")[-1]))
    first = submit(problem, world.demo, {key: "1" for key in h.answers(problem)}).attempt
    second = submit(problem, world.demo, h.answers(problem)).attempt

    client.force_login(world.dave)
    response = client.post(reverse("coaching:entry_remove", args=[dave_set.pk, entry.pk]), follow=True)
    assert "1 candidate already started this entry, so it stays" in response.content.decode()
    assert dave_set.entries.filter(pk=entry.pk).exists() and Work.objects.filter(entry=entry).count() == 1
    with pytest.raises(CoachingError):
        services.remove_entry(entry)

    client.force_login(world.coach)
    for attempt in (first, second):
        assert client.get(reverse("coaching:attempt", args=[attempt.pk])).status_code == 404

    # An entry nobody started still goes, and the rest are renumbered.
    untouched = services.add_entry(dave_set, item=world.question)
    services.remove_entry(untouched)
    assert list(dave_set.entries.values_list("position", flat=True)) == [1]


def test_a_regrade_of_the_other_coachs_timed_round_stays_hidden(world, h, autumn, client,
                                                                django_capture_on_commit_callbacks):
    dave_set = QuestionSet.objects.create(coach=world.dave, title="Dave timed")
    services.add_entry(dave_set, item=world.ladder, fixed_inputs={"model": "llama-3.1-8b"})
    now = timezone.now()
    assignment = _assign(dave_set, world.dave, autumn, django_capture_on_commit_callbacks,
                         now - timedelta(minutes=1), time_limit_s=3600)
    item = services.start_timed(assignment, world.demo, now=now).items.get()
    data = QueryDict(mutable=True)
    data.update({key: "1" for key in h.answers(item.problem)})
    rounds.submit(world.demo, item.pk, item.version, data, now)
    item.refresh_from_db()
    client.force_login(world.demo)  # the round report links the problem: demo grades it again on the drill page
    client.post(item.problem.get_absolute_url(), {**h.answers(item.problem), "blanks": "count"})
    regrade = Attempt.objects.filter(user=world.demo, problem=item.problem).exclude(pk=item.attempt_id).get()

    client.force_login(world.coach)
    assert client.get(reverse("coaching:attempt", args=[item.attempt_id])).status_code == 404
    assert client.get(reverse("coaching:attempt", args=[regrade.pk])).status_code == 404
    rows = _csv_rows(client, reverse("coaching:candidate", args=[world.demo.pk]), "attempts")
    assert rows[1:] == []  # not even a practice row hinting at an earlier attempt
    client.force_login(world.dave)  # dave sees both, the re-grade as practice
    rows = _csv_rows(client, reverse("coaching:candidate", args=[world.demo.pk]), "attempts")
    assert [row[5] for row in rows[1:]] == ["no: practice re-grade", "yes"]


def test_an_answer_written_for_the_other_coach_completes_none_of_mine(world, autumn, client,
                                                                       django_capture_on_commit_callbacks):
    shared = BankItem.objects.create(slug="shared-q", kind=BankItem.OPEN, published=True, prompt="Why page?",
                                     model_answer="Blocks.", rubric=["a", "b", "c"])
    mine, _entry, daves = _both_assign(world, autumn, shared, django_capture_on_commit_callbacks)
    card = Card.objects.get(user=world.demo, item=shared)
    record_open_review(world.demo, card.pk, card.version, None, answer="for dave", ticked=[0, 1],
                       now=world.T0 + timedelta(minutes=6), started_at=world.T0 + timedelta(minutes=5, seconds=17))
    log = ReviewLog.objects.get(user=world.demo, item=shared)

    client.force_login(world.coach)
    assert client.get(reverse("coaching:review", args=[log.pk])).status_code == 404
    page = client.get(reverse("coaching:assignment", args=[mine.pk])).content.decode()
    assert reverse("coaching:review", args=[log.pk]) not in page
    demo_items = next(row for row in _csv_rows(client, reverse("coaching:assignment", args=[mine.pk]), "items")
                      if row[0] == "demo")
    assert demo_items[1:] == ["Late", "", ""]  # past its due date and not done: nothing counted for carol
    demo_times = next(row for row in _csv_rows(client, reverse("coaching:assignment", args=[mine.pk]), "times")
                      if row[0] == "demo")
    assert demo_times[1:] == ["", ""]
    work = _csv_rows(client, reverse("coaching:candidate", args=[world.demo.pk]), "assignments")
    assert [row[2:5] for row in work[1:] if row[0] == "Carol open"] == [["Late", "0/1", ""]]

    client.force_login(world.dave)  # for dave it is done: 2 of 3 rubric points, 43 s
    dave_items = next(row for row in _csv_rows(client, reverse("coaching:assignment", args=[daves.pk]), "items")
                      if row[0] == "demo")
    assert dave_items[1:] == ["Done", "67%", "67%"]


def test_a_coach_cannot_join_another_coachs_cohort(world, client):
    client.force_login(world.dave)
    url = reverse("coaching:invitation", args=[world.invitation.token])
    assert "Coach accounts cannot join a cohort" in client.get(url).content.decode()
    response = client.post(url, follow=True)
    assert COACH_CANNOT_JOIN.replace("'", "&#x27;") in response.content.decode()
    assert not world.cohort.memberships.filter(candidate=world.dave).exists()
    assert client.get(reverse("reviews:bank_item", args=[world.question.slug])).status_code == 404
    with pytest.raises(CoachingError, match="Coaches cannot join"):
        services.accept_invitation(world.invitation, world.sam)


def test_a_member_made_coach_no_longer_reads_the_cohort_coachs_unpublished_questions(world, client):
    client.force_login(world.demo)
    assert client.get(reverse("reviews:bank_item", args=[world.question.slug])).status_code == 200
    world.demo.groups.add(world.dave.groups.get())  # promoted to coach while still in carol's cohort
    client.force_login(world.demo)
    assert client.get(reverse("reviews:bank_item", args=[world.question.slug])).status_code == 404


def test_starting_my_own_entry_later_does_not_reveal_the_answer_written_for_the_other_coach(
        world, autumn, client, django_capture_on_commit_callbacks):
    shared = BankItem.objects.create(slug="shared-q", kind=BankItem.OPEN, published=True, prompt="Why page?",
                                     model_answer="Blocks.", rubric=["a", "b", "c"])
    mine, carol_entry, _daves = _both_assign(world, autumn, shared, django_capture_on_commit_callbacks)
    card = Card.objects.get(user=world.demo, item=shared)
    record_open_review(world.demo, card.pk, card.version, None, answer="written for dave", ticked=[0, 1],
                       now=world.T0 + timedelta(minutes=6))
    for_dave = ReviewLog.objects.get(user=world.demo, item=shared)
    services.start_entry(mine, world.demo, carol_entry, now=world.T0 + timedelta(minutes=30))  # a start, no answer

    client.force_login(world.coach)
    assert client.get(reverse("coaching:review", args=[for_dave.pk])).status_code == 404
    row = next(r for r in _csv_rows(client, reverse("coaching:assignment", args=[mine.pk]), "items") if r[0] == "demo")
    assert row[1:3] == ["Late", "started"]  # started for carol, not answered for her

    # Answered again after carol's start: that answer is for both coaches, and it completes carol's entry.
    card.refresh_from_db()
    record_open_review(world.demo, card.pk, card.version, None, answer="written after both started", ticked=[0],
                       now=world.T0 + timedelta(minutes=40))
    for_both = ReviewLog.objects.get(user=world.demo, item=shared, answer="written after both started")
    assert client.get(reverse("coaching:review", args=[for_both.pk])).status_code == 200
    row = next(r for r in _csv_rows(client, reverse("coaching:assignment", args=[mine.pk]), "items") if r[0] == "demo")
    assert row[1:3] == ["Done", "33%"]


def test_a_critique_written_for_the_other_coach_completes_none_of_mine(world, autumn, client,
                                                                        django_capture_on_commit_callbacks):
    details = {"title": "Shared critique", "lines": ["a", "b", "c"], "planted": [{"line": 2, "category": "kv"}]}
    critique = BankItem.objects.create(slug="shared-crit", kind=BankItem.CRITIQUE, published=True,
                                       prompt="Find it", model_answer="x", details=details)
    mine, _entry, daves = _both_assign(world, autumn, critique, django_capture_on_commit_callbacks)
    attempt = CritiqueAttempt.record(critique, world.demo, grade_critique(details, {2: "kv"}))
    CritiqueAttempt.objects.filter(pk=attempt.pk).update(submitted_at=world.T0 + timedelta(minutes=6))

    assert hidden_work(world.coach, [world.demo.pk]).critique_ids == {attempt.pk}
    client.force_login(world.coach)
    row = next(r for r in _csv_rows(client, reverse("coaching:assignment", args=[mine.pk]), "items") if r[0] == "demo")
    assert row[1:3] == ["Late", ""]
    client.force_login(world.dave)
    row = next(r for r in _csv_rows(client, reverse("coaching:assignment", args=[daves.pk]), "items") if r[0] == "demo")
    assert row[1:3] == ["Done", "100%"]


def test_a_member_made_coach_receives_no_assignment_of_the_cohort(world, client, django_capture_on_commit_callbacks):
    secret = "Carol secret prompt 4d2e about MLA latents"
    world.demo.groups.add(world.dave.groups.get())  # promoted to coach while still in carol's cohort
    question = services.save_question(world.coach, {"prompt": secret, "model_answer": "m", "rubric": ["x"],
                                                    "tags": [], "difficulty": 2})
    new_set = QuestionSet.objects.create(coach=world.coach, title="New week")
    services.add_entry(new_set, item=question)
    now = timezone.now()
    plain = _assign(new_set, world.coach, world.cohort, django_capture_on_commit_callbacks, now)
    timed = _assign(new_set, world.coach, world.cohort, django_capture_on_commit_callbacks, now, time_limit_s=600)

    assert services.recipients(plain) == [world.demo2]  # demo2 is still a candidate
    assert not Card.objects.filter(user=world.demo, item=question).exists()
    client.force_login(world.demo)
    assert client.get(reverse("coaching:my_assignment", args=[plain.pk])).status_code == 404
    assert secret not in client.get(reverse("coaching:my_assignments")).content.decode()
    assert client.post(reverse("coaching:start_timed", args=[timed.pk])).status_code == 404
    assert not Round.objects.filter(user=world.demo).exists()


def test_the_deck_export_leaves_out_the_title_of_an_item_no_longer_readable(world, client):
    world.demo.groups.add(world.dave.groups.get())  # made a coach while in carol's cohort
    services.leave_cohort(world.cohort, world.demo2.pk)  # left the cohort
    services.save_question(world.coach, {"prompt": "EDITED-SECRET-9a1 new wording", "model_answer": "m",
                                         "rubric": ["r"], "tags": [], "difficulty": 2}, item=world.question)
    for user in (world.demo, world.demo2):
        client.force_login(user)
        assert client.get(reverse("reviews:bank_item", args=[world.question.slug])).status_code == 404
        rows = list(csv.reader(io.StringIO(client.get(reverse("reviews:export_deck")).content.decode())))
        row = next(r for r in rows if r[0] == world.question.slug)  # the card and its history stay theirs
        assert row[2] == "" and "EDITED-SECRET-9a1" not in str(rows)
    client.force_login(world.eve)  # never in the cohort: no card at all
    services.accept_invitation(world.invitation, world.eve)
    rows = list(csv.reader(io.StringIO(client.get(reverse("reviews:export_deck")).content.decode())))
    assert next(r for r in rows if r[0] == world.question.slug)[2].startswith("EDITED-SECRET-9a1")  # a member reads it

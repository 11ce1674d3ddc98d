"""The coach's whole flow: author, build a set, assign to a cohort of two, watch the dashboard, export."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse

from calculators.engine.procedures.base import format_number
from coaching import services
from coaching.models import Assignment, Notice, QuestionSet, SetEntry
from drills.models import Attempt, BankItem, Card
from drills.reviews.services import record_open_review
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FIXED = {"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"}


def _rows(response) -> list[list[str]]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_coach_authors_builds_assigns_and_watches(client, django_capture_on_commit_callbacks, settings, h):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    coach = UserFactory(username="carol", role="coach")
    demo, demo2 = (UserFactory(username=name, role="candidate") for name in ("demo", "demo2"))
    h.templates()
    client.force_login(coach)

    # Author an open question (Markdown preview is sanitised).
    preview = client.post(reverse("coaching:question_preview"),
                          {"field": "prompt", "prompt": "**Bold** <script>alert(1)</script>"},
                          headers={"HX-Request": "true"})
    assert b"<strong>Bold</strong>" in preview.content and b"<script" not in preview.content
    response = client.post(reverse("coaching:question_new"), {
        "prompt": "Why does GQA shrink the KV cache?", "model_answer": "Fewer **KV heads**.",
        "rubric": "KV heads not query heads\nFactor 2 for K and V", "tags": "kv-cache, gqa",
        "misconceptions": "query-heads-for-kv-heads", "difficulty": "2"})
    assert response.status_code == 302
    question = BankItem.objects.get(author=coach)
    assert not question.published and question.rubric == ["KV heads not query heads", "Factor 2 for K and V"]
    assert question.misconceptions == ["query-heads-for-kv-heads"] and question.details["tags"] == ["kv-cache", "gqa"]

    # Build a set: the question, then the ladder fixed to the 70B on an H200.
    client.post(reverse("coaching:set_new"), {"title": "Week 1", "instructions": "Carefully."})
    question_set = QuestionSet.objects.get(coach=coach)
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    client.post(reverse("coaching:set_add", args=[question_set.pk]), {"item": question.pk})
    client.post(reverse("coaching:set_add", args=[question_set.pk]),
                {"item": ladder.pk, "fixed_inputs": '{"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"}'})
    entries = list(question_set.entries.all())
    assert [e.item for e in entries] == [question, ladder] and entries[1].fixed_inputs == FIXED

    # A cohort; both demo candidates accept the invitation link.
    client.post(reverse("coaching:cohort_new"), {"name": "Spring"})
    cohort = coach.coached_cohorts.get()
    link = cohort.invitations.get().get_absolute_url()
    for user in (demo, demo2):
        other = client.__class__()
        other.force_login(user)
        assert other.post(link).status_code == 302
    assert set(cohort.members.all()) == {demo, demo2}

    # Assign to the cohort: items join both decks, one e-mail each after commit.
    due = (h.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("coaching:set_assign", args=[question_set.pk]),
                               {"target": f"cohort:{cohort.pk}", "due_at": due})
    assert response.status_code == 302, response.content
    assignment = Assignment.objects.get()
    assert sorted(m.to[0] for m in mail.outbox) == ["demo2@example.com", "demo@example.com"]
    assert all("Week 1" in m.subject for m in mail.outbox)
    assert (Card.objects.filter(user=demo, item=question).exists()
            and Card.objects.filter(user=demo2, item=ladder).exists())

    page = client.get(reverse("coaching:dashboard"))
    assert page.content.decode().count("Not started 0/2") == 2

    # demo does the ladder (right answers) and the open question.
    candidate = client.__class__()
    candidate.force_login(demo)
    listing = candidate.get(reverse("coaching:my_assignments")).content.decode()
    assert "Week 1" in listing and "Not started" in listing
    go = candidate.post(reverse("coaching:start_entry", args=[assignment.pk, entries[1].pk]))
    problem_url = go["Location"]
    from drills.models import ProblemInstance

    problem = ProblemInstance.objects.get(pk=int(problem_url.rstrip("/").split("/")[-1]))
    assert problem.inputs["model"] == "llama-3.1-70b" and problem.inputs["gpu"] == "h200-sxm-141gb"
    answers = h.answers(problem)
    answers["kv_bytes_per_token"] = "1 KiB"  # one step wrong: the coach will see exactly this
    # Each request's commit bumps the coach's dashboard version (coaching.dashboard_cache): the test's
    # transaction never commits, so the callbacks run here.
    with django_capture_on_commit_callbacks(execute=True):
        candidate.post(problem_url, answers)
    attempt = Attempt.objects.get(user=demo)
    assert attempt.score < 1
    assert "In progress" in candidate.get(reverse("coaching:my_assignments")).content.decode()
    go = candidate.post(reverse("coaching:start_entry", args=[assignment.pk, entries[0].pk]))
    card = Card.objects.get(user=demo, item=question)
    assert go["Location"] == reverse("reviews:card", args=[card.pk])
    with django_capture_on_commit_callbacks(execute=True):
        record_open_review(demo, card.pk, card.version, None, answer="GQA shares K/V heads across query heads.",
                           ticked=[0])
    assert "Done" in candidate.get(reverse("coaching:my_assignments")).content.decode()

    page = client.get(reverse("coaching:dashboard")).content.decode()
    assert "Done 2/2" in page and "Not started 0/2" in page

    # Export the cohort table and the per-item table as CSV.
    rows = _rows(client.get(reverse("coaching:dashboard"), {"export": f"cohort-{cohort.pk}"}))
    assert rows[0][0] == "Candidate" and rows[0][1].startswith("Week 1")
    by_name = {row[0]: row[1] for row in rows[1:]}
    assert by_name["demo"].startswith("Done 2/2") and by_name["demo2"] == "Not started 0/2"
    rows = _rows(client.get(reverse("coaching:assignment", args=[assignment.pk]), {"export": "items"}))
    demo_row = next(row for row in rows if row[0] == "demo")
    assert demo_row[1] == "Done" and demo_row[2] == "50%" and demo_row[3] == f"{attempt.score:.0%}"

    # Drill into the attempt: exactly what was typed, and each step's verdict.
    detail = client.get(reverse("coaching:attempt", args=[attempt.pk])).content.decode()
    assert "1 KiB" in detail and "kv_bytes_per_token" in detail
    # The score as the candidate's drill page and the CSV above show it (a percentage, not a fraction).
    assert f"score {attempt.score:.0%}".replace("%", " %") in detail and attempt.score < 1
    # Values in the site's display rounding, as the drill page shows them, not the stored float's digits.
    step = attempt.steps.get(key="kv_bytes_per_token")
    assert f'data-label="Expected">{format_number(step.expected, step.unit)}</td>' in detail
    assert f'data-label="Read as">{format_number(1024, "B")}</td>' in detail and step.parsed_value == 1024
    assert f"{step.expected!r}" not in detail
    answer = client.get(reverse("coaching:review", args=[card.logs.get().pk])).content.decode()
    assert "GQA shares K/V heads" in answer

    # Candidate page: ladder steps and misconception tables are there.
    page = client.get(reverse("coaching:candidate", args=[demo.pk])).content.decode()
    assert "Score per ladder step" in page and "Misconceptions" in page


def test_the_authored_item_is_invisible_to_an_unrelated_candidate(client, world):
    slug = world.question.slug
    client.force_login(world.eve)
    assert slug not in client.get(reverse("reviews:bank")).content.decode()
    assert client.get(reverse("reviews:bank_item", args=[slug])).status_code == 404
    assert client.post(reverse("reviews:deck_add"), {"item": slug}).status_code == 404
    client.force_login(world.demo)
    assert client.get(reverse("reviews:bank_item", args=[slug])).status_code == 200
    assert slug in client.get(reverse("reviews:bank"), {"q": "GQA"}).content.decode()


def test_a_candidate_who_leaves_loses_the_coach_items_and_the_coach_loses_them(client, world):
    services.leave_cohort(world.cohort, world.demo.pk)
    client.force_login(world.demo)
    assert client.get(reverse("reviews:bank_item", args=[world.question.slug])).status_code == 404
    card = Card.objects.get(user=world.demo, item=world.question)
    assert client.get(reverse("reviews:card", args=[card.pk])).status_code == 404
    assert client.get(reverse("coaching:my_assignment", args=[world.assignment.pk])).status_code == 404
    client.force_login(world.coach)
    assert client.get(reverse("coaching:candidate", args=[world.demo.pk])).status_code == 404


def test_assigning_mails_after_commit_only(world, settings, django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox.clear()
    extra = QuestionSet.objects.create(coach=world.coach, title="Extra")  # world.set is the cohort's already
    services.add_entry(extra, item=world.question)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.assign(extra, world.coach, candidate=world.demo, due_at=world.T0 + timedelta(days=5), now=world.T0)
    # Two callbacks: the mail's task and the coach's dashboard version (coaching.dashboard_cache).
    assert mail.outbox == [] and len(callbacks) == 2
    for callback in callbacks:
        callback()
    assert [m.to for m in mail.outbox] == [["demo@example.com"]]
    assert "/assignments/" in mail.outbox[0].body
    # The task is idempotent: a retry or a duplicate does not mail twice.
    from coaching.tasks import send_assignment_notice

    latest = Assignment.objects.latest("pk")
    assert send_assignment_notice.delay(latest.pk, world.demo.pk, Notice.ASSIGNED).get() is False
    assert len(mail.outbox) == 1


def test_reminders_go_out_the_day_before(world, settings, django_capture_on_commit_callbacks):
    from coaching.tasks import send_due_reminders

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox.clear()
    # Due T0 + 2 days (4 March 08:00 UTC): nothing on 2 March, the reminder on 3 March, once.
    assert services.reminders_due(world.T0) == []
    day_before = world.T0 + timedelta(days=1, hours=-2)
    with django_capture_on_commit_callbacks(execute=True):
        pairs = send_due_reminders.delay(day_before.isoformat()).get()
    assert sorted(c for _, c in pairs) == sorted([world.demo.pk, world.demo2.pk])
    assert sorted(m.to[0] for m in mail.outbox) == ["demo2@example.com", "demo@example.com"]
    assert all(m.subject.startswith("Due tomorrow") for m in mail.outbox)
    with django_capture_on_commit_callbacks(execute=True):
        assert send_due_reminders.delay((day_before + timedelta(hours=1)).isoformat()).get() == []
    assert len(mail.outbox) == 2


def test_no_reminder_for_work_already_done(world, h):
    card = Card.objects.get(user=world.demo, item=world.question)
    record_open_review(world.demo, card.pk, card.version, None, answer="x", ticked=[0, 1], now=world.T0)
    problem_url = services.start_entry(world.assignment, world.demo, world.set.entries.get(item=world.ladder),
                                       now=world.T0)
    from drills.models import ProblemInstance
    from drills.problems.grading import grade_problem
    from drills.problems.storage import store_attempt

    problem = ProblemInstance.objects.get(pk=int(problem_url.rstrip("/").split("/")[-1]))
    store_attempt(problem, world.demo, grade_problem(problem, h.answers(problem)), None)
    pairs = services.reminders_due(world.T0 + timedelta(days=1))
    assert [c for _, c in pairs] == [world.demo2.pk]


def test_status_goes_late_after_the_due_time(world):
    assignment = Assignment.objects.prefetch_related("question_set__entries__item").get(pk=world.assignment.pk)
    later = world.T0 + timedelta(days=3)
    progress = services.progress_for([(assignment, world.demo)], later)[(assignment.pk, world.demo.pk)]
    assert progress.status == services.LATE


def test_a_time_limited_assignment_is_one_timed_round(world, client):
    timed = services.assign(world.set, world.coach, candidate=world.demo2, due_at=world.T0 + timedelta(days=4),
                            time_limit_s=1200, now=world.T0)
    client.force_login(world.demo2)
    response = client.post(reverse("coaching:start_timed", args=[timed.pk]))
    from drills.models import Round

    round_ = Round.objects.get(user=world.demo2)
    assert response["Location"] == round_.get_absolute_url()
    assert (round_.deadline - round_.started_at).total_seconds() == 1200
    assert [i.item_id for i in round_.items.all()] == [world.question.pk, world.ladder.pk]
    assert round_.items.get(position=2).problem.inputs["model"] == "llama-3.1-70b"
    # Starting again returns the same round.
    assert client.post(reverse("coaching:start_timed", args=[timed.pk]))["Location"] == round_.get_absolute_url()
    assert SetEntry.objects.count() == 2


def test_adding_an_item_with_a_malformed_id_is_a_form_error_not_a_500(coach_client, coach):
    from coaching.models import QuestionSet, SetEntry

    question_set = QuestionSet.objects.create(coach=coach, title="Set")
    for field, value in (("item", "abc"), ("round", "nope"), ("item", "")):
        response = coach_client.post(f"/coach/sets/{question_set.pk}/entries/", {field: value})
        assert response.status_code == 200 and b"invalid-feedback" in response.content  # a form error
    assert not SetEntry.objects.filter(question_set=question_set).exists()


def test_a_timed_set_with_the_follow_ups_preset_asks_them_after_its_problem(world, client):
    # A coach's set may hold the "Follow-ups" round preset (issue 33 item 1): its problem, then its follow-ups.
    from drills.models import Round
    from drills.rounds.presets import preset

    followups = QuestionSet.objects.create(coach=world.coach, title="Follow-ups week")
    services.add_entry(followups, round_template=preset("followups"))
    timed = services.assign(followups, world.coach, candidate=world.demo2, due_at=world.T0 + timedelta(days=4),
                            time_limit_s=1200, now=world.T0)
    client.force_login(world.demo2)
    client.post(reverse("coaching:start_timed", args=[timed.pk]))
    items = list(Round.objects.get(user=world.demo2).items.order_by("position"))
    assert items[0].kind == "problem" and 2 <= len(items) - 1 <= 3
    assert [(i.kind, i.followup, i.problem_id) for i in items[1:]] == [
        ("followup", n, items[0].problem_id) for n in range(len(items) - 1)]


def test_a_timed_ladder_entry_reads_its_own_item_not_a_follow_up_on_it(world):
    # The set's ladder and a copy of the Follow-ups preset drawing ladders: the preset's ladder and its follow-ups
    # share the ladder's bank item, and the ladder entry's result is its own item's grade (issue 33 item 1).
    from drills.rounds.presets import preset
    from drills.rounds.services import close

    ladders = preset("followups").copy_for(world.coach, slots=[{"family": "ladder", "followups": 2}])
    mixed = QuestionSet.objects.create(coach=world.coach, title="Ladder and its follow-ups")
    services.add_entry(mixed, item=world.ladder, fixed_inputs=FIXED)
    services.add_entry(mixed, round_template=ladders)
    timed = services.assign(mixed, world.coach, candidate=world.demo2, due_at=world.T0 + timedelta(days=4),
                            time_limit_s=1200, now=world.T0)
    round_ = services.start_timed(timed, world.demo2, now=world.T0)
    first = round_.items.get(position=1)
    first.answers = {step.key: repr(step.value) for step in first.problem.solve().steps}
    first.save()
    close(round_, world.T0 + timedelta(minutes=5))
    assert round_.items.filter(kind="followup").count() >= 2  # graded 0: nothing was marked
    assignment = Assignment.objects.prefetch_related("question_set__entries__item").get(pk=timed.pk)
    progress = services.progress_for([(assignment, world.demo2)], world.T0 + timedelta(minutes=6))
    result = progress[(timed.pk, world.demo2.pk)].results[0]
    assert result.score == pytest.approx(1.0)

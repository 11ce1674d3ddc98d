"""A follow-up chain as an item of a coach's set (issue 33 item 1): "a problem of family F with a chain of N
follow-ups". Untimed, the candidate sits it as a short round (the problem, then N follow-ups); timed, it joins the
assignment's round. Either way it is done once the chain is answered, and the coach's dashboard shows each
candidate's follow-up marks and values.

The change each follow-up draws depends on the catalog, so the answers are read from the engine
(``followup_link``); the engine's hand-derived values are in tests/engine/test_followup.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from coaching import services
from coaching.dashboard import FollowUpScores, followup_scores, overview
from coaching.models import QuestionSet, SetEntry
from drills.models import FollowUpAttempt, Round
from drills.rounds.services import followup_link

pytestmark = pytest.mark.django_db


def _chain_set(world, followups: int = 3) -> QuestionSet:
    question_set = QuestionSet.objects.create(coach=world.coach, title="Chains")
    services.add_entry(question_set, item=world.ladder, followups=followups)
    return question_set


def _sit(client, round_: Round, h, wrong_from: int | None = None, start: int = 1) -> None:
    """Answer the items of ``round_`` in order from position ``start``: the problem right, each follow-up right
    (from ``wrong_from`` on, left as shown: nothing ticked, nothing typed)."""
    for item in round_.items.filter(position__gte=start).order_by("position"):
        if item.is_worked:
            data = h.answers(item.problem)
        else:
            link = followup_link(item)
            right = wrong_from is None or item.followup < wrong_from
            data = {"present_marks": "1", **({"marked": list(link.moves),
                                               **{f"value-{k}": repr(link.result.values[k]) for k in link.moves}}
                                              if right else {})}
        response = client.post(reverse("rounds:submit", args=[round_.pk, item.position]),
                               {"confirm": "yes", "version": item.version, **data})
        assert response.status_code in (200, 302)


def test_a_coach_adds_a_problem_with_a_chain_of_follow_ups(world, client):
    client.force_login(world.coach)
    coach_client = client
    question_set = QuestionSet.objects.create(coach=world.coach, title="Chains")
    response = coach_client.post(reverse("coaching:set_add", args=[question_set.pk]),
                                 {"item": world.ladder.pk, "fixed_inputs": "", "followups": "3"})
    assert response.status_code == 302
    entry = SetEntry.objects.get(question_set=question_set)
    assert (entry.followups, entry.kind) == (3, "followups")
    assert entry.label.endswith(", then a chain of 3 follow-ups")
    page = coach_client.get(question_set.get_absolute_url()).content.decode()
    assert "A chain of 3: the interviewer changes one input 3 times" in page and entry.label in page
    # The same template without a chain is another entry; the same chain again is refused, as is a chain of 5
    # or one on an open question.
    services.add_entry(question_set, item=world.ladder)
    with pytest.raises(services.CoachingError, match="already holds"):
        services.add_entry(question_set, item=world.ladder, followups=3)
    with pytest.raises(services.CoachingError, match="2 to 4 follow-ups"):
        services.add_entry(question_set, item=world.ladder, followups=5)
    with pytest.raises(services.CoachingError, match="2 to 4 follow-ups"):
        services.add_entry(question_set, item=world.question, followups=2)


def test_untimed_the_chain_is_a_short_round_done_once_answered(world, client, h):
    question_set = _chain_set(world)
    assignment = services.assign(question_set, world.coach, candidate=world.demo, due_at=h.now() + timedelta(days=2),
                                 now=h.now() - timedelta(minutes=1))
    client.force_login(world.demo)
    page = client.get(reverse("coaching:my_assignment", args=[assignment.pk])).content.decode()
    assert "follow-ups</span>" in page and "then a chain of 3 follow-ups" in page
    entry = question_set.entries.get()
    started = client.post(reverse("coaching:start_entry", args=[assignment.pk, entry.pk]))
    round_ = Round.objects.get(user=world.demo)
    assert started["Location"] == round_.get_absolute_url()
    items = list(round_.items.order_by("position"))
    assert items[0].kind == "problem" and items[0].item == world.ladder
    assert [(i.kind, i.followup) for i in items[1:]] == [("followup", n) for n in range(len(items) - 1)]
    assert 2 <= len(items) - 1 <= 3

    def progress():
        return services.progress_for([(assignment, world.demo)])[(assignment.pk, world.demo.pk)]

    assert progress().status == services.IN_PROGRESS  # the problem alone is not the chain
    _sit(client, round_, h, wrong_from=1)
    round_.refresh_from_db()
    assert round_.status != Round.ACTIVE
    result = progress().results[0]
    # The problem right, the first follow-up right, the rest left unanswered (0 each): the round's score.
    assert result.done and result.score == pytest.approx(round_.score) and 0 < result.score < 1
    assert progress().status == services.DONE
    assert FollowUpAttempt.objects.filter(user=world.demo).count() == len(items) - 1


def test_timed_the_chain_joins_the_round_and_counts_done_when_answered(world, client, h):
    question_set = _chain_set(world, followups=2)
    assignment = services.assign(question_set, world.coach, candidate=world.demo, due_at=h.now() + timedelta(days=2),
                                 time_limit_s=1800, now=h.now() - timedelta(minutes=1))
    client.force_login(world.demo)
    client.post(reverse("coaching:start_timed", args=[assignment.pk]))
    round_ = Round.objects.get(user=world.demo)
    items = list(round_.items.order_by("position"))
    assert [i.kind for i in items] == ["problem", "followup", "followup"]
    first = items[0]
    client.post(reverse("rounds:submit", args=[round_.pk, 1]), {"confirm": "yes", "version": first.version,
                                                                **h.answers(first.problem)})
    result = services.progress_for([(assignment, world.demo)])[(assignment.pk, world.demo.pk)].results[0]
    assert not result.done  # the problem answered, the chain not yet
    _sit(client, round_, h, start=2)
    result = services.progress_for([(assignment, world.demo)])[(assignment.pk, world.demo.pk)].results[0]
    assert result.done and result.score == pytest.approx(1.0)


def test_the_dashboard_shows_each_candidates_follow_up_marks_and_values(world, client, h):
    question_set = _chain_set(world, followups=2)
    assignment = services.assign(question_set, world.coach, candidate=world.demo, due_at=h.now() + timedelta(days=2),
                                 now=h.now() - timedelta(minutes=1))
    client.force_login(world.demo)
    client.post(reverse("coaching:start_entry", args=[assignment.pk, question_set.entries.get().pk]))
    _sit(client, Round.objects.get(user=world.demo), h, wrong_from=1)
    stored = list(FollowUpAttempt.objects.filter(user=world.demo).order_by("position"))
    assert [f.marks_score for f in stored][0] == 1.0 and stored[0].values_score == 1.0
    # The second link left as shown (nothing ticked, nothing typed) is unanswered: no mark right, no value right
    # (its still steps' marks no longer count as right), so the dashboard reads marks 50 %, not the 1/2 + 1/2 of
    # the still share it read before.
    assert (stored[1].marks_score, stored[1].values_score, stored[1].score) == (0.0, 0.0, 0.0)
    assert {mark["verdict"] for mark in stored[1].grade["marks"]} == {"unanswered"}
    scores = followup_scores([world.demo.pk, world.demo2.pk])
    assert scores[world.demo.pk] == FollowUpScores(2, 0.5, 0.5)
    assert world.demo2.pk not in scores
    summary = next(t for t in overview(world.coach).tables if t.name == "candidates")
    column = summary.headers.index("Follow-ups (marks · new values right)")
    row = next(r for r in summary.rows if r[0].text == "demo")
    assert row[column].text == "marks 50% · values 50% (of 2)"

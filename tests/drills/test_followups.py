"""The drill page's follow-ups (issue 33 item 1): after grading, mark what moves, then the new values.

Which change a seed draws depends on the catalog, so these tests read the drawn link from the engine
(``chain``) and answer it; the engine's hand-derived values are in tests/engine/test_followup.py. The
reference ladder's right answers (tests/drills/problems/test_drills.py's derivation): 79.65, 71.68, 14.96, 53.73 GiB,
131,072 B, 1.00 GiB, 53 and 191 users.
"""

from __future__ import annotations

import html

import pytest
from django.test import Client
from django.urls import reverse

from drills.followups.services import chain
from drills.models import FollowUpAttempt
from tests.drills.problems.test_drills import make_problem

RIGHT = {"card_gib": "79.65", "usable_gib": "71.68", "weights_gib": "14.96", "kv_budget_gib": "53.73",
         "kv_bytes_per_token": "131072", "per_user_gib": "1", "users_worst_case": "53", "users_paged": "191"}


def _exact(value: float) -> str:
    return repr(float(value))


def _text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def graded(candidate):
    """Alice's reference ladder, graded all right on the page."""
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    response = client.post(problem.get_absolute_url(), RIGHT)
    assert response.status_code == 200
    return client, problem, response


def test_grading_a_problem_shows_the_first_follow_up(graded):
    client, problem, response = graded
    link = chain(problem)[0]
    text = _text(response)
    assert 'id="followup"' in text
    assert link.change.sentence in text
    assert "First: which steps move?" in text
    assert f'action="{reverse("drills:followup", args=["ladder", problem.pk])}"' in text


def test_htmx_grading_sends_the_follow_up_out_of_band(candidate):
    client = Client(headers={"HX-Request": "true"})
    client.force_login(candidate)
    problem = make_problem(seed=5)
    body = client.post(problem.get_absolute_url(), RIGHT).content.decode().strip()
    assert body.startswith('<form id="answers"')
    assert '<section id="followup" class="card shadow-sm mt-3" hx-swap-oob="true"' in body


def test_a_right_follow_up_is_graded_and_stored(graded):
    client, problem, _ = graded
    link = chain(problem)[0]
    url = reverse("drills:followup", args=["ladder", problem.pk])
    asked = client.post(url, {"phase": "marks", "link": "0", "marked": list(link.moves)})
    assert FollowUpAttempt.objects.count() == 0  # the marks alone store nothing
    text = _text(asked)
    assert "Then: the new values" in text
    for key in link.moves:
        assert f'name="value-{key}"' in text
    assert text.count('class="step-tolerance text-nowrap"') == len(link.moves)  # beside each box, as on the drill
    answers = {f"value-{key}": _exact(link.result.values[key]) for key in link.moves}
    done = client.post(url, {"phase": "values", "link": "0", "marked": list(link.moves), **answers})
    assert "Score 100 %" in _text(done)
    stored = FollowUpAttempt.objects.get()
    assert (stored.user, stored.problem, stored.position, stored.score) == (problem.created_by, problem, 0, 1.0)
    assert stored.marked == list(link.moves)
    assert stored.change["after"] == link.change.after
    assert stored.attempt == problem.attempts.get()
    # the next link starts from this one's values
    second = client.get(url, {"link": "1"})
    assert chain(problem)[1].change.sentence in _text(second)


def test_a_wrong_mark_is_named(graded):
    client, problem, _ = graded
    link = chain(problem)[0]
    url = reverse("drills:followup", args=["ladder", problem.pk])
    still, skipped = link.still[0], link.moves[0]
    marked = [still] + [key for key in link.moves if key != skipped]
    answers = {f"value-{key}": _exact(link.result.values[key]) for key in marked}
    answers[f"value-{still}"] = _exact(link.result.values[still] * 2)
    text = _text(client.post(url, {"phase": "values", "link": "0", "marked": marked, **answers}))
    assert "Moved step left unmoved" in text and "Still step moved" in text
    stored = FollowUpAttempt.objects.get()
    verdicts = {mark["key"]: mark["verdict"] for mark in stored.grade["marks"]}
    assert verdicts[still] == "moved_when_still" and verdicts[skipped] == "left_unmoved"
    assert stored.score < 1


def test_nothing_ticked_is_unanswered_and_scores_0(graded):
    """The marks posted with nothing ticked, then graded with no value: not "nothing moves" (every follow-up
    moves a step) but no answer, 0 for every step (before, the still steps' marks were right: 4 of 8 steps
    of the ladder's KV change, 25 %)."""
    client, problem, _ = graded
    url = reverse("drills:followup", args=["ladder", problem.pk])
    asked = _text(client.post(url, {"phase": "marks", "link": "0"}))
    assert "You ticked nothing." in asked and "counts as not answered" in asked
    done = _text(client.post(url, {"phase": "values", "link": "0"}))
    assert "Score 0 %" in done and "Not answered" in done and ">Right<" not in done
    stored = FollowUpAttempt.objects.get()
    assert (stored.marks_score, stored.values_score, stored.score, stored.marked) == (0.0, 0.0, 0.0, [])
    assert {mark["verdict"] for mark in stored.grade["marks"]} == {"unanswered"}


def test_an_unreadable_value_stores_nothing_and_keeps_the_text(graded):
    client, problem, _ = graded
    link = chain(problem)[0]
    url = reverse("drills:followup", args=["ladder", problem.pk])
    key = link.moves[0]
    text = _text(client.post(url, {"phase": "values", "link": "0", "marked": [key], f"value-{key}": "7O GiB"}))
    assert FollowUpAttempt.objects.count() == 0
    assert 'value="7O GiB"' in text
    assert "Could not read" in text


def test_a_get_never_stores(graded):
    client, problem, _ = graded
    url = reverse("drills:followup", args=["ladder", problem.pk])
    for query in ({}, {"link": "1"}, {"phase": "values", "link": "0", "marked": "card_gib"}):
        assert client.get(url, query).status_code == 200
    assert FollowUpAttempt.objects.count() == 0


def test_follow_ups_come_in_order_after_grading(candidate):
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    url = reverse("drills:followup", args=["ladder", problem.pk])
    assert "Grade the problem" in _text(client.get(url))
    client.post(problem.get_absolute_url(), RIGHT)
    assert "Grade the problem and the follow-ups before this one" in _text(client.get(url, {"link": "1"}))


def test_someone_elses_problem_is_not_found(graded, coach_client):
    _, problem, _ = graded
    url = reverse("drills:followup", args=["ladder", problem.pk])
    assert coach_client.get(url).status_code == 404
    assert coach_client.post(url, {"phase": "values", "link": "0"}).status_code == 404
    assert FollowUpAttempt.objects.count() == 0


def test_a_visitor_is_followed_up_and_nothing_is_stored(db):
    client = Client()
    page = client.post(reverse("drills:new", args=["ladder"]) + "?seed=5", RIGHT)
    text = _text(page)
    assert 'id="followup"' in text
    url = reverse("drills:followup-drawn", args=["ladder"]) + "?seed=5"
    assert f'action="{url}"' in text
    carry = text.split('name="carry" value="', 1)[1].split('"', 1)[0]
    from drills.problems.generation import draw_problem
    link = chain(draw_problem("ladder", 5))[0]
    answers = {f"value-{key}": _exact(link.result.values[key]) for key in link.moves}
    done = _text(client.post(url, {"phase": "values", "link": "0", "carry": carry, "marked": list(link.moves),
                                   **answers}))
    assert "Score 100 %" in done and "Graded but not saved" in done
    assert FollowUpAttempt.objects.count() == 0


def test_a_forged_carry_carries_nothing(db):
    from drills.problems.forms import read_carry, sign_carry

    assert read_carry(sign_carry({"weights_gib": 16.0})) == {"weights_gib": 16.0}
    assert read_carry("eyJ3ZWlnaHRzX2dpYiI6MTZ9:forged") == {}
    assert read_carry(None) == {}


def test_a_follow_up_without_its_problem_sends_to_a_new_problem(db):
    response = Client().get(reverse("drills:followup-drawn", args=["ladder"]))
    assert response.status_code == 302 and response["Location"] == reverse("drills:new", args=["ladder"])


def test_a_simulated_drill_is_followed_up_on_a_new_run(candidate):
    # knee: the changed stack is simulated (through the web's cached sweep runner) and stored with the follow-up.
    from drills.problems.generation import create_problem

    client = Client()
    client.force_login(candidate)
    problem = create_problem("knee", seed=2, user=candidate)
    right = {step.key: _exact(step.value) for step in problem.solve().steps}
    page = _text(client.post(problem.get_absolute_url(), right))
    link = chain(problem)[0]
    assert link.change.sentence in page
    url = reverse("drills:followup", args=["knee", problem.pk])
    answers = {f"value-{key}": _exact(link.result.values[key]) for key in link.moves}
    done = _text(client.post(url, {"phase": "values", "link": "0", "marked": list(link.moves), **answers}))
    assert "Score 100 %" in done
    stored = FollowUpAttempt.objects.get()
    assert stored.inputs["simulation"] == link.new_inputs["simulation"] != problem.inputs["simulation"]

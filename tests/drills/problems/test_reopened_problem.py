"""A graded problem opened again (a reload, a link) shows the candidate's grade and the follow-up chain where they
left it, reading only (issue 30 item 4: a GET writes nothing). The reference ladder's right answers are
tests/drills/test_followups.py's ``RIGHT`` (79.65, 71.68, 14.96, 53.73 GiB, 131,072 B, 1.00 GiB, 53 and 191 users).
"""

from __future__ import annotations

import html

from django.test import Client
from django.urls import reverse

from drills.followups.services import chain
from drills.models import Attempt, FollowUpAttempt
from tests.drills.problems.test_drills import make_problem
from tests.drills.test_followups import RIGHT


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _counts() -> tuple[int, int]:
    return Attempt.objects.count(), FollowUpAttempt.objects.count()


def test_a_graded_problem_opened_again_shows_its_grade_and_the_first_follow_up(candidate):
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    fresh = _text(client.get(problem.get_absolute_url()))
    assert 'id="followup"></div>' in fresh and "Score" not in fresh  # nothing graded yet: a blank sheet
    client.post(problem.get_absolute_url(), RIGHT)
    before = _counts()
    text = _text(client.get(problem.get_absolute_url()))
    assert _counts() == before == (1, 0)  # the GET graded again from the stored answers and wrote nothing
    assert 'data-score="1.0"' in text and 'id="restored-note"' in text
    assert 'value="79.65"' in text  # the typed answers are back in their boxes
    link = chain(problem)[0]
    assert "Follow-up 1 of 3" in text and link.change.sentence in text and "First: which steps move?" in text
    assert f'action="{reverse("drills:followup", args=["ladder", problem.pk])}"' in text
    # Clear is a blank sheet again (the first attempt still counts: the page says so).
    cleared = _text(client.get(problem.get_absolute_url(), {"clear": "1"}))
    assert "Score" not in cleared and 'id="seen-note"' in cleared and 'value="79.65"' not in cleared


def test_the_chain_resumes_at_the_first_link_not_answered(candidate):
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    client.post(problem.get_absolute_url(), RIGHT)
    links = chain(problem)
    url = reverse("drills:followup", args=["ladder", problem.pk])
    first = links[0]
    client.post(url, {"phase": "values", "link": "0", "marked": list(first.moves),
                      **{f"value-{key}": repr(float(first.result.values[key])) for key in first.moves}})
    text = _text(client.get(problem.get_absolute_url()))
    assert "Follow-up 2 of 3" in text and links[1].change.sentence in text
    assert "Your follow-ups so far" in text and f"Follow-up 1: {first.change.sentence}" in text
    assert '<input type="hidden" name="link" value="1">' in text  # the form answers link 2
    # the chain answered to its end: the answers read back and no question left
    for position in (1, 2):
        link = links[position]
        client.post(url, {"phase": "values", "link": str(position), "marked": list(link.moves),
                          **{f"value-{key}": repr(float(link.result.values[key])) for key in link.moves}})
    before = _counts()
    done = _text(client.get(problem.get_absolute_url()))
    assert _counts() == before == (1, 3)
    assert "That was the last follow-up on this problem." in done and "First: which steps move?" not in done
    assert all(f"Follow-up {n}: {links[n - 1].change.sentence}" in done for n in (1, 2, 3))


def test_someone_else_opening_the_problem_sees_nothing_of_it(candidate, coach_client):
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    client.post(problem.get_absolute_url(), RIGHT)
    assert coach_client.get(problem.get_absolute_url()).status_code == 404


def test_the_answer_form_names_the_problem_its_first_view_is_kept_for_until_graded(candidate):
    """static/js/first-view.js keeps a page's first ``started`` token per ``data-first-view`` name for a reload
    (tests/e2e/test_first_view.py); a drawn problem and its stored copy share the name, a graded form has none."""
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    name = f'data-first-view="problem:ladder:5:{problem.generator_version}"'
    assert name in _text(client.get(problem.get_absolute_url()))
    graded = _text(client.post(problem.get_absolute_url(), RIGHT))
    assert 'data-score="1.0"' in graded and "data-first-view" not in graded
    assert "data-first-view" not in _text(client.get(problem.get_absolute_url()))  # the grade, restored
    assert name in _text(client.get(problem.get_absolute_url(), {"clear": "1"}))  # a blank sheet: a new clock

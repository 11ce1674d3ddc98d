"""A graded problem opened again (a reload, a link) shows the candidate's grade as stored with their latest attempt
and the follow-up chain where they left it, reading only (issue 30 item 4: a GET writes nothing). The reference
ladder's right answers are tests/drills/test_followups.py's ``RIGHT`` (79.65, 71.68, 14.96, 53.73 GiB, 131,072 B,
1.00 GiB, 53 and 191 users).
"""

from __future__ import annotations

import html

from django.test import Client
from django.urls import reverse

from drills.followups.services import chain
from drills.models import Attempt, FollowUpAttempt, StepAnswer
from tests.drills.problems.test_drills import make_problem
from tests.drills.test_followups import RIGHT


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _row(text: str, key: str) -> str:
    """Step ``key``'s row (its ``<li>``) of the answer form in ``text``."""
    start = text.rindex("<li", 0, text.index(f'id="step-{key}"'))
    return text[start:text.index("</li>", start)]


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
    assert _counts() == before == (1, 0)  # the GET read the stored grade and wrote nothing
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


def test_the_page_opened_again_shows_the_stored_verdicts_not_a_new_grading(candidate):
    """What the page shows is the grade stored with the attempt: a step's stored verdict and message (changed here
    in the database, as a grader of another version would have left them) are shown, not those a new grading of
    the same answers would give."""
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    client.post(problem.get_absolute_url(), {**RIGHT, "card_gib": "80"})  # 80 GiB: 0.4 % off 79.65, correct
    StepAnswer.objects.filter(key="card_gib").update(verdict="close", credit=0.5, message="Stored message.")
    text = _text(client.get(problem.get_absolute_url()))
    step = _row(text, "card_gib")
    assert "verdict-close" in step and "Stored message." in step and 'value="80"' in step
    assert "Correct." not in step  # what grading "80" again would say


def test_an_attempt_stored_with_other_steps_is_graded_again_from_its_answers(candidate):
    """An attempt whose stored steps are not the problem's steps (one missing here, as an attempt stored before a
    family gained a step would be) is shown by grading its stored answers again: the missing step is blank."""
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    client.post(problem.get_absolute_url(), RIGHT)
    StepAnswer.objects.filter(key="users_paged").delete()
    StepAnswer.objects.filter(key="card_gib").update(message="Stored message.")
    text = _text(client.get(problem.get_absolute_url()))
    assert "Stored message." not in text  # graded again, not read back
    paged = _row(text, "users_paged")
    assert "verdict-unreadable" in paged and "No answer" in paged
    assert 'value="79.65"' in text and "verdict-correct" in text


def _rows(text: str) -> str:
    return text[text.index('<ol class="list-unstyled mb-0 answer-steps">'):text.index("</ol>")]


def test_the_kept_rows_are_the_latest_attempt_s(candidate):
    """The rows of an attempt opened again are kept in the cache under that attempt: the next load shows the same
    rows, grading the problem again (another attempt) shows the new grade on the next load, and Clear still shows
    a blank sheet."""
    client = Client()
    client.force_login(candidate)
    problem = make_problem(seed=5)
    client.post(problem.get_absolute_url(), RIGHT)
    first = _text(client.get(problem.get_absolute_url()))
    assert _rows(first) == _rows(_text(client.get(problem.get_absolute_url())))
    assert first.count("verdict-correct") == 8
    client.post(problem.get_absolute_url(), {**RIGHT, "weights_gib": "1"})
    again = _text(client.get(problem.get_absolute_url()))
    weights = _row(again, "weights_gib")
    assert 'value="1"' in weights and "verdict-correct" not in weights
    cleared = _text(client.get(problem.get_absolute_url(), {"clear": "1"}))
    assert "verdict-" not in _rows(cleared) and 'value="79.65"' not in cleared

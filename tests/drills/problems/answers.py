"""The right answers to a drawn problem, as a candidate would type them, and the drill page's round trip."""

from __future__ import annotations


def right_answers(problem) -> dict[str, str]:
    """Every step of ``problem`` (a :class:`drills.models.ProblemInstance`) answered with its exact value:
    step key → ``repr`` of the value."""
    return {step.key: repr(step.value) for step in problem.solve().steps}


def answer_a_new_problem(client, family: str, seed: int = 7) -> tuple:
    """Save a new ``family`` problem drawn from ``seed`` as ``client`` (logged in: a visitor's
    ``/drills/<family>/new/`` stores no problem, issue 21), open its page and post its right answers.

    Asserts the redirect to the stored problem (the only one in the database) and that both pages answer 200;
    returns (problem, its page's response, the graded response).
    """
    from drills.models import ProblemInstance

    response = client.post(f"/drills/{family}/new/?seed={seed}", {"save": "1"})
    assert response.status_code == 302
    problem = ProblemInstance.objects.get()
    assert response["Location"] == f"/drills/{family}/{problem.pk}/"
    page = client.get(response["Location"])
    assert page.status_code == 200
    graded = client.post(response["Location"], right_answers(problem))
    assert graded.status_code == 200
    return problem, page, graded

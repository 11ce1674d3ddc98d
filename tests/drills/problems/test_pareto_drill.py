"""The pareto family as a graded drill: a problem page states it, right answers score every step, a named
slip is named, and /drills/pareto/new/ draws one."""

import json
import re

import pytest

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from drills.models import ProblemInstance
from drills.problems.generation import GENERATOR_VERSION
from tests.paths import REPO_ROOT

CATALOG_DIR = REPO_ROOT / "fixtures" / "catalog"
INPUTS = {"model": "llama-3.1-70b", "gpu": "h100-sxm5-80gb", "gpus": 8, "tpot_target_ms": 30.0}

pytestmark = pytest.mark.django_db


def entry(kind: str, entry_id: str) -> dict:
    return next(e for e in json.loads((CATALOG_DIR / f"{kind}.json").read_text()) if e["id"] == entry_id)


def problem(owner) -> ProblemInstance:
    return ProblemInstance.objects.create(
        created_by=owner, family="pareto", seed=0, generator_version=GENERATOR_VERSION, inputs=INPUTS,
        snapshot={"models": [entry("models", INPUTS["model"])], "gpus": [entry("gpus", INPUTS["gpu"])]})


def verdicts(response) -> dict[str, str]:
    return {key: verdict for verdict, key in
            re.findall(r'class="answer-step[^"]*verdict-([a-z_]+)" id="step-([a-z_]+)"', response.content.decode())}


def test_right_answers_score_every_step_and_a_slip_is_named(client, candidate):
    client.force_login(candidate)  # a stored problem is its owner's page only
    drill = problem(candidate)
    shown = client.get(drill.get_absolute_url())
    assert shown.status_code == 200 and "TPOT target of 30 ms" in shown.content.decode()
    result = FAMILIES["pareto"].run(INPUTS)
    answers = {step.key: format_number(step.value, step.unit) for step in result.steps}
    graded = client.post(drill.get_absolute_url(), answers)
    assert set(verdicts(graded).values()) == {"correct"} and len(verdicts(graded)) == 17
    slip = {**answers, "tok_s_per_card": format_number(result.values["tok_s_per_card"] * 8, "tok/s")}
    named = client.post(drill.get_absolute_url(), slip).content.decode()
    assert verdicts(client.post(drill.get_absolute_url(), slip))["tok_s_per_card"] == "misconception"
    assert "Replica rate quoted per card" in named


def test_a_new_problem_is_drawn(client, candidate):
    client.force_login(candidate)  # a visitor's problem is drawn from its seed and not stored (issue 21)
    response = client.get("/drills/pareto/new/", follow=True)
    assert response.status_code == 200
    # Reading it stores nothing (ab440a0); the candidate's Save stores the drawn problem.
    assert not ProblemInstance.objects.filter(family="pareto").exists()
    address = response.redirect_chain[-1][0]
    saved = client.post(address, {"save": "1"})
    assert saved.status_code == 302
    assert ProblemInstance.objects.filter(family="pareto", created_by=candidate).count() == 1

"""Every problem template draws for every catalog model and card, or is refused with a sentence (issue 28 item 1).

A coach fixes a template's model or card through :func:`coaching.services.check_fixed_inputs`, which draws and
solves the problem at its seeds (1, 2, 3). What it accepts must then draw, solve and render (statement, facts) at
any other seed, since a candidate's start, review and round draw at seeds of their own: an exception there is a
500 on a page. What it refuses is refused with the engine's one sentence. Checked here for each template with no
fixed input, with each catalog model fixed (the card drawn) and with each catalog card fixed (the model drawn):

- quickly for every template on a sample of fixings, including the issue's knee on Llama-3.1-70B with the card
  drawn (the four simulated templates, knee, p99 TTFT, TPOT crossing and preemption, run a sweep of the
  simulator for each draw);
- in full, marked ``slow`` (CI runs every test): every template on every fixing, and the computed ones on every
  (model, card) pair (a simulated template on each pair would be some 200 sweeps a seed).

And through the real views: every template's page at seeds 1-3 answers 200 to a visitor.
"""

from __future__ import annotations

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import EngineError
from coaching.services import CHECK_SEEDS, CoachingError, check_fixed_inputs
from drills.models import ProblemInstance
from drills.problems.generation import GENERATOR_VERSION, drill_families, generate_inputs, snapshot_for
from drills.problems.presentation import problem_facts, statement

CATALOG = default_catalog()
FAMILIES = drill_families()
SIMULATED = [family.slug for family in FAMILIES if family.prepare]
COMPUTED = [family.slug for family in FAMILIES if not family.prepare]
ALL = [family.slug for family in FAMILIES]
FIXINGS = ([{}] + [{"model": model} for model in sorted(CATALOG.models)]
           + [{"gpu": gpu} for gpu in sorted(CATALOG.gpus)])
PAIRS = [{"model": model, "gpu": gpu} for model in sorted(CATALOG.models) for gpu in sorted(CATALOG.gpus)]
SAMPLE = [{}, {"model": "llama-3.1-70b"}, {"gpu": "l4"}, {"model": "qwen2.5-7b", "gpu": "a100-sxm4-80gb"}]
LATER_SEEDS = (7,)  # seeds other than the check's, as a candidate's start or review would draw


def _name(fixed: dict) -> str:
    return "+".join(f"{key}={value}" for key, value in fixed.items()) or "drawn"


def render_parts(family: str, seed: int, fixed: dict) -> None:
    """Draw problem (``family``, ``seed``) with ``fixed`` held and build what its page shows from it: the
    solution, the statement and the facts (what ``drills.problems.views`` renders). Raises what they raise."""
    inputs = generate_inputs(family, seed, CATALOG, fixed)
    problem = ProblemInstance(family=family, seed=seed, generator_version=GENERATOR_VERSION, inputs=inputs,
                              snapshot=snapshot_for(inputs, CATALOG))
    solution = problem.solve()
    assert solution.steps, f"{family} at seed {seed} ({_name(fixed)}) has no step"
    statement(problem, solution)
    problem_facts(problem)


def check_template(family: str, fixed: dict) -> str:
    """"refused" or "drawn": the coach's check either refuses ``fixed`` with one sentence, or accepts it and
    every later seed draws a problem whose page parts build."""
    try:
        check_fixed_inputs(fixed, family)
    except CoachingError as error:
        message = str(error)
        assert message.startswith(f"Those fixed inputs do not work for {family}: ") and message.endswith("."), message
        assert "Traceback" not in message and "\n" not in message
        return "refused"
    seeds = LATER_SEEDS if fixed else (*CHECK_SEEDS, *LATER_SEEDS)  # no fixed input: the check draws nothing
    for seed in seeds:
        try:
            render_parts(family, seed, fixed)
        except EngineError as error:
            pytest.fail(f"{family} with {_name(fixed)} passed the coach's check, then seed {seed} failed: {error}")
    return "drawn"


@pytest.mark.django_db
@pytest.mark.parametrize("family", ALL)
def test_each_template_passes_the_check_on_a_sample_of_models_and_cards(family):
    outcomes = {_name(fixed): check_template(family, fixed) for fixed in SAMPLE}

    assert outcomes["drawn"] == "drawn"  # every template draws with nothing fixed
    if family in SIMULATED:  # the case draws now: the 70B with a card drawn that holds it and its cache
        assert outcomes["model=llama-3.1-70b"] == "drawn"


def test_the_405b_on_one_card_is_refused_for_the_knee_with_the_reason():
    with pytest.raises(CoachingError, match=r"^Those fixed inputs do not work for knee: No knee problem can be drawn "
                                            r"for llama-3\.1-405b \(No card here holds the model's weights"):
        check_fixed_inputs({"model": "llama-3.1-405b"}, "knee")


@pytest.mark.django_db
@pytest.mark.parametrize("family", [family.slug for family in FAMILIES])
def test_every_template_page_answers_a_visitor(client, family):
    for seed in (1, 2, 3):
        response = client.get(f"/drills/{family}/new/?seed={seed}")
        assert response.status_code == 200, (family, seed)
        assert b"this problem cannot be worked" not in response.content


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("family", ALL)
def test_each_template_draws_or_refuses_each_model_and_card(family):
    outcomes = {_name(fixed): check_template(family, fixed) for fixed in FIXINGS}

    assert outcomes["drawn"] == "drawn"
    if family in SIMULATED:
        assert outcomes["model=llama-3.1-70b"] == "drawn"
        assert outcomes["model=llama-3.1-405b"] == "refused"  # 810 GB of bf16 weights: no single card holds them


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("family", COMPUTED)
def test_each_computed_template_draws_or_refuses_each_model_on_each_card(family):
    outcomes = [check_template(family, fixed) for fixed in PAIRS]

    assert len(outcomes) == len(CATALOG.models) * len(CATALOG.gpus)

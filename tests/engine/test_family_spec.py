"""The ``spec`` family: speculative decoding's expected tokens per verify step and speed-up bound.

Hand derivations (Leviathan, Kalman & Matias 2023, the expectation
E = (1 − α^(γ+1)) / (1 − α) = 1 + α + … + α^γ and the bound E / (1 + γ·c)):

* α 0.8, γ 4: E = 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616; c 0.05 → 3.3616 / 1.2 = 2.80133…
* α 0.6, γ 8: 0.6^9 = 0.010077696, E = 0.989922304 / 0.4 = 2.47480576; c 0.5 → ÷ 5 = 0.494961152
* α 0.5, γ 2: E = 1 + 0.5 + 0.25 = 1.75; c 0.1 → 1.75 / 1.2 = 1.458333…
* α 0: E = 1 (only the target's own token).

Draft costs of catalog pairs (parameter counts from test_param_count.py and
test_procedures.py): Llama-3.1-8B for Llama-3.1-70B 8,030,261,248 / 70,553,706,496
= 0.1138 → 0.11; Llama-3.1-70B for Llama-3.1-405B → 0.17.
"""

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.mistakes import declared_on
from calculators.engine.procedures import spec as spec_module
from calculators.families import FAMILIES

STEP_KEYS = ["expected_tokens", "speedup"]


def spec(**inputs):
    return FAMILIES["spec"].run(inputs)


def answers(result, **overrides):
    """Every step answered with its right value, except ``overrides`` (typed text)."""
    typed = {step.key: repr(step.value) for step in result.steps}
    typed.update(overrides)
    return typed


def verdicts(result, **overrides):
    graded = grade(result, answers(result, **overrides))
    return {step.key: (step.verdict, step.misconception) for step in graded.steps}


# --- the hand-derived values -----------------------------------------------------------------------

def test_default_problem_yields_3_36_tokens_and_a_2_8x_bound():
    result = spec()
    assert [step.key for step in result.steps] == STEP_KEYS
    assert [step.unit for step in result.steps] == ["tok", "1"]
    assert result.values["expected_tokens"] == pytest.approx(3.3616, rel=1e-12)
    assert result.values["speedup"] == pytest.approx(3.3616 / 1.2, rel=1e-12)
    assert result.inputs == {"alpha": 0.8, "gamma": 4, "draft_cost": 0.05}


@pytest.mark.parametrize("alpha, gamma, cost, expected, speedup", [
    (0.8, 4, 0.05, 3.3616, 2.8013333333333335),
    (0.6, 8, 0.5, 2.47480576, 0.494961152),
    (0.5, 2, 0.1, 1.75, 1.4583333333333333),
    (0.0, 5, 0.1, 1.0, 1 / 1.5),
    (0.9, 1, 0.0, 1.9, 1.9),
])
def test_expected_tokens_and_speedup_by_hand(alpha, gamma, cost, expected, speedup):
    result = spec(alpha=alpha, gamma=gamma, draft_cost=cost)
    assert result.values["expected_tokens"] == pytest.approx(expected, rel=1e-12)
    assert result.values["speedup"] == pytest.approx(speedup, rel=1e-12)


def test_expected_tokens_never_exceed_gamma_plus_one_even_near_alpha_one():
    # α 0.99, γ 4: 1 + 0.99 + 0.9801 + 0.970299 + 0.96059601 = 4.90099501 < 5.
    result = spec(alpha=0.99, gamma=4, draft_cost=0)
    assert result.values["expected_tokens"] == pytest.approx(4.90099501, rel=1e-9)
    assert result.values["expected_tokens"] < 5


def test_worked_substitution_and_formula_text():
    result = spec()
    assert result.step("expected_tokens").formula.text == "(1 − alpha^(gamma + 1)) ÷ (1 − alpha)"
    # The value after "=" is display-rounded (and may carry its unit); the worked left side is ours.
    assert result.step("expected_tokens").substituted.startswith("(1 − 0.8^(4 + 1)) ÷ (1 − 0.8) = 3.362")
    assert result.step("speedup").substituted.startswith("3.362 ÷ (1 + 4 × 0.05) = 2.801")


def test_notes_explain_batch_size_ceiling_and_cite_the_paper():
    notes = " ".join(spec().notes)
    assert "bandwidth-bound" in notes and "compute-bound" in notes
    assert "γ + 1" in notes
    assert "Fast Inference from Transformers via Speculative Decoding" in notes
    # α 0.8, c 0.05: γ 7 → 4.1611392 / 1.35 = 3.0823; γ 8 → 4.32891136 / 1.4 = 3.0921; γ 9 → 4.463129088 / 1.45
    # = 3.0780: 8 is best.
    assert "γ = 8 gives the largest bound" in notes


def test_best_gamma_is_reported_in_extra():
    result = spec()
    assert result.extra["best_gamma"] == 8
    assert result.extra["best_speedup"] == pytest.approx(4.32891136 / 1.4, rel=1e-9)


def test_an_expensive_draft_is_flagged_as_a_slowdown():
    result = spec(alpha=0.6, gamma=8, draft_cost=0.5)
    assert result.notes[0].startswith("With these numbers speculation is slower than plain decoding")


def test_json_keeps_full_precision():
    data = spec().to_json()
    assert [step["key"] for step in data["steps"]] == STEP_KEYS
    assert data["steps"][0]["value"] == pytest.approx(3.3616, rel=1e-12)


# --- formulas: the cached evaluator against exact substitution -------------------------------------

@pytest.mark.parametrize("values", [
    {"alpha": 0.8, "gamma": 4}, {"alpha": 0.5, "gamma": 1}, {"alpha": 0.99, "gamma": 32}, {"alpha": 0, "gamma": 3},
])
def test_expected_tokens_evaluator_matches_exact(values):
    formula = spec_module.EXPECTED_TOKENS
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


@pytest.mark.parametrize("values", [
    {"expected_tokens": 3.3616, "gamma": 4, "draft_cost": 0.05},
    {"expected_tokens": 1, "gamma": 32, "draft_cost": 1},
])
def test_speedup_evaluator_matches_exact(values):
    formula = spec_module.SPEEDUP
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


# --- input validation --------------------------------------------------------------------------------

@pytest.mark.parametrize("inputs, field", [
    ({"alpha": 1}, "alpha"),
    ({"alpha": 0.995}, "alpha"),
    ({"alpha": -0.1}, "alpha"),
    ({"alpha": "most"}, "alpha"),
    ({"gamma": 0}, "gamma"),
    ({"gamma": 2.5}, "gamma"),
    ({"gamma": 33}, "gamma"),
    ({"draft_cost": -0.01}, "draft_cost"),
    ({"draft_cost": 1.5}, "draft_cost"),
    ({"beta": 1}, "beta"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as info:
        spec(**inputs)
    assert info.value.field == field


def test_alpha_of_one_is_refused_with_the_reason():
    with pytest.raises(InputError, match=r"at α = 1 every draft is accepted, E is exactly γ \+ 1"):
        spec(alpha=1)


# --- the generator ------------------------------------------------------------------------------------

def test_generator_is_deterministic_per_seed():
    catalog = default_catalog()
    generate = FAMILIES["spec"].generate
    for seed in range(20):
        assert generate(random.Random(seed), catalog) == generate(random.Random(seed), catalog)


def test_generator_draws_realistic_problems_with_costs_of_real_pairs():
    catalog = default_catalog()
    # 8B→70B 0.11, 8B→405B 0.02, 70B→405B 0.17, Llama-2 7B→13B 0.52, Qwen2.5 7B→72B 0.10,
    # Qwen3 8B→32B 0.25 (8,190,735,360 / 32,762,123,264 = 0.2500).
    assert sorted({cost for _, _, cost in spec_module.draft_pairs(catalog)}) == [0.02, 0.1, 0.11, 0.17, 0.25, 0.52]
    seen = set()
    for seed in range(300):
        inputs = FAMILIES["spec"].generate(random.Random(f"spec:{seed}"), catalog)
        assert 0.5 <= inputs["alpha"] <= 0.9
        assert 2 <= inputs["gamma"] <= 8
        assert inputs["draft_cost"] in (0.02, 0.1, 0.11, 0.17, 0.25, 0.52)
        result = FAMILIES["spec"].run(inputs)
        assert 1 < result.values["expected_tokens"] <= inputs["gamma"] + 1
        seen.add(inputs["draft_cost"])
    assert len(seen) == 6


def test_describe_states_alpha_gamma_and_cost():
    text = FAMILIES["spec"].describe({"alpha": 0.75, "gamma": 5, "draft_cost": 0.11}, default_catalog())
    assert "γ = 5" in text and "α = 0.75" in text and "c = 0.11" in text


# --- grading: misconceptions and carried-forward credit ---------------------------------------------

# Two problems with catalog draft costs: 8B drafting for 70B (0.11) and 70B for 405B (0.17).
PROBLEMS = [{"alpha": 0.8, "gamma": 4, "draft_cost": 0.11}, {"alpha": 0.7, "gamma": 6, "draft_cost": 0.17}]


@pytest.mark.parametrize("inputs", PROBLEMS)
def test_right_answers_score_full_marks(inputs):
    result = spec(**inputs)
    assert grade(result, answers(result)).score == 1.0


@pytest.mark.parametrize("inputs, linear", [
    (PROBLEMS[0], [3.2, 4.2]),   # γα = 4 × 0.8 = 3.2, 1 + γα = 4.2 (right: 3.3616)
    (PROBLEMS[1], [4.2, 5.2]),   # 6 × 0.7 = 4.2, 5.2 (right: (1 − 0.0823543)/0.3 = 3.0588…)
])
def test_acceptance_times_gamma_is_named(inputs, linear):
    result = spec(**inputs)
    for value in linear:
        assert verdicts(result, expected_tokens=str(value))["expected_tokens"] == ("misconception",
                                                                                   "acceptance-as-tokens")


@pytest.mark.parametrize("inputs, without_bonus", [
    (PROBLEMS[0], 2.3616),  # E − 1: 0.8 + 0.64 + 0.512 + 0.4096
    (PROBLEMS[1], 2.0588),  # 0.7^7 = 0.0823543; (1 − 0.0823543)/0.3 − 1 = 3.058819 − 1
])
def test_forgetting_the_targets_own_token_is_named(inputs, without_bonus):
    result = spec(**inputs)
    assert verdicts(result, expected_tokens=str(without_bonus))["expected_tokens"] == ("misconception",
                                                                                       "bonus-token-forgotten")


@pytest.mark.parametrize("inputs, expected", [(PROBLEMS[0], "3.3616"), (PROBLEMS[1], "3.0588")])
def test_speedup_equal_to_e_is_draft_cost_ignored(inputs, expected):
    result = spec(**inputs)
    assert verdicts(result, speedup=expected)["speedup"] == ("misconception", "draft-cost-ignored")


def test_draft_cost_ignored_is_not_charged_when_the_draft_is_free():
    result = spec(alpha=0.8, gamma=4, draft_cost=0)
    assert verdicts(result, speedup="3.3616")["speedup"] == ("correct", None)


def test_speedup_carries_forward_a_wrong_expected_tokens():
    # E typed as 3.0 (wrong, 11 % off); speed-up on it: 3.0 / (1 + 4 × 0.11) = 3.0 / 1.44 = 2.0833.
    result = spec(**PROBLEMS[0])
    graded = verdicts(result, expected_tokens="3.0", speedup="2.0833")
    assert graded["expected_tokens"] == ("wrong", None)
    assert graded["speedup"] == ("carried_forward", None)


def test_linear_expectation_carried_into_the_speedup_is_carried_forward_not_punished_twice():
    # E typed as γα = 3.2 (misconception); speed-up on it: 3.2 / 1.44 = 2.2222.
    result = spec(**PROBLEMS[0])
    graded = verdicts(result, expected_tokens="3.2", speedup="2.2222")
    assert graded["expected_tokens"] == ("misconception", "acceptance-as-tokens")
    assert graded["speedup"] == ("carried_forward", None)


def test_every_declared_misconception_is_exercised_above():
    exercised = {"acceptance-as-tokens", "bonus-token-forgotten", "draft-cost-ignored"}
    # Engine v3: the family no longer lists its ids; each is declared on one of its quantities in the registry.
    assert exercised <= declared_on(step.key for step in FAMILIES["spec"].run({}).steps)


def test_more_expected_tokens_than_gamma_plus_one_is_impossible():
    # γ = 4: every draft accepted and the target's own token
    # make at most 5 per verify step, so 6 is impossible, not merely wrong (issue 29).
    result = FAMILIES["spec"].run({"gamma": 4, "alpha": 0.8, "draft_cost": 0.05})
    step = next(s for s in grade(result, {"expected_tokens": "6"}).steps if s.key == "expected_tokens")
    assert step.verdict == "impossible"
    assert "draft tokens plus one (5 tok)" in step.message

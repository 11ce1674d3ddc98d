"""The ``fleet`` family: Little's law from a traffic forecast to replicas, GPUs and whole nodes.

concurrency = rate × mean time in system; replicas = ⌈concurrency ÷ (requests per replica ×
occupancy)⌉ + spares; GPUs = replicas × GPUs per replica; nodes = ⌈GPUs ÷ GPUs per node⌉.
Every expected value is worked by hand in the comments. The default replica is the reference
stack's: 53 users on one H100 (test_procedures.py derives the 53).
"""

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.formula import whole_floor
from calculators.engine.grader import grade
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.engine.procedures import fleet as M
from calculators.families import FAMILIES

KEYS = ["concurrency", "replicas", "gpus", "nodes"]
CATALOG = default_catalog()

# 12.5 req/s × 3.2 s = 40 in flight; 8 per replica at 0.5 → 4 each → exactly 10 replicas of 2 GPUs.
SMALL = {"rate": 12.5, "latency_s": 3.2, "users_per_replica": 8, "gpus_per_replica": 2, "occupancy": 0.5}


def fleet(**inputs):
    return FAMILIES["fleet"].run(inputs)


def right_answers(result) -> dict[str, str]:
    return {step.key: repr(step.value) for step in result.steps}


# --- values ----------------------------------------------------------------------------------------

def test_default_forecast_needs_ten_replicas_on_two_nodes():
    result = fleet()
    assert [step.key for step in result.steps] == KEYS
    assert [step.unit for step in result.steps] == ["users", "replicas", "GPUs", "nodes"]
    v = result.values
    assert v["concurrency"] == 400  # 20 req/s × 20 s
    # 53 × 0.8 = 42.4 per replica; 400 ÷ 42.4 = 9.43 → 10.
    assert v["replicas"] == 10
    assert v["gpus"] == 10  # 10 × 1
    # 10 GPUs are not a buyable configuration: ⌈10 ÷ 8⌉ = 2 nodes of 8.
    assert v["nodes"] == 2


def test_the_default_notes_say_the_law_the_headroom_and_the_rounding():
    text = " ".join(fleet().notes)
    assert "Little's law: 20 req/s × 20 s = 400 requests in flight" in text
    assert "80% occupancy it carries 42.4" in text
    assert "400 ÷ 42.4 = 9.434 replicas round up to 10 replicas" in text
    assert "10 GPUs take 2 whole nodes of 8" in text
    assert "6 idle GPUs" in text  # 2 × 8 − 10
    assert "No spare replicas" in text


def test_nine_gpus_round_up_to_two_nodes_of_eight():
    # The errata's example: 9 GPUs is not buyable. 9 req/s × 8 s = 72; 8 per replica at 1.0 → 9 replicas.
    v = fleet(rate=9, latency_s=8, users_per_replica=8, occupancy=1).values
    assert (v["concurrency"], v["replicas"], v["gpus"], v["nodes"]) == (72, 9, 9, 2)


def test_whole_ratios_are_not_pushed_up_by_float_round_off():
    # 3 × 7 = 21 in flight; 35 × 0.6 = 21 per replica, which a float computes as 20.999999999999996:
    # exactly 1 replica, not 2.
    v = fleet(rate=3, latency_s=7, users_per_replica=35, occupancy=0.6).values
    assert (v["concurrency"], v["replicas"], v["gpus"], v["nodes"]) == (21, 1, 1, 1)
    assert M.whole_ceil(21 / (35 * 0.6)) == 1 and whole_floor(0.1 * 3 * 10) == 3
    assert M.whole_ceil(1.000001) == 2 and whole_floor(2.999999) == 2


def test_a_replica_of_two_gpus_fills_nodes_by_pairs():
    v = fleet(**SMALL).values
    # 12.5 × 3.2 = 40; 40 ÷ (8 × 0.5) = 10 replicas exactly; × 2 = 20 GPUs; ⌈20 ÷ 8⌉ = 3 nodes.
    assert v["concurrency"] == pytest.approx(40, rel=1e-12)
    assert (v["replicas"], v["gpus"], v["nodes"]) == (10, 20, 3)


def test_spares_are_whole_replicas_added_after_rounding():
    result = fleet(spares=2)
    v = result.values
    # ⌈9.43⌉ + 2 = 12 replicas = 12 GPUs → ⌈12 ÷ 8⌉ = 2 nodes.
    assert (v["replicas"], v["gpus"], v["nodes"]) == (12, 12, 2)
    assert result.step("replicas").substituted.endswith("+ 2 = 12 replicas")
    assert any("2 spare replicas added after rounding" in note for note in result.notes)
    # Two spares on SMALL: 10 + 2 = 12 replicas × 2 = 24 GPUs = exactly 3 nodes.
    assert fleet(**SMALL, spares=2).values["nodes"] == 3


def test_a_replica_larger_than_a_node_spans_whole_nodes():
    result = fleet(gpus_per_replica=16)
    # 10 replicas × 16 = 160 GPUs → 20 nodes.
    assert (result.values["gpus"], result.values["nodes"]) == (160, 20)
    assert any("spans 2 nodes" in note for note in result.notes)


def test_every_step_evaluates_as_its_exact_formula():
    result = fleet(**SMALL, spares=1)
    values = {}
    for spec in result.specs:
        bound = spec.values(result.given, values)
        assert spec.formula(bound) == pytest.approx(float(spec.formula.exact(bound)), rel=1e-12), spec.key
        values[spec.key] = result.values[spec.key]
    assert [f.unit for f in M.FORMULAS] == ["users", "replicas", "GPUs", "nodes"]


def test_json_counts_are_integers():
    steps = fleet().to_json()["steps"]
    assert [step["value"] for step in steps] == [400, 10, 10, 2]
    assert all(isinstance(step["value"], int) for step in steps)
    assert steps[1]["formula"] == "replicas = ⌈concurrency ÷ (users_per_replica × occupancy)⌉ + spares"


# --- validation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("inputs, field", [
    ({"rate": 0}, "rate"),
    ({"rate": -3}, "rate"),
    ({"latency_s": 0}, "latency_s"),
    ({"latency_s": "abc"}, "latency_s"),
    ({"users_per_replica": 0}, "users_per_replica"),
    ({"users_per_replica": 2.5}, "users_per_replica"),
    ({"occupancy": 0}, "occupancy"),
    ({"occupancy": 1.2}, "occupancy"),
    ({"gpus_per_node": 0}, "gpus_per_node"),
    ({"spares": -1}, "spares"),
    ({"gpus_per_replica": 3}, "gpus_per_replica"),     # 3 does not pack into 8
    ({"gpus_per_replica": 12}, "gpus_per_replica"),    # nor does 12 (one and a half nodes)
    ({"model": "llama-3.1-8b"}, "model"),              # not an input of this family
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as info:
        fleet(**inputs)
    assert info.value.field == field
    assert str(info.value).endswith(".")


# --- problems --------------------------------------------------------------------------------------

def test_the_generator_is_deterministic():
    first = [M.generate_fleet(random.Random(seed), CATALOG) for seed in range(30)]
    assert first == [M.generate_fleet(random.Random(seed), CATALOG) for seed in range(30)]
    assert len({tuple(sorted(p.items())) for p in first}) == 30


def test_generated_problems_are_realistic():
    fractional = 0
    for seed in range(300):
        inputs = M.generate_fleet(random.Random(seed), CATALOG)
        assert 1 <= inputs["rate"] <= 200 and 2 <= inputs["latency_s"] <= 60
        assert 8 <= inputs["users_per_replica"] <= 256 and 0.6 <= inputs["occupancy"] <= 0.9
        assert inputs["gpus_per_replica"] in (1, 2, 4, 8) and inputs["gpus_per_node"] == 8
        assert 0 <= inputs["spares"] <= 2
        v = fleet(**inputs).values
        assert float(v["concurrency"]).is_integer()  # whole numbers in, a whole concurrency out
        raw = v["concurrency"] / (inputs["users_per_replica"] * inputs["occupancy"])
        fractional += not float(raw).is_integer()
    assert fractional > 250  # the ceiling almost always matters


def test_the_description_gives_every_number():
    inputs = {"rate": 40.0, "latency_s": 12.0, "users_per_replica": 64, "gpus_per_replica": 2, "occupancy": 0.75,
              "gpus_per_node": 8, "spares": 1}
    text = M.describe_fleet(inputs, CATALOG)
    for fragment in ("40 requests per second", "12 s", "2 GPUs", "64 requests", "75%", "8 GPUs",
                     "1 spare replica "):
        assert fragment in text


# --- grading ---------------------------------------------------------------------------------------

def test_right_answers_score_one():
    for inputs in ({}, SMALL, {"spares": 1, "gpus_per_replica": 4}):
        result = fleet(**inputs)
        assert grade(result, right_answers(result)).score == 1.0


def test_a_slip_in_concurrency_carries_through_the_rest():
    result = fleet()
    # Own concurrency 20 ÷ 20 = 1 (rate ÷ latency): ⌈1 ÷ 42.4⌉ = 1 replica, 1 GPU, 1 node.
    steps = {s.key: s for s in grade(result, {"concurrency": "1", "replicas": "1", "gpus": "1",
                                              "nodes": "1"}).steps}
    assert steps["concurrency"].verdict == "wrong"
    assert [steps[k].verdict for k in ("replicas", "gpus", "nodes")] == ["carried_forward"] * 3


# (inputs, answers before the step, step, typed value, misconception)
MISCONCEPTION_CASES = [
    # floor instead of ceiling: ⌊9.43⌋ = 9 replicas; SMALL with 1 spare at 0.6: 40 ÷ 4.8 = 8.33 → ⌊⌋ 8 + 1
    ({}, "replicas", "9", "rounded-nodes-down"),
    ({**SMALL, "occupancy": 0.6, "spares": 1}, "replicas", "9", "rounded-nodes-down"),
    # GPUs floored: 9 (the errata's unbuyable nine); 8.33 × 2 = 16.67 → 16 + 2 spare GPUs = 18
    ({}, "gpus", "9", "rounded-nodes-down"),
    ({**SMALL, "occupancy": 0.6, "spares": 1}, "gpus", "18", "rounded-nodes-down"),
    # nodes floored: ⌊10 ÷ 8⌋ = 1; (9 + 1) × 2 = 20 GPUs → ⌊2.5⌋ = 2 (right 3)
    ({}, "nodes", "1", "rounded-nodes-down"),
    ({**SMALL, "occupancy": 0.6, "spares": 1}, "nodes", "2", "rounded-nodes-down"),
    # occupancy ignored: ⌈400 ÷ 53⌉ = 8 replicas; SMALL ⌈40 ÷ 8⌉ = 5 (right 10)
    ({}, "replicas", "8", "occupancy-ignored"),
    (SMALL, "replicas", "5", "occupancy-ignored"),
    # … then 8 GPUs; 5 × 2 = 10 GPUs (right 20)
    ({}, "gpus", "8", "occupancy-ignored"),
    (SMALL, "gpus", "10", "occupancy-ignored"),
    # … then nodes (where the floored count differs: on the default both slips give 1 node):
    # 3,000 in flight, ⌈3,000 ÷ 96⌉ = 32 × 4 = 128 GPUs → 16 nodes (right ⌈44.6⌉ = 45 × 4 = 180 → 23);
    # 1,000 in flight, ⌈1,000 ÷ 32⌉ = 32 replicas of 8 → 32 nodes (right ⌈52.08⌉ = 53 → 53 nodes)
    ({"rate": 100, "latency_s": 30, "users_per_replica": 96, "occupancy": 0.7, "gpus_per_replica": 4},
     "nodes", "16", "occupancy-ignored"),
    ({"rate": 50, "latency_s": 20, "users_per_replica": 32, "occupancy": 0.6, "gpus_per_replica": 8},
     "nodes", "32", "occupancy-ignored"),
]


@pytest.mark.parametrize("case", MISCONCEPTION_CASES,
                         ids=[f"{c[3]}-{c[1]}-{c[2]}-{i}" for i, c in enumerate(MISCONCEPTION_CASES)])
def test_the_classic_wrong_value_is_named(case):
    inputs, key, text, misconception = case
    result = fleet(**inputs)
    answers = {k: v for k, v in right_answers(result).items() if KEYS.index(k) < KEYS.index(key)}
    answers[key] = text
    step = next(s for s in grade(result, answers).steps if s.key == key)
    assert step.verdict == "misconception", step.message
    assert step.misconception == misconception
    assert MISCONCEPTIONS[misconception].title in step.message


def test_every_misconception_is_exercised_on_two_problems():
    seen: dict[str, set] = {}
    for inputs, _key, _text, misconception in MISCONCEPTION_CASES:
        seen.setdefault(misconception, set()).add(tuple(sorted(inputs.items())))
    # Engine v3: the family no longer lists its ids; these are those it declared.
    assert set(seen) == {"rounded-nodes-down", "occupancy-ignored"}
    assert all(len(problems) >= 2 for problems in seen.values())
    assert MISCONCEPTIONS["rounded-nodes-down"].link == "/errata/#moe-nine-gpus"  # "nine GPUs is not buyable"
    assert MISCONCEPTIONS["occupancy-ignored"].link.startswith("/runbook/14-capacity-planning/#")

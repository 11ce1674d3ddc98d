"""The ``cost`` family: dollars per million tokens from a GPU price, a throughput and utilisation.

usd_per_hour = price per GPU-hour × GPUs; tokens_per_hour = fleet tok/s × utilisation × 3,600 s;
usd_per_million_tokens = usd_per_hour × 1 h ÷ tokens_per_hour × 10^6. Every value is worked by
hand in the comments.
"""

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.engine.procedures import cost as M
from calculators.families import FAMILIES

KEYS = ["usd_per_hour", "tokens_per_hour", "usd_per_million_tokens"]
CATALOG = default_catalog()

# $2.50 per GPU-hour, 4 GPUs, 3,000 tok/s while busy, busy half the hour.
HALF_IDLE = {"usd_per_gpu_hour": 2.5, "gpus": 4, "tokens_per_s": 3000, "utilization": 0.5}
# $6.00 per GPU-hour, 16 GPUs, 24,000 tok/s while busy, busy 70 % of the hour.
BUSY_70 = {"usd_per_gpu_hour": 6, "gpus": 16, "tokens_per_s": 24000, "utilization": 0.7}


def cost(**inputs):
    return FAMILIES["cost"].run(inputs)


def right_answers(result) -> dict[str, str]:
    return {step.key: repr(step.value) for step in result.steps}


def test_default_fleet_costs_67_cents_per_million_tokens():
    result = cost()
    assert [step.key for step in result.steps] == KEYS
    assert [step.unit for step in result.steps] == ["USD/h", "tok", "USD/Mtok"]
    v = result.values
    assert v["usd_per_hour"] == 24  # $3.00 × 8
    assert v["tokens_per_hour"] == 36_000_000  # 10,000 × 1.0 × 3,600
    assert v["usd_per_million_tokens"] == pytest.approx(24 / 36, rel=1e-12)  # $0.6667
    assert result.step("usd_per_million_tokens").substituted.endswith("= $0.67/Mtok")


def test_a_half_idle_fleet_pays_double_per_token():
    busy = cost(utilization=1.0).values["usd_per_million_tokens"]
    half = cost(utilization=0.5).values["usd_per_million_tokens"]
    # 10,000 × 0.5 × 3,600 = 18,000,000 tokens for the same $24: $1.3333 per million.
    assert half == pytest.approx(24 / 18, rel=1e-12)
    assert half == pytest.approx(2 * busy, rel=1e-12)


def test_half_idle_four_gpus():
    v = cost(**HALF_IDLE).values
    assert v["usd_per_hour"] == 10  # $2.50 × 4
    assert v["tokens_per_hour"] == 5_400_000  # 3,000 × 0.5 × 3,600
    assert v["usd_per_million_tokens"] == pytest.approx(10 / 5.4, rel=1e-12)  # $1.8519


def test_seventy_percent_busy_sixteen_gpus():
    v = cost(**BUSY_70).values
    assert v["usd_per_hour"] == 96  # $6 × 16
    assert v["tokens_per_hour"] == pytest.approx(60_480_000, rel=1e-12)  # 24,000 × 0.7 × 3,600
    assert v["usd_per_million_tokens"] == pytest.approx(96 / 60.48, rel=1e-12)  # $1.5873


def test_the_notes_say_what_the_throughput_and_utilisation_mean():
    text = " ".join(cost(**HALF_IDLE).notes)
    assert "whole fleet's rate while busy" in text and "750.0 tok/s each" in text  # 3,000 ÷ 4
    assert "busy 50% of each hour" in text and "2 × the fully busy $0.93/Mtok" in text  # 10 ÷ 10.8
    assert "a half-idle fleet pays double" in " ".join(cost().notes)


def test_every_step_evaluates_as_its_exact_formula():
    result = cost(**BUSY_70)
    values = {}
    for spec in result.specs:
        bound = spec.values(result.given, values)
        assert spec.formula(bound) == pytest.approx(float(spec.formula.exact(bound)), rel=1e-12), spec.key
        values[spec.key] = result.values[spec.key]
    # The 3,600 and the 10^6 are derived from the units (tok/s × h, USD/h × h ÷ tok in USD/Mtok).
    assert "3600" not in M.TOKENS_PER_HOUR.text and "1000000" not in M.USD_PER_MILLION_TOKENS.text
    assert M.USD_PER_MILLION_TOKENS.text == "usd_per_hour × hour ÷ tokens_per_hour"


def test_json_values_are_full_precision():
    steps = {s["key"]: s for s in cost().to_json()["steps"]}
    assert steps["usd_per_million_tokens"]["value"] == pytest.approx(0.6666666666666666, rel=1e-12)
    assert steps["usd_per_million_tokens"]["unit"] == "USD/Mtok"
    assert steps["tokens_per_hour"]["value"] == 36_000_000


@pytest.mark.parametrize("inputs, field", [
    ({"usd_per_gpu_hour": 0}, "usd_per_gpu_hour"),
    ({"usd_per_gpu_hour": 5000}, "usd_per_gpu_hour"),
    ({"gpus": 0}, "gpus"),
    ({"gpus": 1.5}, "gpus"),
    ({"tokens_per_s": 0}, "tokens_per_s"),
    ({"tokens_per_s": "fast"}, "tokens_per_s"),
    # The busy fraction's older name is read, and an error names the input as it is now (issue 29: memory
    # utilisation and a fleet's busy fraction are two keys).
    ({"utilization": 0}, "busy_fraction"),
    ({"busy_fraction": 1.01}, "busy_fraction"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as info:
        cost(**inputs)
    assert info.value.field == field


def test_the_generator_is_deterministic_and_realistic():
    first = [M.generate_cost(random.Random(seed), CATALOG) for seed in range(300)]
    assert first == [M.generate_cost(random.Random(seed), CATALOG) for seed in range(300)]
    idle = 0
    for inputs in first:
        assert 1.5 <= inputs["usd_per_gpu_hour"] <= 12 and round(inputs["usd_per_gpu_hour"], 2) == \
            inputs["usd_per_gpu_hour"]
        assert inputs["gpus"] in (1, 2, 4, 8, 16, 32, 64)
        per_gpu = inputs["tokens_per_s"] / inputs["gpus"]
        assert 300 <= per_gpu <= 5000
        assert 0.3 <= inputs["busy_fraction"] <= 1.0
        idle += inputs["busy_fraction"] < 1
        assert 0.01 < cost(**inputs).values["usd_per_million_tokens"] < 20
    assert idle > 200  # the utilisation usually matters


def test_the_description_gives_every_number():
    text = M.describe_cost(HALF_IDLE, CATALOG)
    for fragment in ("4 GPUs", "$2.50/h per GPU", "3,000 tokens per second", "busy 50%"):
        assert fragment in text
    assert "busy every hour" in M.describe_cost({**HALF_IDLE, "utilization": 1.0}, CATALOG)


def test_right_answers_score_one():
    for inputs in ({}, HALF_IDLE, BUSY_70):
        result = cost(**inputs)
        assert grade(result, right_answers(result)).score == 1.0


def test_a_slip_in_the_hourly_bill_carries_into_the_cost_per_token():
    result = cost(**HALF_IDLE)
    # Own bill $12/h (a slip): 12 ÷ 5.4 = $2.2222 per million tokens.
    steps = {s.key: s for s in grade(result, {"usd_per_hour": "12", "tokens_per_hour": "5.4e6",
                                              "usd_per_million_tokens": "2.2222"}).steps}
    assert steps["usd_per_hour"].verdict == "wrong"
    assert steps["tokens_per_hour"].verdict == "correct"
    assert steps["usd_per_million_tokens"].verdict == "carried_forward"


MISCONCEPTION_CASES = [
    # one GPU's price as the fleet's bill: $2.50/h, $6/h
    (HALF_IDLE, "usd_per_hour", "2.5", "per-gpu-not-fleet"),
    (BUSY_70, "usd_per_hour", "6", "per-gpu-not-fleet"),
    # 100 % busy: 3,000 × 3,600 = 10,800,000; 24,000 × 3,600 = 86,400,000
    (HALF_IDLE, "tokens_per_hour", "10800000", "utilization-ignored"),
    (BUSY_70, "tokens_per_hour", "86400000", "utilization-ignored"),
    # the fleet's rate taken per GPU: 5,400,000 × 4 = 21,600,000; 60,480,000 × 16 = 967,680,000
    (HALF_IDLE, "tokens_per_hour", "21600000", "per-gpu-not-fleet"),
    (BUSY_70, "tokens_per_hour", "967680000", "per-gpu-not-fleet"),
    # tokens per second left per second: 3,000 × 0.5 = 1,500; 24,000 × 0.7 = 16,800
    (HALF_IDLE, "tokens_per_hour", "1500", "hour-second-mix"),
    (BUSY_70, "tokens_per_hour", "16800", "hour-second-mix"),
    # cost at 100 % busy: $10 ÷ 10.8 = $0.9259; $96 ÷ 86.4 = $1.1111
    (HALF_IDLE, "usd_per_million_tokens", "0.9259", "utilization-ignored"),
    (BUSY_70, "usd_per_million_tokens", "1.1111", "utilization-ignored"),
    # one GPU's price over the fleet's tokens: $2.50 ÷ 5.4 = $0.46296; $6 ÷ 60.48 = $0.099206
    (HALF_IDLE, "usd_per_million_tokens", "0.46296", "per-gpu-not-fleet"),
    (BUSY_70, "usd_per_million_tokens", "0.099206", "per-gpu-not-fleet"),
    # dollars per hour over tokens per second: $10 ÷ 1,500 × 10^6 = $6,666.67; $96 ÷ 16,800 × 10^6 = $5,714.29
    (HALF_IDLE, "usd_per_million_tokens", "6666.67", "hour-second-mix"),
    (BUSY_70, "usd_per_million_tokens", "5714.29", "hour-second-mix"),
]


@pytest.mark.parametrize("case", MISCONCEPTION_CASES,
                         ids=[f"{c[3]}-{c[1]}-{c[2]}" for c in MISCONCEPTION_CASES])
def test_the_classic_wrong_value_is_named(case):
    inputs, key, text, misconception = case
    result = cost(**inputs)
    answers = {k: v for k, v in right_answers(result).items() if KEYS.index(k) < KEYS.index(key)}
    answers[key] = text
    step = next(s for s in grade(result, answers).steps if s.key == key)
    assert step.verdict == "misconception", step.message
    assert step.misconception == misconception
    assert MISCONCEPTIONS[misconception].title in step.message


def test_utilisation_at_one_is_not_called_a_misconception():
    # At 100 % busy the "ignored" value is the right one: 36,000,000 tokens is correct.
    result = cost()
    step = next(s for s in grade(result, {"tokens_per_hour": "36000000"}).steps if s.key == "tokens_per_hour")
    assert step.verdict == "correct"


def test_every_misconception_is_exercised_on_two_problems():
    seen: dict[str, set] = {}
    for inputs, _key, _text, misconception in MISCONCEPTION_CASES:
        seen.setdefault(misconception, set()).add(tuple(sorted(inputs.items())))
    # Engine v3: the family no longer lists its ids; these are those it declared.
    assert set(seen) == {"utilization-ignored", "per-gpu-not-fleet", "hour-second-mix"}
    assert all(len(problems) >= 2 for problems in seen.values())

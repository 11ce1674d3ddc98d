"""The ``formats`` family: bits, range and epsilon of fp32, bf16, fp16, fp8 E4M3/E5M2, int8 and int4.

Hand derivations (bias = 2^(e−1) − 1; max = (2 − 2^−m) × 2^bias for IEEE-style
layouts; min normal = 2^(1 − bias); epsilon = 2^−m):

* fp32  e 8, m 23, bias 127: max (2 − 2^−23) × 2^127 = 3.4028234663852886e38; min 2^−126 = 1.1754943508222875e-38;
  eps 2^−23 = 1.1920928955078125e-07.
* bf16  e 8, m 7, bias 127: max (2 − 2^−7) × 2^127 = 1.9921875 × 1.7014118346046923e38 = 3.3895313892515355e38;
  min 2^−126; eps 2^−7 = 0.0078125.
* fp16  e 5, m 10, bias 15: max (2 − 2^−10) × 2^15 = 1.9990234375 × 32768 = 65,504; min 2^−14 = 6.103515625e-05;
  eps 2^−10 = 0.0009765625.
* E4M3  e 4, m 3, bias 7, no infinities (OCP): the top exponent code 15 holds numbers, mantissa 111 there is
  NaN, so max = 1.110₂ × 2^(15 − 7) = 1.75 × 256 = 448 (an IEEE-style reading stops at
  1.111₂ × 2^(14 − 7) = 1.875 × 128 = 240); min 2^(1 − 7) = 2^−6 = 0.015625; eps 2^−3 = 0.125.
* E5M2  e 5, m 2, bias 15: max (2 − 2^−2) × 2^15 = 1.75 × 32768 = 57,344; min 2^−14; eps 2^−2 = 0.25.
* int8  127, −128, step 1; int4 7, −8, step 1 (exponent and mantissa bits shown as 0).
"""

import random
from collections import Counter

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.mistakes import declared_on
from calculators.engine.procedures import formats as formats_module
from calculators.families import FAMILIES

STEP_KEYS = ["total_bits", "exponent_bits", "mantissa_bits", "max_normal", "min_normal", "epsilon"]

# format: (total, exponent, mantissa, max, min, epsilon), each by hand (module docstring).
BY_HAND = {
    "fp32": (32, 8, 23, 3.4028234663852886e38, 1.1754943508222875e-38, 1.1920928955078125e-07),
    "bf16": (16, 8, 7, 3.3895313892515355e38, 1.1754943508222875e-38, 0.0078125),
    "fp16": (16, 5, 10, 65504, 6.103515625e-05, 0.0009765625),
    "fp8_e4m3": (8, 4, 3, 448, 0.015625, 0.125),
    "fp8_e5m2": (8, 5, 2, 57344, 6.103515625e-05, 0.25),
    "int8": (8, 0, 0, 127, -128, 1),
    "int4": (4, 0, 0, 7, -8, 1),
}


def formats(**inputs):
    return FAMILIES["formats"].run(inputs)


def answers(result, **overrides):
    typed = {step.key: repr(step.value) for step in result.steps}
    typed.update(overrides)
    return typed


def verdicts(result, **overrides):
    graded = grade(result, answers(result, **overrides))
    return {step.key: (step.verdict, step.misconception) for step in graded.steps}


# --- the hand-derived values -----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", list(BY_HAND))
def test_every_format_matches_the_hand_derivation(fmt):
    result = formats(format=fmt)
    assert [step.key for step in result.steps] == STEP_KEYS
    assert all(step.unit == "1" for step in result.steps)
    assert [result.values[key] for key in STEP_KEYS] == pytest.approx(list(BY_HAND[fmt]), rel=1e-15)


# FP4 E2M1 elements: bias 1, largest 1.5 × 2^2 = 6 (no infinities or NaN), smallest normal 2^0 = 1,
# epsilon 2^−1; NVFP4 shares an 8-bit E4M3 scale among 16 (4 + 8/16 = 4.5 bits), MXFP4 an 8-bit E8M0
# among 32 (4 + 8/32 = 4.25).
BLOCK_BY_HAND = {
    "nvfp4": (4, 2, 1, 6, 1, 0.5, 16, 8, 4.5),
    "mxfp4": (4, 2, 1, 6, 1, 0.5, 32, 8, 4.25),
}


@pytest.mark.parametrize("fmt", list(BLOCK_BY_HAND))
def test_the_block_formats_show_their_element_and_their_scale(fmt):
    result = formats(format=fmt)
    keys = STEP_KEYS + ["block_size", "scale_bits", "effective_bits"]
    assert [step.key for step in result.steps] == keys
    assert [result.values[key] for key in keys] == pytest.approx(list(BLOCK_BY_HAND[fmt]), rel=1e-15)
    # The nominal 4 for the effective width is the named misconception; an IEEE-style max of 3 too.
    assert verdicts(result, effective_bits="4")["effective_bits"] == ("misconception", "nominal-4bit")
    assert verdicts(result, max_normal="3")["max_normal"] == ("misconception", "e4m3-ieee-max")


def test_issue_reference_values():
    assert formats(format="fp8_e4m3").values["max_normal"] == 448          # 1.75 × 2^8
    assert formats(format="fp8_e5m2").values["max_normal"] == 57_344       # 1.75 × 2^15
    fp16 = formats(format="fp16").values
    assert fp16["max_normal"] == 65_504 and fp16["min_normal"] == 2**-14 and fp16["epsilon"] == 2**-10
    bf16 = formats(format="bf16").values
    assert bf16["max_normal"] == pytest.approx(3.39e38, rel=2e-3) and bf16["epsilon"] == 0.0078125
    assert formats(format="fp32").values["epsilon"] == 2**-23


def test_default_is_bf16():
    assert formats().inputs == {"format": "bf16"}


def test_worked_substitutions_read_as_powers():
    fp16 = formats(format="fp16")
    assert fp16.step("mantissa_bits").substituted == "16 − 1 − 5 = 10"
    assert fp16.step("max_normal").substituted == "(2 − 2^(−10)) × 2^(2^(5 − 1) − 1) = 65,504"
    assert fp16.step("epsilon").substituted == "2^(−10) = 0.0009766"
    assert fp16.step("max_normal").formula.text == "(2 − 2^(−mantissa_bits)) × 2^(2^(exponent_bits − 1) − 1)"
    e4m3 = formats(format="fp8_e4m3")
    assert e4m3.step("max_normal").substituted == "(2 − 2^(1 − 3)) × 2^(2^(4 − 1)) = 448"
    int8 = formats(format="int8")
    assert int8.step("min_normal").substituted == "−2^(8 − 1) = -128"


def test_notes_state_the_conventions():
    e4m3 = " ".join(formats(format="fp8_e4m3").notes)
    assert "no infinities" in e4m3 and "1.75 × 2^8 = 448" in e4m3
    # IEEE-style: the top code is reserved, so the largest is 1.111₂ × 2^(14 − 7) = 1.875 × 128 = 240;
    # 1.75 × 2^7 would be 224, the slip the note used to print.
    assert "1.875 × 2^7 = 240" in e4m3 and "1.75 × 2^7" not in e4m3
    int8 = " ".join(formats(format="int8").notes)
    assert "are 0 by this calculator's convention" in int8 and "most negative" in int8
    fp16 = " ".join(formats(format="fp16").notes)
    assert "bias 2^4 − 1 = 15" in fp16 and "65,504" in fp16 and "unit roundoff" in fp16


def test_integer_labels_say_what_the_float_keys_hold():
    labels = {step.key: step.label for step in formats(format="int4").steps}
    assert labels["min_normal"].startswith("Smallest value")
    assert labels["epsilon"].startswith("Step between neighbouring values")


def test_huge_values_stay_exact_in_json():
    step = formats(format="fp32").to_json()["steps"][3]
    assert step["key"] == "max_normal"
    assert step["value"] == (2 - 2**-23) * 2**127


# --- formulas: the cached evaluator against exact substitution -------------------------------------

FORMULA_CASES = [
    (formats_module.MANTISSA_BITS, {"total_bits": 16, "sign_bits": 1, "exponent_bits": 8}),
    (formats_module.MAX_NORMAL_IEEE, {"mantissa_bits": 23, "exponent_bits": 8}),
    (formats_module.MAX_NORMAL_IEEE, {"mantissa_bits": 10, "exponent_bits": 5}),
    (formats_module.MAX_NORMAL_E4M3, {"mantissa_bits": 3, "exponent_bits": 4}),
    (formats_module.MAX_INT, {"total_bits": 8}),
    (formats_module.MIN_NORMAL, {"exponent_bits": 8}),
    (formats_module.MIN_INT, {"total_bits": 4}),
    (formats_module.EPSILON, {"mantissa_bits": 7}),
    (formats_module.TOTAL_BITS, {"width": 32}),
    (formats_module.EXPONENT_BITS, {"exponent_field": 5}),
    (formats_module.MANTISSA_BITS_INT, {"fraction_bits": 0}),
]


@pytest.mark.parametrize("formula, values", FORMULA_CASES, ids=lambda case: getattr(case, "key", ""))
def test_evaluator_matches_exact_substitution(formula, values):
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-15)


# --- input validation --------------------------------------------------------------------------------

@pytest.mark.parametrize("inputs, field", [
    ({"format": "fp64"}, "format"),
    ({"format": "E4M3"}, "format"),
    ({"bits": 8}, "bits"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as info:
        formats(**inputs)
    assert info.value.field == field


# --- the generator ------------------------------------------------------------------------------------

def test_generator_is_deterministic_and_draws_every_format():
    catalog = default_catalog()
    generate = FAMILIES["formats"].generate
    drawn = Counter()
    for seed in range(300):
        first = generate(random.Random(f"formats:{seed}"), catalog)
        assert first == generate(random.Random(f"formats:{seed}"), catalog)
        assert set(first) == {"format"}
        drawn[first["format"]] += 1
    assert set(drawn) == set(BY_HAND) | set(BLOCK_BY_HAND)
    assert min(drawn.values()) > 15  # roughly uniform: 300 / 9 ≈ 33 each


def test_describe_asks_for_the_integer_convention():
    catalog = default_catalog()
    assert "answer 0" in FAMILIES["formats"].describe({"format": "int8"}, catalog)
    assert "an 8-bit" in FAMILIES["formats"].describe({"format": "int8"}, catalog)
    assert "machine epsilon" in FAMILIES["formats"].describe({"format": "fp16"}, catalog)


# --- grading: misconceptions and carried-forward credit ---------------------------------------------

@pytest.mark.parametrize("fmt", list(BY_HAND))
def test_right_answers_score_full_marks(fmt):
    result = formats(format=fmt)
    assert grade(result, answers(result)).score == 1.0


def test_answers_typed_as_powers_of_two_are_read():
    result = formats(format="fp32")
    typed = {"total_bits": "32", "exponent_bits": "8", "mantissa_bits": "23", "max_normal": "(2-2^-23)*2^127",
             "min_normal": "2^-126", "epsilon": "2^-23"}
    assert grade(result, typed).score == 1.0


def test_fp16_max_is_not_two_to_the_sixteen():
    # 65,536 is 0.05 % off 65,504: outside the 0.02 % tolerance, so not "correct".
    result = formats(format="fp16")
    assert verdicts(result, max_normal="65536")["max_normal"][0] == "close"


@pytest.mark.parametrize("fmt, key, swapped", [
    # bf16 answered with fp16's figures …
    ("bf16", "max_normal", "65504"),
    ("bf16", "epsilon", "2^-10"),
    ("bf16", "exponent_bits", "5"),
    ("bf16", "min_normal", "2^-14"),
    # … and fp16 with bf16's.
    ("fp16", "max_normal", "3.3895e38"),
    ("fp16", "epsilon", "0.0078125"),
    ("fp16", "mantissa_bits", "7"),
])
def test_bf16_and_fp16_swapped_is_named(fmt, key, swapped):
    result = formats(format=fmt)
    assert verdicts(result, **{key: swapped})[key] == ("misconception", "bf16-fp16-swap")


def test_bf16_fp16_swap_does_not_apply_to_other_formats():
    result = formats(format="fp32")
    assert verdicts(result, max_normal="65504")["max_normal"] == ("wrong", None)


def test_e4m3_at_240_is_named_as_an_ieee_reading():
    # IEEE-style: (2 − 2^−3) × 2^(2^3 − 1) = 1.875 × 128 = 240.
    result = formats(format="fp8_e4m3")
    assert verdicts(result, max_normal="240")["max_normal"] == ("misconception", "e4m3-ieee-max")


@pytest.mark.parametrize("fmt, half_epsilon", [("fp16", "2^-11"), ("bf16", "2^-8"), ("fp32", "2^-24")])
def test_unit_roundoff_for_epsilon_is_named(fmt, half_epsilon):
    result = formats(format=fmt)
    assert verdicts(result, epsilon=half_epsilon)["epsilon"] == ("misconception", "unit-roundoff-for-epsilon")


@pytest.mark.parametrize("fmt, key, other", [
    ("fp16", "epsilon", "2^-14"),        # the smallest normal given as epsilon
    ("fp8_e5m2", "min_normal", "0.25"),  # epsilon given as the smallest normal
])
def test_epsilon_and_min_normal_confused_is_named(fmt, key, other):
    result = formats(format=fmt)
    assert verdicts(result, **{key: other})[key] == ("misconception", "epsilon-as-min-normal")


def test_a_wrong_mantissa_width_carries_forward_to_max_and_epsilon():
    # fp16 with 8 mantissa bits typed: max (2 − 2^−8) × 2^15 = 1.99609375 × 32,768 = 65,408, epsilon
    # 2^−8 = 0.00390625.
    result = formats(format="fp16")
    graded = verdicts(result, mantissa_bits="8", max_normal="65408", epsilon="0.00390625")
    assert graded["mantissa_bits"][0] == "wrong"
    assert graded["max_normal"] == ("carried_forward", None)
    assert graded["epsilon"] == ("carried_forward", None)


def test_a_wrong_integer_width_carries_forward_to_its_range():
    # int4 typed as 5 bits: max 2^4 − 1 = 15, min −2^4 = −16.
    result = formats(format="int4")
    graded = verdicts(result, total_bits="5", max_normal="15", min_normal="-16")
    assert graded["max_normal"] == ("carried_forward", None)
    assert graded["min_normal"] == ("carried_forward", None)


def test_e4m3_ieee_reading_is_named_on_the_candidates_own_mantissa_too():
    # Mantissa typed as 2 (wrong): E4M3 on it is (2 − 2^−1) × 2^8 = 384 (carried forward); the IEEE reading on
    # it is (2 − 2^−2) × 2^7 = 224, still the misconception.
    result = formats(format="fp8_e4m3")
    graded = verdicts(result, mantissa_bits="2", max_normal="224")
    assert graded["max_normal"] == ("misconception", "e4m3-ieee-max")
    assert verdicts(result, mantissa_bits="2", max_normal="384")["max_normal"] == ("carried_forward", None)


def test_every_declared_misconception_is_exercised_above():
    exercised = {"bf16-fp16-swap", "e4m3-ieee-max", "unit-roundoff-for-epsilon", "epsilon-as-min-normal"}
    # Engine v3: the family no longer lists its ids; each is declared on one of its quantities in the registry.
    assert exercised <= declared_on(step.key for step in FAMILIES["formats"].run({}).steps)

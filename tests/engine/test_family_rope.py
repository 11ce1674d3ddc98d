"""The ``rope`` family: RoPE frequency bands, wavelengths and position-interpolation scaling.

Hand derivations from fixtures/catalog/models.json (θ_i = rope_theta^(−2i/d),
λ_i = 2π / θ_i = 2π × rope_theta^(2i/d); computed with ``bc -l`` to 20 digits):

Llama-3.1-8B: rope_theta 500,000; head_dim 4096 / 32 = 128 → 64 bands.
  * shortest λ_0 = 2π = 6.283185307…
  * longest λ_63 = 2π × 500,000^(126/128) = 2π × 500,000 / 500,000^(1/64);
    ln 500,000 = 13.122363377; ÷ 64 = 0.205036928; e^0.205036928 = 1.227569…;
    500,000 / 1.227569 = 407,308.6169 → × 2π = 2,559,195.5174 tokens.
  * original context 8,192 (rope_scaling.original_max_position_embeddings): λ_i > 8,192 ⟺
    i > 64 × ln(8,192 / 2π) / ln 500,000 = 64 × 7.173036 / 13.122363 = 34.9841, so i = 35 … 63: 29 bands
    (λ_34 = 6,695.1 < 8,192 < λ_35 = 8,218.7).
  * rope_scaling.factor 8: scaled longest = 8 × 2,559,195.5174 = 20,473,564.139 tokens.
Qwen2.5-7B: rope_theta 1,000,000; head_dim 3584 / 28 = 128 → 64 bands; no rope_scaling → factor 1;
  original context = max_position_embeddings 131,072.
  * longest = 2π × 10^6^(126/128) = 2π × 805,842.1878 = 5,063,255.794 tokens.
  * 64 × ln(131,072 / 2π) / ln 10^6 = 46.0729 → 64 − 46 − 1 = 17 bands.
Llama-2-13B: no rope_theta → 10,000; 5120 / 40 = 128 → 64 bands; context 4,096:
  longest 2π × 10,000^(126/128) = 54,410.143; 64 × ln(4,096/2π)/ln 10,000 = 45.0269 → 18 bands.
Gemma-2-9B: head_dim 256 → 128 bands; 10,000; 8,192: longest 58,469.566; 99.6867 → 128 − 99 − 1 = 28.
DeepSeek-V3 (MLA): qk_rope_head_dim 64 → 32 bands; 10,000; original 4,096; YaRN factor 40:
  longest 2π × 10,000^(62/64) = 47,117.243; 22.5134 → 32 − 22 − 1 = 9; scaled 40 × 47,117.243 = 1,884,689.7.
Falcon-7B: head_dim 4544 / 71 = 64 → 32 bands; rope_theta and max_position_embeddings (10,000; 2,048) only in
  the catalog's library-format copy: 20.1052 → 32 − 20 − 1 = 11.
"""

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import CatalogError, ConfigError, InputError
from calculators.engine.formulas import rope as rope_formulas
from calculators.engine.grader import grade
from calculators.engine.mistakes import declared_on
from calculators.families import FAMILIES

STEP_KEYS = ["bands", "shortest_wavelength_tok", "longest_wavelength_tok", "bands_longer_than_context",
             "scaled_longest_wavelength_tok"]
MODELS = {m["id"]: m for m in json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "catalog" / "models.json").read_text())}
TWO_PI = 6.283185307179586


def rope(**inputs):
    return FAMILIES["rope"].run(inputs)


def answers(result, **overrides):
    typed = {step.key: repr(step.value) for step in result.steps}
    typed.update(overrides)
    return typed


def verdicts(result, **overrides):
    graded = grade(result, answers(result, **overrides))
    return {step.key: (step.verdict, step.misconception) for step in graded.steps}


# --- the hand-derived values -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama():
    return rope()


def test_llama_3_1_8b_is_the_default_and_reads_its_rope_scaling(llama):
    assert [step.key for step in llama.steps] == STEP_KEYS
    assert [step.unit for step in llama.steps] == ["1", "tok", "tok", "1", "tok"]
    assert llama.inputs == {"model": "llama-3.1-8b", "original_context": 8192, "scaling_factor": 8.0}


def test_llama_3_1_8b_has_64_bands_from_6_28_to_2_56_million_tokens(llama):
    assert llama.values["bands"] == 64
    assert llama.values["shortest_wavelength_tok"] == pytest.approx(TWO_PI, rel=1e-15)
    assert llama.values["longest_wavelength_tok"] == pytest.approx(2_559_195.5174, rel=1e-10)


def test_llama_3_1_8b_has_29_bands_longer_than_8192_tokens(llama):
    assert llama.values["bands_longer_than_context"] == 29


def test_llama_3_1_8b_factor_8_stretches_the_longest_band_to_20_5_million(llama):
    assert llama.values["scaled_longest_wavelength_tok"] == pytest.approx(20_473_564.139, rel=1e-10)


@pytest.mark.parametrize("model, bands, longest, longer", [
    ("qwen2.5-7b", 64, 5_063_255.794, 17),
    ("llama-2-13b", 64, 54_410.143, 18),
    ("gemma-2-9b", 128, 58_469.566, 28),
    ("deepseek-v3", 32, 47_117.243, 9),
    ("falcon-7b", 32, 47_117.243, 11),
])
def test_other_catalog_models_by_hand(model, bands, longest, longer):
    values = rope(model=model).values
    assert values["bands"] == bands
    assert values["longest_wavelength_tok"] == pytest.approx(longest, rel=1e-8)
    assert values["bands_longer_than_context"] == longer


def test_deepseek_v3_reads_its_yarn_factor_and_original_context():
    result = rope(model="deepseek-v3")
    assert result.inputs["original_context"] == 4096 and result.inputs["scaling_factor"] == 40
    assert result.values["scaled_longest_wavelength_tok"] == pytest.approx(40 * 47_117.2428, rel=1e-8)
    notes = " ".join(result.notes)
    assert "qk_rope_head_dim = 64" in notes and "YaRN" in notes


def test_inputs_override_the_configs_context_and_factor():
    # Llama-3.1-8B counted against 65,536: 64 × ln(65,536/2π)/ln 500,000 = 45.1259 → 64 − 45 − 1 = 18.
    result = rope(original_context=65536, scaling_factor=2)
    assert result.values["bands_longer_than_context"] == 18
    assert result.values["scaled_longest_wavelength_tok"] == pytest.approx(2 * 2_559_195.5174, rel=1e-10)


def test_a_context_longer_than_every_wavelength_leaves_no_band():
    # 10,000,000 tokens > λ_63 = 2,559,196: every band turns at least once.
    assert rope(original_context=10_000_000).values["bands_longer_than_context"] == 0


def test_missing_rope_theta_defaults_to_10000_and_says_so():
    result = rope(model="llama-2-13b")
    assert result.given["rope_theta"] == 10_000
    assert "no rope_theta" in result.notes[0] and "10,000" in result.notes[0]


def test_falcon_takes_its_missing_keys_from_the_library_format_copy_and_says_so():
    result = rope(model="falcon-7b")
    assert result.inputs["original_context"] == 2048
    assert "library-format copy" in result.notes[0]


def test_pasted_config_with_partial_rotation_rotates_fewer_values():
    config = dict(MODELS["llama-3.1-8b"]["config"], partial_rotary_factor=0.5)
    result = rope(config=config)
    # 128 × 0.5 = 64 rotated values → 32 bands; longest 2π × 500,000^(62/64) (exponent (64 − 2)/64).
    assert result.values["bands"] == 32
    assert result.values["longest_wavelength_tok"] == pytest.approx(TWO_PI * 500_000 ** (62 / 64), rel=1e-12)
    assert any("partial_rotary_factor" in note for note in result.notes)


def test_notes_make_the_errata_point_about_one_band():
    # Positions 1 and 3 (2 tokens apart): band 0 at 1 rad/token → 2 rad = 114.6°; band 1 at 500,000^(−1/64)
    # = 0.814618 rad/token → 1.629236 rad = 93.3°.
    note = rope().notes[-1]
    assert "114.6° apart in band 0" in note and "93.3° in band 1" in note


def test_worked_substitution_of_the_band_count(llama):
    assert llama.step("longest_wavelength_tok").substituted.startswith("2 × π × 500,000^((128 − 2) ÷ 128) = ")
    assert llama.step("bands_longer_than_context").substituted == (
        "max(0, 64 − ⌊64 × ln(8,192 ÷ (2 × π)) ÷ ln(500,000)⌋ − 1) = 29")


# --- formulas: the cached evaluator against exact substitution -------------------------------------

FORMULA_CASES = [
    (rope_formulas.BANDS, {"rotary_dim": 128}),
    (rope_formulas.SHORTEST_WAVELENGTH, {}),
    (rope_formulas.LONGEST_WAVELENGTH, {"rope_theta": 500_000, "rotary_dim": 128}),
    (rope_formulas.LONGEST_WAVELENGTH, {"rope_theta": 10_000, "rotary_dim": 64}),
    (rope_formulas.BANDS_LONGER_THAN_CONTEXT, {"bands": 64, "context": 8192, "rope_theta": 500_000}),
    (rope_formulas.BANDS_LONGER_THAN_CONTEXT, {"bands": 32, "context": 4096, "rope_theta": 10_000}),
    (rope_formulas.BANDS_LONGER_THAN_CONTEXT, {"bands": 64, "context": 10_000_000, "rope_theta": 10_000}),
    (rope_formulas.SCALED_LONGEST_WAVELENGTH, {"scaling_factor": 8, "longest_wavelength_tok": 2_559_195.5}),
]


@pytest.mark.parametrize("formula, values", FORMULA_CASES, ids=lambda case: getattr(case, "key", ""))
def test_evaluator_matches_exact_substitution(formula, values):
    assert formula(values) == pytest.approx(float(formula.exact(values).evalf(30)), rel=1e-12)


# --- input validation --------------------------------------------------------------------------------

def llama_config(**changes):
    config = dict(MODELS["llama-3.1-8b"]["config"])
    config.update(changes)
    return config


@pytest.mark.parametrize("inputs, error, field", [
    ({"original_context": 8}, InputError, "original_context"),
    ({"original_context": "long"}, InputError, "original_context"),
    ({"scaling_factor": 0.5}, InputError, "scaling_factor"),
    ({"scaling_factor": 2000}, InputError, "scaling_factor"),
    ({"model": "gpt-5"}, CatalogError, "model"),
    ({"model": "deepseek-v2"}, InputError, "original_context"),  # its inference-format config states no context
    ({"config": llama_config(rope_theta="big")}, ConfigError, "config"),
    ({"config": llama_config(rope_theta=1)}, ConfigError, "config"),
    ({"config": llama_config(rope_scaling={"rope_type": "linear", "factor": 0.5})}, ConfigError, "config"),
    ({"config": llama_config(partial_rotary_factor=3 / 128)}, ConfigError, "config"),  # 3 values: not pairs
    ({"config": llama_config(alibi=True)}, ConfigError, "config"),
])
def test_bad_inputs_name_their_field(inputs, error, field):
    with pytest.raises(error) as info:
        rope(**inputs)
    assert info.value.field == field


def test_deepseek_v2_works_once_given_a_context():
    # 32 bands, 10,000 default; 4,096 → 9 bands, as for DeepSeek-V3.
    result = rope(model="deepseek-v2", original_context=4096)
    assert result.values["bands"] == 32 and result.values["bands_longer_than_context"] == 9


# --- the generator ------------------------------------------------------------------------------------

def test_generator_is_deterministic_and_realistic():
    catalog = default_catalog()
    generate = FAMILIES["rope"].generate
    models = Counter()
    for seed in range(200):
        inputs = generate(random.Random(f"rope:{seed}"), catalog)
        assert inputs == generate(random.Random(f"rope:{seed}"), catalog)
        assert inputs["model"] != "deepseek-v2"  # states no context
        raw_scaling = MODELS[inputs["model"]].get("config", {}).get("rope_scaling")
        if raw_scaling:
            assert inputs["scaling_factor"] == raw_scaling["factor"]
        else:
            assert inputs["scaling_factor"] in (2, 4, 8)
        result = FAMILIES["rope"].run(inputs, catalog)
        assert 0 <= result.values["bands_longer_than_context"] < result.values["bands"]
        models[inputs["model"]] += 1
    assert len(models) >= 10


def test_describe_gives_rope_theta_and_context():
    catalog = default_catalog()
    text = FAMILIES["rope"].describe({"model": "llama-3.1-8b", "original_context": 8192, "scaling_factor": 8},
                                     catalog)
    assert "rope_theta = 500,000" in text and "8,192 tokens" in text and "scaling factor of 8" in text
    assert "take the default 10,000" in FAMILIES["rope"].describe(
        {"model": "llama-2-13b", "original_context": 4096, "scaling_factor": 2}, catalog)


# --- grading: misconceptions and carried-forward credit ---------------------------------------------

# Qwen2.5-7B at factor 4 (extended context 524,288: 64 × ln(524,288/2π)/ln 10^6 = 52.4948 → 11 bands).
QWEN = {"model": "qwen2.5-7b", "scaling_factor": 4}


@pytest.mark.parametrize("inputs", [{}, QWEN, {"model": "deepseek-v3"}])
def test_right_answers_score_full_marks(inputs):
    result = rope(**inputs)
    assert grade(result, answers(result)).score == 1.0


@pytest.mark.parametrize("inputs, key, typed, misconception", [
    # hidden_size ÷ 2: 4096 / 2, 3584 / 2.
    ({}, "bands", "2048", "hidden-size-for-head-dim"),
    (QWEN, "bands", "1792", "hidden-size-for-head-dim"),
    # d instead of d / 2.
    ({}, "bands", "128", "pairs-not-dims"),
    (QWEN, "bands", "128", "pairs-not-dims"),
    # 2π × rope_theta: 3,141,592.65 and 6,283,185.31.
    ({}, "longest_wavelength_tok", "3141593", "longest-band-as-theta"),
    (QWEN, "longest_wavelength_tok", "6283185", "longest-band-as-theta"),
    # Without 2π: 500,000^(126/128) = 407,308.6; 10^6^(126/128) = 805,842.2; shortest 1.
    ({}, "longest_wavelength_tok", "407309", "wavelength-without-2pi"),
    (QWEN, "longest_wavelength_tok", "805842", "wavelength-without-2pi"),
    ({}, "shortest_wavelength_tok", "1", "wavelength-without-2pi"),
    (QWEN, "shortest_wavelength_tok", "1", "wavelength-without-2pi"),
    # Every band taken to turn like band 0.
    ({}, "longest_wavelength_tok", "6.2832", "rope-single-rotation"),
    (QWEN, "longest_wavelength_tok", "6.2832", "rope-single-rotation"),
    # Llama against 65,536 (8 × 8,192): 18, or against max_position_embeddings 131,072: 48.5065 → 15;
    # Qwen against 4 × 131,072: 11.
    ({}, "bands_longer_than_context", "18", "extended-context-for-original"),
    ({}, "bands_longer_than_context", "15", "extended-context-for-original"),
    (QWEN, "bands_longer_than_context", "11", "extended-context-for-original"),
    # Wavelength divided by s: 2,559,195.5 / 8 = 319,899.4; 5,063,255.8 / 4 = 1,265,813.9.
    ({}, "scaled_longest_wavelength_tok", "319899", "scaling-shrinks-wavelength"),
    (QWEN, "scaled_longest_wavelength_tok", "1265814", "scaling-shrinks-wavelength"),
])
def test_misconceptions_are_named(inputs, key, typed, misconception):
    result = rope(**inputs)
    assert verdicts(result, **{key: typed})[key] == ("misconception", misconception)


def test_mla_hidden_size_slip_is_named_too():
    # DeepSeek-V3: 7168 / 2 = 3584 instead of 32.
    result = rope(model="deepseek-v3")
    assert verdicts(result, bands="3584")["bands"] == ("misconception", "hidden-size-for-head-dim")


def test_band_count_carries_forward_from_a_wrong_band_total():
    # bands typed as 2048: 2048 × 0.546627 = 1119.49 → 2048 − 1119 − 1 = 928 is consistent with it.
    result = rope()
    graded = verdicts(result, bands="2048", bands_longer_than_context="928")
    assert graded["bands"] == ("misconception", "hidden-size-for-head-dim")
    assert graded["bands_longer_than_context"] == ("carried_forward", None)


def test_scaled_wavelength_carries_forward_from_a_wrong_longest():
    # longest typed as 3,000,000 (17 % off); × 8 = 24,000,000.
    result = rope()
    graded = verdicts(result, longest_wavelength_tok="3e6", scaled_longest_wavelength_tok="2.4e7")
    assert graded["longest_wavelength_tok"] == ("wrong", None)
    assert graded["scaled_longest_wavelength_tok"] == ("carried_forward", None)


def test_band_count_answers_must_be_whole():
    result = rope()
    assert verdicts(result, bands_longer_than_context="29.1")["bands_longer_than_context"][0] == "close"
    assert math.isclose(result.values["bands_longer_than_context"], 29)


def test_every_declared_misconception_is_exercised_on_two_models_above():
    cases = test_misconceptions_are_named.pytestmark[0].args[1]
    models = {}
    for inputs, _key, _typed, misconception in cases:
        models.setdefault(misconception, set()).add(inputs.get("model", "llama-3.1-8b"))
    # Engine v3: the family no longer lists its ids; these are those it declared (rope_variants.py), each now
    # declared on a rope quantity in the registry.
    assert set(models) == {"hidden-size-for-head-dim", "pairs-not-dims", "longest-band-as-theta",
                           "wavelength-without-2pi", "rope-single-rotation", "extended-context-for-original",
                           "scaling-shrinks-wavelength"}
    assert set(models) <= declared_on(step.key for step in FAMILIES["rope"].run({}).steps)
    assert all(len(seen) >= 2 for seen in models.values())

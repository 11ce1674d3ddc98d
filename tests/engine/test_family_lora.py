"""The ``lora`` family: memory per adapter and how many fit (engine only, no Django).

An adapter on a (d_in, d_out) matrix adds r × (d_in + d_out) parameters. Shapes from
``fixtures/catalog/models.json``, by hand:

* Llama-3.1-8B: hidden 4,096; q 32 heads × 128 = 4,096; k/v 8 × 128 = 1,024; MLP 14,336; 32 layers.
  Rank 16 on q and v: q 16 × (4,096 + 4,096) = 131,072; v 16 × (4,096 + 1,024) = 81,920 → 212,992 per
  layer × 32 = 6,815,744 parameters × 2 B = 13,631,488 B = 13.0 MiB = 0.0126953125 GiB.
* Qwen2.5-7B: hidden 3,584; q 28 × 128 = 3,584; k/v 4 × 128 = 512; 28 layers. Rank 16 on q and v:
  16 × 7,168 + 16 × 4,096 = 114,688 + 65,536 = 180,224 per layer × 28 = 5,046,272.
* Gemma-2-9B: hidden 3,584; q 16 × 256 = 4,096; k/v 8 × 256 = 2,048; 42 layers.
* Mixtral-8x7B: attention as Llama-3.1-8B; 8 experts of width 14,336.
* Falcon-7B: hidden 4,544; q 71 × 64 = 4,544; one K/V head of 64; plain two-matrix MLP of 18,176.

The ladder's KV budget on one H100 SXM (bf16 Llama-3.1-8B, 0.90, 3 GiB): 81,559 / 1,024 × 0.9 −
14.957527160644531 − 3 = 53.72518768310547 GiB.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.formulas.lora import ALL_FORMULAS, PARAMS_PER_LAYER
from calculators.engine.grader import grade
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.families import FAMILIES

GIB = 2**30
MIB = 2**20
KEYS = ["params_per_layer", "adapter_params", "adapter_gib", "spare_gib", "adapters_fit"]
BUDGET_8B = 81_559 / 1024 * 0.9 - 16_060_522_496 / GIB - 3   # 53.72518768310547 GiB
CATALOG_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"


def lora(**inputs):
    return FAMILIES["lora"].run(inputs)


def by_key(graded) -> dict:
    return {step.key: step for step in graded.steps}


def right_answers(result) -> dict:
    return {step.key: repr(step.value) for step in result.steps}


def catalog_config(model_id: str) -> dict:
    return dict(next(m for m in json.loads((CATALOG_DIR / "models.json").read_text())
                     if m["id"] == model_id)["config"])


# --- the reference value and other hand-derived values ---------------------------------

def test_steps_come_in_order_with_their_units():
    result = lora()
    assert [step.key for step in result.steps] == KEYS
    assert [step.unit for step in result.steps] == ["1", "1", "GiB", "GiB", "1"]


def test_llama_8b_rank_16_on_q_and_v_is_13_mib():
    v = lora().values
    assert v["params_per_layer"] == 212_992
    assert v["adapter_params"] == 6_815_744
    assert v["adapter_gib"] == 13_631_488 / GIB == 13 / 1024
    assert lora().extra["adapter_mib"] == 13.0


def test_the_worked_substitution_shows_each_matrix():
    step = lora().step("params_per_layer")
    assert step.substituted == "16 × (4,096 + 4,096) + 16 × (4,096 + 1,024) = 212,992"
    assert "q 16 × (4,096 + 4,096) = 131,072; v 16 × (4,096 + 1,024) = 81,920" in lora().notes[0]


def test_a_tenth_of_the_h100_kv_budget_holds_423_adapters():
    # 0.1 × 53.72518768310547 = 5.372518768310547 GiB; / 0.0126953125 = 423.19 → 423.
    v = lora().values
    assert v["spare_gib"] == pytest.approx(0.1 * BUDGET_8B, rel=1e-12)
    assert v["adapters_fit"] == 423


def test_a_stated_budget_replaces_the_ladder():
    # 1 GiB / 0.0126953125 GiB = 78.77 → 78.
    v = lora(budget_gib=1).values
    assert v["spare_gib"] == 1
    assert v["adapters_fit"] == 78


def test_all_four_attention_projections_double_the_adapter():
    # q 131,072 + k 81,920 + v 81,920 + o 16 × (4,096 + 4,096) = 131,072 → 425,984 × 32 = 13,631,488
    # parameters × 2 B = 26 MiB.
    v = lora(targets="qkvo").values
    assert v["params_per_layer"] == 425_984
    assert v["adapter_params"] == 13_631_488
    assert v["adapter_gib"] * 1024 == 26.0


def test_all_targets_add_gate_up_and_down():
    # + 3 × 16 × (4,096 + 14,336) = 884,736 → 1,310,720 × 32 = 41,943,040 parameters = 80 MiB at bf16.
    v = lora(targets="all").values
    assert v["params_per_layer"] == 1_310_720
    assert v["adapter_params"] == 41_943_040
    assert v["adapter_gib"] * 1024 == 80.0


def test_mixtral_adapts_every_expert():
    # 425,984 + 8 experts × 3 × 16 × 18,432 = 7,077,888 → 7,503,872 × 32 = 240,123,904.
    v = lora(model="mixtral-8x7b-v0.1", targets="all").values
    assert v["params_per_layer"] == 7_503_872
    assert v["adapter_params"] == 240_123_904


def test_gemma_reads_its_wide_query_projection_from_head_dim():
    # q 16 × (3,584 + 4,096) = 122,880; k, v 16 × (3,584 + 2,048) = 90,112; o 122,880 → 425,984 × 42.
    v = lora(model="gemma-2-9b", targets="qkvo").values
    assert v["params_per_layer"] == 425_984
    assert v["adapter_params"] == 17_891_328


def test_falcon_has_a_two_matrix_mlp_and_one_kv_head():
    # Rank 64: q 64 × 9,088 = 581,632; k, v 64 × 4,608 = 294,912; o 581,632; MLP 2 × 64 × 22,720 = 2,908,160.
    result = lora(model="falcon-7b", targets="all", rank=64)
    assert result.values["params_per_layer"] == 4_661_248
    assert any("Falcon fuses q, k and v" in note for note in result.notes)


def test_fp32_adapters_are_twice_bf16():
    assert lora(adapter_dtype="fp32").values["adapter_gib"] == 2 * 13 / 1024


def test_a_base_model_that_does_not_fit_leaves_no_room():
    # Llama-3.1-70B bf16 (131.42 GiB) on one H100: budget 71.68 − 131.42 − 3 = −62.73 GiB → 0 adapters.
    result = lora(model="llama-3.1-70b")
    assert result.values["adapters_fit"] == 0
    assert "62.73 GiB short" in result.notes[0]
    # Two cards: 143.37 − 131.42 − 6 = 5.95 GiB; × 0.1 = 0.595; adapter 409,600 × 80 × 2 B = 62.5 MiB → 9.
    assert lora(model="llama-3.1-70b", gpus=2).values["adapters_fit"] == 9


@pytest.mark.parametrize("formula", ALL_FORMULAS, ids=lambda f: f"{f.key}:{f.label}")
def test_each_formula_agrees_with_its_exact_evaluation(formula):
    samples = {"rank": (8, 16, 64), "hidden_size": (4096, 3584), "q_width": (4096, 4544), "kv_width": (1024, 64),
               "experts": (1, 8), "mlp_matrices": (2, 3), "mlp_width": (14336, 18176), "layers": (32, 42),
               "params_per_layer": (212_992, 4_661_248), "adapter_params": (6_815_744, 240_123_904),
               "adapter_bits": (16, 32), "budget_gib": (1.0, 4.5), "gpus": (1, 2), "card_mib": (81_559, 23_034),
               "utilization": (0.9, 0.85), "total_params": (8_030_261_248,), "weight_bits": (16, 8),
               "expert_weight_bits": (4.25, 16),
               "routed_expert_params": (0, 7_000_000_000),
               "reserve_gib": (3.0, 1.5), "budget_share": (0.1, 0.25), "spare_gib": (5.372518768310547, -2.0),
               "adapter_gib": (13 / 1024, 0.447)}
    rng = random.Random(formula.key)
    for _ in range(20):
        values = {var.name: rng.choice(samples[var.name]) for var in formula.variables}
        assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12), values


def test_the_three_presets_read_as_sums_of_adapted_matrices():
    assert PARAMS_PER_LAYER["qv"].text == "rank × (hidden_size + q_width) + rank × (hidden_size + kv_width)"
    assert PARAMS_PER_LAYER["all"].text.endswith("experts × mlp_matrices × rank × (hidden_size + mlp_width)")


# --- input validation --------------------------------------------------------------------------

@pytest.mark.parametrize(("inputs", "field"), [
    ({"rank": 0}, "rank"),
    ({"rank": 1.5}, "rank"),
    ({"targets": "qk"}, "targets"),
    ({"adapter_dtype": "int4"}, "adapter_dtype"),
    ({"budget_gib": 0}, "budget_gib"),
    ({"budget_share": 0}, "budget_share"),
    ({"budget_share": 1.5}, "budget_share"),
    ({"gpus": 0}, "gpus"),
    ({"model": "deepseek-v3"}, "model"),      # MLA: no per-head q/k/v to adapt
    ({"model": "deepseek-v2-lite"}, "model"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as info:
        lora(**inputs)
    assert info.value.field == field
    assert str(info.value).endswith(".")


def test_a_pasted_mla_config_is_reported_on_the_config():
    entry = next(m for m in json.loads((CATALOG_DIR / "models.json").read_text()) if m["id"] == "deepseek-v2-lite")
    with pytest.raises(InputError) as info:
        lora(config=entry["config"])
    assert info.value.field == "config"


def test_a_mixture_with_dense_leading_layers_cannot_adapt_its_mlp():
    config = {**catalog_config("mixtral-8x7b-v0.1"), "first_k_dense_replace": 1}
    with pytest.raises(InputError) as info:
        lora(config=config, targets="all")
    assert info.value.field == "targets"
    assert lora(config=config, targets="qkvo").values["params_per_layer"] == 425_984


# --- the generator -----------------------------------------------------------------------------

def test_the_generator_is_deterministic():
    catalog = default_catalog()
    for seed in range(10):
        assert (FAMILIES["lora"].generate(random.Random(seed), catalog)
                == FAMILIES["lora"].generate(random.Random(seed), catalog))


def test_generated_problems_are_realistic():
    catalog = default_catalog()
    modes, presets = Counter(), Counter()
    for seed in range(150):
        inputs = FAMILIES["lora"].generate(random.Random(seed), catalog)
        assert not catalog.model(inputs["model"]).config.kv_lora_rank
        assert inputs["rank"] in (8, 16, 32, 64)
        result = lora(**inputs)
        assert result.values["adapters_fit"] >= 1
        assert result.values["spare_gib"] > 0
        modes["budget" if "budget_gib" in inputs else "ladder"] += 1
        presets[inputs["targets"]] += 1
        statement = FAMILIES["lora"].describe(inputs, catalog)
        assert inputs["model"] in statement and f"rank {inputs['rank']}" in statement
    assert set(presets) == {"qv", "qkvo", "all"}
    assert 0.25 <= modes["budget"] / 150 <= 0.55


# --- grading -----------------------------------------------------------------------------------

def test_right_answers_in_mib_score_one():
    answers = {"params_per_layer": "16*(4096+4096) + 16*(4096+1024)", "adapter_params": "6815744",
               "adapter_gib": "13 MiB", "spare_gib": "5.37", "adapters_fit": "423"}
    graded = grade(lora(), answers)
    assert {step.verdict for step in graded.steps} == {"correct"}
    assert graded.score == 1.0


@pytest.mark.parametrize(("model", "square_per_layer", "layers"), [
    # Llama-3.1-8B: 16 × 8,192 × 2 = 262,144; Qwen2.5-7B: 16 × 7,168 × 2 = 229,376.
    ("llama-3.1-8b", 262_144, 32),
    ("qwen2.5-7b", 229_376, 28),
])
def test_k_and_v_taken_as_square_are_named(model, square_per_layer, layers):
    result = lora(model=model)
    step = by_key(grade(result, {"params_per_layer": str(square_per_layer)}))["params_per_layer"]
    assert (step.verdict, step.misconception) == ("misconception", "lora-square-projections")
    step = by_key(grade(result, {"adapter_params": str(square_per_layer * layers)}))["adapter_params"]
    assert step.misconception == "lora-square-projections"


def test_square_projections_are_not_a_mistake_on_an_mha_model():
    # Llama-2-7B has 32 K/V heads of 128 = 4,096: square is right. 16 × 8,192 × 2 = 262,144.
    step = by_key(grade(lora(model="llama-2-7b"), {"params_per_layer": "262144"}))["params_per_layer"]
    assert step.verdict == "correct"


@pytest.mark.parametrize(("model", "full", "per_layer"), [
    # Llama-3.1-8B: 4,096² + 4,096 × 1,024 = 20,971,520; Qwen2.5-7B: 3,584² + 3,584 × 512 = 14,680,064.
    ("llama-3.1-8b", 20_971_520, 212_992),
    ("qwen2.5-7b", 14_680_064, 180_224),
])
def test_full_matrix_and_one_layer_are_named(model, full, per_layer):
    result = lora(model=model)
    step = by_key(grade(result, {"params_per_layer": str(full)}))["params_per_layer"]
    assert (step.verdict, step.misconception) == ("misconception", "lora-full-matrix")
    step = by_key(grade(result, {"adapter_params": str(per_layer)}))["adapter_params"]
    assert (step.verdict, step.misconception) == ("misconception", "lora-one-layer")


@pytest.mark.parametrize(("model", "params"), [("llama-3.1-8b", 6_815_744), ("qwen2.5-7b", 5_046_272)])
def test_bits_for_bytes_and_gb_for_gib_on_the_adapter_are_named(model, params):
    result = lora(model=model)
    # × 16 bits as bytes; × 2 bytes ÷ 10^9 read as GiB.
    bits = by_key(grade(result, {"adapter_gib": f"{params * 16} B"}))["adapter_gib"]
    assert bits.misconception == "bits-for-bytes"
    gb = by_key(grade(result, {"adapter_gib": f"{params * 2 / 1e9!r}"}))["adapter_gib"]
    assert gb.misconception == "gb-gib-mix"


def test_square_projections_carry_forward_to_the_count():
    # 262,144 × 32 = 8,388,608 params × 2 B = 16 MiB; 5.3725 / 0.015625 = 343.8 → 343.
    answers = {"params_per_layer": "262144", "adapter_params": "8388608", "adapter_gib": "16 MiB",
               "spare_gib": "5.3725", "adapters_fit": "343"}
    verdicts = {step.key: step.verdict for step in grade(lora(), answers).steps}
    assert verdicts == {"params_per_layer": "misconception", "adapter_params": "carried_forward",
                        "adapter_gib": "carried_forward", "spare_gib": "correct",
                        "adapters_fit": "carried_forward"}


def test_the_misconceptions_are_declared():
    for mid in ("lora-square-projections", "lora-full-matrix", "lora-one-layer"):
        assert MISCONCEPTIONS[mid].explanation.endswith(".")
        assert MISCONCEPTIONS[mid].link.startswith("/")


def test_a_stated_budget_needs_no_card_in_the_catalog():
    # A stored budget problem carries no GPU in its snapshot: the card plays no part.
    from calculators.engine.catalog import catalog_from_entries

    entries = [m for m in json.loads((CATALOG_DIR / "models.json").read_text()) if m["id"] == "llama-3.1-8b"]
    result = FAMILIES["lora"].run({"model": "llama-3.1-8b", "budget_gib": 2}, catalog_from_entries(entries, []))
    # 2 / 0.0126953125 = 157.54 → 157.
    assert result.values["adapters_fit"] == 157

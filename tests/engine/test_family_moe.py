"""The ``moe`` family: all experts stored, a few run per token (engine only, no Django).

Counts derived by hand from ``fixtures/catalog/models.json`` (the same derivations as
tests/engine/test_param_count.py):

* Mixtral-8x7B: per layer attention 4,096² × 2 + 4,096 × 1,024 × 2 = 41,943,040; one expert
  3 × 4,096 × 14,336 = 176,160,768; router 8 × 4,096 = 32,768; norms 8,192. Per layer with all 8
  experts: 1,451,270,144 × 32 = 46,440,644,608; + embeddings 2 × 32,000 × 4,096 = 262,144,000 + final
  norm 4,096 = 46,702,792,704. A token skips 6 experts per layer: 46,702,792,704 − 32 × 6 ×
  176,160,768 = 12,879,925,248 active.
* DeepSeek-V3: 671,026,419,200 total; a token skips 248 of 256 routed experts (3 × 7,168 × 2,048 =
  44,040,192 each) in 58 MoE layers: 671,026,419,200 − 58 × 248 × 44,040,192 = 37,552,297,472 active.
* DeepSeek-V2-Lite: 15,706,484,224 total; skips 58 of 64 experts (3 × 2,048 × 1,408 = 8,650,752) in
  26 layers: 15,706,484,224 − 26 × 58 × 8,650,752 = 2,661,150,208 active.
* Llama-3.1-8B (dense): 8,030,261,248, all active.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import CatalogError, InputError
from calculators.engine.grader import grade
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.engine.procedures.moe import ALL_FORMULAS
from calculators.families import FAMILIES

GIB = 2**30
KEYS = ["total_params", "active_params", "weights_gib", "active_bytes_per_token", "flops_per_token",
        "saving_ratio", "tokens_per_expert", "all_to_all_bytes", "expert_flop_per_byte", "ridge_flop_per_byte",
        "ep_efficient"]
MIXTRAL = (46_702_792_704, 12_879_925_248)
V3 = (671_026_419_200, 37_552_297_472)
V2_LITE = (15_706_484_224, 2_661_150_208)
CATALOG_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"


def moe(**inputs):
    return FAMILIES["moe"].run(inputs)


def by_key(graded) -> dict:
    return {step.key: step for step in graded.steps}


def right_answers(result) -> dict:
    return {step.key: repr(step.value) for step in result.steps}


# --- hand-derived values -----------------------------------------------------------------------

def test_steps_come_in_order_with_their_units():
    result = moe()
    assert [step.key for step in result.steps] == KEYS
    # tokens_per_expert counts tokens ("16 tokens" is read), not a bare ratio
    assert [step.unit for step in result.steps] == ["1", "1", "GiB", "B", "FLOP", "1", "tok", "B", "FLOP/byte",
                                                    "FLOP/byte", "1"]
    assert result.inputs["model"] == "mixtral-8x7b-v0.1"  # the default is a mixture of experts


def test_mixtral_at_bf16_stores_87_gib_and_runs_12_9_billion_parameters_a_token():
    v = moe().values
    assert (v["total_params"], v["active_params"]) == MIXTRAL
    # 46,702,792,704 × 2 B = 93,405,585,408 B = 86.99 GiB, every expert resident.
    assert v["weights_gib"] == pytest.approx(93_405_585_408 / GIB, rel=1e-12)
    assert round(v["weights_gib"], 2) == 86.99
    # 12,879,925,248 × 2 B read per token at batch 1; 2 × 12,879,925,248 operations.
    assert v["active_bytes_per_token"] == 25_759_850_496
    assert v["flops_per_token"] == 25_759_850_496
    # 46,702,792,704 / 12,879,925,248 = 3.626.
    assert v["saving_ratio"] == pytest.approx(46_702_792_704 / 12_879_925_248, rel=1e-12)
    assert round(v["saving_ratio"], 3) == 3.626


def test_deepseek_v3_at_fp8_stores_625_gib_and_runs_37_6_billion():
    v = moe(model="deepseek-v3", weights_dtype="fp8").values
    assert (v["total_params"], v["active_params"]) == V3
    # 671,026,419,200 B at one byte each = 624.94 GiB.
    assert v["weights_gib"] == pytest.approx(671_026_419_200 / GIB, rel=1e-12)
    assert round(v["weights_gib"], 2) == 624.94
    assert v["active_bytes_per_token"] == 37_552_297_472
    assert v["flops_per_token"] == 75_104_594_944
    # 671,026,419,200 / 37,552,297,472 = 17.87.
    assert round(v["saving_ratio"], 2) == 17.87


def test_deepseek_v2_lite_at_int4_is_charged_4_5_bits():
    v = moe(model="deepseek-v2-lite", weights_dtype="int4").values
    assert (v["total_params"], v["active_params"]) == V2_LITE
    # 15,706,484,224 × 4.5 / 8 = 8,834,897,376 B; 2,661,150,208 × 4.5 / 8 = 1,496,896,992 B.
    assert v["weights_gib"] == pytest.approx(8_834_897_376 / GIB, rel=1e-12)
    assert v["active_bytes_per_token"] == 1_496_896_992
    assert v["flops_per_token"] == 5_322_300_416


def test_a_dense_model_has_no_experts_and_a_ratio_of_one():
    result = moe(model="llama-3.1-8b")
    v = result.values
    assert v["total_params"] == v["active_params"] == 8_030_261_248
    assert v["saving_ratio"] == 1
    assert v["flops_per_token"] == 16_060_522_496
    assert "llama-3.1-8b is dense: it has no experts" in result.notes[0]
    assert result.extra["is_moe"] is False


def test_the_notes_teach_operations_saved_memory_not():
    notes = " ".join(moe().notes)
    assert "MoE saves operations, not memory" in notes
    # 25.76 GB read at batch 1 against 93.41 GB for every expert.
    assert "reads 25.76 GB of weights instead of 93.41 GB" in notes
    assert "routes a token to 2 of 8 experts" in notes
    assert "8 of 256 experts plus 1 shared" in " ".join(moe(model="deepseek-v3").notes)


def test_weights_bits_override_the_precision():
    # 46,702,792,704 × 4.8 / 8 = 28,021,675,622.4 B.
    v = moe(weights_dtype="int4", weights_bits=4.8).values
    assert v["weights_gib"] == pytest.approx(28_021_675_622.4 / GIB, rel=1e-12)


@pytest.mark.parametrize("formula", ALL_FORMULAS, ids=lambda f: f.key)
def test_each_formula_agrees_with_its_exact_evaluation(formula):
    for total in (MIXTRAL, V3, V2_LITE, (8_030_261_248, 8_030_261_248)):
        for bits in (4, 4.5, 8, 16):
            values = {"total_params": total[0], "active_params": total[1], "weight_bits": bits,
                      "active_expert_params": total[1] // 2, "expert_weight_bits": 4.25}
            values = {var.name: values[var.name] for var in formula.variables}
            assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


# --- input validation --------------------------------------------------------------------------

@pytest.mark.parametrize(("inputs", "field"), [
    ({"weights_dtype": "int3"}, "weights_dtype"),
    ({"weights_bits": 0}, "weights_bits"),
    ({"weights_bits": 33}, "weights_bits"),
    ({"ep_degree": 0}, "ep_degree"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as info:
        moe(**inputs)
    assert info.value.field == field


def test_an_unknown_model_is_a_catalog_error_on_model():
    with pytest.raises(CatalogError) as info:
        moe(model="gpt-5")
    assert info.value.field == "model"


def test_a_pasted_config_stands_in_for_the_model():
    entry = next(m for m in json.loads((CATALOG_DIR / "models.json").read_text())
                 if m["id"] == "mixtral-8x7b-v0.1")
    assert moe(config=json.dumps(entry["config"])).values["active_params"] == MIXTRAL[1]


# --- the generator -----------------------------------------------------------------------------

def test_the_generator_is_deterministic():
    catalog = default_catalog()
    for seed in range(10):
        assert (FAMILIES["moe"].generate(random.Random(seed), catalog)
                == FAMILIES["moe"].generate(random.Random(seed), catalog))


def test_generated_problems_are_mostly_mixtures_of_experts():
    catalog = default_catalog()
    kinds, models = Counter(), set()
    for seed in range(200):
        inputs = FAMILIES["moe"].generate(random.Random(seed), catalog)
        assert inputs["model"] in catalog.models
        assert inputs["weights_dtype"] in ("bf16", "fp8", "int8", "int4")
        assert "weights_bits" not in inputs or inputs["weights_dtype"] == "int4"
        result = moe(**inputs)
        kinds[result.extra["is_moe"]] += 1
        models.add(inputs["model"])
        assert inputs["model"] in FAMILIES["moe"].describe(inputs, catalog)
    # The catalog's four MoE models all come up; about one problem in seven is dense.
    assert {"mixtral-8x7b-v0.1", "deepseek-v2-lite", "deepseek-v2", "deepseek-v3"} <= models
    assert 0.05 <= kinds[False] / 200 <= 0.25


# --- grading -----------------------------------------------------------------------------------

def test_right_answers_score_one():
    result = moe(model="deepseek-v3", weights_dtype="fp8")
    graded = grade(result, right_answers(result))
    assert {step.verdict for step in graded.steps} == {"correct"}


@pytest.mark.parametrize(("inputs", "active_gib"), [
    # Mixtral bf16: 12,879,925,248 × 2 / 2^30 = 23.99 GiB.
    ({}, "23.99"),
    # DeepSeek-V3 fp8: 37,552,297,472 / 2^30 = 34.97 GiB.
    ({"model": "deepseek-v3", "weights_dtype": "fp8"}, "34.97"),
])
def test_memory_sized_from_active_parameters_is_moe_saves_memory(inputs, active_gib):
    step = by_key(grade(moe(**inputs), {"weights_gib": active_gib}))["weights_gib"]
    assert (step.verdict, step.misconception) == ("misconception", "moe-saves-memory")
    assert "MoE saves operations, not memory" in step.message


@pytest.mark.parametrize(("inputs", "total"), [({}, MIXTRAL[0]), ({"model": "deepseek-v2-lite"}, V2_LITE[0])])
def test_every_expert_charged_to_every_token_is_named(inputs, total):
    result = moe(**inputs)
    # bf16: total × 2 bytes and 2 × total operations, each typed on its own (with the others blank).
    for key, typed in (("active_params", total), ("active_bytes_per_token", total * 2),
                       ("flops_per_token", total * 2)):
        step = by_key(grade(result, {key: str(typed)}))[key]
        assert (step.verdict, step.misconception) == ("misconception", "moe-all-experts-per-token"), key


def test_after_taking_every_expert_as_active_the_later_steps_carry_forward():
    # Active typed as the total (a misconception); bytes and operations follow from it: no second penalty.
    total = MIXTRAL[0]
    steps = by_key(grade(moe(), {"active_params": str(total), "active_bytes_per_token": str(total * 2),
                                 "flops_per_token": str(total * 2), "saving_ratio": "1"}))
    assert steps["active_params"].misconception == "moe-all-experts-per-token"
    assert steps["active_bytes_per_token"].verdict == steps["flops_per_token"].verdict == "carried_forward"
    assert steps["saving_ratio"].verdict == "carried_forward"


def test_the_dense_model_cannot_make_these_misconceptions():
    # Active = total on a dense model: the variants equal the right answer and are skipped.
    result = moe(model="llama-3.1-8b")
    steps = by_key(grade(result, {"weights_gib": "14.96", "flops_per_token": "16060522496"}))
    assert steps["weights_gib"].verdict == steps["flops_per_token"].verdict == "correct"


def test_bits_for_bytes_on_the_bytes_read():
    # Mixtral bf16: 12,879,925,248 × 16 = 206,078,803,968.
    step = by_key(grade(moe(), {"active_bytes_per_token": "206078803968"}))["active_bytes_per_token"]
    assert step.misconception == "bits-for-bytes"


def test_a_slip_in_active_params_carries_forward():
    # Active typed as 13.5e9 (12,879,925,248 to three figures is 12.9e9, so a slip, not a rounding): bytes 27e9 at
    # bf16, operations 27e9, ratio 46,702,792,704 / 13.5e9 = 3.4595.
    result = moe()
    answers = {**right_answers(result), "active_params": "13.5e9", "active_bytes_per_token": "27e9",
               "flops_per_token": "2.7e10", "saving_ratio": "3.4595"}
    verdicts = {step.key: step.verdict for step in grade(result, answers).steps}
    assert verdicts["active_params"] == "close"
    assert verdicts["active_bytes_per_token"] == verdicts["flops_per_token"] == "carried_forward"
    assert verdicts["saving_ratio"] == "carried_forward"


def test_the_misconceptions_are_declared():
    for mid in ("moe-saves-memory", "moe-all-experts-per-token"):
        assert MISCONCEPTIONS[mid].explanation.endswith(".")


# --- expert parallelism (docs/architecture.md §12) --------------------------------------------------------------

def test_mixtral_at_batch_64_over_eight_h100s_is_bandwidth_bound():
    v = moe().values
    # 64 × 2 ÷ 8 = 16 tokens per expert; all-to-all 2 × 32 × 64 × 2 × 4,096 × 2 B × 7/8 = 58,720,256 B.
    assert v["tokens_per_expert"] == 16
    assert v["all_to_all_bytes"] == 2 * 32 * 64 * 2 * 4096 * 2 * 7 / 8 == 58_720_256
    # 2 × 16 FLOPs per weight ÷ 2 B = 16 FLOP/byte < 295.3: not efficient.
    assert v["expert_flop_per_byte"] == 16 and v["ep_efficient"] == 0


def test_deepseek_v3_needs_a_large_batch_before_its_experts_pay_on_a_b200():
    # 256 experts, top-8, 58 MoE layers, width 7,168; fp8 weights (1 B): 2 × B × 8 ÷ 256 FLOP per byte.
    small = moe(model="deepseek-v3", weights_dtype="fp8", gpu="b200", batch=1024, ep_degree=32).values
    assert small["tokens_per_expert"] == 32 and small["expert_flop_per_byte"] == 64
    assert small["ridge_flop_per_byte"] == pytest.approx(4500 / 7.7, rel=1e-12)  # fp8 dense ÷ 7,700 GB/s
    assert small["ep_efficient"] == 0
    assert small["all_to_all_bytes"] == 2 * 58 * 1024 * 8 * 7168 * 2 * 31 / 32
    big = moe(model="deepseek-v3", weights_dtype="fp8", gpu="b200", batch=16384, ep_degree=32).values
    assert big["expert_flop_per_byte"] == 1024 and big["ep_efficient"] == 1


def test_a_dense_model_has_no_expert_parallel_steps():
    assert [s.key for s in moe(model="llama-3.1-8b").steps] == KEYS[:6]


def test_tokens_per_expert_reads_a_count_of_tokens():
    result = moe()
    answers = right_answers(result)
    value = result.values["tokens_per_expert"]
    for typed in (f"{value:g} tokens", f"{value:g} tok", f"{value:g}"):  # "16 tokens" was refused as unreadable
        answers["tokens_per_expert"] = typed
        assert by_key(grade(result, answers))["tokens_per_expert"].verdict == "correct", typed


# --- one card of the data-parallel-attention layout -------------------------------------------------------

def test_one_card_of_the_dp_attention_layout_on_32_h100s():
    """DeepSeek-V3 at fp8, experts over 32 H100s, attention data-parallel, 2,300 tokens per user. Routed experts:
    58 × 256 × 44,040,192 = 653,908,770,816; every card keeps the other 671,026,419,200 − 653,908,770,816 =
    17,117,648,384 and a 32nd of the routed, 20,434,649,088: 37,552,297,472 B = 34.97 GiB. Usable 81,559 MiB ×
    0.9 = 71.68 GiB, less the weights and 3 GiB: 33.71 GiB. One copy of the bf16 latent: 61 × (512 + 64) × 2 B =
    70,272 B per token × 2,300 = 161,625,600 B = 0.1505 GiB; ⌊33.709 ÷ 0.1505⌋ = 223 users per card."""
    result = FAMILIES["moe"].run({"model": "deepseek-v3", "weights_dtype": "fp8", "gpu": "h100-sxm5-80gb",
                                  "ep_degree": 32, "layout": "dp-attention", "layout_context": 2300})
    v = result.values

    assert [step.key for step in result.steps][-6:] == ["kv_bytes_per_token", "per_user_gib", "ep_weights_per_gpu_gib",
                                                        "usable_per_gpu_gib", "kv_budget_gib", "users_worst_case"]
    assert v["ep_weights_per_gpu_gib"] == pytest.approx(37_552_297_472 / 2**30, rel=1e-12)
    assert v["kv_budget_gib"] == pytest.approx(81_559 / 1024 * 0.9 - 37_552_297_472 / 2**30 - 3, rel=1e-12)
    assert v["per_user_gib"] == pytest.approx(161_625_600 / 2**30, rel=1e-12)
    assert v["users_worst_case"] == 223


def test_the_layout_is_refused_for_a_dense_model():
    with pytest.raises(InputError, match="mixture of experts") as caught:
        FAMILIES["moe"].run({"model": "llama-3.1-8b", "layout": "dp-attention"})
    assert caught.value.field == "layout"


def test_without_a_layout_the_family_keeps_its_steps():
    result = FAMILIES["moe"].run({"model": "deepseek-v3", "weights_dtype": "fp8", "gpu": "h100-sxm5-80gb"})
    assert "ep_weights_per_gpu_gib" not in result.values and len(result.steps) == 11

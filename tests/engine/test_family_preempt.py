"""The ``preempt`` family (docs/architecture.md §12): recompute versus swap, hand-derived on two models and cards
and a pasted config."""

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.procedures.preempt import PREEMPT_FORMULAS, STEP_KEYS
from calculators.families import FAMILIES

FAMILY = FAMILIES["preempt"]


def preempt(**inputs):
    return FAMILY.run(inputs)


def verdict(result, key, text):
    return {step.key: step for step in grade(result, {key: text}).steps}[key]


def test_reference_stack_swaps_about_twenty_times_cheaper_per_token():
    result = preempt()
    v = result.values
    assert [s.key for s in result.steps] == list(STEP_KEYS)
    # 131,072 B ÷ 64 GB/s = 2.048 µs one way.
    assert v["swap_ms_per_token"] == pytest.approx(131_072 / 64e9 * 1e3, rel=1e-12)
    # (2 × 8,030,261,248 + 4 × 32 × 32 × 128 × 2,300) ÷ (989.4e12 × 0.4) = 43.63 µs.
    flops = 2 * 8_030_261_248 + 4 * 32 * 32 * 128 * 2300
    assert v["recompute_flops_per_token"] == flops
    assert v["recompute_ms_per_token"] == pytest.approx(flops / (989.4e12 * 0.4) * 1e3, rel=1e-12)
    assert v["recompute_to_swap_ratio"] == pytest.approx(21.30, abs=0.01)
    assert v["recompute_ms_per_request"] == pytest.approx(2300 * flops / (989.4e12 * 0.4) * 1e3, rel=1e-12)
    assert v["swap_ms_per_request"] == pytest.approx(2 * 2300 * 131_072 / 64e9 * 1e3, rel=1e-12)
    assert any("recomputed tokens fit" in note for note in result.notes)


def test_seventy_b_on_sixteen_a100s_swaps_two_copies_over_pcie_gen4():
    # 8 K/V heads on 16 cards: r = 2; each card moves 327,680 × 2 ÷ 16 B over 32 GB/s.
    v = preempt(model="llama-3.1-70b", gpu="a100-sxm4-80gb", gpus=16, context=8192).values
    assert v["kv_replication"] == 2
    assert v["swap_ms_per_token"] == pytest.approx(327_680 * 2 / 16 / 32e9 * 1e3, rel=1e-12)
    flops = 2 * 70_553_706_496 + 4 * 80 * 64 * 128 * 8192
    assert v["recompute_ms_per_token"] == pytest.approx(flops / (16 * 312e12 * 0.4) * 1e3, rel=1e-12)


def test_a_pasted_config_and_mla_latent():
    config = {"model_type": "llama", "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
              "hidden_size": 2048, "intermediate_size": 5632, "vocab_size": 32000, "tie_word_embeddings": False}
    v = preempt(config=config, gpu="l40s", context=1000).values
    assert v["kv_bytes_per_token"] == 2 * 24 * 8 * 128 * 2
    assert v["swap_ms_per_token"] == pytest.approx(2 * 24 * 8 * 128 * 2 / 32e9 * 1e3, rel=1e-12)
    mla = preempt(model="deepseek-v2-lite", gpus=2).values
    assert mla["kv_replication"] == 2 and mla["kv_bytes_per_token"] == 31_104


def test_misconceptions_are_named():
    result = preempt()
    both_ways = 131_072 / 128e9 * 1e3
    assert verdict(result, "swap_ms_per_token", f"{both_ways}").misconception == "pcie-bidirectional"
    assert verdict(result, "swap_ms_per_token", f"{both_ways * 16}").misconception == "transfer-bits-for-bytes"
    # 32 cards over 8 K/V heads keep 4 copies (2 would collide with the both-ways slip, also ÷ 2).
    seventy = preempt(model="llama-3.1-70b", gpus=32)
    one_copy = 327_680 / 32 / 64e9 * 1e3
    assert verdict(seventy, "swap_ms_per_token", f"{one_copy}").misconception == "kv-replication-ignored"


def test_a_card_without_pcie_figure_is_refused():
    with pytest.raises(InputError, match="PCIe"):
        preempt(gpu="tpu-v5e")


@pytest.mark.parametrize("formula", PREEMPT_FORMULAS, ids=lambda f: f.key)
def test_formulas_agree_with_exact_evaluation(formula):
    sample = {"active_params": 8e9, "layers": 32, "heads": 32, "attention_head_dim": 128, "context": 2300,
              "recompute_flops_per_token": 1.7e10, "gpus": 2, "peak_tflops": 989.4, "prefill_mfu": 0.4,
              "kv_bytes_per_token": 131_072, "kv_replication": 2, "pcie_gb_s": 64, "recompute_ms_per_token": 0.04,
              "swap_ms_per_token": 0.002}
    values = {var.name: sample[var.name] for var in formula.variables}
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


def test_generated_problems_run():
    catalog = default_catalog()
    for seed in range(40):
        inputs = FAMILY.generate(random.Random(seed), catalog)
        assert FAMILY.run(inputs, catalog).values["recompute_to_swap_ratio"] > 0
        assert inputs["model"] in FAMILY.describe(inputs, catalog)


def test_total_parameters_for_active_in_the_recompute_is_named():
    # Issue 29 (held-back probe): a mixture of experts' recompute costed from its total parameters was graded wrong;
    # it is the every-expert-per-token mistake now (verdict changes wrong → misconception), as in params and moe.
    # Mixtral-8x7B at the 2,300 cached tokens: 2 × 12,879,925,248 active + 4 × 32 layers × 32 heads × 128 × 2,300
    # = 25,759,850,496 + 1,205,862,400 = 26,965,712,896 FLOP; with the 46,702,792,704 total instead:
    # 93,405,585,408 + 1,205,862,400 = 94,611,447,808 FLOP.
    result = preempt(model="mixtral-8x7b-v0.1")
    assert result.values["recompute_flops_per_token"] == 26_965_712_896
    step = {s.key: s for s in grade(result, {"kv_bytes_per_token": repr(result.values["kv_bytes_per_token"]),
                                             "kv_replication": "1",
                                             "recompute_flops_per_token": "94611447808"}).steps}
    assert (step["recompute_flops_per_token"].verdict,
            step["recompute_flops_per_token"].misconception) == ("misconception", "moe-all-experts-per-token")

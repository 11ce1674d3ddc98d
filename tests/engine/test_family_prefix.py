"""The ``prefix`` family: FLOPs and TTFT a cached prefix saves per request, and the KV cache it pins.

Pure engine, no Django. By hand, for the reference stack (Llama-3.1-8B, 8,030,261,248
parameters; H100 SXM at 989.4 dense bf16 TFLOP/s) with a 1,024-token prefix, 80 % hits,
40 % MFU and one distinct prefix:

* prefix prefill 2 × 8,030,261,248 × 1,024 + 4 × 32 × 4,096 × 1,024² = 16,445,975,035,904 +
  549,755,813,888 = 16,995,730,849,792 FLOP;
* saved per request 0.8 × that = 13,596,584,679,833.6 FLOP;
* compute delivered 989.4e12 × 0.4 = 3.9576e14 FLOP/s → 13,596,584,679,833.6 ÷ 3.9576e14 =
  34.3556 ms per request (42.9445 ms per hit);
* KV per token 2 × 32 × 8 × 128 × 2 = 131,072 B; pinned 131,072 × 1,024 = 2^27 B = 0.125 GiB.
"""

from __future__ import annotations

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.procedures.prefix import PREFIX_FORMULAS, STEP_KEYS
from calculators.families import FAMILIES

FAMILY = FAMILIES["prefix"]
PREFIX_FLOPS = 16_995_730_849_792


def prefix(**inputs):
    return FAMILY.run(inputs)


def verdict(result, key, text):
    return {step.key: step for step in grade(result, {key: text}).steps}[key]


@pytest.fixture(scope="module")
def reference():
    return prefix()


# --- the reference stack -----------------------------------------------------------------------

def test_steps_come_in_order_with_their_units(reference):
    assert [step.key for step in reference.steps] == list(STEP_KEYS) == [
        "prefix_flops", "flops_saved_per_request", "effective_flop_s", "ttft_saved_ms", "kv_bytes_per_token",
        "pinned_gib"]
    assert [step.unit for step in reference.steps] == ["FLOP", "FLOP", "FLOP/s", "ms", "B", "GiB"]


def test_reference_savings(reference):
    v = reference.values
    assert v["prefix_flops"] == PREFIX_FLOPS
    assert v["flops_saved_per_request"] == pytest.approx(13_596_584_679_833.6, rel=1e-12)
    assert v["effective_flop_s"] == pytest.approx(3.9576e14, rel=1e-12)
    assert v["ttft_saved_ms"] == pytest.approx(34.355631392, rel=1e-9)


def test_reference_prefix_pins_an_eighth_of_a_gib(reference):
    assert reference.values["kv_bytes_per_token"] == 131_072
    assert reference.values["pinned_gib"] == 0.125
    assert reference.step("pinned_gib").substituted == "1 × 131,072 B × 1,024 = 0.125 GiB"


def test_notes_give_the_saving_per_hit_and_say_the_prefix_is_pinned_once(reference):
    text = " ".join(reference.notes)
    assert "Each hit saves 42.94 ms" in text and "averages 34.36 ms per request" in text
    assert "once, however many requests share it" in text
    assert "no causal halving" in text


@pytest.mark.parametrize("hit_rate, saved", [(1, PREFIX_FLOPS), (0, 0), (0.5, PREFIX_FLOPS / 2)])
def test_the_saving_scales_with_the_hit_rate(hit_rate, saved):
    assert prefix(hit_rate=hit_rate).values["flops_saved_per_request"] == pytest.approx(saved, rel=1e-12)


def test_distinct_prefixes_each_pin_their_own_cache():
    # 4 × 131,072 × 1,024 = 2^29 B = 0.5 GiB.
    assert prefix(distinct_prefixes=4).values["pinned_gib"] == 0.5


def test_sliding_windows_cap_what_a_long_prefix_pins():
    # Mistral-7B, every layer windowed at 4,096, fp8 cache: 2 × 32 × 8 × 128 × 1 = 65,536 B per token;
    # 4 prefixes × 65,536 × min(8,192, 4,096) = 2^30 B = 1.0 GiB.
    assert prefix(model="mistral-7b-v0.1", prefix_tokens=8192, kv_dtype="fp8",
                  distinct_prefixes=4).values["pinned_gib"] == 1.0
    # Gemma-2-9B, half its 42 layers windowed: 344,064 × (21 × 8,192 + 21 × 4,096) ÷ 42 = 2,113,929,216 B
    # = 1.96875 GiB.
    assert prefix(model="gemma-2-9b", prefix_tokens=8192).values["pinned_gib"] == pytest.approx(1.96875, rel=1e-12)


def test_latent_attention_pins_the_latent_cache():
    # DeepSeek-V2-Lite: 27 × (512 + 64) × 2 = 31,104 B per token; × 1,024 ÷ 2^30 = 0.029663 GiB.
    v = prefix(model="deepseek-v2-lite").values
    assert v["kv_bytes_per_token"] == 31_104
    assert v["pinned_gib"] == pytest.approx(31_104 * 1024 / 2**30, rel=1e-12)


# --- formulas ----------------------------------------------------------------------------------

SAMPLE = {"params": 7_615_616_512, "prefix_tokens": 3000, "layers": 42, "hidden_size": 3584, "hit_rate": 0.85,
          "prefix_flops": 4.6e13, "flops_saved_per_request": 3.9e13, "effective_flop_s": 7.9e14,
          "distinct_prefixes": 7, "kv_bytes_per_token": 344_064, "full_layers": 21, "window_layers": 21,
          "window": 4096}


@pytest.mark.parametrize("formula", PREFIX_FORMULAS, ids=lambda f: f.label)
def test_numeric_evaluator_matches_the_exact_evaluation(formula):
    values = {var.name: SAMPLE[var.name] for var in formula.variables}
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


# --- inputs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("inputs, field", [
    ({"prefix_tokens": 0}, "prefix_tokens"),
    ({"hit_rate": 1.1}, "hit_rate"),
    ({"hit_rate": -0.1}, "hit_rate"),
    ({"distinct_prefixes": 0}, "distinct_prefixes"),
    ({"prefill_mfu": 0}, "prefill_mfu"),
    ({"kv_dtype": "int4"}, "kv_dtype"),
    ({"gpu": "l4", "precision": "fp4"}, "precision"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as caught:
        prefix(**inputs)
    assert caught.value.field == field


# --- the generator -----------------------------------------------------------------------------

def test_generator_is_deterministic_for_a_seed():
    catalog = default_catalog()
    assert FAMILY.generate(random.Random(5), catalog) == FAMILY.generate(random.Random(5), catalog)


def test_generated_problems_are_realistic():
    catalog = default_catalog()
    distinct = set()
    for seed in range(150):
        inputs = FAMILY.generate(random.Random(seed), catalog)
        model, card = catalog.model(inputs["model"]), catalog.gpu(inputs["gpu"])
        assert card.dense_tflops[inputs["precision"]]
        assert inputs["kv_dtype"] != "fp8" or card.dense_tflops.get("fp8")
        assert inputs["prefix_tokens"] <= (model.config.max_position_embeddings or 8192)
        assert 0.5 <= inputs["hit_rate"] <= 0.95 and inputs["distinct_prefixes"] >= 1
        result = FAMILY.run(inputs, catalog)
        # What the prefixes pin is a small part of what the replica holds (at most a quarter of what the
        # weights leave, so at most a quarter of the cards).
        assert result.values["pinned_gib"] <= 0.25 * inputs["gpus"] * card.memory_gib
        distinct.add(inputs["distinct_prefixes"])
        assert 0 < result.values["ttft_saved_ms"]
        assert "prefix cache" in FAMILY.describe(inputs, catalog)
    assert {1, 50} <= distinct


# --- grading -----------------------------------------------------------------------------------

@pytest.mark.parametrize("model, prefix_flops, per_hit_ms", [
    ("llama-3.1-8b", "16995730849792", "42.94"),
    # Qwen2.5-7B: 2 × 7,615,616,512 × 1,024 + 4 × 28 × 3,584 × 1,024² = 15,596,782,616,576 + 420,906,795,008
    # = 16,017,689,411,584; ÷ 3.9576e14 = 40.47 ms.
    ("qwen2.5-7b", "16017689411584", "40.47"),
])
def test_leaving_out_the_hit_rate_is_named(model, prefix_flops, per_hit_ms):
    result = prefix(model=model)
    for key, typed in (("flops_saved_per_request", prefix_flops), ("ttft_saved_ms", per_hit_ms)):
        step = verdict(result, key, typed)
        assert (step.verdict, step.misconception) == ("misconception", "hit-rate-ignored"), key


@pytest.mark.parametrize("model, linear_only", [("llama-3.1-8b", "16445975035904"),
                                                ("qwen2.5-7b", "15596782616576")])
def test_leaving_out_the_attention_term_is_named(model, linear_only):
    step = verdict(prefix(model=model), "prefix_flops", linear_only)
    assert (step.verdict, step.misconception) == ("misconception", "attention-term-ignored")


def test_sparse_figure_and_full_peak_are_named_on_the_ttft_saving():
    # 13,596,584,679,833.6 ÷ (1,978.9e12 × 0.4) = 17.18 ms; ÷ 989.4e12 = 13.74 ms.
    result = prefix()
    assert verdict(result, "ttft_saved_ms", "17.18").misconception == "sparse-tflops"
    assert verdict(result, "ttft_saved_ms", "13.74").misconception == "roofline-as-expectation"
    # On an A100 80GB: sparse 624 × 0.4 = 249.6 TFLOP/s typed for the delivered compute.
    assert verdict(prefix(gpu="a100-sxm4-80gb"), "effective_flop_s", "249.6 TFLOP/s").misconception == "sparse-tflops"


@pytest.mark.parametrize("inputs, typed", [
    ({}, "0.1342"),                        # 2^27 B ÷ 10^9 = 0.134 "GiB"
    ({"distinct_prefixes": 4}, "0.5369"),  # 2^29 B ÷ 10^9 = 0.537
    # Qwen2.5-7B: 2 × 28 × 4 × 128 × 2 = 57,344 B per token × 1,024 = 58,720,256 B = 0.0547 GiB, 0.0587 "GiB".
    ({"model": "qwen2.5-7b"}, "0.05872"),
])
def test_gb_for_gib_is_named_on_the_pinned_cache(inputs, typed):
    step = verdict(prefix(**inputs), "pinned_gib", typed)
    assert (step.verdict, step.misconception) == ("misconception", "gb-gib-mix")


@pytest.mark.parametrize("inputs, typed", [
    # Mistral: 4 × 65,536 × 8,192 = 2 GiB if the window is ignored.
    ({"model": "mistral-7b-v0.1", "prefix_tokens": 8192, "kv_dtype": "fp8", "distinct_prefixes": 4}, "2"),
    # Gemma-2-9B: 344,064 × 8,192 ÷ 2^30 = 2.625 GiB if the window is ignored.
    ({"model": "gemma-2-9b", "prefix_tokens": 8192}, "2.625"),
])
def test_ignoring_the_window_is_named_on_the_pinned_cache(inputs, typed):
    step = verdict(prefix(**inputs), "pinned_gib", typed)
    assert (step.verdict, step.misconception) == ("misconception", "window-ignored")


def test_the_shared_kv_misconceptions_apply_here_too():
    # Query heads for K/V heads on Llama-3.1-8B: 2 × 32 × 32 × 128 × 2 = 524,288 B.
    assert verdict(prefix(), "kv_bytes_per_token", "524288").misconception == "query-heads-for-kv-heads"


def test_a_right_worked_answer_scores_full_marks(reference):
    answers = {"prefix_flops": "1.6996e13", "flops_saved_per_request": "0.8 * 1.6996e13",
               "effective_flop_s": "395.76 TFLOPS", "ttft_saved_ms": "34.36 ms", "kv_bytes_per_token": "128 KiB",
               "pinned_gib": "128 MiB"}
    graded = grade(reference, answers)
    assert [step.verdict for step in graded.steps] == ["correct"] * 6


def test_a_wrong_prefix_cost_carries_forward():
    # prefix_flops typed as 2e13 (wrong): own saving 0.8 × 2e13 = 1.6e13; ÷ 3.9576e14 = 40.43 ms.
    graded = grade(prefix(), {"prefix_flops": "2e13", "flops_saved_per_request": "1.6e13", "ttft_saved_ms": "40.43"})
    verdicts = {step.key: step.verdict for step in graded.steps}
    assert verdicts["prefix_flops"] == "wrong"
    assert verdicts["flops_saved_per_request"] == verdicts["ttft_saved_ms"] == "carried_forward"

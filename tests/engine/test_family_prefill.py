"""The ``prefill`` family: prefill FLOPs with the attention term, time at an MFU, TTFT, the crossover.

Pure engine, no Django. docs/architecture.md §2's convention: N = all 8,030,261,248 parameters of
Llama-3.1-8B (test_param_count.py), attention term 4 × layers × d_model × L² with no
causal halving. By hand, for the reference stack at a 2,048-token prompt:

* linear 2 × 8,030,261,248 × 2,048 = 32,891,950,071,808 FLOP;
* attention 4 × 32 × 4,096 × 2,048² = 524,288 × 4,194,304 = 2,199,023,255,552 FLOP (2^41);
* sum 35,090,973,327,360 FLOP;
* crossover 2 × 8,030,261,248 ÷ (4 × 32 × 4,096) = 16,060,522,496 ÷ 524,288 = 30,633.015625
  (524,288 × 30,633 = 16,060,514,304, remainder 8,192 = 524,288 ÷ 64) — the seed's 30,633;
* compute delivered 989.4 TFLOP/s × 0.4 = 3.9576e14 FLOP/s; prefill 35,090,973,327,360 ÷
  3.9576e14 = 0.0886673 s = 88.667 ms.
"""

from __future__ import annotations

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.procedures.prefill import PREFILL_FORMULAS, STEP_KEYS, describe_prefill
from calculators.families import FAMILIES

FAMILY = FAMILIES["prefill"]
PREFILL_FLOPS = 35_090_973_327_360
PREFILL_MS = PREFILL_FLOPS / 3.9576e14 * 1000  # 88.66730677...


def prefill(**inputs):
    return FAMILY.run(inputs)


def verdict(result, key, text):
    return {step.key: step for step in grade(result, {key: text}).steps}[key]


@pytest.fixture(scope="module")
def reference():
    return prefill()


# --- the reference stack -----------------------------------------------------------------------

def test_steps_come_in_order_with_their_units(reference):
    assert [step.key for step in reference.steps] == list(STEP_KEYS) == [
        "linear_flops", "attention_flops", "prefill_flops", "crossover_tokens", "effective_flop_s", "prefill_ms",
        "ttft_ms", "causal_prefill_ms"]
    assert [step.unit for step in reference.steps] == ["FLOP", "FLOP", "FLOP", "tok", "FLOP/s", "ms", "ms", "ms"]


def test_reference_prefill_flops(reference):
    v = reference.values
    assert v["linear_flops"] == 32_891_950_071_808
    assert v["attention_flops"] == 2_199_023_255_552
    assert v["prefill_flops"] == PREFILL_FLOPS
    assert reference.step("attention_flops").substituted == (
        "4 × 32 × 4,096 × 2,048 × 2,048 = 2,199,023,255,552 FLOP")


def test_reference_crossover_is_30_633_tokens(reference):
    assert reference.values["crossover_tokens"] == 30_633.015625
    assert reference.step("crossover_tokens").formula.text == "2 × params ÷ (4 × layers × hidden_size)"


def test_at_the_crossover_the_two_terms_are_equal():
    # At 30,633 tokens attention ÷ linear = 524,288 × 30,633 ÷ 16,060,522,496 = 0.9999995.
    v = prefill(prompt_tokens=30_633).values
    assert v["attention_flops"] / v["linear_flops"] == pytest.approx(1, abs=1e-6)


def test_reference_time_and_ttft(reference):
    assert reference.values["effective_flop_s"] == pytest.approx(3.9576e14, rel=1e-12)
    assert reference.values["prefill_ms"] == pytest.approx(PREFILL_MS, rel=1e-12)
    assert reference.values["ttft_ms"] == pytest.approx(PREFILL_MS, rel=1e-12)  # no queue by default


def test_ttft_adds_the_queue_wait():
    assert prefill(queue_ms=50).values["ttft_ms"] == pytest.approx(50 + PREFILL_MS, rel=1e-12)


def test_notes_give_the_convention_and_what_causal_masking_or_embeddings_change(reference):
    text = " ".join(reference.notes)
    assert "no causal halving" in text
    # Causal: crossover doubles to 61,266. Without the 128,256 × 4,096 = 525,336,576 embedding parameters:
    # 2 × 7,504,924,672 ÷ 524,288 = 28,628.6.
    assert "61,266 tokens" in text and "525,336,576" in text and "28,629 tokens" in text
    assert "6.7 % of the linear term" in text  # 2^41 ÷ 32,891,950,071,808 = 0.06686
    assert "989.4 TFLOP/s dense" in text and "35–50 %" in text
    assert "TTFT = queue wait + prefill" in text


def test_tied_embeddings_have_nothing_to_leave_out():
    assert any("tied to the output head" in note for note in prefill(model="gemma-2-9b").notes)


# --- other models and replicas -----------------------------------------------------------------

def test_long_prompt_on_qwen_is_past_its_crossover():
    # Qwen2.5-7B at 16,384: linear 2 × 7,615,616,512 × 16,384 = 249,548,521,865,216;
    # attention 4 × 28 × 3,584 × 16,384² = 107,752,139,522,048; crossover 15,231,233,024 ÷ 401,408 = 37,944.5.
    v = prefill(model="qwen2.5-7b", prompt_tokens=16_384).values
    assert v["linear_flops"] == 249_548_521_865_216
    assert v["attention_flops"] == 107_752_139_522_048
    assert v["crossover_tokens"] == pytest.approx(37_944.517857142855, rel=1e-12)


def test_a_mixture_of_experts_counts_the_parameters_a_token_uses():
    # Mixtral: 2 × 12,879,925,248 ÷ 524,288 = 49,133.015625.
    result = prefill(model="mixtral-8x7b-v0.1")
    assert result.values["crossover_tokens"] == 49_133.015625
    assert result.values["linear_flops"] == 2 * 12_879_925_248 * 2048


def test_tensor_parallel_compute_adds_up():
    # Llama-3.1-70B at 8,192 tokens on 8 × H100 in fp8: 2 × 70,553,706,496 × 8,192 + 4 × 80 × 8,192 × 8,192²
    # = 1,331,873,787,674,624 FLOP; 8 × 1,978.9 × 10^12 × 0.4 = 6.33248e15 FLOP/s → 210.32 ms.
    v = prefill(model="llama-3.1-70b", gpus=8, precision="fp8", prompt_tokens=8192).values
    assert v["prefill_flops"] == 1_331_873_787_674_624
    assert v["effective_flop_s"] == pytest.approx(6.33248e15, rel=1e-12)
    assert v["prefill_ms"] == pytest.approx(1_331_873_787_674_624 / 6.33248e15 * 1000, rel=1e-12)


def test_models_whose_attention_is_not_d_model_wide_say_so():
    gemma = " ".join(prefill(model="gemma-2-9b").notes)
    assert "16 × 256" not in gemma and "4,096, not hidden_size 3,584" in gemma and "4,096 tokens" in gemma
    assert any("latent attention" in note for note in prefill(model="deepseek-v2-lite").notes)


# --- formulas ----------------------------------------------------------------------------------

SAMPLE = {"params": 12_879_925_248, "prompt_tokens": 12_345, "layers": 42, "hidden_size": 3584,
          "linear_flops": 3.2e14, "attention_flops": 2.1e13, "gpus": 4, "peak_tflops": 989.4, "mfu": 0.45,
          "prefill_flops": 3.41e14, "effective_flop_s": 1.78e15, "queue_ms": 37.5, "prefill_ms": 191.6}


@pytest.mark.parametrize("formula", PREFILL_FORMULAS, ids=lambda f: f.key)
def test_numeric_evaluator_matches_the_exact_evaluation(formula):
    values = {var.name: SAMPLE[var.name] for var in formula.variables}
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


# --- inputs ------------------------------------------------------------------------------------

def test_the_older_mfu_key_is_read_as_prefill_mfu():
    """Issue 29 item 4: the input is prefill_mfu (decode's MFU is mfu); a stored problem, a link or a shortcode
    that says mfu still reads as it. At 0.5 the reference 2,048-token prefill takes 0.4 ÷ 0.5 of its 0.4 time."""
    new, old, default = prefill(prefill_mfu=0.5), prefill(mfu=0.5), prefill()
    assert new.inputs["prefill_mfu"] == old.inputs["prefill_mfu"] == 0.5 and "mfu" not in old.inputs
    assert old.values["prefill_ms"] == new.values["prefill_ms"] == pytest.approx(default.values["prefill_ms"] * 0.8)
    assert default.inputs["prefill_mfu"] == 0.4
    stored = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "prompt_tokens": 2048, "mfu": 0.45}
    assert "45 % MFU" in describe_prefill(stored, default_catalog())


@pytest.mark.parametrize("inputs, field", [
    ({"prompt_tokens": 0}, "prompt_tokens"),
    ({"prefill_mfu": 0}, "prefill_mfu"),
    ({"prefill_mfu": 1.5}, "prefill_mfu"),
    ({"queue_ms": -5}, "queue_ms"),
    ({"gpus": 0}, "gpus"),
    ({"gpu": "a100-sxm4-80gb", "precision": "fp8"}, "precision"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as caught:
        prefill(**inputs)
    assert caught.value.field == field


# --- the generator -----------------------------------------------------------------------------

def test_generator_is_deterministic_for_a_seed():
    catalog = default_catalog()
    assert FAMILY.generate(random.Random(11), catalog) == FAMILY.generate(random.Random(11), catalog)


def test_generated_problems_are_realistic():
    catalog = default_catalog()
    precisions = set()
    for seed in range(150):
        inputs = FAMILY.generate(random.Random(seed), catalog)
        model, card = catalog.model(inputs["model"]), catalog.gpu(inputs["gpu"])
        assert card.dense_tflops[inputs["precision"]]
        assert inputs["prompt_tokens"] <= (model.config.max_position_embeddings or 8192)
        assert 0.35 <= inputs["prefill_mfu"] <= 0.5 and inputs["queue_ms"] >= 0
        assert inputs["gpus"] in (1, 2, 4, 8)
        result = FAMILY.run(inputs, catalog)
        assert result.values["ttft_ms"] >= result.values["prefill_ms"] > 0
        assert "time to first token" in FAMILY.describe(inputs, catalog)
        precisions.add(inputs["precision"])
    assert {"bf16", "fp8"} <= precisions


# --- grading -----------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu, sparse_flop_s, dense_flop_s", [
    ("h100-sxm5-80gb", "791.56 TFLOP/s", "989.4 TFLOP/s"),   # 1,978.9 × 0.4; the peak with no MFU
    ("a100-sxm4-80gb", "249.6 TFLOP/s", "312 TFLOP/s"),      # 624 × 0.4; 312
])
def test_sparse_figure_and_the_full_peak_are_named_on_the_compute(gpu, sparse_flop_s, dense_flop_s):
    result = prefill(gpu=gpu)
    step = verdict(result, "effective_flop_s", sparse_flop_s)
    assert (step.verdict, step.misconception) == ("misconception", "sparse-tflops")
    step = verdict(result, "effective_flop_s", dense_flop_s)
    assert (step.verdict, step.misconception) == ("misconception", "roofline-as-expectation")


def test_sparse_figure_and_the_full_peak_are_named_on_the_time():
    # 35,090,973,327,360 ÷ 7.9156e14 = 44.33 ms; ÷ 9.894e14 = 35.47 ms.
    result = prefill()
    assert verdict(result, "prefill_ms", "44.33").misconception == "sparse-tflops"
    assert verdict(result, "prefill_ms", "35.47").misconception == "roofline-as-expectation"


@pytest.mark.parametrize("inputs, linear_only", [
    ({}, "32891950071808"),
    ({"model": "qwen2.5-7b", "prompt_tokens": 16_384}, "249548521865216"),
])
def test_leaving_out_the_attention_term_is_named(inputs, linear_only):
    step = verdict(prefill(**inputs), "prefill_flops", linear_only)
    assert (step.verdict, step.misconception) == ("misconception", "attention-term-ignored")


@pytest.mark.parametrize("model", ["llama-3.1-8b", "mistral-7b-v0.1"])
def test_ttft_without_the_queue_is_named(model):
    result = prefill(model=model, queue_ms=120)
    step = verdict(result, "ttft_ms", f"{result.values['prefill_ms']:.3f}")
    assert (step.verdict, step.misconception) == ("misconception", "ttft-without-queue")


def test_a_right_worked_answer_scores_full_marks():
    answers = {"linear_flops": "2 * 8030261248 * 2048", "attention_flops": "4*32*4096*2048^2",
               "prefill_flops": "3.509e13", "crossover_tokens": "30633", "effective_flop_s": "395.76 TFLOP/s",
               "prefill_ms": "88.67 ms", "ttft_ms": "0.1387 s", "causal_prefill_ms": "85.89 ms"}
    graded = grade(prefill(queue_ms=50), answers)
    assert [step.verdict for step in graded.steps] == ["correct"] * 8


def test_a_wrong_flop_count_carries_forward_to_the_time():
    # prefill_flops typed as 4e13: own time 4e13 ÷ 3.9576e14 = 101.07 ms; TTFT 101.07 ms.
    graded = grade(prefill(), {"prefill_flops": "4e13", "prefill_ms": "101.07", "ttft_ms": "101.07"})
    verdicts = {step.key: step.verdict for step in graded.steps}
    assert verdicts["prefill_flops"] == "wrong"  # 14 % off 3.509e13
    assert verdicts["prefill_ms"] == verdicts["ttft_ms"] == "carried_forward"


def test_the_causal_prefill_halves_the_attention_term():
    """A long prompt's TTFT quotes the causal figure first: (2N·L + 4·layers·d·L² ÷ 2) ÷ (peak × MFU).
    Llama-3.1-8B at 131,072 tokens on one H100: 28.08 s under the convention, 16.70 s causal."""
    from calculators.families import FAMILIES

    v = FAMILIES["prefill"].run({"prompt_tokens": 131_072}).values
    linear = 2 * 8_030_261_248 * 131_072
    attention = 4 * 32 * 4096 * 131_072**2
    assert v["causal_prefill_ms"] == pytest.approx((linear + attention / 2) / (989.4e12 * 0.4) * 1e3, rel=1e-12)
    assert v["prefill_ms"] == pytest.approx((linear + attention) / (989.4e12 * 0.4) * 1e3, rel=1e-12)
    assert round(v["causal_prefill_ms"] / 1e3, 2) == 16.7 and round(v["prefill_ms"] / 1e3, 2) == 28.08

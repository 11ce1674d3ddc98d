"""The ``roofline`` family: ridge point, arithmetic intensity, verdicts and the batch at the ridge.

Pure engine, no Django. Every expected number is derived by hand from
``fixtures/catalog/gpus.json`` and ``models.json`` in the comment beside it:

* ridge = dense TFLOP/s × 10^12 ÷ (bandwidth GB/s × 10^9) = TFLOP/s ÷ GB/s × 1,000;
  H100 SXM bf16: 989.4 ÷ 3,350 × 1,000 = 295.3432835820895 FLOP/byte (the seed's 295);
  with the 2:4-sparse 1,978.9 instead: 590.7164179104478 (the trap);
* decode intensity = 2 × N_active × B ÷ (N_total × bits ÷ 8); for a dense model at bf16
  that is 2 × B ÷ 2 = B FLOP/byte; prefill the same with the prompt length L for B;
* batch at the ridge = ⌊ridge × N_total × bits ÷ 8 ÷ (2 × N_active)⌋: ⌊295.34⌋ = 295 at bf16.

Llama-3.1-8B has 8,030,261,248 parameters; Mixtral-8x7B 46,702,792,704 of which a
token uses 12,879,925,248 (both derived in test_param_count.py).
"""

from __future__ import annotations

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import CatalogError, EngineError, InputError
from calculators.engine.grader import grade
from calculators.engine.procedures.roofline import PAIRS, ROOFLINE_FORMULAS, STEP_KEYS
from calculators.families import FAMILIES

FAMILY = FAMILIES["roofline"]
H100_RIDGE = 989.4 / 3350 * 1000          # 295.3432835820895
H100_SPARSE_RIDGE = 1978.9 / 3350 * 1000  # 590.7164179104478
A100_RIDGE = 312 / 2039 * 1000            # 153.01618440412...
A100_SPARSE_RIDGE = 624 / 2039 * 1000     # 306.0323688082...
MIXTRAL_TOTAL = 46_702_792_704
MIXTRAL_ACTIVE = 12_879_925_248


def roofline(**inputs):
    return FAMILY.run(inputs)


def verdict(result, key, text):
    """The grader's verdict on one typed step (the other steps left blank)."""
    graded = {step.key: step for step in grade(result, {key: text}).steps}
    return graded[key]


@pytest.fixture(scope="module")
def reference():
    return roofline()


# --- the reference stack -----------------------------------------------------------------------

def test_steps_come_in_order_with_their_units(reference):
    assert [step.key for step in reference.steps] == list(STEP_KEYS) == [
        "ridge_flop_per_byte", "decode_flop_per_byte", "prefill_flop_per_byte", "decode_bound", "prefill_bound",
        "batch_at_ridge", "ridge_reachable"]
    assert [step.unit for step in reference.steps] == ["FLOP/byte"] * 3 + ["1", "1", "users", "1"]


def test_h100_ridge_at_bf16_is_295_flop_per_byte_from_the_dense_figure(reference):
    # 989.4 TFLOP/s ÷ 3,350 GB/s = 295.34 FLOP/byte; never the sparse 590.7.
    assert reference.values["ridge_flop_per_byte"] == pytest.approx(H100_RIDGE, rel=1e-12)
    assert reference.step("ridge_flop_per_byte").substituted == "989.4 TFLOP/s ÷ 3,350 GB/s = 295.3 FLOP/byte"


def test_decode_at_batch_1_reads_a_byte_per_flop_and_is_memory_bound(reference):
    # 2 × 8,030,261,248 × 1 ÷ (8,030,261,248 × 2 B) = 1 FLOP/byte < 295.3 → memory-bound (0).
    assert reference.values["decode_flop_per_byte"] == pytest.approx(1.0, rel=1e-12)
    assert reference.values["decode_bound"] == 0


def test_prefill_of_2048_tokens_is_compute_bound(reference):
    # 2 × N × 2,048 ÷ (N × 2 B) = 2,048 FLOP/byte ≥ 295.3 → compute-bound (1).
    assert reference.values["prefill_flop_per_byte"] == pytest.approx(2048.0, rel=1e-12)
    assert reference.values["prefill_bound"] == 1


def test_decode_turns_compute_bound_after_295_sequences_at_bf16(reference):
    # ⌊295.34 × 16 bit ÷ 8 ÷ 2⌋ = ⌊295.34⌋ = 295.
    assert reference.values["batch_at_ridge"] == 295
    assert roofline(batch=295).values["decode_bound"] == 0
    assert roofline(batch=296).values["decode_bound"] == 1


def test_notes_state_the_dense_convention_the_bytes_counted_and_the_verdicts_in_words(reference):
    text = " ".join(reference.notes)
    assert "989.4 TFLOP/s dense" in text and "1,978.9" in text and "2:4-sparsity" in text
    assert "590.7 FLOP/byte" in text  # what the sparse figure would have given
    assert "Weights only" in text and "own KV cache" in text
    assert "memory-bound (decode_bound = 0)" in text and "compute-bound (prefill_bound = 1)" in text
    assert "295 sequences reach the ridge" in text and "not a free lunch" in text


# --- other cards, precisions and models ------------------------------------------------------

@pytest.mark.parametrize("gpu, precision, ridge", [
    ("h100-sxm5-80gb", "fp8", 1978.9 / 3350 * 1000),   # 590.72: fp8 doubles the peak, not the bandwidth
    ("a100-sxm4-80gb", "bf16", 312 / 2039 * 1000),      # 153.02
    ("h200-sxm-141gb", "bf16", 989.4 / 4800 * 1000),    # 206.13: same compute as the H100, more bandwidth
    ("l4", "fp8", 242.5 / 300 * 1000),                  # 808.33
    ("mi300x", "bf16", 1307.4 / 5300 * 1000),           # 246.68
    ("b200", "fp4", 9000 / 7700 * 1000),                # 1,168.83
])
def test_ridge_of_other_cards(gpu, precision, ridge):
    assert roofline(gpu=gpu, precision=precision).values["ridge_flop_per_byte"] == pytest.approx(ridge, rel=1e-12)


@pytest.mark.parametrize("inputs, per_sequence, batch", [
    # W8A8 on the H100: 2 × B ÷ 1 B = 2B FLOP/byte; ⌊590.72 ÷ 2⌋ = ⌊295.36⌋ = 295.
    ({"precision": "fp8", "weights_dtype": "fp8"}, 2.0, 295),
    # int8 weights computed in bf16: ⌊295.34 ÷ 2⌋ = ⌊147.67⌋ = 147.
    ({"weights_dtype": "int8"}, 2.0, 147),
    # int4 at its effective 4.5 bits: 2 ÷ 0.5625 = 3.5556 FLOP/byte per sequence; ⌊295.34 ÷ 3.5556⌋ = ⌊83.07⌋ = 83.
    ({"weights_dtype": "int4"}, 2 / 0.5625, 83),
    # int4 at a stated 4 bits: 2 ÷ 0.5 = 4; ⌊295.34 ÷ 4⌋ = ⌊73.84⌋ = 73.
    ({"weights_dtype": "int4", "weights_bits": 4}, 4.0, 73),
])
def test_narrower_weights_raise_the_intensity_and_lower_the_batch_at_the_ridge(inputs, per_sequence, batch):
    result = roofline(batch=10, **inputs)
    assert result.values["decode_flop_per_byte"] == pytest.approx(10 * per_sequence, rel=1e-12)
    assert result.values["batch_at_ridge"] == batch


def test_a_mixture_of_experts_needs_a_much_larger_batch():
    # Mixtral at bf16, batch 400: 2 × 12,879,925,248 × 400 ÷ (46,702,792,704 × 2) = 110.31 FLOP/byte, memory-bound;
    # batch at ridge ⌊295.34 × 46,702,792,704 ÷ 12,879,925,248⌋ = ⌊295.34 × 3.6260⌋ = ⌊1,070.9⌋ = 1,070.
    result = roofline(model="mixtral-8x7b-v0.1", batch=400, prompt_tokens=4096)
    assert result.values["decode_flop_per_byte"] == pytest.approx(400 * MIXTRAL_ACTIVE / MIXTRAL_TOTAL, rel=1e-12)
    assert result.values["decode_bound"] == 0
    assert result.values["batch_at_ridge"] == 1070
    # Prefill of 4,096 tokens: 4,096 × 0.27578 = 1,129.6 FLOP/byte ≥ 295.3 → compute-bound.
    assert result.values["prefill_bound"] == 1
    assert any("Mixture of experts" in note for note in result.notes)


def test_a_short_prompt_on_a_mixture_of_experts_is_memory_bound():
    # 100 tokens × 0.27578 = 27.6 FLOP/byte < 295.3.
    assert roofline(model="mixtral-8x7b-v0.1", prompt_tokens=100).values["prefill_bound"] == 0


def test_a_pasted_config_stands_in_for_the_model():
    config = default_catalog().model("llama-3.1-8b").raw_config
    assert roofline(config=config).values == roofline().values


# --- formulas ----------------------------------------------------------------------------------

SAMPLE = {"peak_tflops": 989.4, "bandwidth": 3350, "active_params": 12_879_925_248, "batch": 37,
          "total_params": 46_702_792_704, "weight_bits": 4.5, "expert_weight_bits": 4.25,
          "routed_expert_params": 45_097_156_608, "prompt_tokens": 3000,
          "decode_flop_per_byte": 123.4, "prefill_flop_per_byte": 456.7, "ridge_flop_per_byte": 295.34,
          "heads": 32, "attention_head_dim": 128, "context": 5000, "full_layers": 21, "window_layers": 21,
          "window": 4096, "layers": 42, "kv_bytes_per_token": 344_064}


@pytest.mark.parametrize("formula", ROOFLINE_FORMULAS, ids=lambda f: f.key)
def test_numeric_evaluator_matches_the_exact_evaluation(formula):
    values = {var.name: SAMPLE[var.name] for var in formula.variables}
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


# --- inputs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("inputs, field", [
    ({"gpu": "a100-40gb", "precision": "fp8"}, "precision"),   # no fp8 tensor cores on Ampere
    ({"gpu": "h100-sxm5-80gb", "precision": "fp4"}, "precision"),
    ({"precision": "fp64"}, "precision"),
    ({"batch": 0}, "batch"),
    ({"batch": 2.5}, "batch"),
    ({"prompt_tokens": -1}, "prompt_tokens"),
    ({"weights_dtype": "fp7"}, "weights_dtype"),
    ({"weights_bits": 0}, "weights_bits"),
    ({"flops": 1}, "flops"),
])
def test_bad_inputs_name_their_field(inputs, field):
    with pytest.raises(InputError) as caught:
        roofline(**inputs)
    assert caught.value.field == field
    assert str(caught.value).endswith(".")


def test_unknown_card_is_a_catalog_error_on_the_gpu_field():
    with pytest.raises(CatalogError) as caught:
        roofline(gpu="tpu-v5")
    assert caught.value.field == "gpu"


def test_missing_precision_message_lists_what_the_card_supports():
    with pytest.raises(EngineError, match="bf16, fp16, int8, tf32"):
        roofline(gpu="a100-40gb", precision="fp8")


# --- the generator -----------------------------------------------------------------------------

def test_generator_is_deterministic_for_a_seed():
    catalog = default_catalog()
    assert FAMILY.generate(random.Random(7), catalog) == FAMILY.generate(random.Random(7), catalog)


def test_generated_problems_are_realistic_and_solvable():
    catalog = default_catalog()
    seen_gpus, seen_verdicts = set(), set()
    for seed in range(300):
        inputs = FAMILY.generate(random.Random(seed), catalog)
        card = catalog.gpu(inputs["gpu"])
        assert card.dense_tflops[inputs["precision"]]  # a precision the card computes in
        assert (inputs["precision"], inputs["weights_dtype"]) in PAIRS + (("bf16", "bf16"),)
        assert 1 <= inputs["batch"] <= 1024 and 128 <= inputs["prompt_tokens"] <= 8192
        result = FAMILY.run(inputs, catalog)
        seen_gpus.add(inputs["gpu"])
        seen_verdicts.add((result.values["decode_bound"], result.values["prefill_bound"]))
        assert FAMILY.describe(inputs, catalog).endswith(".")
    # Every card with a sourced dense bf16 figure (Rubin and the MI455X have none on record: never drawn).
    assert seen_gpus == {g for g, card in catalog.gpus.items() if card.dense_tflops.get("bf16")}
    assert {(0, 1), (1, 1)} <= seen_verdicts  # decode both sides of the ridge


def test_problem_statement_names_the_card_the_batch_and_the_prompt():
    inputs = {"gpu": "h100-sxm5-80gb", "precision": "bf16", "model": "llama-3.1-8b", "weights_dtype": "int4",
              "batch": 64, "prompt_tokens": 2048}
    text = FAMILY.describe(inputs, default_catalog())
    assert "H100 SXM5 80GB" in text and "64 sequences" in text and "2,048-token" in text
    assert "charged 4.5 bits" in text
    # Both datasheet figures are quoted, so picking the dense one is the candidate's job.
    assert "3,350 GB/s" in text and "1,978.9 TFLOP/s with 2:4 sparsity or 989.4 TFLOP/s dense" in text


# --- grading -----------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu, typed_ridge, typed_batch", [
    ("h100-sxm5-80gb", "590.7", "590"),    # 1,978.9 ÷ 3,350 × 1,000; ⌊590.72⌋
    ("a100-sxm4-80gb", "306.0", "306"),    # 624 ÷ 2,039 × 1,000 = 306.03; ⌊306.03⌋
])
def test_sparse_tflops_is_named_on_the_ridge_and_the_batch(gpu, typed_ridge, typed_batch):
    result = roofline(gpu=gpu)
    for key, typed in (("ridge_flop_per_byte", typed_ridge), ("batch_at_ridge", typed_batch)):
        step = verdict(result, key, typed)
        assert (step.verdict, step.misconception) == ("misconception", "sparse-tflops")


def test_sparse_tflops_flips_a_verdict_between_the_two_ridges():
    # Batch 400 at bf16 on the H100: 400 FLOP/byte, above 295.3 (compute-bound) but below 590.7.
    step = verdict(roofline(batch=400), "decode_bound", "0")
    assert (step.verdict, step.misconception) == ("misconception", "sparse-tflops")


@pytest.mark.parametrize("model, gpu", [("llama-3.1-8b", "h100-sxm5-80gb"), ("qwen2.5-7b", "a100-sxm4-80gb")])
def test_prefill_decode_swap_is_named_on_every_step_it_touches(model, gpu):
    # Dense bf16: decode at batch 1 is 1 FLOP/byte, prefill of 2,048 tokens 2,048 FLOP/byte.
    result = roofline(model=model, gpu=gpu)
    for key, typed in (("decode_flop_per_byte", "2048"), ("prefill_flop_per_byte", "1"),
                       ("decode_bound", "1"), ("prefill_bound", "0")):
        step = verdict(result, key, typed)
        assert (step.verdict, step.misconception) == ("misconception", "prefill-decode-swap"), key


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen2.5-7b"])
def test_bits_for_bytes_is_named_on_the_intensity(model):
    # Batch 64 at bf16 on any dense model: 2 × N × 64 ÷ (N × 16 "bytes") = 8 instead of 64.
    step = verdict(roofline(model=model, batch=64), "decode_flop_per_byte", "8")
    assert (step.verdict, step.misconception) == ("misconception", "bits-for-bytes")


def test_a_compute_bound_decode_called_memory_bound_is_just_wrong():
    # Batch 1,000 on the H100: 1,000 FLOP/byte, above both ridges; 0 is no named mistake.
    assert verdict(roofline(batch=1000), "decode_bound", "0").verdict == "wrong"


def test_a_right_worked_answer_scores_full_marks(reference):
    answers = {"ridge_flop_per_byte": "295.3 FLOP/byte", "decode_flop_per_byte": "1",
               "prefill_flop_per_byte": "2048", "decode_bound": "0", "prefill_bound": "1", "batch_at_ridge": "295",
               "ridge_reachable": "1"}
    graded = grade(reference, answers)
    assert [step.verdict for step in graded.steps] == ["correct"] * 7
    assert graded.score == 1.0


def test_a_wrong_ridge_carries_forward_into_the_verdicts_and_the_batch():
    # Ridge typed as 1,000 (wrong); batch 400 → 400 FLOP/byte. On the candidate's own ridge: 400 < 1,000 → 0,
    # and the batch at the ridge ⌊1,000 × 16 ÷ 16⌋ = 1,000.
    graded = grade(roofline(batch=400), {"ridge_flop_per_byte": "1000", "decode_flop_per_byte": "400",
                                         "decode_bound": "0", "batch_at_ridge": "1000"})
    verdicts = {step.key: step.verdict for step in graded.steps}
    assert verdicts["ridge_flop_per_byte"] == "wrong"
    assert verdicts["decode_bound"] == "carried_forward"
    assert verdicts["batch_at_ridge"] == "carried_forward"


def test_the_batch_at_the_ridge_is_a_whole_number_of_sequences(reference):
    # 295.34 is not a batch: close (half credit), not correct.
    assert verdict(reference, "batch_at_ridge", "295.34").verdict == "close"


# --- the roofline at a context (docs/architecture.md §12) -------------------------------------------------------

def test_at_8192_tokens_no_batch_of_the_8b_reaches_the_ridge():
    # Per sequence: FLOPs 2 × 8,030,261,248 + 4 × 32 × 128 × 32 × 8,192 = 20,355,228,672; cache bytes
    # 131,072 × 8,192 = 1,073,741,824: 18.96 FLOP/byte < 295.3, however large the batch.
    result = roofline(context=8192, batch=64)
    v = result.values
    flops, cache = 2 * 8_030_261_248 + 4 * 32 * 128 * 32 * 8192, 131_072 * 8192
    assert v["decode_flop_per_byte"] == pytest.approx(64 * flops / (16_060_522_496 + 64 * cache), rel=1e-12)
    assert v["ridge_reachable"] == 0
    assert v["batch_at_ridge"] == 295  # stays weights-only
    assert any("no batch ever reaches the ridge" in note and "19.0 FLOP/byte" in note for note in result.notes)
    step = verdict(result, "decode_flop_per_byte", f"{64 * 2 * 8_030_261_248 / 16_060_522_496}")
    assert (step.verdict, step.misconception) == ("misconception", "kv-read-ignored")


def test_a_short_context_on_the_70b_still_reaches_the_ridge():
    # 70B at 128 tokens: (2 × 70,553,706,496 + 4 × 64 × 128 × 80 × 128) ÷ (327,680 × 128) = 3,376 FLOP/byte.
    v = roofline(model="llama-3.1-70b", context=128).values
    assert v["ridge_reachable"] == 1
    flops = 2 * 70_553_706_496 + 4 * 64 * 128 * 80 * 128
    assert flops / (327_680 * 128) > 295.3


def test_a_windowed_model_caps_the_cache_and_may_reach_the_ridge_again():
    # Mistral-7B: every layer windowed at 4,096, so at 32,768 tokens the cache read stops at 4,096 tokens.
    low = roofline(model="mistral-7b-v0.1", context=4096).values
    high = roofline(model="mistral-7b-v0.1", context=32768).values
    assert low["ridge_reachable"] == high["ridge_reachable"]
    assert high["decode_flop_per_byte"] == pytest.approx(low["decode_flop_per_byte"], rel=1e-12)

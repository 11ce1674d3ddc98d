"""A checkpoint whose routed experts alone are in a block format (gpt-oss's MXFP4): each part at its own width.

Hand derivation, gpt-oss-120b (its config.json in fixtures/catalog/models.json): hidden 2,880, 36 layers, every layer
MoE with 128 experts of width 2,880, top-4. One expert's weight matrices: gate_up 2,880 × 5,760 + down 2,880 × 2,880
= 3 × 2,880² = 24,883,200 values; its biases 5,760 + 2,880 = 8,640 (gpt-oss's experts carry biases). The checkpoint
(quantization_config.modules_to_not_convert: self_attn, router, embed_tokens, lm_head) stores the matrices in MXFP4,
4 bits plus one 8-bit E8M0 scale per 32 values = 4.25 bits, and every other tensor, biases included, in bf16.

- expert matrices: 36 × 128 × 24,883,200 = 114,661,785,600 values × 4.25 / 8 = 60,914,073,600 B;
- everything else: 116,829,156,672 − 114,661,785,600 = 2,167,371,072 values × 2 B = 4,334,742,144 B;
- weights: 65,248,815,744 B = 60.77 GiB (every parameter at 4.25 bits would be 62,065,489,482 B = 57.80 GiB).

gpt-oss-20b: 24 layers × 32 experts: 19,110,297,600 matrix values × 4.25 / 8 = 10,152,345,600 B; the other
20,914,757,184 − 19,110,297,600 = 1,804,459,584 values × 2 B = 3,608,919,168 B; weights 13,761,264,768 B = 12.82 GiB.

Bytes a decoded token reads at batch 1 (its 4 experts in each layer, and every other weight):

- 120b: 36 × 4 × (24,883,200 × 4.25 / 8 + 8,640 × 2) = 144 × 13,236,480 = 1,906,053,120 B of experts, plus the
  weights outside the routed experts, 116,829,156,672 − 36 × 128 × 24,891,840 = 2,127,557,952 values × 2 B =
  4,255,115,904 B: 6,161,169,024 B (every parameter at 4.25 bits: 5,711,982,912 × 4.25 / 8 = 3,034,490,922 B);
- 20b: 24 × 4 × 13,236,480 = 1,270,702,080 B, plus (20,914,757,184 − 24 × 32 × 24,891,840) = 1,797,824,064 values
  × 2 B = 3,595,648,128 B: 4,866,350,208 B.
"""

from __future__ import annotations

import pytest

from calculators.engine.catalog import default_catalog, weight_widths
from calculators.engine.formulas.memory import weight_bytes
from calculators.engine.procedures import ENGINE_FAMILIES as FAMILIES
from calculators.engine.step_model import Replica
from calculators.sim.config import build_setup, clean_sim_inputs

CATALOG = default_catalog()
GIB = 2**30


@pytest.mark.parametrize("model_id, weights, read", [
    ("gpt-oss-120b", 65_248_815_744, 6_161_169_024),
    ("gpt-oss-20b", 13_761_264_768, 4_866_350_208),
])
def test_gpt_oss_at_its_native_mxfp4_charges_experts_and_the_rest_their_own_widths(model_id, weights, read):
    cfg = CATALOG.model(model_id).config
    assert cfg.experts_quantized == "mxfp4"
    widths = weight_widths(cfg, "mxfp4")
    assert (widths.weight_bits, widths.expert_matrix_bits) == (16, 4.25)
    # The mean over one expert's 24,891,840 parameters: (24,883,200 × 4.25 + 8,640 × 16) ÷ 24,891,840.
    assert widths.expert_weight_bits == pytest.approx((24_883_200 * 4.25 + 8_640 * 16) / 24_891_840, rel=1e-15)
    assert weight_bytes(cfg, "mxfp4") == pytest.approx(weights, abs=1e-3)
    for family in ("weights", "ladder", "tp", "moe", "slo", "pareto"):
        names = {spec.name for spec in FAMILIES[family].inputs}
        raw = {key: value for key, value in {"model": model_id, "weights_dtype": "mxfp4", "gpus": 2,
                                              "gpu": "h100-sxm5-80gb"}.items() if key in names}
        assert FAMILIES[family].run(raw).values["weights_gib"] * GIB == pytest.approx(weights, rel=1e-12), family
    # Bytes read per decoded token: the step model, the decode and moe families agree.
    assert Replica.from_catalog(model_id, "h100-sxm5-80gb", weights_dtype="mxfp4").weight_bytes(1) == \
        pytest.approx(read, abs=1e-3)
    assert FAMILIES["decode"].run({"model": model_id, "weights_dtype": "mxfp4"}).values[
        "weight_bytes_per_step"] == pytest.approx(read, abs=1e-3)
    assert FAMILIES["moe"].run({"model": model_id, "weights_dtype": "mxfp4"}).values[
        "active_bytes_per_token"] == pytest.approx(read, abs=1e-3)
    # The simulator's replica and KV budget read the same weights.
    setup = build_setup(clean_sim_inputs({"model": model_id, "gpu": "h100-sxm5-80gb", "weights_dtype": "mxfp4",
                                          "kv_dtype": "bf16"}))
    assert setup.weights_gib * GIB == pytest.approx(weights, rel=1e-12)
    assert setup.replica.expert_bits == widths.expert_weight_bits


def test_one_width_at_any_other_precision_and_for_a_dense_model():
    oss = CATALOG.model("gpt-oss-120b").config
    # A uniform precision charges every parameter alike: 116,829,156,672 × 1 B at fp8.
    assert weight_widths(oss, "fp8") == weight_widths(oss, "fp8").__class__(8, 8, 8)
    assert weight_bytes(oss, "fp8") == 116_829_156_672
    # A model with no experts-only quantization at mxfp4: 4.25 bits for all (Mixtral: 46,702,792,704 × 4.25 / 8).
    mixtral = CATALOG.model("mixtral-8x7b-v0.1").config
    assert weight_bytes(mixtral, "mxfp4") == pytest.approx(46_702_792_704 * 4.25 / 8, rel=1e-15)
    # A dense model is unchanged: Llama-3.1-8B at bf16, 8,030,261,248 × 2 = 16,060,522,496 B, read whole each step.
    llama = CATALOG.model("llama-3.1-8b").config
    assert weight_bytes(llama, "bf16") == 16_060_522_496
    assert Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb").weight_bytes(64) == 16_060_522_496
    assert FAMILIES["weights"].run({"model": "llama-3.1-8b", "weights_dtype": "bf16"}).values[
        "weight_bytes"] == 16_060_522_496


def test_a_stated_width_applies_to_every_parameter():
    # weights_bits states one effective width for the whole checkpoint: 116,829,156,672 × 4.5 / 8 B.
    cfg = CATALOG.model("gpt-oss-120b").config
    assert weight_bytes(cfg, "mxfp4", 4.5) == pytest.approx(116_829_156_672 * 4.5 / 8, rel=1e-15)


def test_the_mixed_checkpoint_one_width_slip_is_named():
    from calculators.engine.grader import grade

    result = FAMILIES["weights"].run({"model": "gpt-oss-120b", "weights_dtype": "mxfp4"})
    assert any("only the routed experts' weight matrices in mxfp4" in note for note in result.notes)
    # Every parameter at 4.25 bits: 116,829,156,672 × 4.25 / 8 = 62,065,489,482 B, the 57.80 GiB of the erratum.
    graded = {s.key: s for s in grade(result, {"weight_bytes": "62065489482"}).steps}
    assert graded["weight_bytes"].misconception == "mixed-checkpoint-one-width"

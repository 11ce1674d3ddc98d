"""The ``pareto`` family (docs/architecture.md §12): the throughput–interactivity curve and the point a TPOT target
marks, hand-derived on two catalog models and two cards and on a pasted config."""

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.procedures.pareto import PARETO_FORMULAS, STEP_KEYS, grid_batches, power_of_two_at_most
from calculators.engine.step_model import Replica, step_ms
from calculators.families import FAMILIES

FAMILY = FAMILIES["pareto"]
GIB = 2**30


def pareto(**inputs):
    return FAMILY.run(inputs)


def verdict(result, key, value):
    return {step.key: step for step in grade(result, {key: f"{value!r}"}).steps}[key]


def test_reference_stack_on_one_h100():
    """Llama-3.1-8B bf16 on one H100 SXM at 8,192 tokens and a 50 ms target."""
    result = pareto()
    v = result.values
    assert [s.key for s in result.steps] == list(STEP_KEYS)
    weights = 8_030_261_248 * 2  # B
    assert v["weights_gib"] == pytest.approx(weights / GIB, rel=1e-12)
    # 81,559 MiB × 0.9 − 14.96 GiB − 3 GiB = 53.73 GiB; one sequence: 131,072 B × 8,192 = 1 GiB.
    assert v["replica_kv_budget_gib"] == pytest.approx(81_559 / 1024 * 0.9 - weights / GIB - 3, rel=1e-12)
    assert v["per_user_gib"] == 1.0 and v["kv_replication"] == 1
    assert v["batch_memory_limit"] == 53
    # The target reads 3,350 GB/s × 0.75 × 50 ms = 125.625 GB: (125.625e9 − 16.06e9) ÷ 1 GiB = 102.04.
    assert v["batch_tpot_limit"] == 102
    assert v["batch"] == 32  # the largest power of two within min(53, 102)
    step = (weights + 32 * GIB) / (3350e9 * 0.75) * 1e3
    assert v["bytes_per_step"] == weights + 32 * GIB
    assert v["comm_ms"] == 0 and v["step_ms"] == pytest.approx(step, rel=1e-12)  # 20.07 ms, memory-bound
    assert v["tok_s_per_user"] == pytest.approx(1000 / step, rel=1e-12)  # 49.8
    assert v["tok_s_per_card"] == pytest.approx(32_000 / step, rel=1e-12)  # 1,594.6
    assert round(v["tok_s_per_card"], 1) == 1594.6


def test_seventy_b_on_eight_h100s_pays_its_all_reduces():
    """Llama-3.1-70B bf16 on 8 × H100 SXM at 8,192 tokens, 30 ms: 160 all-reduces over 450 GB/s."""
    v = pareto(model="llama-3.1-70b", gpus=8, tpot_target_ms=30).values
    weights = 70_553_706_496 * 2
    per_user = 327_680 * 8192  # B, one copy (8 K/V heads on 8 cards)
    assert v["kv_replication"] == 1 and v["per_user_gib"] == 2.5
    budget = 8 * 81_559 / 1024 * 0.9 - weights / GIB - 8 * 3  # 418.05 GiB
    assert v["batch_memory_limit"] == int(budget / 2.5) == 167
    # step(B) = weights ÷ 20.1 TB/s + 160 × 10 µs + B × (cache ÷ 20.1 TB/s + 160 × 2 × 7/8 × 8,192 × 2 B ÷ 450 GB/s)
    fixed = weights / 20.1e12 * 1e3 + 1.6
    per_sequence = per_user / 20.1e12 * 1e3 + 160 * 2 * 7 / 8 * 8192 * 2 / 450e9 * 1e3
    assert v["batch_tpot_limit"] == int((30 - fixed) / per_sequence) == 148
    assert v["batch"] == 128
    memory = (weights + 128 * per_user) / 20.1e12 * 1e3
    comm = 160 * (2 * 7 / 8 * 128 * 8192 * 2 / 450e9 * 1e3 + 0.01)
    assert v["comm_ms"] == pytest.approx(comm, rel=1e-12)  # 2.905 ms
    assert v["step_ms"] == pytest.approx(memory + comm, rel=1e-12)  # 27.02 ms
    assert v["tok_s_per_card"] == pytest.approx(128 / (memory + comm) / 8 * 1e3, rel=1e-12)
    assert round(v["tok_s_per_card"], 1) == 592.2


def test_the_kv_limit_of_design_twelve_replicates_the_heads():
    """docs/architecture.md §12's example: 70B at 131,072 tokens on 16 H100s holds 12 sequences, not 24."""
    v = pareto(model="llama-3.1-70b", gpus=16, context=131_072).values
    assert v["kv_replication"] == 2 and v["per_user_gib"] == 80.0
    assert v["batch_memory_limit"] == 12
    assert v["batch"] == 8
    assert v["kv_bytes_per_step"] == 8 * 131_072 * 327_680 * 2


def test_a_pasted_config_on_an_l40s():
    """A 24-layer GQA model (16 query, 8 K/V heads, width 2,048) on one L40S at 4,096 tokens, 20 ms."""
    config = {"model_type": "llama", "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
              "hidden_size": 2048, "intermediate_size": 5632, "vocab_size": 32000, "tie_word_embeddings": False}
    result = pareto(config=config, gpu="l40s", context=4096, tpot_target_ms=20)
    v = result.values
    # Two embeddings 2 × 32,000 × 2,048; per layer q,o 2 × 2,048² + k,v 2 × 2,048 × 1,024 + MLP 3 × 2,048 ×
    # 5,632 + two norms; a final norm.
    params = 2 * 32_000 * 2048 + 24 * (2 * 2048**2 + 2 * 2048 * 1024 + 3 * 2048 * 5632 + 2 * 2048) + 2048
    assert params == 1_263_634_432
    weights = params * 2
    assert v["weights_gib"] == pytest.approx(weights / GIB, rel=1e-12)
    per_user = 2 * 24 * 8 * 128 * 2 * 4096  # 402,653,184 B = 0.375 GiB
    assert v["per_user_gib"] == 0.375
    assert v["batch_memory_limit"] == int((46_068 / 1024 * 0.9 - weights / GIB - 3) / 0.375) == 93
    # 864 GB/s × 0.75 × 20 ms = 12.96 GB: (12.96e9 − 2.53e9) ÷ 402,653,184 B = 25.9.
    assert v["batch_tpot_limit"] == int((864e9 * 0.75 * 0.02 - weights) / per_user) == 25
    assert v["batch"] == 16
    step = (weights + 16 * per_user) / (864e9 * 0.75) * 1e3  # 13.84 ms
    assert v["step_ms"] == pytest.approx(step, rel=1e-12)
    assert v["tok_s_per_user"] == pytest.approx(1000 / step, rel=1e-12)
    assert v["tok_s_per_card"] == pytest.approx(16_000 / step, rel=1e-12)
    assert round(v["tok_s_per_card"], 1) == 1155.9


def test_a_mixture_of_experts_reads_the_experts_its_batch_touches():
    v = pareto(model="mixtral-8x7b-v0.1", gpus=2).values
    batch = int(v["batch"])
    touched = 8 * (1 - (1 - 2 / 8) ** batch)  # of 8 experts, top-2: 7.99 at 32
    expert = 3 * 4096 * 14336
    always = 46_702_792_704 - 32 * 8 * expert
    assert v["weight_bytes_per_step"] == pytest.approx((always + 32 * touched * expert) * 2, rel=1e-12)


@pytest.mark.parametrize(("model", "gpu", "gpus", "extra"), [
    ("llama-3.1-8b", "h100-sxm5-80gb", 1, {}),
    ("llama-3.1-70b", "h100-sxm5-80gb", 8, {"tpot_target_ms": 30}),
    ("mixtral-8x7b-v0.1", "a100-sxm4-80gb", 4, {"context": 4096}),
    ("llama-3.1-70b", "b200", 4, {"weights_dtype": "nvfp4", "kv_dtype": "fp8"}),
])
def test_the_steps_are_the_step_model_and_the_curve_marks_them(model, gpu, gpus, extra):
    result = pareto(model=model, gpu=gpu, gpus=gpus, **extra)
    v, curve, inputs = result.values, result.extra["curve"], result.inputs
    replica = Replica.from_catalog(model, gpu, gpus, weights_dtype=inputs["weights_dtype"],
                                   kv_dtype=inputs["kv_dtype"])
    batch = int(v["batch"])
    cost = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * inputs["context"])
    assert v["step_ms"] == pytest.approx(cost.step_ms, rel=1e-9)
    assert v["bytes_per_step"] == pytest.approx(cost.bytes, rel=1e-9)
    assert curve["marked"] == {"gpus": gpus, "batch": batch}
    mine = next(d for d in curve["degrees"] if d["gpus"] == gpus)
    assert [p["batch"] for p in mine["points"]] == grid_batches(int(v["batch_memory_limit"]))
    point = next(p for p in mine["points"] if p["batch"] == batch)
    assert point["tok_s_per_card"] == pytest.approx(v["tok_s_per_card"], rel=1e-9)
    # The marked batch is the largest grid batch whose step meets the target.
    assert all(p["meets_target"] == (p["batch"] <= batch) for p in mine["points"])
    best = curve["best"]
    assert all(best["tok_s_per_card"] >= p["tok_s_per_card"] for d in curve["degrees"] for p in d["points"]
               if p["meets_target"])


def test_the_curve_skips_degrees_that_cannot_serve():
    curve = pareto(model="llama-3.1-70b", gpus=8).extra["curve"]
    one = curve["degrees"][0]
    assert one["gpus"] == 1 and not one["points"] and "holds no sequence" in one["refused"]
    assert [d["gpus"] for d in curve["degrees"]] == [1, 2, 4, 8]
    # A degree the heads refuse (Falcon-7B has one K/V head and 71 query heads) is named, not drawn.
    falcon = pareto(model="falcon-7b").extra["curve"]
    assert [d["gpus"] for d in falcon["degrees"] if d["points"]] == [1]
    assert "71 query heads" in falcon["degrees"][1]["refused"]


def test_refusals_name_their_input():
    with pytest.raises(InputError) as exc:
        pareto(model="llama-3.1-70b", gpus=1)
    assert exc.value.field == "gpus"
    with pytest.raises(InputError) as exc:
        pareto(gpus=3)
    assert exc.value.field == "gpus" and "32 query heads" in str(exc.value)
    with pytest.raises(InputError) as exc:
        pareto(tpot_target_ms=2)
    assert exc.value.field == "tpot_target_ms"


def test_misconceptions_are_named():
    ref = pareto()
    v = ref.values
    assert verdict(ref, "bytes_per_step", v["weight_bytes_per_step"]).misconception == "kv-read-ignored"
    assert verdict(ref, "batch", 64).misconception == "cache-fit-ignored"  # the TPOT limit's 102 alone
    seventy = pareto(model="llama-3.1-70b", gpus=8, tpot_target_ms=30)
    s = seventy.values
    assert verdict(seventy, "step_ms", s["memory_ms"]).misconception == "comm-ignored"
    assert verdict(seventy, "tok_s_per_card", s["tok_s_per_card"] * 8).misconception == "per-replica-for-per-card"
    assert verdict(seventy, "tok_s_per_card", s["tok_s_per_user"]).misconception == "per-user-rate-for-replica"
    assert verdict(seventy, "memory_ms", s["memory_ms"] * 8).misconception == "one-card-bandwidth"
    sixteen = pareto(model="llama-3.1-70b", gpus=16, context=131_072)
    k = sixteen.values
    assert verdict(sixteen, "kv_bytes_per_step", k["kv_bytes_per_step"] / 2).misconception == "kv-replication-ignored"
    assert verdict(sixteen, "kv_replication", 1).misconception == "kv-replication-ignored"
    mixtral = pareto(model="mixtral-8x7b-v0.1", gpus=2, tpot_target_ms=100, context=2048)
    m = mixtral.values
    top_k = (46_702_792_704 - 32 * 6 * 3 * 4096 * 14336) * 2  # the dense part and 2 experts per layer
    assert m["batch"] > 1
    assert verdict(mixtral, "weight_bytes_per_step", top_k).misconception == "experts-top-k-read"


def test_grid_helpers():
    assert [power_of_two_at_most(x) for x in (0, 0.5, 1, 2, 3, 53, 64, 65.9)] == [0, 0, 1, 2, 2, 32, 64, 64]
    assert grid_batches(0) == [] and grid_batches(53) == [1, 2, 4, 8, 16, 32]


@pytest.mark.parametrize("formula", PARETO_FORMULAS, ids=lambda f: f.key)
def test_formulas_agree_with_exact_evaluation(formula):
    sample = {"batch_memory_limit": 53, "batch_tpot_limit": 102, "batch": 32, "step_ms": 20.07, "gpus": 2,
              "always_read_params": 1.6e9, "moe_layers": 32, "experts": 8, "experts_per_token": 2,
              "expert_params": 176_160_768, "weight_bits": 16, "expert_weight_bits": 4.25}
    values = {var.name: sample[var.name] for var in formula.variables}
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


def test_generated_problems_run():
    catalog = default_catalog()
    for seed in range(30):
        inputs = FAMILY.generate(random.Random(seed), catalog)
        result = FAMILY.run(inputs, catalog)
        assert result.values["batch"] >= 1 and result.extra["curve"]["marked"]
        assert inputs["model"] in FAMILY.describe(inputs, catalog)

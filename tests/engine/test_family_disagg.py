"""The ``disagg`` family (docs/architecture.md §12), hand-derived on two models and cards and a pasted config."""

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.grader import grade
from calculators.engine.procedures.disagg import COST_FORMULAS, DISAGG_FORMULAS, STEP_KEYS
from calculators.families import FAMILIES

FAMILY = FAMILIES["disagg"]


def disagg(**inputs):
    return FAMILY.run(inputs)


def verdict(result, key, text):
    return {step.key: step for step in grade(result, {key: text}).steps}[key]


def test_70b_long_prompts_on_eight_h100s_chunk_rather_than_split():
    result = disagg()
    v = result.values
    assert [s.key for s in result.steps] == list(STEP_KEYS)
    # 327,680 B × 4,096 = 1,342,177,280 B; each of the 8 cards ships its eighth over its own 50 GB/s link:
    # 1,342,177,280 ÷ (8 × 50e9) s = 3.355 ms (not the 26.84 ms of the whole cache over one link).
    assert v["kv_transfer_bytes"] == 327_680 * 4096
    assert v["kv_transfer_ms"] == pytest.approx(327_680 * 4096 / (8 * 50e9) * 1e3, rel=1e-12)
    assert verdict(result, "kv_transfer_ms", "26.84 ms").misconception == "transfer-one-link"
    flops = 2 * 70_553_706_496 * 4096 + 4 * 64 * 128 * 4096 * 80 * 4096
    assert v["prefill_flops"] == flops
    assert v["prefill_ms"] == pytest.approx(flops / (8 * 989.4e12 * 0.4) * 1e3, rel=1e-12)  # 196.4 ms
    assert v["ttft_ms"] == pytest.approx(v["prefill_ms"] + v["kv_transfer_ms"], rel=1e-12)
    # 10 req/s × 6.2196e14 FLOP ÷ (989.4e12 × 0.4) = 15.7 → 16 cards.
    assert v["prefill_gpus"] == 16
    slo = FAMILIES["slo"].run({"context": 4096 + 256}).values
    assert v["decode_replicas"] == -(-10 * 256 // slo["tokens_per_s"])
    assert v["pool_ratio"] == v["prefill_gpus"] / v["decode_gpus"]
    # Colocated and chunked: a 256-token chunk is 256/4,096 of the prefill (12.28 ms), added to the full-batch
    # decode step at 4,352 tokens (slo's tpot_ms, 34.1 ms): 46.4 ms fits the 50 ms target, so splitting does not
    # pay although the whole prefill (196 ms) would stall four steps' worth unchunked.
    assert v["chunk_ms"] == pytest.approx(v["prefill_ms"] * 256 / 4096, rel=1e-12)
    assert v["chunk_ms"] + slo["tpot_ms"] < 50 < v["prefill_ms"]
    assert v["disagg_pays"] == 0
    # 1,024-token chunks (49.1 ms each) no longer fit beside the 34.1 ms step; the 3.36 ms transfer is within
    # 20 % of the prefill: splitting pays.
    big = disagg(prefill_chunk_tokens=1024).values
    assert big["chunk_ms"] == pytest.approx(v["prefill_ms"] / 4, rel=1e-12)
    assert big["disagg_pays"] == 1
    assert "49.1 ms to a decode step of 34.1 ms" in disagg(prefill_chunk_tokens=1024).notes[0]


def test_a_small_model_with_short_prompts_does_not_pay():
    # Llama-3.1-8B on one H100, 512 tokens: prefill (2 × 8.03e9 × 512 + 4 × 32 × 128 × 512 × 32 × 512)
    # ÷ (989.4e12 × 0.4) = 21.1 ms < 50 ms: colocated prefills do not break the target.
    v = disagg(model="llama-3.1-8b", gpus=1, prompt_tokens=512).values
    flops = 2 * 8_030_261_248 * 512 + 4 * 32 * 128 * 512 * 32 * 512
    assert v["prefill_ms"] == pytest.approx(flops / (989.4e12 * 0.4) * 1e3, rel=1e-12)
    assert v["disagg_pays"] == 0


def test_a_slow_network_does_not_pay_on_a_b200():
    # 70B at fp8 on 8 B200s over 12.5 GB/s (100 Gb/s) per card: 1.34 GB ÷ (8 × 12.5 GB/s) = 13.4 ms, above
    # 20 % of the 43.6 ms prefill (8.7 ms).
    v = disagg(gpu="b200", weights_dtype="fp8", network_gb_s=12.5).values
    assert v["kv_transfer_ms"] == pytest.approx(327_680 * 4096 / (8 * 12.5e9) * 1e3, rel=1e-12)
    flops = 2 * 70_553_706_496 * 4096 + 4 * 64 * 128 * 4096 * 80 * 4096
    assert v["prefill_ms"] == pytest.approx(flops / (8 * 4500e12 * 0.4) * 1e3, rel=1e-12)
    assert v["disagg_pays"] == 0


def test_a_pasted_config_and_the_named_slips():
    config = {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256}
    result = disagg(config=config, gpus=1, prompt_tokens=8192)
    v = result.values
    assert v["kv_transfer_bytes"] == 131_072 * 8192
    step = verdict(result, "kv_transfer_ms", f"{v['kv_transfer_ms'] * 8}")
    assert step.misconception == "transfer-bits-for-bytes"
    sixteen = disagg(model="llama-3.1-70b", gpus=16, prompt_tokens=4096)
    step = verdict(sixteen, "kv_transfer_bytes", f"{327_680 * 4096 * 2}")
    assert step.misconception == "transfer-replicated"


@pytest.mark.parametrize("formula", DISAGG_FORMULAS + COST_FORMULAS, ids=lambda f: f.key)
def test_formulas_agree_with_exact_evaluation(formula):
    sample = {"kv_bytes_per_token": 131_072, "prompt_tokens": 5000, "full_layers": 21, "window_layers": 21,
              "window": 4096, "layers": 42, "kv_transfer_bytes": 6.5e8, "network_gb_s": 50, "prefill_flops": 8.4e13,
              "gpus": 2, "peak_tflops": 989.4, "prefill_mfu": 0.4, "prefill_ms": 105.0, "kv_transfer_ms": 13.1,
              "ttft_ms": 118.1, "rate": 7.0, "output_tokens": 256, "decode_tok_s": 4321.0, "decode_replicas": 3,
              "prefill_gpus": 5, "decode_gpus": 6, "tpot_target_ms": 50, "transfer_budget": 0.2, "occupancy": 0.8,
              "spare_gpus": 8, "gpus_per_node": 8, "prefill_chunk_tokens": 256, "chunk_ms": 7.5,
              "decode_step_ms": 30.0, "prefill_nodes": 1, "decode_nodes": 2,
              "fleet_gpus": 22, "usd_per_gpu_hour": 3.0, "decode_tok_s_": 0}
    values = {var.name: sample[var.name] for var in formula.variables}
    assert formula(values) == pytest.approx(float(formula.exact(values)), rel=1e-12)


def test_generated_problems_run():
    catalog = default_catalog()
    for seed in range(10):
        inputs = FAMILY.generate(random.Random(seed), catalog)
        assert FAMILY.run(inputs, catalog).values["ttft_ms"] > 0
        assert inputs["model"] in FAMILY.describe(inputs, catalog)


def test_whole_fleet_cost_beside_the_single_node_figure():
    v = disagg().values
    # Whole nodes per pool: prefill ⌈16 ÷ 0.8 ÷ 8⌉ = ⌈2.5⌉ = 3 nodes, decode ⌈8 ÷ 0.8 ÷ 8⌉ = ⌈1.25⌉ = 2 nodes:
    # 5 × 8 + 8 spares = 48 cards (not ⌈24 ÷ 0.8⌉ + 8 = 38, which buys 3.75 nodes)
    # × $3/h ÷ (10 req/s × 256 tok × 3,600 s) × 10^6.
    assert (v["prefill_gpus"], v["decode_gpus"]) == (16, 8)
    assert (v["prefill_nodes"], v["decode_nodes"]) == (3, 2)
    assert v["fleet_gpus"] == 48
    assert v["fleet_usd_per_mtok"] == pytest.approx(48 * 3.0 / (10 * 256 * 3600) * 1e6, rel=1e-12)
    slo = FAMILIES["slo"].run({"context": 4096 + 256}).values
    assert v["node_usd_per_mtok"] == pytest.approx(8 * 3.0 / (slo["tokens_per_s"] * 3600) * 1e6, rel=1e-12)
    assert v["fleet_usd_per_mtok"] > 10 * v["node_usd_per_mtok"]
    cheap = disagg(model="llama-3.1-8b", gpus=1, prompt_tokens=512, occupancy=1.0, spare_gpus=0).values
    assert cheap["fleet_gpus"] == 8 * (-(-cheap["prefill_gpus"] // 8) - (-cheap["decode_gpus"] // 8))
    # 14's fleet: 664 prefill and 256 decode cards at 0.8: ⌈103.75⌉ + ⌈40⌉ = 144 nodes = 1,152 cards + 8 spares.
    fleet = disagg(model="llama-3.1-70b", prompt_tokens=1800, output_tokens=500, rate=1000, spare_gpus=8).values
    assert (fleet["prefill_gpus"], fleet["decode_gpus"], fleet["fleet_gpus"]) == (664, 256, 1160)
    # The one decode sizing 14 quotes in its redundancy section and its cost: ⌈1,000 × 500 ÷ 16,082.8⌉ = 32
    # replicas at full occupancy, ⌈256 ÷ (0.8 × 8)⌉ = 40 nodes with headroom.
    assert (fleet["decode_replicas"], fleet["prefill_nodes"], fleet["decode_nodes"]) == (32, 104, 40)

"""The KV cache's whole blocks: one rounding rule for the engine's steps and the simulator's cache (issue 36)."""

from __future__ import annotations

from calculators.engine.catalog import default_catalog
from calculators.engine.formula import whole_floor
from calculators.families import FAMILIES
from calculators.sim.scenario import CACHE_INPUTS, STORE_VERSION, Scenario, split_inputs

# gpt-oss-20b at 4.5-bit (int4) weights with a bf16 cache on one MI300X, by hand:
#   budget  = 196,592 MiB × 2^20 × 0.9 − 20,914,757,184 params × 4.5 / 8 B − 3 GiB = 170,541,711,304.8 B
#   a block = 16 tokens × 49,152 B (24 layers × 8 K/V heads × 64 × 2 × 2 B)        = 786,432 B
#   blocks  = ⌊216,854.99993⌋ = 216,854 (216,855 would need 170,541,711,360 B: 55.2 B more than there is)
STACK = {"model": "gpt-oss-20b", "gpu": "mi300x", "weights_dtype": "int4", "kv_dtype": "bf16",
         "prompt_tokens": 8192, "output_tokens": 2048}
KV_TOKENS = 216_854 * 16


def _stored_sweep() -> dict:
    """One swept point that preempts, stored as a problem stores it, so the plan reads it and never simulates."""
    point = {"rate_req_s": 10.0, "goodput_req_s": 9.0, "ttft_mean_ms": 1.0, "ttft_p99_ms": 2.0, "tpot_mean_ms": 1.0,
             "tpot_p99_ms": 2.0, "e2e_mean_ms": 100.0, "mean_in_system": 1.0, "mean_running": 1.0, "preemptions": 3,
             "kv_peak_fraction": 1.0, "arrived": 10, "ttft_missed": 0, "tpot_missed": 0}
    return {"version": STORE_VERSION, "simulator_inputs": {"duration_s": 120}, "points": [point]}


def test_a_true_fraction_just_below_a_whole_number_floors():
    assert whole_floor(170_541_711_304.8 / 786_432) == 216_854
    assert whole_floor(0.1 * 3 * 10) == 3  # round-off (2.9999999999999996) is still the whole number


def test_preemptrate_and_the_simulator_hold_the_same_blocks_on_gpt_oss_20b_on_mi300x():
    result = FAMILIES["preemptrate"].run({**STACK, "simulation": _stored_sweep()})
    inputs, _ = split_inputs(STACK, default_catalog(), CACHE_INPUTS)

    assert result.step("kv_cache_tokens").value == KV_TOKENS == 3_469_664
    assert Scenario(inputs, default_catalog(), "cache").kv_tokens == KV_TOKENS

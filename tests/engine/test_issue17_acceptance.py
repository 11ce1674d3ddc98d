"""Issue 17's acceptance examples (DESIGN §12), through every family that states them: 12 users for
Llama-3.1-70B on 16 H100 SXM at 131,072 tokens (K/V heads replicated twice), and 208.6 tok/s for the
reference stack at batch 1 with no cache and full bandwidth."""

import pytest

from calculators.engine.step_model import Replica, step_ms
from calculators.families import FAMILIES

SEVENTY_AT_128K = {"model": "llama-3.1-70b", "gpus": 16, "context": 131_072}


def test_twelve_users_not_twenty_four_in_every_family_that_sizes_the_cache():
    ladder = FAMILIES["ladder"].run(SEVENTY_AT_128K).values
    # 16 × 81,559 MiB × 0.9 − 131.42 GiB − 16 × 3 GiB = 967.51 GiB; 327,680 B × 131,072 × 2 copies = 80 GiB.
    assert ladder["per_user_gib"] == 80.0 and ladder["users_worst_case"] == 12
    assert int(ladder["kv_budget_gib"] / 40.0) == 24  # what an unreplicated cache would claim
    kv = FAMILIES["kv"].run(SEVENTY_AT_128K).values
    assert (kv["kv_replication"], kv["per_user_gib"]) == (2, 80.0)
    assert FAMILIES["slo"].run(SEVENTY_AT_128K).values["batch_memory_limit"] == 12
    assert FAMILIES["pareto"].run(SEVENTY_AT_128K).values["batch_memory_limit"] == 12


def test_the_decode_ceiling_is_208_6_at_batch_one_without_cache_at_full_bandwidth():
    # 3,350 GB/s ÷ (8,030,261,248 × 2 B) = 208.586 tok/s.
    expected = 3350e9 / 16_060_522_496
    decode = FAMILIES["decode"].run({"bandwidth_efficiency": 1.0}).values
    assert decode["ceiling_tok_s"] == pytest.approx(expected, rel=1e-12)
    assert round(decode["ceiling_tok_s"], 1) == 208.6
    # The step at full bandwidth: memory-bound (compute 0.032 ms), no all-reduces on one card.
    assert decode["tok_s_per_user"] == pytest.approx(expected, rel=1e-12)
    replica = Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb", bandwidth_efficiency=1.0)
    assert (1000 / step_ms(replica, decode_batch=1, decode_context_tokens=0).step_ms
            == pytest.approx(expected, rel=1e-12))

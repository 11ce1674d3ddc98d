"""Problems pinned by their inputs, for tests that need a known problem and not whatever a seed draws.

A seed names a problem only for one generator version and one catalog (a new model or card changes what every
seed draws: ``drills/problems/generation.py``, ``GENERATOR_VERSION``). A test that asserts a problem's numbers
creates it with every input fixed (``create_problem(family, seed, user, fixed_inputs=...)``): the fixed model and
card pin the catalog the generator draws on, and every other input replaces the drawn one, so the problem is the
same whatever the seed and the catalog.
"""

from __future__ import annotations

# Qwen2.5-7B (28 layers, 28 query heads, 4 KV heads, head_dim 128) on one B300, int4 weights, FP8 KV cache, a
# 16,384-token context: KV cache per token 2 (K and V) × 28 × 4 × 128 × 1 B = 28,672 B (typing the 28 query
# heads instead gives 200,704 B); a user at the context limit holds 28,672 × 16,384 / 2³⁰ = 0.4375 GiB.
# (Generator v6 drew exactly this ladder at seed 7.)
QWEN25_7B_LADDER = {
    "model": "qwen2.5-7b", "gpu": "b300", "gpus": 1, "weights_dtype": "int4", "kv_dtype": "fp8",
    "context": 16384, "utilization": 0.9, "reserve_gib": 3.0, "avg_tokens": 2850, "block_size": 16,
}

"""DeepSeek Sparse Attention's cache (DESIGN §11): the indexer's key is counted, shown and named when left out.

The indexer keeps one index_head_dim-wide key per token per layer in fp8 with an fp32 scale per 128 values (DeepSeek's
reference inference/model.py: k_cache float8_e4m3fn, k_scale_cache float32), 1 + 4/128 = 1.03125 B a value, whatever
the latent's dtype. Every value below is worked by hand.
"""

from __future__ import annotations

from calculators.engine.catalog import default_catalog
from calculators.engine.grader import grade
from calculators.engine.procedures.kv import describe_kv
from calculators.families import FAMILIES
from drills.problems.presentation import CONFIG_KEYS

QWEN = {"model": "qwen3-30b-a3b", "kv_dtype": "fp8", "gpus": 8, "context": 2048}


def verdicts(family: str, inputs: dict, answers: dict) -> dict[str, tuple[str, str | None]]:
    """Each answered step's (verdict, mistake id)."""
    graded = grade(FAMILIES[family].run(inputs), answers)
    return {s.key: (s.verdict, s.misconception) for s in graded.steps if s.key in answers}


# deepseek-v3.2-exp, bf16: 61 layers × ((512 + 64) × 2 B + 128 × (1 + 4/128) B) = 61 × (1,152 + 132) = 78,324 B;
# the MLA latent alone is 61 × 576 × 2 = 70,272 B.
DSV32 = {"model": "deepseek-v3.2-exp", "kv_dtype": "bf16", "gpus": 1, "context": 2048}


def test_the_indexer_key_left_out_is_named():
    result = FAMILIES["kv"].run(DSV32)
    assert result.values["kv_bytes_per_token"] == 78324
    assert verdicts("kv", DSV32, {"kv_bytes_per_token": "70272"}) == {
        "kv_bytes_per_token": ("misconception", "sparse-indexer-left-out")}
    # Carried on: 70,272 B × 2,048 ÷ 2^30 = 0.134 GiB per user, named where the bytes were not typed.
    assert verdicts("kv", DSV32, {"per_user_gib": "0.134"}) == {
        "per_user_gib": ("misconception", "sparse-indexer-left-out")}


def test_the_shown_formula_agrees_with_its_value():
    # 132 B per token per layer: 128 fp8 values (1 B) and one fp32 scale (4 B) per 128, 1.03125 B a value.
    step = FAMILIES["kv"].run(DSV32).steps[0]
    assert step.substituted == "61 × ((512 + 64) × 2 B + 128 × 1.03125 B) = 78,324 B"
    # fp4 caches show their 0.5625 B (nvfp4: 4 bits + an fp8 scale per 16) instead of "1 B".
    fp4 = FAMILIES["kv"].run({"model": "qwen3-30b-a3b", "kv_dtype": "nvfp4"}).steps[0]
    assert fp4.substituted == "2 × 48 × 4 × 128 × 0.5625 B = 27,648 B"


def test_the_problem_shows_the_indexer_it_counts():
    words = describe_kv(DSV32, default_catalog())
    assert "128-value key per token (index_head_dim)" in words and "132 B per layer" in words
    assert "part of the KV cache" in words
    assert {"index_n_heads", "index_head_dim", "index_topk"} <= set(CONFIG_KEYS)
    config = default_catalog().model("deepseek-v3.2-exp").raw_config
    assert (config["index_head_dim"], config["index_n_heads"], config["index_topk"]) == (128, 64, 2048)
    # A model without an indexer is asked as before.
    assert "indexer" not in describe_kv(QWEN, default_catalog())

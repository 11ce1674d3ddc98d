"""The models of December 2026 (issue 36 item 2): their derived numbers against hand derivations, and each one
through the ladder, kv, decode, moe, tp and pareto families, the serving simulator and the problem generator.

Parameter counts are in tests/engine/test_param_count.py (EXACT, with the derivations); here the KV cache per
token, the weights at each precision the model ships or is served in, and what the attention kind changes.
"""

import pytest

from calculators.engine.catalog import default_catalog
from calculators.families import FAMILIES
from calculators.sim.run import simulate
from drills.problems.generation import generate_inputs

CATALOG = default_catalog()
GIB = 2**30


def test_kimi_k2_caches_deepseek_v3s_latent_and_ships_fp8_weights():
    model = CATALOG.model("kimi-k2")
    cfg = model.config
    assert (cfg.attention_kind, cfg.heads, cfg.num_experts, cfg.dense_layers) == ("MLA", 64, 384, 1)
    # MLA: 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B = 70,272 B per token at bf16, 35,136 at fp8:
    # the same latent as DeepSeek-V3, whose 128 heads do not enter the cache.
    assert FAMILIES["kv"].run({"model": "kimi-k2"}).values["kv_bytes_per_token"] == 61 * 576 * 2 == 70_272
    assert FAMILIES["kv"].run({"model": "kimi-k2", "kv_dtype": "fp8"}).values["kv_bytes_per_token"] == 35_136
    assert FAMILIES["kv"].run({"model": "deepseek-v3"}).values["kv_bytes_per_token"] == 70_272
    # Weights: 1,026,408,232,448 parameters × 1 B (fp8, as released) = 955.92 GiB; × 2 B (bf16) = 1,911.83 GiB.
    for dtype, bytes_each in (("fp8", 1), ("bf16", 2)):
        weights = FAMILIES["weights"].run({"model": "kimi-k2", "weights_dtype": dtype}).values["weight_bytes"]
        assert weights == 1_026_408_232_448 * bytes_each
    assert round(1_026_408_232_448 / GIB, 2) == 955.92
    assert any(source.get("repo") == "ai-dynamo/aiconfigurator" for source in model.source)


# (model, a stack that holds it: card, cards, weights; its KV bytes per token at bf16, derived in the tests above)
STACKS = [
    ("kimi-k2", "b300", 8, "fp8", 70_272),
]


@pytest.mark.parametrize("model_id, gpu, gpus, dtype, kv_bytes", STACKS)
def test_each_new_model_reaches_every_serving_family_the_simulator_and_the_generator(model_id, gpu, gpus, dtype,
                                                                                      kv_bytes):
    stack = {"model": model_id, "gpu": gpu, "gpus": gpus, "weights_dtype": dtype}
    cfg = CATALOG.model(model_id).config
    ladder = FAMILIES["ladder"].run(stack).values
    assert ladder["kv_bytes_per_token"] == kv_bytes and ladder["users_worst_case"] >= 1
    assert FAMILIES["kv"].run({"model": model_id, "gpus": gpus}).values["kv_bytes_per_token"] == kv_bytes
    decode = FAMILIES["decode"].run({**stack, "batch": 32, "context": 4096}).values
    assert decode["ceiling_tok_s"] > 0 and decode["weight_bytes_per_step"] > 0
    tp = FAMILIES["tp"].run({"model": model_id, "gpu": gpu, "weights_dtype": dtype}).values
    assert tp["tp_degree"] <= gpus
    pareto = FAMILIES["pareto"].run(stack).values
    assert pareto["batch"] >= 1
    if cfg.is_moe:
        moe = FAMILIES["moe"].run({"model": model_id, "gpu": gpu, "weights_dtype": dtype}).values
        assert moe["active_params"] < moe["total_params"]
    run = simulate({**stack, "rate": 2, "duration_s": 20, "prompt_tokens": 512, "output_tokens": 64})["summary"]
    assert run["completed"] == run["arrived"] > 0
    for family in ("ladder", "kv", "decode", "tp", "pareto", *(("moe",) if cfg.is_moe else ())):
        assert generate_inputs(family, 3, fixed={"model": model_id})["model"] == model_id

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


@pytest.mark.parametrize("model_id, layers, experts, total, active", [
    ("gpt-oss-120b", 36, 128, 116_829_156_672, 5_711_982_912),
    ("gpt-oss-20b", 24, 32, 20_914_757_184, 4_187_440_704),
])
def test_gpt_oss_windows_half_its_layers_and_its_sinks_cost_parameters_not_cache(model_id, layers, experts, total,
                                                                                  active):
    from calculators.engine.hf_config import attention_params_per_layer, param_breakdown

    cfg = CATALOG.model(model_id).config
    assert (cfg.num_experts, cfg.experts_per_token, cfg.sliding_window, cfg.window_layers) == (experts, 4, 128,
                                                                                              layers // 2)
    assert cfg.attention_sinks and cfg.mlp_bias and cfg.router_bias and cfg.dense_layers == 0
    notes = " ".join(FAMILIES["kv"].run({"model": model_id}).notes)
    assert f"{layers // 2} of {layers} layers use a 128-token sliding window" in notes and "Attention sinks" in notes
    # Attention: q/o 2 × 11,796,480 + k/v 2 × 1,474,560 + biases 8,000 + 64 sinks = 26,550,144 per layer.
    assert attention_params_per_layer(cfg) == 26_550_144
    # OpenAI's active figures leave the 579,133,440-value embedding table out: 5.13B and 3.61B.
    assert param_breakdown(cfg).active - 201_088 * 2_880 == {36: 5_132_849_472, 24: 3_608_307_264}[layers]
    # KV per token, every layer full: 2 × layers × 8 KV heads × 64 × 2 B = 2,048 B per layer: 73,728 / 49,152 B.
    kv = FAMILIES["kv"].run({"model": model_id, "context": 8192}).values
    assert kv["kv_bytes_per_token"] == layers * 2048
    # At 8,192 tokens the full half holds every token, the windowed half 128: (layers/2) × 2,048 × (8,192 + 128)
    # = 306,708,480 B = 0.2856 GiB (120b); 12 × 2,048 × 8,320 = 204,472,320 B = 0.1904 GiB (20b).
    assert kv["per_user_gib"] * GIB == pytest.approx(layers // 2 * 2048 * (8192 + 128), rel=1e-12)
    # Weights: every parameter at bf16 (2 B) or fp8 (1 B); at the checkpoint's own mxfp4 the experts' weight
    # matrices are MXFP4 (4.25 bits) and everything else bf16 (tests/engine/test_expert_widths.py derives it):
    # 65,248,815,744 B (120b) and 13,761,264,768 B (20b), not every parameter at 4.25 bits (62,065,489,482 B).
    for dtype, bytes_each in (("bf16", 2), ("fp8", 1)):
        weights = FAMILIES["weights"].run({"model": model_id, "weights_dtype": dtype}).values["weight_bytes"]
        assert weights == total * bytes_each
    weights = FAMILIES["weights"].run({"model": model_id, "weights_dtype": "mxfp4"}).values["weight_bytes"]
    assert weights == pytest.approx({36: 65_248_815_744, 24: 13_761_264_768}[layers], abs=1e-3)
    assert total * 4.25 / 8 == {36: 62_065_489_482, 24: 11_110_964_754}[layers]
    assert param_breakdown(cfg).total == total and param_breakdown(cfg).active == active


@pytest.mark.parametrize("model_id, moe_layers, total", [
    ("llama-4-scout", 48, 107_769_861_120),
    ("llama-4-maverick", 24, 400_711_848_960),
])
def test_llama_4_interleaves_experts_and_holds_a_chunk_on_three_layers_of_four(model_id, moe_layers, total):
    cfg = CATALOG.model(model_id).config
    # Experts of intermediate_size 8,192 (one shared in every MoE layer); dense layers of intermediate_size_mlp 16,384.
    assert (cfg.moe_intermediate_size, cfg.intermediate_size, cfg.shared_experts) == (8192, 16384, 1)
    assert cfg.layers - cfg.dense_layers == moe_layers
    # Layers 3, 7 … 47 global (NoPE), the other 36 chunked at 8,192 tokens, costed as a window of the chunk.
    assert (cfg.sliding_window, cfg.window_layers) == (8192, 36)
    # KV per token, every layer full: 2 × 48 × 8 × 128 × 2 B = 196,608 B (4,096 B per layer).
    kv = FAMILIES["kv"].run({"model": model_id, "context": 32768}).values
    assert kv["kv_bytes_per_token"] == 196_608
    # At 32,768 tokens: 12 global layers × 4,096 × 32,768 + 36 chunked × 4,096 × 8,192 = 2,818,572,288 B
    # = 2.625 GiB, not the 6 GiB of every layer full.
    assert kv["per_user_gib"] == pytest.approx((12 * 4096 * 32768 + 36 * 4096 * 8192) / GIB, rel=1e-12) == 2.625
    notes = " ".join(FAMILIES["kv"].run({"model": model_id}).notes)
    assert "36 of 48 layers attend within 8,192-token chunks" in notes and "sliding window" not in notes
    # Weights at bf16 (as released) and fp8: total × 2 B and × 1 B.
    for dtype, bytes_each in (("bf16", 2), ("fp8", 1)):
        weights = FAMILIES["weights"].run({"model": model_id, "weights_dtype": dtype}).values["weight_bytes"]
        assert weights == total * bytes_each


def test_scouts_published_109b_counts_its_vision_encoder():
    # The text model is 107,769,861,120 parameters; Meta's 109B includes the vision encoder, this catalog's
    # entry is the text_config only (its notes say so).
    from calculators.engine.hf_config import param_breakdown

    assert round(param_breakdown(CATALOG.model("llama-4-scout").config).total / 1e9, 2) == 107.77
    assert "vision encoder" in CATALOG.model("llama-4-scout").entry["published_params"]["total"]


def test_deepseek_v3_2s_indexer_costs_parameters_cache_and_a_read_of_every_cached_token():
    from calculators.engine.hf_config import indexer_params_per_layer, param_breakdown
    from calculators.engine.step_model import Replica, step_ms

    cfg = CATALOG.model("deepseek-v3.2-exp").config
    assert (cfg.attention_kind, cfg.index_n_heads, cfg.index_head_dim, cfg.index_topk) == ("MLA", 64, 128, 2048)
    # The indexer of one layer (DeepSeek's inference/model.py, class Indexer; no biases): wq_b from the q latent
    # 1,536 × (64 heads × 128) = 12,582,912, wk 7,168 × 128 = 917,504, k_norm a LayerNorm of 128 with weight and
    # bias = 256, weights_proj 7,168 × 64 = 458,752 → 13,959,424; × 61 layers = 851,524,864 on DeepSeek-V3's count.
    assert indexer_params_per_layer(cfg) == 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64 == 13_959_424
    v3 = param_breakdown(CATALOG.model("deepseek-v3").config)
    counts = param_breakdown(cfg)
    assert counts.total - v3.total == counts.active - v3.active == 61 * 13_959_424 == 851_524_864
    # Cache per token: the latent 61 × (512 + 64) × 2 B = 70,272 (bf16), plus the indexer key 128 values × 1 B (fp8)
    # + one fp32 scale per 128 values (4 B) = 132 B per layer, 61 × 132 = 8,052 → 78,324 B. At fp8 the latent halves
    # (35,136) and the indexer stays fp8: 43,188 B.
    kv = FAMILIES["kv"].run({"model": "deepseek-v3.2-exp", "context": 8192}).values
    assert kv["kv_bytes_per_token"] == 61 * 576 * 2 + 61 * 132 == 78_324
    assert FAMILIES["kv"].run({"model": "deepseek-v3.2-exp", "kv_dtype": "fp8"}).values["kv_bytes_per_token"] == 43_188
    # Every token is kept (nothing is windowed away): 78,324 × 8,192 = 641,630,208 B = 0.5976 GiB a user.
    assert kv["per_user_gib"] * GIB == 78_324 * 8192
    # A decode step of one sequence on one card reads the latent of min(c, 2,048) tokens and every indexer key:
    # at c = 32,768, 70,272 × 2,048 + 8,052 × 32,768 = 143,917,056 + 263,847,936 = 407,764,992 B of cache
    # (dense MLA would read 70,272 × 32,768 = 2,302,672,896); at c = 1,024 all 1,024 latents, 80,203,776 B.
    # FLOPs: 2 × 38,403,822,336 active + 61 × (4 × 128 heads × 544 (MLA absorbed: (2 × 512 + 64) ÷ 2) × 2,048
    # + 2 × 64 × 128 = 16,384 indexer FLOPs × 32,768) = 76,807,644,672 + 61 × (570,425,344 + 536,870,912)
    # = 144,352,716,288: what a step reads and computes still grows with the context, at the indexer's slope.
    stack = {"model": "deepseek-v3.2-exp", "gpu": "b300", "gpus": 8, "weights_dtype": "fp8", "batch": 1}
    for context, cache_bytes, flops in ((32768, 407_764_992, 144_352_716_288), (1024, 80_203_776, None)):
        values = FAMILIES["decode"].run({**stack, "context": context}).values
        assert values["kv_bytes_per_step"] == cache_bytes * 8  # the latent and indexer keys on each of 8 cards
        replica = Replica.from_catalog("deepseek-v3.2-exp", "b300", 1, weights_dtype="fp8")
        cost = step_ms(replica, decode_batch=1, decode_context_tokens=context)
        assert cost.bytes - replica.weight_bytes(1) == pytest.approx(cache_bytes, rel=1e-12)
        if flops:
            assert values["flops_per_step"] == cost.flops == flops
    # The indexer's FLOPs per cached token per layer: 2 × 64 heads × 128 = 16,384 (the head-weighted sum of the 64
    # scores, 128 FLOPs more, is left out as softmax is); read back from the step: the slope past the top-k.
    one, two = (step_ms(replica, decode_batch=1, decode_context_tokens=c).flops for c in (4096, 4097))
    assert two - one == 61 * 16_384
    notes = " ".join(FAMILIES["kv"].run({"model": "deepseek-v3.2-exp"}).notes)
    assert "indexer" in notes and "2,048" in notes


# (model, a stack that holds it: card, cards, weights; its KV bytes per token at bf16, derived in the tests above)
STACKS = [
    ("kimi-k2", "b300", 8, "fp8", 70_272),
    ("gpt-oss-120b", "h100-sxm5-80gb", 1, "mxfp4", 73_728),
    ("gpt-oss-20b", "l40s", 1, "mxfp4", 49_152),
    ("llama-4-scout", "h100-sxm5-80gb", 4, "bf16", 196_608),
    ("llama-4-maverick", "b300", 4, "fp8", 196_608),
    ("deepseek-v3.2-exp", "b300", 8, "fp8", 78_324),
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
    assert run["completed"] > 0 and run["completed"] + run["in_flight"] == run["arrived"]
    for family in ("ladder", "kv", "decode", "tp", "pareto", *(("moe",) if cfg.is_moe else ())):
        assert generate_inputs(family, 3, fixed={"model": model_id})["model"] == model_id


def test_a_llama_4_config_listing_its_layers_is_read_by_the_lists():
    from calculators.engine.errors import ConfigError
    from calculators.engine.hf_config import parse_config

    text = dict(CATALOG.model("llama-4-maverick").entry["config"])
    # Every 4th layer global, as transformers' default fills no_rope_layers; MoE on the odd layers, as moe_layers.
    listed = {**text, "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(48)], "moe_layers": list(range(1, 48, 2))}
    cfg = parse_config(listed)
    assert (cfg.window_layers, cfg.dense_layers) == (36, 24)
    assert parse_config({**listed, "no_rope_layers": [1] * 48}).window_layers == 48
    with pytest.raises(ConfigError, match="'no_rope_layers' lists 47 layers but num_hidden_layers is 48"):
        parse_config({**text, "no_rope_layers": [1] * 47})
    with pytest.raises(ConfigError, match="interleave_moe_layer_step"):
        parse_config({**text, "interleave_moe_layer_step": 0})

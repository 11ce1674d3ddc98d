"""Exact parameter counts, derived by hand from each config.json (docs/architecture.md §2, §9 formula 2).

Every figure below is worked out in the comment beside it from the config
fields in ``fixtures/catalog/models.json``; none is computed by the engine.
"""

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.hf_config import attention_params_per_layer, mlp_params, param_breakdown, parse_config


def breakdown(model_id):
    return param_breakdown(default_catalog().model(model_id).config)


# --- Llama-3.1-8B, component by component ------------------------------------------------

def test_llama_3_1_8b_counts_exactly_8_030_261_248_parameters():
    b = breakdown("llama-3.1-8b")
    # Embedding table: vocab 128,256 × d_model 4,096 = 525,336,576.
    assert b.embeddings == 525_336_576
    # Untied output head: another 128,256 × 4,096 = 525,336,576.
    assert b.lm_head == 525_336_576
    # Attention per layer: q 4,096 × (32 × 128) = 16,777,216; k and v 4,096 × (8 × 128) = 4,194,304 each;
    # o 4,096 × 4,096 = 16,777,216; sum 41,943,040; × 32 layers = 1,342,177,280.
    assert b.attention == 1_342_177_280
    # SwiGLU MLP per layer: 3 × 4,096 × 14,336 = 176,160,768; × 32 = 5,637,144,576.
    assert b.mlp_dense == 5_637_144_576
    # RMSNorms: 2 per layer × 4,096 × 32 = 262,144, plus the final norm 4,096 = 266,240.
    assert b.norms == 266_240
    assert (b.mlp_experts_total, b.mlp_experts_active, b.routers) == (0, 0, 0)
    # 525,336,576 × 2 + 1,342,177,280 + 5,637,144,576 + 266,240 = 8,030,261,248.
    assert b.total == 8_030_261_248
    assert b.active == 8_030_261_248  # dense: every parameter is used per token


def test_llama_2_13b_counts_exactly_13_015_864_320_parameters():
    b = breakdown("llama-2-13b")
    # Embeddings 32,000 × 5,120 = 163,840,000, untied: × 2 = 327,680,000.
    # Attention (MHA, 40 × 128 = 5,120 wide): 4 × 5,120² = 104,857,600 per layer.
    # MLP 3 × 5,120 × 13,824 = 212,336,640; norms 2 × 5,120 = 10,240.
    # Per layer 317,204,480 × 40 = 12,688,179,200; + final norm 5,120 + 327,680,000 = 13,015,864,320
    # (the model card's count from the checkpoint).
    assert b.attention == 40 * 104_857_600
    assert b.mlp_dense == 40 * 212_336_640
    assert b.total == 13_015_864_320


# --- every catalog model against its exact count and its published figure ----------------------

# (model id, exact total, exact active, embedding table) — derivations:
#
# llama-3.1-70b: emb 128,256 × 8,192 = 1,050,673,152 (×2 untied); attention 2 × 8,192² + 2 × 8,192 × 1,024
#   = 150,994,944; MLP 3 × 8,192 × 28,672 = 704,643,072; norms 16,384; per layer 855,654,400 × 80
#   = 68,452,352,000; + 2,101,346,304 + 8,192 = 70,553,706,496.
# llama-3.1-405b: emb 128,256 × 16,384 = 2,101,346,304 (×2); attention 2 × 16,384² + 2 × 16,384 × 1,024
#   = 570,425,344; MLP 3 × 16,384 × 53,248 = 2,617,245,696; norms 32,768; per layer 3,187,703,808 × 126
#   = 401,650,679,808; + 4,202,692,608 + 16,384 = 405,853,388,800.
# llama-2-7b: emb 32,000 × 4,096 = 131,072,000 (×2); attention 4 × 4,096² = 67,108,864; MLP 3 × 4,096 × 11,008
#   = 135,266,304; norms 8,192; per layer 202,383,360 × 32 = 6,476,267,520; + 262,144,000 + 4,096
#   = 6,738,415,616.
# mistral-7b-v0.1: emb 131,072,000 (×2); attention 41,943,040 and MLP 176,160,768 as Llama-3.1-8B; norms 8,192;
#   per layer 218,112,000 × 32 = 6,979,584,000; + 262,144,000 + 4,096 = 7,241,732,096.
# mixtral-8x7b-v0.1: per layer attention 41,943,040 + 8 experts × 176,160,768 = 1,409,286,144 + router
#   8 × 4,096 = 32,768 + norms 8,192 = 1,451,270,144; × 32 = 46,440,644,608; + 262,144,000 + 4,096
#   = 46,702,792,704. Active: 2 experts = 352,321,536 → per layer 394,305,536 × 32 = 12,617,777,152
#   + 262,144,000 + 4,096 = 12,879,925,248.
# qwen2.5-7b: emb 152,064 × 3,584 = 544,997,376 (×2); attention 2 × 3,584² + 2 × 3,584 × 512 + q/k/v biases
#   (3,584 + 512 + 512) = 29,364,736; MLP 3 × 3,584 × 18,944 = 203,685,888; norms 7,168; per layer
#   233,057,792 × 28 = 6,525,618,176; + 1,089,994,752 + 3,584 = 7,615,616,512.
# qwen2.5-72b: emb 152,064 × 8,192 = 1,245,708,288 (×2); attention 150,994,944 + biases (8,192 + 1,024 + 1,024)
#   = 151,005,184; MLP 3 × 8,192 × 29,568 = 726,663,168; norms 16,384; per layer 877,684,736 × 80
#   = 70,214,778,880; + 2,491,416,576 + 8,192 = 72,706,203,648.
# deepseek-v2-lite: attention per layer q_proj 2,048 × 16 × 192 = 6,291,456, kv_a 2,048 × 576 = 1,179,648,
#   kv_a norm 512, kv_b 512 × 16 × 256 = 2,097,152, o 16 × 128 × 2,048 = 4,194,304 → 13,763,072 × 27
#   = 371,602,944; dense layer MLP 3 × 2,048 × 10,944 = 67,239,936; expert 3 × 2,048 × 1,408 = 8,650,752;
#   MoE layer 64 + 2 shared experts = 570,949,632 + router 64 × 2,048 = 131,072 → 571,080,704 × 26
#   = 14,848,098,304; norms 27 × 2 × 2,048 + 2,048 = 112,640; emb 102,400 × 2,048 = 209,715,200 (×2);
#   total 15,706,484,224. Active: 6 + 2 experts + router = 69,337,088 × 26 = 1,802,764,288 →
#   371,602,944 + 67,239,936 + 1,802,764,288 + 112,640 + 419,430,400 = 2,661,150,208.
# deepseek-v2: attention per layer q_a 5,120 × 1,536 = 7,864,320 + norm 1,536 + q_b 1,536 × 128 × 192
#   = 37,748,736 + kv_a 5,120 × 576 = 2,949,120 + norm 512 + kv_b 512 × 128 × 256 = 16,777,216
#   + o 128 × 128 × 5,120 = 83,886,080 → 149,227,520 × 60 = 8,953,651,200; dense MLP 3 × 5,120 × 12,288
#   = 188,743,680; expert 3 × 5,120 × 1,536 = 23,592,960; MoE layer 162 experts 3,822,059,520 + router
#   160 × 5,120 = 819,200 → 3,822,878,720 × 59 = 225,549,844,480; norms 60 × 2 × 5,120 + 5,120 = 619,520;
#   emb 102,400 × 5,120 = 524,288,000 (×2, untied by default); total 235,741,434,880. Active: 8 experts
#   188,743,680 + router 819,200 = 189,562,880 × 59 = 11,184,209,920 → 21,375,800,320.
# deepseek-v3: attention per layer q_a 7,168 × 1,536 = 11,010,048 + 1,536 + q_b 37,748,736 + kv_a
#   7,168 × 576 = 4,128,768 + 512 + kv_b 16,777,216 + o 16,384 × 7,168 = 117,440,512 → 187,107,328 × 61
#   = 11,413,547,008; 3 dense MLPs 3 × (3 × 7,168 × 18,432) = 1,189,085,184; expert 3 × 7,168 × 2,048
#   = 44,040,192; MoE layer 257 experts 11,318,329,344 + router 256 × 7,168 + 256 bias = 1,835,264
#   → 11,320,164,608 × 58 = 656,569,547,264; norms 61 × 2 × 7,168 + 7,168 = 881,664; emb 129,280 × 7,168
#   = 926,679,040 (×2); total 671,026,419,200. Active: 9 experts 396,361,728 + 1,835,264 = 398,196,992
#   × 58 = 23,095,425,536 → 37,552,297,472.
# gemma-2-9b: emb 256,000 × 3,584 = 917,504,000 (tied, once); attention q 3,584 × (16 × 256) = 14,680,064,
#   k and v 3,584 × (8 × 256) = 7,340,032 each, o 4,096 × 3,584 = 14,680,064 → 44,040,192; MLP
#   3 × 3,584 × 14,336 = 154,140,672; 4 norms × 3,584 = 14,336; per layer 198,195,200 × 42
#   = 8,324,198,400; + 917,504,000 + 3,584 = 9,241,705,984.
# qwen3-8b: emb 151,936 × 4,096 = 622,329,856 (×2, untied); attention q and o 4,096 × 4,096 = 16,777,216 each,
#   k and v 4,096 × (8 × 128) = 4,194,304 each → 41,943,040; q_norm + k_norm 2 × 128 = 256; MLP 3 × 4,096 × 12,288
#   = 150,994,944; norms 8,192; per layer 192,946,432 × 36 = 6,946,071,552; + 1,244,659,712 + 4,096 = 8,190,735,360.
# qwen3-32b: emb 151,936 × 5,120 = 777,912,320 (×2); q 5,120 × (64 × 128) = 41,943,040 and o the same, k and v
#   5,120 × 1,024 = 5,242,880 each → 94,371,840; q/k norms 256; MLP 3 × 5,120 × 25,600 = 393,216,000; norms 10,240;
#   per layer 487,598,336 × 64 = 31,206,293,504; + 1,555,824,640 + 5,120 = 32,762,123,264.
# qwen3-30b-a3b: emb 151,936 × 2,048 = 311,164,928 (×2); q 2,048 × 4,096 = 8,388,608 and o the same, k and v
#   2,048 × 512 = 1,048,576 each → 18,874,368; q/k norms 256; norms 4,096; router 128 × 2,048 = 262,144; expert
#   3 × 2,048 × 768 = 4,718,592, × 128 = 603,979,776; per layer 623,120,640 × 48 = 29,909,790,720; + 622,329,856
#   + 2,048 = 30,532,122,624. Active: 8 experts 37,748,736 → per layer 56,889,600 × 48 = 2,730,700,800
#   + 622,331,904 = 3,353,032,704.
# qwen3-235b-a22b: emb 151,936 × 4,096 = 622,329,856 (×2); q 4,096 × 8,192 = 33,554,432 and o the same, k and v
#   4,096 × 512 = 2,097,152 each → 71,303,168; q/k norms 256; norms 8,192; router 128 × 4,096 = 524,288; expert
#   3 × 4,096 × 1,536 = 18,874,368, × 128 = 2,415,919,104; per layer 2,487,755,008 × 94 = 233,848,970,752
#   + 1,244,659,712 + 4,096 = 235,093,634,560. Active: 8 experts 150,994,944 → per layer 222,830,848 × 94
#   = 20,946,099,712 + 1,244,663,808 = 22,190,763,520.
# kimi-k2 (DeepSeek-V3's layout, 64 heads): attention per layer q_a 7,168 × 1,536 = 11,010,048 + 1,536 + q_b
#   1,536 × 64 × 192 = 18,874,368 + kv_a 7,168 × 576 = 4,128,768 + 512 + kv_b 512 × 64 × 256 = 8,388,608 + o
#   64 × 128 × 7,168 = 58,720,256 → 101,124,096 × 61 = 6,168,569,856; 1 dense MLP 3 × 7,168 × 18,432 = 396,361,728;
#   expert 3 × 7,168 × 2,048 = 44,040,192; MoE layer 385 experts 16,955,473,920 + router 384 × 7,168 + 384 bias
#   = 2,752,896 → 16,958,226,816 × 60 = 1,017,493,608,960; norms 61 × 2 × 7,168 + 7,168 = 881,664; emb
#   163,840 × 7,168 = 1,174,405,120 (×2); total 1,026,408,232,448. Active: 9 experts 396,361,728 + 2,752,896
#   = 399,114,624 × 60 = 23,946,877,440 → 32,861,500,928.
# gpt-oss-120b: attention per layer q 2,880 × (64 × 64) = 11,796,480 and o the same, k and v 2,880 × (8 × 64)
#   = 1,474,560 each → 26,542,080; biases q 4,096 + k 512 + v 512 + o 2,880 = 8,000; sinks 64 → 26,550,144; expert
#   gate_up 2,880 × 5,760 = 16,588,800 + bias 5,760, down 2,880 × 2,880 = 8,294,400 + bias 2,880 → 24,891,840,
#   × 128 = 3,186,155,520; router 128 × 2,880 + 128 bias = 368,768; norms 2 × 2,880; per layer 3,213,080,192 × 36
#   = 115,670,886,912; emb 201,088 × 2,880 = 579,133,440 (×2, untied) + 2,880 → 116,829,156,672. Active: 4 experts
#   99,567,360 → per layer 126,492,032 × 36 = 4,553,713,152 + 1,158,269,760 = 5,711,982,912.
# gpt-oss-20b: the same layer with 32 experts (796,538,880) and a router of 32 × 2,880 + 32 = 92,192: per layer
#   823,186,976 × 24 = 19,756,487,424 + 1,158,269,760 = 20,914,757,184. Active: per layer 126,215,456 × 24
#   = 3,029,170,944 + 1,158,269,760 = 4,187,440,704.
# llama-4-scout (text model): attention q and o 5,120 × (40 × 128) = 26,214,400 each, k and v 5,120 × (8 × 128)
#   = 5,242,880 each → 62,914,560; expert 3 × 5,120 × 8,192 = 125,829,120, 16 routed + 1 shared = 2,139,095,040;
#   router 16 × 5,120 = 81,920 (no bias); norms 2 × 5,120; per layer 2,202,101,760 × 48 (every layer MoE)
#   = 105,700,884,480; emb 202,048 × 5,120 = 1,034,485,760 (×2, untied) + 5,120 → 107,769,861,120. Active: 1 routed
#   + 1 shared expert → per layer 314,664,960 × 48 = 15,103,918,080 + 2,068,976,640 = 17,172,894,720.
# llama-4-maverick: 24 MoE layers (every 2nd) of 62,914,560 + 129 × 125,829,120 + router 655,360 + 10,240
#   = 16,295,536,640 → 391,092,879,360; 24 dense layers of 62,914,560 + 3 × 5,120 × 16,384 (251,658,240) + 10,240
#   = 314,583,040 → 7,549,992,960; + 2,068,976,640 → 400,711,848,960. Active: MoE layer 315,238,400 × 24
#   = 7,565,721,600 + 7,549,992,960 + 2,068,976,640 = 17,184,691,200.
# deepseek-v3.2-exp: DeepSeek-V3's 671,026,419,200 / 37,552,297,472 plus the lightning indexer in each of 61 layers,
#   wq_b 1,536 × 64 × 128 = 12,582,912 + wk 7,168 × 128 = 917,504 + k_norm 2 × 128 = 256 + weights_proj 7,168 × 64
#   = 458,752 → 13,959,424 × 61 = 851,524,864 (every token runs it: active too) → 671,877,944,064 / 38,403,822,336.
# falcon-7b: see test_falcon_7b_counts_exactly_6_921_720_704_parameters.
# llama-2-13b: see test_llama_2_13b_counts_exactly_13_015_864_320_parameters.
EXACT = {
    "llama-3.1-8b": (8_030_261_248, 8_030_261_248, 525_336_576),
    "llama-3.1-70b": (70_553_706_496, 70_553_706_496, 1_050_673_152),
    "llama-3.1-405b": (405_853_388_800, 405_853_388_800, 2_101_346_304),
    "llama-2-7b": (6_738_415_616, 6_738_415_616, 131_072_000),
    "mistral-7b-v0.1": (7_241_732_096, 7_241_732_096, 131_072_000),
    "mixtral-8x7b-v0.1": (46_702_792_704, 12_879_925_248, 131_072_000),
    "qwen2.5-7b": (7_615_616_512, 7_615_616_512, 544_997_376),
    "qwen2.5-72b": (72_706_203_648, 72_706_203_648, 1_245_708_288),
    "deepseek-v2-lite": (15_706_484_224, 2_661_150_208, 209_715_200),
    "deepseek-v2": (235_741_434_880, 21_375_800_320, 524_288_000),
    "deepseek-v3": (671_026_419_200, 37_552_297_472, 926_679_040),
    "gemma-2-9b": (9_241_705_984, 9_241_705_984, 917_504_000),
    "falcon-7b": (6_921_720_704, 6_921_720_704, 295_469_056),
    "llama-2-13b": (13_015_864_320, 13_015_864_320, 163_840_000),
    "qwen3-8b": (8_190_735_360, 8_190_735_360, 622_329_856),
    "qwen3-32b": (32_762_123_264, 32_762_123_264, 777_912_320),
    "qwen3-30b-a3b": (30_532_122_624, 3_353_032_704, 311_164_928),
    "qwen3-235b-a22b": (235_093_634_560, 22_190_763_520, 622_329_856),
    "kimi-k2": (1_026_408_232_448, 32_861_500_928, 1_174_405_120),
    "gpt-oss-120b": (116_829_156_672, 5_711_982_912, 579_133_440),
    "gpt-oss-20b": (20_914_757_184, 4_187_440_704, 579_133_440),
    "llama-4-scout": (107_769_861_120, 17_172_894_720, 1_034_485_760),
    "llama-4-maverick": (400_711_848_960, 17_184_691_200, 1_034_485_760),
    "deepseek-v3.2-exp": (671_877_944_064, 38_403_822_336, 926_679_040),
}


def test_every_catalog_model_has_a_hand_derived_count():
    assert set(default_catalog().models) == set(EXACT)


@pytest.mark.parametrize("model_id", sorted(EXACT))
def test_exact_total_and_active_counts(model_id):
    total, active, embedding_table = EXACT[model_id]
    b = breakdown(model_id)
    assert b.total == total
    assert b.active == active
    assert b.embeddings == embedding_table


def quoted_as(count: int, figure: float, unit: float) -> bool:
    """True when ``count`` rounds or truncates to ``figure`` at the precision ``unit``
    (model cards round, some — Qwen's 7.61B, DeepSeek's 2.4B — truncate)."""
    steps = count / unit
    return round(steps) == round(figure / unit) or int(steps) == round(figure / unit)


# (model id, published total and its precision, from published_params in models.json)
PUBLISHED_TOTAL = [
    ("llama-3.1-8b", 8.03e9, 1e7),      # "8.03B as shown by the Hub"
    ("llama-3.1-70b", 70.6e9, 1e8),     # "70.6B as shown by the Hub"
    ("llama-3.1-405b", 405e9, 1e9),     # "405B (model card)"; 405.85B truncates to 405, the Hub rounds to 406
    ("llama-3.1-405b", 406e9, 1e9),
    ("llama-2-7b", 6.74e9, 1e7),        # "6.74B as shown by the Hub"
    ("mistral-7b-v0.1", 7.24e9, 1e7),   # "7.24B as shown by the Hub"
    ("mixtral-8x7b-v0.1", 46.7e9, 1e8),  # "46.7B"
    ("qwen2.5-7b", 7.61e9, 1e7),        # "7.61B" (7.6156B truncated)
    ("qwen2.5-72b", 72.7e9, 1e8),       # "72.7B"
    ("deepseek-v2-lite", 15.7e9, 1e8),  # "15.7B in the model-card table"
    ("deepseek-v2", 236e9, 1e9),        # "236B"
    ("deepseek-v3", 671e9, 1e9),        # "671B main model"
    ("gemma-2-9b", 9.24e9, 1e7),        # "9.24B as shown by the Hub"
    ("falcon-7b", 7e9, 1e9),            # "7B (model card)"
    ("llama-2-13b", 13e9, 1e9),         # "13B (model card)"
    ("qwen3-8b", 8.2e9, 1e8),           # "8.2B" (model card)
    ("qwen3-32b", 32.8e9, 1e8),         # "32.8B"
    ("qwen3-30b-a3b", 30.5e9, 1e8),     # "30.5B"
    ("qwen3-235b-a22b", 235e9, 1e9),    # "235B"
    ("kimi-k2", 1e12, 1e11),            # "1T total parameters" (model card)
    ("gpt-oss-120b", 116.83e9, 1e7),    # "116.83B" (model card)
    ("gpt-oss-20b", 20.91e9, 1e7),      # "20.91B"
    ("deepseek-v3.2-exp", 671e9, 1e9),  # "671B main model" (671.88B truncated)
    ("llama-4-maverick", 400e9, 1e9),   # "400B" (Scout's "109B" counts its vision encoder: see models_2026)
]


@pytest.mark.parametrize("model_id, figure, unit", PUBLISHED_TOTAL)
def test_total_matches_the_published_figure_within_its_rounding(model_id, figure, unit):
    total = breakdown(model_id).total
    assert quoted_as(total, figure, unit), f"{model_id}: {total:,} is not quoted as {figure:g}"


def test_mixtral_active_matches_the_published_12_9b():
    # 12,879,925,248 → 12.9B (the announcement counts the embedding table too).
    assert quoted_as(breakdown("mixtral-8x7b-v0.1").active, 12.9e9, 1e8)


@pytest.mark.parametrize(
    "model_id, figure, unit",
    [
        # 2,661,150,208 − 209,715,200 = 2,451,435,008 → quoted as 2.4B.
        ("deepseek-v2-lite", 2.4e9, 1e8),
        # 21,375,800,320 − 524,288,000 = 20,851,512,320 → 21B.
        ("deepseek-v2", 21e9, 1e9),
        # 37,552,297,472 − 926,679,040 = 36,625,618,432 → 37B (36.6B in README_WEIGHTS).
        ("deepseek-v3", 37e9, 1e9),
        ("deepseek-v3", 36.6e9, 1e8),
    ],
)
def test_deepseek_active_without_the_input_embedding_matches_its_published_figure(model_id, figure, unit):
    b = breakdown(model_id)
    assert quoted_as(b.active - b.embeddings, figure, unit)


def test_qwen2_5_7b_non_embedding_count_matches_the_published_6_53b():
    b = breakdown("qwen2.5-7b")
    # 7,615,616,512 − 2 × 544,997,376 = 6,525,621,760 → 6.53B.
    assert b.total - b.embeddings - b.lm_head == 6_525_621_760


# --- components that distinguish the architectures -------------------------------------------------

def test_falcon_7b_counts_exactly_6_921_720_704_parameters():
    cfg = default_catalog().model("falcon-7b").config
    b = param_breakdown(cfg)
    # Fused query_key_value 4,544 → 4,544 + 2 × 64 = 4,672: 4,544 × 4,672 = 21,229,568;
    # dense 4,544 × 4,544 = 20,647,936; no biases (bias: false) → 41,877,504 per layer.
    assert attention_params_per_layer(cfg) == 41_877_504
    # 4× MLP without a gate: 2 × 4,544 × 18,176 = 165,183,488.
    assert mlp_params(cfg, 18_176) == 165_183_488
    # One LayerNorm (weight + bias) per layer, plus ln_f: 33 × 2 × 4,544 = 299,904.
    assert b.norms == 299_904
    # Tied head: only the 65,024 × 4,544 = 295,469,056 embedding table.
    assert b.embeddings == 295_469_056 and b.lm_head == 0
    # 32 × (41,877,504 + 165,183,488) + 299,904 + 295,469,056 = 6,921,720,704.
    assert b.total == 6_921_720_704


def test_gemma_2_attention_uses_head_dim_256_not_224():
    cfg = default_catalog().model("gemma-2-9b").config
    # q 3,584 × 4,096 + k, v 3,584 × 2,048 each + o 4,096 × 3,584 = 44,040,192
    # (with 224-wide heads it would be 38,535,168).
    assert attention_params_per_layer(cfg) == 44_040_192
    b = param_breakdown(cfg)
    assert b.norms == 42 * 4 * 3_584 + 3_584  # four RMSNorms per layer + final = 605,696
    assert b.lm_head == 0  # tied


def test_qwen2_5_attention_includes_q_k_v_biases():
    cfg = default_catalog().model("qwen2.5-7b").config
    # 2 × 3,584² + 2 × 3,584 × 512 = 29,360,128 weights + 3,584 + 512 + 512 = 4,608 biases.
    assert attention_params_per_layer(cfg) == 29_364_736


def test_deepseek_v3_attention_and_router_bias():
    cfg = default_catalog().model("deepseek-v3").config
    assert attention_params_per_layer(cfg) == 187_107_328  # see EXACT's derivation
    b = param_breakdown(cfg)
    # 58 MoE layers × (256 × 7,168 router weights + 256 correction biases) = 106,445,312.
    assert b.routers == 106_445_312
    # Dense MLPs of the first 3 layers: 3 × 3 × 7,168 × 18,432 = 1,189,085,184.
    assert b.mlp_dense == 1_189_085_184


def test_deepseek_v2_lite_projects_queries_directly():
    cfg = default_catalog().model("deepseek-v2-lite").config
    # No q_lora: q_proj 6,291,456 + kv_a 1,179,648 + 512 + kv_b 2,097,152 + o 4,194,304 = 13,763,072.
    assert attention_params_per_layer(cfg) == 13_763_072


def test_mixtral_experts_and_routers():
    b = breakdown("mixtral-8x7b-v0.1")
    assert b.mlp_experts_total == 32 * 8 * 176_160_768  # 45,097,156,608
    assert b.mlp_experts_active == 32 * 2 * 176_160_768  # 11,274,289,152
    assert b.routers == 32 * 8 * 4_096  # 1,048,576
    assert b.mlp_dense == 0


def test_falcon_with_biases_and_serial_blocks_counts_every_bias_and_both_norms():
    # A small RW-style config: d 64, 4 heads of 16, no multi-query, biases on, serial (2 LayerNorms).
    cfg = parse_config({"architectures": ["RWForCausalLM"], "n_layer": 2, "n_head": 4, "hidden_size": 64,
                        "vocab_size": 100, "multi_query": False, "parallel_attn": False, "bias": True})
    # Fused qkv 64 × 192 + 192 bias = 12,480; dense 64 × 64 + 64 = 4,160 → 16,640.
    assert attention_params_per_layer(cfg) == 16_640
    # MLP 64 → 256 → 64: 2 × 64 × 256 + 256 + 64 = 33,088.
    assert mlp_params(cfg, 256) == 33_088
    # Per layer 16,640 + 33,088 + 2 LayerNorms × 128 = 49,984; × 2 = 99,968;
    # + tied embedding 100 × 64 = 6,400 + ln_f 128 = 106,496.
    assert param_breakdown(cfg).total == 106_496


def test_qwen3_per_head_q_and_k_norms_are_counted():
    cfg = parse_config({"model_type": "qwen3", "num_hidden_layers": 2, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32, "hidden_size": 64, "intermediate_size": 128,
                        "vocab_size": 100, "tie_word_embeddings": True})
    # q 64 × 128 = 8,192; k, v 64 × 64 = 4,096 each; o 128 × 64 = 8,192; q_norm + k_norm 2 × 32 = 64.
    assert attention_params_per_layer(cfg) == 24_640
    # Per layer 24,640 + MLP 3 × 64 × 128 = 24,576 + norms 128 = 49,344; × 2 = 98,688
    # + embedding 6,400 (tied) + final norm 64 = 105,152.
    assert param_breakdown(cfg).total == 105_152


def test_gemma_3_1b_counts_its_q_and_k_norms():
    cfg = parse_config({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
                        "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4,
                        "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144, "sliding_window": 512,
                        "sliding_window_pattern": 6})
    # q 1,152 × 1,024 = 1,179,648; k, v 1,152 × 256 = 294,912 each; o 1,024 × 1,152 = 1,179,648;
    # q_norm + k_norm 2 × 256 = 512 → 2,949,632.
    assert attention_params_per_layer(cfg) == 2_949_632
    # Per layer 2,949,632 + MLP 3 × 1,152 × 6,912 = 23,887,872 + 4 norms × 1,152 = 4,608 → 26,842,112;
    # × 26 = 697,894,912 + tied embedding 262,144 × 1,152 = 301,989,888 + final norm 1,152 = 999,885,952.
    assert param_breakdown(cfg).total == 999_885_952


def test_qwen1_5_moe_a2_7b_counts_its_shared_expert():
    # Qwen1.5-MoE-A2.7B's config.json (published as 14.3B total, 2.7B activated).
    cfg = parse_config({"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
                        "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
                        "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
                        "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
                        "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1,
                        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 32768,
                        "max_window_layers": 21})
    b = param_breakdown(cfg)
    # Per layer: attention 4 × 2,048² + q/k/v biases 3 × 2,048 = 16,783,360; 60 experts × 3 × 2,048 × 1,408
    # = 519,045,120; shared expert 3 × 2,048 × 5,632 = 34,603,008 + its gate 2,048; router 60 × 2,048
    # = 122,880; norms 4,096 → 570,560,512 × 24 = 13,693,452,288; + embeddings 2 × 151,936 × 2,048
    # = 622,329,856 + final norm 2,048 = 14,315,784,192.
    assert b.total == 14_315_784_192
    # Active: 4 experts 34,603,008 + shared 34,603,008 + gate 2,048 + router 122,880 + attention 16,783,360
    # + norms 4,096 = 86,118,400 × 24 = 2,066,841,600 + 622,329,856 + 2,048 = 2,689,173,504.
    assert b.active == 2_689_173_504


def test_query_and_key_norms_over_the_whole_projection_are_counted():
    """Issue 29 item 7: OLMo 2's q_norm spans heads × head_dim and its k_norm kv_heads × head_dim (not one head's
    width, as Qwen3's). OLMo-2-1124-7B: embeddings 2 × 100,352 × 4,096 = 822,083,584 (untied); per layer attention
    4 × 4,096² = 67,108,864, MLP 3 × 4,096 × 11,008 = 135,266,304, two norms 8,192, q_norm + k_norm 4,096 + 4,096;
    × 32 layers + the final norm 4,096 = 7,298,617,344 parameters."""
    olmo2 = {"model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
             "num_key_value_heads": 32, "num_hidden_layers": 32, "vocab_size": 100352,
             "tie_word_embeddings": False, "max_position_embeddings": 4096}
    assert param_breakdown(parse_config(olmo2)).total == 7_298_617_344
    # The same shapes with Qwen3's per-head norms: 2 × 128 per layer instead of 8,192.
    assert param_breakdown(parse_config({**olmo2, "model_type": "qwen3", "head_dim": 128})).total == (
        7_298_617_344 - 32 * (8192 - 256))
    # Cohere's per-head LayerNorms, (heads, head_dim) each, when use_qk_norm is set; none otherwise.
    cohere = {**olmo2, "model_type": "cohere", "tie_word_embeddings": True}
    assert param_breakdown(parse_config({**cohere, "use_qk_norm": True})).total - param_breakdown(
        parse_config(cohere)).total == 32 * 8192

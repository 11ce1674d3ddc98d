"""The 2026 cards and the 4-bit block formats (issue 17 items 4–5): values from the catalog's sources,
derived by hand where the engine computes with them."""

import pytest

from calculators.engine.catalog import DEFAULT_WEIGHT_BITS, default_catalog, weight_bits
from calculators.engine.errors import InputError
from calculators.engine.step_model import Replica, compute_precision, step_ms, tp_link
from calculators.families import FAMILIES

CATALOG = default_catalog()


@pytest.mark.parametrize("gpu_id, mib, bandwidth, fp4, domain", [
    ("b300", 275_040, 7750, 14_000, 8),          # aiconfigurator b300_sxm.yaml
    ("gb200-nvl72", 189_471, 8000, 10_000, 72),  # aiconfigurator gb200.yaml
    ("gb300-nvl72", 284_208, 8000, 15_000, 72),  # aiconfigurator gb300.yaml
])
def test_blackwell_cards_carry_their_driver_totals_and_links(gpu_id, mib, bandwidth, fp4, domain):
    gpu = CATALOG.gpu(gpu_id)
    assert gpu.memory_from_driver and gpu.memory_mib == mib
    assert gpu.bandwidth_gb_s == bandwidth and gpu.dense_tflops["fp4"] == fp4
    assert gpu.nvlink_domain_gpus == domain and gpu.nvlink_gb_s_per_direction == 900
    assert any(source.get("repo") == "ai-dynamo/aiconfigurator" for source in gpu.source)


def test_an_nvl72_rack_keeps_sixteen_cards_on_nvlink_where_an_hgx_node_crosses_the_network():
    assert tp_link(CATALOG.gpu("gb200-nvl72"), 16) == (900.0, "NVLink")
    assert tp_link(CATALOG.gpu("b300"), 16) == (100.0, "scale-out network")
    # Llama-3.1-70B bf16, batch 32, 4,096 tokens each: 160 all-reduces of 32 × 8,192 × 2 B.
    nvl = step_ms(Replica.from_catalog("llama-3.1-70b", "gb200-nvl72", 16), decode_batch=32,
                  decode_context_tokens=32 * 4096)
    assert nvl.comm_ms == pytest.approx(160 * (2 * 15 / 16 * 32 * 8192 * 2 / 900e9 * 1e3 + 0.010), rel=1e-12)
    hgx = step_ms(Replica.from_catalog("llama-3.1-70b", "b300", 16), decode_batch=32,
                  decode_context_tokens=32 * 4096)
    assert hgx.comm_ms == pytest.approx(160 * (2 * 15 / 16 * 32 * 8192 * 2 / 100e9 * 1e3 + 0.010), rel=1e-12)


def test_unsourced_figures_are_said_and_refused_not_guessed():
    mi355x, tpu = CATALOG.gpu("mi355x"), CATALOG.gpu("tpu-v5e")
    assert not mi355x.memory_from_driver and mi355x.memory_bytes == 288 * 10**9
    assert "no driver-reported total" in mi355x.memory_note
    # Rubin CPX is quoted only at fp4 (below): bf16 compute on it is still refused, never guessed.
    assert "bf16" not in CATALOG.gpu("rubin-cpx").dense_tflops
    with pytest.raises(InputError, match="no dense bf16 throughput"):
        FAMILIES["decode"].run({"gpu": "rubin-cpx"})
    # The ladder needs no compute figure: 288e9 B = 268.22 GiB × 0.9 − 14.96 − 3 = 223.44 GiB → 223 users.
    assert FAMILIES["ladder"].run({"gpu": "mi355x"}).values["users_worst_case"] == 223
    assert tpu.memory_bytes == 16 * 10**9 and tpu.bandwidth_gb_s == 819 and tpu.dense_tflops["bf16"] == 197


def test_tpu_v5e_decodes_the_8b_at_its_published_bandwidth():
    # 16,060,522,496 B of bf16 weights do not fit 16 GB; the ceiling is still 819e9 ÷ that = 51.0 tok/s.
    result = FAMILIES["decode"].run({"gpu": "tpu-v5e"})
    assert result.values["ceiling_tok_s"] == pytest.approx(819e9 / 16_060_522_496, rel=1e-12)
    assert "do not fit" in result.notes[0]


def test_block_formats_are_charged_their_effective_width_and_compute_in_fp4_where_listed():
    assert DEFAULT_WEIGHT_BITS["nvfp4"] == 4.5 and DEFAULT_WEIGHT_BITS["mxfp4"] == 4.25
    assert weight_bits("mxfp4") == 4.25
    # Llama-3.1-8B: 8,030,261,248 × 4.5 ÷ 8 = 4,517,021,952 B; × 4.25 ÷ 8 = 4,266,076,288 B.
    assert FAMILIES["weights"].run({"weights_dtype": "nvfp4"}).values["weight_bytes"] == 4_517_021_952
    assert FAMILIES["weights"].run({"weights_dtype": "mxfp4"}).values["weight_bytes"] == 4_266_076_288
    assert compute_precision("nvfp4", CATALOG.gpu("gb300-nvl72")) == "fp4"
    assert compute_precision("mxfp4", CATALOG.gpu("a100-sxm4-80gb")) == "bf16"
    step = FAMILIES["decode"].run({"gpu": "b300", "weights_dtype": "nvfp4", "batch": 64, "context": 2048}).values
    flops = 64 * 2 * 8_030_261_248 + 4 * 32 * 32 * 128 * 2048 * 64
    assert step["compute_ms"] == pytest.approx(flops / (14_000e12 * 0.5) * 1e3, rel=1e-12)
    # The nominal 4 bits is the named mistake.
    from calculators.engine.grader import grade

    result = FAMILIES["weights"].run({"weights_dtype": "nvfp4", "model": "llama-3.1-70b"})
    graded = {s.key: s for s in grade(result, {"weight_bytes": str(70_553_706_496 * 4 // 8)}).steps}
    assert graded["weight_bytes"].misconception == "nominal-4bit"


def test_mi355x_computes_bf16_at_amds_dense_datasheet_figure():
    # AMD's datasheet: 2.5 PFLOP/s dense FP16/BF16 (5.0 with sparsity) = 256 CUs × 4,096 FLOP/clock/CU × 2.4 GHz
    # = 2,516,582,400,000,000 FLOP/s = 2,516.6 TFLOP/s, half the fp8 rate.
    gpu = CATALOG.gpu("mi355x")
    assert gpu.dense_tflops["bf16"] == gpu.dense_tflops["fp16"] == 2516.6 == round(256 * 4096 * 2.4e9 / 1e11) / 10
    assert gpu.sparse_tflops["bf16"] == 2 * gpu.dense_tflops["bf16"]
    assert any("amd.com" in source.get("url", "") for source in gpu.source)
    # The reference model at bf16 (the pages' default) on one MI355X, batch 64 × 2,048 tokens: the compute term is
    # (64 × 2 × 8,030,261,248 + 4 × 32 layers × 32 heads × 128 × 2,048 × 64) = 1,027,873,439,744 + 68,719,476,736
    # FLOPs ÷ (2,516.6 TFLOP/s × MFU 0.5) = 0.8715 ms; no longer refused.
    step = FAMILIES["decode"].run({"gpu": "mi355x", "batch": 64, "context": 2048}).values
    flops = 64 * 2 * 8_030_261_248 + 4 * 32 * 32 * 128 * 2048 * 64
    assert step["compute_ms"] == pytest.approx(flops / (2516.6e12 * 0.5) * 1e3, rel=1e-12)


def test_mi355x_computes_in_fp8_at_its_dense_figure():
    # 256 CUs × 8,192 FP8 FLOP/clock/CU × 2.4 GHz = 5,033,164,800,000,000 FLOP/s ≈ 5,033 dense TFLOP/s;
    # AMD's printed 10.1 PFLOP/s is the structured-sparsity figure (twice dense).
    gpu = CATALOG.gpu("mi355x")
    assert gpu.dense_tflops["fp8"] == 5033 == round(256 * 8192 * 2.4e9 / 1e12)
    assert gpu.sparse_tflops["fp8"] == 2 * gpu.dense_tflops["fp8"]
    assert gpu.dense_tflops["fp4"] == 10_066 and gpu.dense_tflops["int8"] == 5000
    # Llama-3.1-8B in fp8 at batch 64, 2,048 tokens each: the compute term is read at 5,033 TFLOP/s × MFU 0.5.
    step = FAMILIES["decode"].run({"gpu": "mi355x", "weights_dtype": "fp8", "batch": 64, "context": 2048}).values
    flops = 64 * 2 * 8_030_261_248 + 4 * 32 * 32 * 128 * 2048 * 64
    assert step["compute_ms"] == pytest.approx(flops / (5033e12 * 0.5) * 1e3, rel=1e-12)


@pytest.mark.parametrize("gpu_id, memory_bytes, bandwidth, dense, domain", [
    # Marketed capacities read as decimal GB (no driver capture exists): 288 GB, 128 GB, 432 GB.
    ("rubin-nvl72", 288 * 10**9, 22_000, {"fp4": 35_000}, 72),
    ("rubin-cpx", 128 * 10**9, 2_000, {"fp4": 20_000}, 1),
    ("mi455x", 432 * 10**9, 19_600, {"fp8": 20_000, "fp4": 40_000}, 72),
])
def test_announced_cards_are_preliminary_with_their_sources(gpu_id, memory_bytes, bandwidth, dense, domain):
    gpu = CATALOG.gpu(gpu_id)
    assert gpu.entry["preliminary"] is True and len(gpu.source) >= 3
    assert not gpu.memory_from_driver and gpu.memory_bytes == memory_bytes
    assert gpu.bandwidth_gb_s == bandwidth and gpu.dense_tflops == dense
    assert gpu.nvlink_domain_gpus == domain


def test_rubin_nvl72_keeps_72_cards_on_nvlink_and_cpx_has_none():
    # NVLink 6: 3.6 TB/s per GPU both ways = 1,800 GB/s per direction, across the 72-GPU rack.
    assert tp_link(CATALOG.gpu("rubin-nvl72"), 64) == (1800.0, "NVLink")
    assert CATALOG.gpu("rubin-cpx").nvlink_gb_s is None
    # Rubin CPX prints 30 PFLOP/s NVFP4 at a 3:2 sparse-to-dense ratio, not 2:1.
    assert CATALOG.gpu("rubin-cpx").sparse_tflops["fp4"] == 30_000


def test_rubin_decodes_nvfp4_weights_at_its_fp4_figure():
    # Llama-3.1-8B nvfp4, batch 64 × 2,048 tokens: compute at 35,000 TFLOP/s × MFU 0.5.
    step = FAMILIES["decode"].run({"gpu": "rubin-nvl72", "weights_dtype": "nvfp4", "batch": 64,
                                   "context": 2048}).values
    flops = 64 * 2 * 8_030_261_248 + 4 * 32 * 32 * 128 * 2048 * 64
    assert step["compute_ms"] == pytest.approx(flops / (35_000e12 * 0.5) * 1e3, rel=1e-12)


def test_chapter_04_compares_every_card_of_the_catalog():
    from pathlib import Path

    chapter = next((Path(__file__).resolve().parents[2] / "fixtures" / "runbook").glob("04-*.md")).read_text()
    table = chapter.split("## Comparing cards", 1)[1].split("\n\n")[2]
    assert [gpu_id for gpu_id in CATALOG.gpus if f"{{{{gpu {gpu_id}.name}}}}" not in table] == []


@pytest.mark.parametrize("model_id, kv_bytes, active", [
    # layers × KV heads × head_dim 128 × 2 (K, V) × 2 bytes (bf16):
    ("qwen3-8b", 36 * 8 * 128 * 2 * 2, 8_190_735_360),           # 147,456 B/token
    ("qwen3-32b", 64 * 8 * 128 * 2 * 2, 32_762_123_264),         # 262,144 B/token
    ("qwen3-30b-a3b", 48 * 4 * 128 * 2 * 2, 3_353_032_704),      # 98,304 B/token
    ("qwen3-235b-a22b", 94 * 4 * 128 * 2 * 2, 22_190_763_520),   # 192,512 B/token
])
def test_qwen3_cache_and_weights_at_each_precision(model_id, kv_bytes, active):
    model = CATALOG.model(model_id)
    assert model.config.qk_norm and not model.config.qkv_bias
    assert FAMILIES["kv"].run({"model": model_id}).values["kv_bytes_per_token"] == kv_bytes
    assert FAMILIES["kv"].run({"model": model_id, "kv_dtype": "fp8"}).values["kv_bytes_per_token"] == kv_bytes / 2
    total = {"qwen3-8b": 8_190_735_360, "qwen3-32b": 32_762_123_264, "qwen3-30b-a3b": 30_532_122_624,
             "qwen3-235b-a22b": 235_093_634_560}[model_id]
    # Weights: total × 2 B (bf16), × 1 B (fp8), × 4.25 ÷ 8 B (mxfp4's effective width).
    for dtype, bytes_each in (("bf16", 2), ("fp8", 1), ("mxfp4", 4.25 / 8)):
        result = FAMILIES["weights"].run({"model": model_id, "weights_dtype": dtype}).values
        assert result["weight_bytes"] == total * bytes_each
    assert any(source.get("repo") == "citsjtu2020/LLM-Prof" or "huggingface.co/Qwen" in source.get("url", "")
               for source in model.source)
    assert model.config.is_moe == (active != total)



def test_mi355x_rings_over_its_infinity_fabric_inside_its_eight_card_platform():
    # Seven 153.6 GB/s peer links (both directions) per card: 7 × 153.6 ÷ 2 = 537.6 GB/s per direction, summed over
    # the links a fully connected 8-card all-reduce uses (read as the MI300X's 7 × 128 ÷ 2 = 448); PCIe Gen5 x16.
    gpu = CATALOG.gpu("mi355x")
    assert (gpu.nvlink_domain_gpus, gpu.nvlink_gb_s_per_direction, gpu.pcie_gb_s_per_direction) == (8, 537.6, 64.0)
    assert gpu.nvlink_gb_s_per_direction == 7 * 153.6 / 2
    assert tp_link(gpu, 8) == (537.6, "NVLink")  # the link kind the engine names for a card's scale-up fabric
    assert gpu.scale_out_gb_s is None and tp_link(gpu, 16) == (None, "scale-out network")
    # Llama-3.1-70B bf16 on 8 × MI355X, batch 32: 2 × 80 layers = 160 all-reduces of 32 × 8,192 × 2 B, each
    # 2 × 7/8 × 524,288 B ÷ 537.6 GB/s + 10 µs = 0.001707 + 0.010 ms → 1.8731 ms per step (was refused).
    decode = FAMILIES["decode"].run({"model": "llama-3.1-70b", "gpu": "mi355x", "gpus": 8, "batch": 32,
                                     "context": 4096}).values
    assert decode["comm_ms"] == pytest.approx(160 * (2 * 7 / 8 * 32 * 8192 * 2 / 537.6e9 * 1e3 + 0.010), rel=1e-12)
    # DeepSeek-V3 in fp8 (625 GiB of weights) fits four 268.22 GiB cards, no longer one card or a refusal.
    assert FAMILIES["tp"].run({"model": "deepseek-v3", "gpu": "mi355x", "weights_dtype": "fp8"}).values[
        "tp_degree"] == 4

"""The 2026 cards and the 4-bit block formats (issue 17 items 4–5): values from the catalog's sources,
derived by hand where the engine computes with them."""

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.dtypes import DEFAULT_WEIGHT_BITS, weight_bits
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
    assert mi355x.dense_tflops == {}
    assert "dense" in mi355x.entry["tflops_note"]
    with pytest.raises(InputError, match="no dense bf16 throughput"):
        FAMILIES["decode"].run({"gpu": "mi355x"})
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

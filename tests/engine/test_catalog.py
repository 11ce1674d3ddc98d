"""The catalog of models and GPUs (fixtures/catalog, docs/architecture.md §2 and §10)."""

import json
from pathlib import Path

import pytest

from calculators.engine.catalog import default_catalog, gpu_from_entry, load_catalog
from calculators.engine.errors import CatalogError, EngineError

CATALOG_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"
MODEL_ENTRIES = json.loads((CATALOG_DIR / "models.json").read_text())
GPU_ENTRIES = json.loads((CATALOG_DIR / "gpus.json").read_text())


def test_catalog_holds_every_fixture_entry_by_id_in_file_order():
    catalog = default_catalog()
    assert list(catalog.models) == [entry["id"] for entry in MODEL_ENTRIES]
    assert list(catalog.gpus) == [entry["id"] for entry in GPU_ENTRIES]


def test_h100_sxm_memory_is_the_driver_reported_81_559_mib():
    gpu = default_catalog().gpu("h100-sxm5-80gb")
    # nvidia-smi: 81,559 MiB = 81,559 × 1,048,576 = 85,520,809,984 bytes (also in gpus.json).
    assert gpu.memory_bytes == 85_520_809_984
    assert gpu.memory_from_driver is True
    assert gpu.memory_mib == 81_559
    assert gpu.memory_gib == 81_559 / 1024  # 79.6474609375 GiB
    assert "81,559 MiB" in gpu.memory_note and "80 GB" in gpu.memory_note


def test_h100_pcie_memory_is_the_driver_reported_81_559_mib_too():
    gpu = default_catalog().gpu("h100-pcie-80gb")
    # nvidia-smi on "NVIDIA H100 PCIe" (350 W cap): 81,559 MiB, as the SXM part (errata h100-pcie-driver-total);
    # it was read as the marketed 80 × 10^9 bytes = 74.51 GiB before a capture was on record.
    assert gpu.memory_bytes == 85_520_809_984
    assert gpu.memory_from_driver is True
    assert gpu.memory_gib == 81_559 / 1024  # 79.6474609375 GiB
    assert gpu.memory_note == "H100 PCIe 80GB: 81,559 MiB as the driver reports it (marketed as 80 GB HBM2e)."
    assert any(source.get("repo") == "Beomi/BitNet-Transformers" for source in gpu.source)


def test_mi300x_memory_comes_from_rocm_smi():
    gpu = default_catalog().gpu("mi300x")
    # rocm-smi: 196,592 MiB = 206,141,652,992 bytes = 191.984375 GiB.
    assert gpu.memory_bytes == 206_141_652_992
    assert gpu.memory_from_driver is True
    assert gpu.memory_gib == 191.984375


def test_a100_80gb_reports_exactly_80_gib():
    # 81,920 MiB / 1,024 = 80.0 GiB (this card's total is a round binary figure).
    assert default_catalog().gpu("a100-sxm4-80gb").memory_gib == 80.0


def test_throughput_is_dense_and_the_sparsity_figure_is_kept_apart():
    h100 = default_catalog().gpu("h100-sxm5-80gb")
    # Datasheet headline 1,979 TFLOPS* is with 2:4 sparsity; dense bf16 is 989.4.
    assert h100.dense_tflops["bf16"] == 989.4
    assert h100.sparse_tflops["bf16"] == 1978.9
    assert h100.dense_tflops["fp8"] == 1978.9
    assert h100.dense_tflops["int8"] == 1978.9  # int8_tops.dense
    assert h100.bandwidth_gb_s == 3350.0
    assert h100.nvlink_gb_s == 900.0
    a100 = default_catalog().gpu("a100-sxm4-80gb")
    assert a100.dense_tflops["fp8"] is None  # no FP8 tensor cores on Ampere
    assert default_catalog().gpu("l4").nvlink_gb_s is None


def test_unknown_model_lists_the_known_ids():
    with pytest.raises(CatalogError) as info:
        default_catalog().model("llama-4-9000b")
    message = str(info.value)
    assert "llama-4-9000b" in message
    assert "llama-3.1-8b" in message and "falcon-7b" in message
    assert isinstance(info.value, EngineError)


def test_unknown_gpu_lists_the_known_ids():
    with pytest.raises(CatalogError) as info:
        default_catalog().gpu("h300")
    assert "h300" in str(info.value) and "h100-sxm5-80gb" in str(info.value)


def test_deepseek_v2_is_built_from_its_inference_format():
    model = default_catalog().model("deepseek-v2")
    assert model.config.hidden_size == 5120  # dim
    assert model.config.layers == 60  # n_layers
    assert model.raw_config == next(e for e in MODEL_ENTRIES if e["id"] == "deepseek-v2")["config_inference_format"]


def test_model_keeps_its_published_params_and_sources():
    model = default_catalog().model("mixtral-8x7b-v0.1")
    assert model.published_params["total"] == "46.7B"
    assert model.published_params["active_per_token"] == "12.9B"
    assert model.source  # every entry says where its config came from
    assert model.family == "mixtral"


def test_choices_for_select_boxes():
    catalog = default_catalog()
    assert ("llama-3.1-8b", "llama-3.1-8b · GQA") in catalog.model_choices
    assert ("h100-sxm5-80gb", "H100 SXM5 80GB") in catalog.gpu_choices
    assert len(catalog.model_choices) == len(MODEL_ENTRIES)


# --- loading from a directory ------------------------------------------------------------

def write_catalog(directory: Path, models, gpus) -> Path:
    (directory / "models.json").write_text(json.dumps(models))
    (directory / "gpus.json").write_text(json.dumps(gpus))
    return directory


def test_load_catalog_reads_another_directory(tmp_path):
    llama = next(e for e in MODEL_ENTRIES if e["id"] == "llama-3.1-8b")
    h100 = next(e for e in GPU_ENTRIES if e["id"] == "h100-sxm5-80gb")
    catalog = load_catalog(write_catalog(tmp_path, [llama], [h100]))
    assert list(catalog.models) == ["llama-3.1-8b"]
    assert catalog.gpu("h100-sxm5-80gb").memory_mib == 81_559


def test_missing_catalog_file_is_a_catalog_error(tmp_path):
    (tmp_path / "models.json").write_text("[]")
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_unparseable_catalog_file_is_a_catalog_error(tmp_path):
    (tmp_path / "models.json").write_text("[{")
    (tmp_path / "gpus.json").write_text("[]")
    with pytest.raises(CatalogError):
        load_catalog(tmp_path)


def test_model_entry_without_a_config_is_a_catalog_error(tmp_path):
    with pytest.raises(CatalogError) as info:
        load_catalog(write_catalog(tmp_path, [{"id": "mystery-1b"}], []))
    assert "mystery-1b" in str(info.value)


def test_model_entry_with_a_broken_config_names_the_model_and_the_field(tmp_path):
    entry = json.loads(json.dumps(next(e for e in MODEL_ENTRIES if e["id"] == "llama-3.1-8b")))
    entry["id"] = "broken-8b"
    del entry["config"]["num_hidden_layers"]
    with pytest.raises(CatalogError) as info:
        load_catalog(write_catalog(tmp_path, [entry], []))
    assert "broken-8b" in str(info.value) and "num_hidden_layers" in str(info.value)


def test_gpu_with_neither_driver_figure_nor_readable_marketed_capacity_is_a_catalog_error():
    entry = {"id": "mystery", "name": "Mystery", "memory": {"marketed": "lots of HBM"},
             "memory_bandwidth_GBps": 1000}
    with pytest.raises(CatalogError) as info:
        gpu_from_entry(entry)
    assert "lots of HBM" in str(info.value)


def test_gpu_with_only_a_byte_count_uses_it():
    entry = {"id": "x", "name": "X", "memory": {"marketed": "16 GB", "nvidia_smi_total_bytes": 17_179_869_184},
             "memory_bandwidth_GBps": 900}
    gpu = gpu_from_entry(entry)
    assert gpu.memory_gib == 16.0 and gpu.memory_from_driver  # 17,179,869,184 = 16 × 2^30

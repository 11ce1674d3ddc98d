"""The catalog of real models and GPUs the calculators and problems draw from, and the number formats.

Data lives in ``fixtures/catalog/models.json`` and ``gpus.json`` (copied from
``shared/reference/``; every entry keeps its ``source`` list and its ``id``).
The directory is passed in, so the engine reads no Django settings;
:func:`default_catalog` uses the repository's ``fixtures/catalog``.

*Number formats* for weights and the KV cache: widths are bits per stored value. ``int4`` weights are
charged an *effective* width (default 4.5 bits): a 4-bit format also stores a scale (and often a
zero-point) per block of 32–64 weights and keeps sensitive tensors wider
(the runbook's errata: Q4_K_M works out near 4.8 bits). The nominal width is
kept so the grader can recognise the ``nominal-4bit`` misconception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from .errors import CatalogError, ConfigError, InputError
from .hf_config import ModelConfig, mlp_matrix_params, mlp_params, parse_config

DEFAULT_CATALOG_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"

MIB = 2**20
GIB = 2**30
GB = 10**9


@dataclass(frozen=True)
class Gpu:
    """One accelerator's datasheet facts.

    ``memory_bytes`` is the device total the driver reports (``nvidia-smi`` or
    ``rocm-smi``), or, where no trustworthy capture exists, the marketed
    capacity read as decimal GB; ``memory_from_driver`` says which, so the
    output can say so. Bandwidth in GB/s (10^9 bytes/s); throughput in dense
    TFLOP/s per precision (never the 2:4-sparsity figure, which is kept apart in
    ``sparse_tflops`` only so the "sparsity trap" can be taught).
    """

    id: str
    name: str
    vendor: str
    memory_bytes: int
    memory_from_driver: bool
    memory_marketed: str
    bandwidth_gb_s: float
    dense_tflops: dict = field(hash=False)
    sparse_tflops: dict = field(hash=False)
    nvlink_gb_s: float | None
    tdp_w: float | None
    source: tuple = field(hash=False, default=())
    entry: dict = field(hash=False, default_factory=dict, repr=False)
    # Links per card, per direction, GB/s (docs/architecture.md §12): NVLink inside the NVLink
    # domain (``nvlink_domain_gpus`` cards: 8 on HGX, 72 on NVL72, 2 for bridged
    # PCIe pairs, 1 without NVLink), PCIe, and the scale-out network across domains.
    nvlink_domain_gpus: int = 1
    nvlink_gb_s_per_direction: float | None = None
    pcie_gb_s_per_direction: float | None = None
    scale_out_gb_s: float | None = None

    @property
    def memory_gib(self) -> float:
        """Device memory in GiB (2^30 bytes)."""
        return self.memory_bytes / GIB

    @property
    def marketed_gb(self) -> float:
        """The marketed capacity as a number of GB ("80 GB HBM3" → 80)."""
        return _marketed_gb(self.memory_marketed)

    @property
    def memory_mib(self) -> float:
        """Device memory in MiB (2^20 bytes), as ``nvidia-smi`` prints it."""
        return self.memory_bytes / MIB

    @property
    def memory_note(self) -> str:
        """One sentence saying which memory figure is used and why."""
        if self.memory_from_driver:
            return (f"{self.name}: {self.memory_mib:,.0f} MiB as the driver reports it "
                    f"(marketed as {self.memory_marketed}).")
        return (f"{self.name}: no driver-reported total is on record, so the marketed "
                f"{self.memory_marketed} is read as decimal GB.")


@dataclass(frozen=True)
class CatalogModel:
    """A model of the catalog: its id, where its config came from, and the parsed config."""

    id: str
    name: str
    family: str
    attention: str
    config: ModelConfig
    raw_config: dict = field(hash=False)
    published_params: dict = field(hash=False)
    notes: str = ""
    source: tuple = field(hash=False, default=())
    entry: dict = field(hash=False, default_factory=dict, repr=False)


@dataclass(frozen=True)
class Catalog:
    """Models and GPUs by id. Lookups raise :class:`CatalogError` listing the known ids."""

    models: dict
    gpus: dict

    def model(self, model_id: str) -> CatalogModel:
        """Return the model with this id; raise :class:`CatalogError` if unknown."""
        try:
            return self.models[model_id]
        except KeyError:
            raise CatalogError(
                f"Unknown model '{model_id}'; known models: {', '.join(self.models)}.", field="model"
            ) from None

    def gpu(self, gpu_id: str) -> Gpu:
        """Return the GPU with this id; raise :class:`CatalogError` if unknown."""
        try:
            return self.gpus[gpu_id]
        except KeyError:
            raise CatalogError(
                f"Unknown GPU '{gpu_id}'; known GPUs: {', '.join(self.gpus)}.", field="gpu"
            ) from None

    @cached_property
    def model_choices(self) -> list[tuple[str, str]]:
        """(id, label) pairs for a select box."""
        def kind(model: CatalogModel) -> str:
            window = " + sliding window" if model.config.window_layers else ""
            return f"{model.config.attention_kind}{window}{' · MoE' if model.config.is_moe else ''}"

        return [(m.id, f"{m.id} · {kind(m)}") for m in self.models.values()]

    @cached_property
    def gpu_choices(self) -> list[tuple[str, str]]:
        """(id, label) pairs for a select box."""
        return [(g.id, g.name) for g in self.gpus.values()]


def _marketed_gb(text: str) -> float:
    match = re.search(r"(\d+(?:\.\d+)?)\s*GB", text)
    if not match:
        raise CatalogError(f"Cannot read a capacity in GB from the marketed figure '{text}'.")
    return float(match.group(1))


def gpu_from_entry(entry: dict) -> Gpu:
    """Build a :class:`Gpu` from one object of ``gpus.json``."""
    memory = entry["memory"]
    reported = (memory.get("nvidia_smi_total_bytes") or memory.get("rocm_smi_vram_total_bytes"))
    reported_mib = memory.get("nvidia_smi_total_MiB") or memory.get("rocm_smi_vram_total_MiB")
    if reported_mib:
        memory_bytes, from_driver = int(reported_mib) * MIB, True
    elif reported:
        memory_bytes, from_driver = int(reported), True
    else:
        memory_bytes, from_driver = int(_marketed_gb(memory["marketed"]) * GB), False
    tflops = entry.get("tflops", {})
    dense = {k.removesuffix("_dense"): v for k, v in tflops.items() if k.endswith("_dense")}
    sparse = {k.removesuffix("_sparse_2to4"): v for k, v in tflops.items() if k.endswith("_sparse_2to4")}
    if "int8_tops" in entry:
        dense["int8"] = entry["int8_tops"].get("dense")
        sparse["int8"] = entry["int8_tops"].get("sparse_2to4")
    links = entry.get("interconnect") or {}
    nvlink = links.get("nvlink_GBps_total_bidirectional")
    per_direction = links.get("nvlink_GBps_per_direction")
    if per_direction is None and isinstance(nvlink, (int, float)):
        per_direction = nvlink / 2  # the catalog's NVLink totals add both directions
    return Gpu(
        id=entry["id"],
        name=entry["name"],
        vendor=entry.get("vendor", ""),
        memory_bytes=memory_bytes,
        memory_from_driver=from_driver,
        memory_marketed=memory["marketed"].split(" (")[0].split(";")[0],
        bandwidth_gb_s=float(entry["memory_bandwidth_GBps"]),
        dense_tflops=dense,
        sparse_tflops=sparse,
        nvlink_gb_s=float(nvlink) if isinstance(nvlink, (int, float)) else None,
        tdp_w=entry.get("tdp_w"),
        source=tuple(entry.get("source", ())),
        entry=entry,
        nvlink_domain_gpus=int(links.get("nvlink_domain_gpus") or 1),
        nvlink_gb_s_per_direction=_number(per_direction),
        pcie_gb_s_per_direction=_number(links.get("pcie_GBps_per_direction")),
        scale_out_gb_s=_number(links.get("scale_out_GBps")),
    )


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def model_from_entry(entry: dict) -> CatalogModel:
    """Build a :class:`CatalogModel` from one object of ``models.json``.

    An entry with no Hugging Face ``config`` but DeepSeek's own inference
    naming (``config_inference_format``) is read from that. Raises
    :class:`~.errors.CatalogError` naming the model when the entry has neither, or
    when :func:`~.hf_config.parse_config` rejects its config (the reason kept).
    """
    raw = entry.get("config") or entry.get("config_inference_format")
    if raw is None:
        raise CatalogError(f"Model '{entry.get('id')}' has no config.")
    try:
        config = parse_config(raw, family=entry.get("family"))
    except ConfigError as exc:
        raise CatalogError(f"Model '{entry.get('id')}': {exc}") from exc
    notes = entry.get("notes", "")
    return CatalogModel(
        id=entry["id"],
        name=entry.get("hf_repo", entry["id"]),
        family=entry.get("family", config.model_type),
        attention=entry.get("attention", config.attention_kind),
        config=config,
        raw_config=raw,
        published_params=entry.get("published_params", {}),
        notes=notes if isinstance(notes, str) else " ".join(notes),
        source=tuple(entry.get("source", ())),
        entry=entry,
    )


def catalog_from_entries(models: list[dict], gpus: list[dict]) -> Catalog:
    """Build a :class:`Catalog` from raw ``models.json``/``gpus.json`` objects.

    A problem instance stores the entries it was drawn from and rebuilds its
    catalog with this, so it shows the same numbers after the catalog changes.
    """
    return Catalog(
        models={entry["id"]: model_from_entry(entry) for entry in models},
        gpus={entry["id"]: gpu_from_entry(entry) for entry in gpus},
    )


def load_catalog(directory: Path | str) -> Catalog:
    """Read ``models.json`` and ``gpus.json`` from ``directory``.

    Raises :class:`CatalogError` when a file is missing or an entry is unusable.
    """
    directory = Path(directory)
    try:
        models = json.loads((directory / "models.json").read_text())
        gpus = json.loads((directory / "gpus.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogError(f"Cannot read the catalog in {directory}: {exc}") from exc
    return catalog_from_entries(models, gpus)


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The repository's catalog (``fixtures/catalog``), read once per process."""
    return load_catalog(DEFAULT_CATALOG_DIR)


# Nominal bits per value of each format.
NOMINAL_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "nvfp4": 4, "mxfp4": 4}

# The two 4-bit float formats with block scales (FP4 E2M1 elements): NVIDIA's NVFP4 shares one FP8
# E4M3 scale among 16 values, 4 + 8/16 = 4.5 bits per weight; the OCP Microscaling (MX) v1.0 MXFP4
# shares one E8M0 scale among 32, 4 + 8/32 = 4.25. (NVFP4's one FP32 scale per tensor is negligible.)
BLOCK_FORMATS = {"nvfp4": (16, 8, "FP8 E4M3"), "mxfp4": (32, 8, "E8M0")}  # (block size, scale bits, scale)

# Bits charged per weight by default: int4 at an effective 4.5 (scales, zero-points and wider
# tensors, the runbook's errata); the block formats at element + scale ÷ block.
DEFAULT_WEIGHT_BITS = {**NOMINAL_BITS, "int4": 4.5,
                       **{name: NOMINAL_BITS[name] + scale / block
                          for name, (block, scale, _) in BLOCK_FORMATS.items()}}

WEIGHT_DTYPES = tuple(DEFAULT_WEIGHT_BITS)
# KV cache formats. The two FP4 layouts store K and V as E2M1 elements with their block scales, so a
# cached value costs the same effective width as a weight: 4.5 bits (nvfp4) and 4.25 (mxfp4).
# Engines offer them on Blackwell-class tensor cores: TensorRT-LLM's "NVFP4 KV Cache" recipe
# (nvidia.github.io/TensorRT-LLM/features/quantization.html) and SGLang's FP4 KV cache
# (docs.sglang.io/advanced_features/quantized_kv_cache.html).
KV_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "nvfp4", "mxfp4")


def weight_bits(dtype: str, bits: float | None = None) -> float:
    """Bits charged per weight for ``dtype``; ``bits`` overrides the default width.

    Raises :class:`InputError` for an unknown dtype or a width outside (0, 32].
    """
    if dtype not in DEFAULT_WEIGHT_BITS:
        raise InputError(
            f"Unknown weight precision '{dtype}'; choose one of {', '.join(WEIGHT_DTYPES)}.",
            field="weights_dtype",
        )
    if bits is None:
        return float(DEFAULT_WEIGHT_BITS[dtype])
    if not 1 <= bits <= 32:
        raise InputError(f"Weight bits must be from 1 to 32, not {bits}.", field="weights_bits")
    return float(bits)


#: Bits per parameter of the tensors a mixed-precision checkpoint leaves unconverted (attention, router,
#: embeddings, head and the experts' biases): bf16, as gpt-oss's checkpoint stores them (its model card:
#: "MXFP4 for the MoE weights", the rest BF16).
UNCONVERTED_BITS = 16.0


@dataclass(frozen=True)
class WeightWidths:
    """Bits charged per parameter: ``weight_bits`` for every parameter but the routed experts',
    ``expert_weight_bits`` per routed-expert parameter (equal unless the checkpoint is mixed), and
    ``expert_matrix_bits``, the width of the experts' weight matrices alone (their biases, if any, are charged
    ``weight_bits``; ``expert_weight_bits`` averages the two over one expert's parameters)."""

    weight_bits: float
    expert_weight_bits: float
    expert_matrix_bits: float

    @property
    def mixed(self) -> bool:
        """True when the routed experts are charged another width than the rest."""
        return self.expert_weight_bits != self.weight_bits


def weight_widths(cfg: ModelConfig, dtype: str, bits: float | None = None) -> WeightWidths:
    """The widths charged for ``cfg``'s weights at precision ``dtype`` (``bits`` overriding its default width,
    as :func:`weight_bits`), the one place both widths come from.

    A uniform precision, or a width stated in ``bits``, charges every parameter alike. A checkpoint that stores
    only its routed experts in a block format (:attr:`~.hf_config.ModelConfig.experts_quantized`, gpt-oss's
    MXFP4), served at that native format, charges the experts' weight matrices the format's width (MXFP4:
    4 + 8/32 = 4.25 bits) and everything else, the experts' biases included, :data:`UNCONVERTED_BITS`;
    ``expert_weight_bits`` is then the mean over one expert's parameters, (matrices × 4.25 + biases × 16) ÷
    (matrices + biases). Raises :class:`InputError` as :func:`weight_bits`."""
    width = weight_bits(dtype, bits)
    if bits is not None or not cfg.is_moe or cfg.experts_quantized != dtype:
        return WeightWidths(width, width, width)
    expert = mlp_params(cfg, cfg.moe_intermediate_size)
    matrices = mlp_matrix_params(cfg, cfg.moe_intermediate_size)
    mean = (matrices * width + (expert - matrices) * UNCONVERTED_BITS) / expert
    return WeightWidths(UNCONVERTED_BITS, mean, width)


def kv_bits_per_value(dtype: str) -> float:
    """Effective bits per cached K or V value for ``dtype``: the nominal width, or for a block
    format element + scale ÷ block (nvfp4 4.5, mxfp4 4.25). :class:`InputError` if unknown."""
    if dtype not in KV_DTYPES:
        raise InputError(
            f"Unknown KV cache precision '{dtype}'; choose one of {', '.join(KV_DTYPES)}.",
            field="kv_dtype",
        )
    return float(DEFAULT_WEIGHT_BITS[dtype] if dtype in BLOCK_FORMATS else NOMINAL_BITS[dtype])


def kv_bytes_per_value(dtype: str) -> float:
    """Bytes per cached K or V value for ``dtype`` (effective bits ÷ 8: nvfp4 0.5625, mxfp4
    0.53125); :class:`InputError` if unknown."""
    return kv_bits_per_value(dtype) / 8


def article(dtype: str) -> str:
    """"a" or "an" before a number format's name, read aloud letter by letter: "an fp8 cache", "an int4 model",
    "a bf16 cache" (f, i, n, m ... begin with a vowel sound when spelled out; b does not)."""
    return "an" if dtype[:1].lower() in "aefhilmnorsx" else "a"

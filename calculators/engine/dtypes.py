"""Number formats for weights and the KV cache, with their widths.

Widths are bits per stored value. ``int4`` weights are charged an *effective*
width (default 4.5 bits): a 4-bit format also stores a scale (and often a
zero-point) per block of 32–64 weights and keeps sensitive tensors wider
(the runbook's errata: Q4_K_M works out near 4.8 bits). The nominal width is
kept so the grader can recognise the ``nominal-4bit`` misconception.
"""

from __future__ import annotations

from .errors import InputError

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

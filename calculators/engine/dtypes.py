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
NOMINAL_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}

# Bits charged per weight by default; only int4 differs from nominal.
DEFAULT_WEIGHT_BITS = {**NOMINAL_BITS, "int4": 4.5}

WEIGHT_DTYPES = tuple(DEFAULT_WEIGHT_BITS)
KV_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")


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


def kv_bytes_per_value(dtype: str) -> float:
    """Bytes per cached K or V value for ``dtype``; :class:`InputError` if unknown."""
    if dtype not in KV_DTYPES:
        raise InputError(
            f"Unknown KV cache precision '{dtype}'; choose one of {', '.join(KV_DTYPES)}.",
            field="kv_dtype",
        )
    return NOMINAL_BITS[dtype] / 8

"""What number-format and RoPE mistakes change: ranges, epsilons and widths; rotary bands and wavelengths.

Step values for the registry (:mod:`.`): each takes the given values ``g`` and the earlier steps ``s`` and returns
what a candidate holding the mistake types at that step, or ``None`` where it cannot occur in this problem.
"""

from __future__ import annotations

import math

from ..formulas.rope import BANDS_LONGER_THAN_CONTEXT
from ..procedures.formats import FORMATS, MAX_NORMAL_IEEE, NumberFormat, format_values

# --- number formats ---


def _partner(g) -> NumberFormat | None:
    """fp16 for a bf16 problem and bf16 for an fp16 one; ``None`` otherwise."""
    layout = (g["width"], g["exponent_field"])
    if layout == (16, 8):
        return FORMATS["fp16"]
    if layout == (16, 5):
        return FORMATS["bf16"]
    return None


def swapped(key: str):
    """The partner 16-bit format's value of ``key``."""
    def value(g, s):
        partner = _partner(g)
        return None if partner is None else format_values(partner)[key]
    return value


def e4m3_ieee(g, s):
    """E4M3's largest value with the top exponent code kept for specials."""
    if not (g["finite_only"] or g.get("no_specials")):
        return None
    return MAX_NORMAL_IEEE({"mantissa_bits": s["mantissa_bits"], "exponent_bits": s["exponent_bits"]})


def unit_roundoff(g, s):
    """Half an epsilon."""
    return None if g["is_int"] else 2.0 ** (-s["mantissa_bits"] - 1)


def epsilon_is_min_normal(g, s):
    """The smallest normal given for epsilon."""
    return None if g["is_int"] else s["min_normal"]


def min_normal_is_epsilon(g, s):
    """Epsilon given for the smallest normal."""
    return None if g["is_int"] else 2.0 ** -s["mantissa_bits"]


def int_unsigned_max(g, s):
    """An integer's largest value read unsigned."""
    return 2 ** g["width"] - 1 if g["is_int"] else None


def int_unsigned_min(g, s):
    """An integer's smallest value read unsigned."""
    return 0 if g["is_int"] else None


def subnormal_for_normal(g, s):
    """The smallest subnormal, 2^(1 − bias) × 2^−m: fp16's 2^−24 for its 2^−14."""
    return s["min_normal"] * 2 ** -s["mantissa_bits"] if not g["is_int"] and s["mantissa_bits"] > 0 else None


def block_nominal_bits(g, s):
    """A block format's nominal bits, the shared scale forgotten."""
    return s["total_bits"] if g.get("block_values") else None


# --- RoPE ---

def _bands_longer(bands: float, context: float, theta: float) -> float:
    return BANDS_LONGER_THAN_CONTEXT({"bands": bands, "context": context, "rope_theta": theta})


def hidden_bands(g, s):
    """Bands from hidden_size."""
    return g["hidden_size"] / 2


def dims_as_bands(g, s):
    """Rotated dimensions counted as bands."""
    return g["rotary_dim"]


def longest_as_theta(g, s):
    """The slowest band's wavelength as 2π × rope_theta."""
    return 2 * math.pi * g["rope_theta"]


def shortest_without_2pi(g, s):
    """The fastest wavelength without 2π."""
    return 1.0


def longest_without_2pi(g, s):
    """The slowest wavelength without 2π."""
    return g["rope_theta"] ** ((g["rotary_dim"] - 2) / g["rotary_dim"])


def single_rotation(g, s):
    """RoPE as one rotation: every wavelength 2π."""
    return 2 * math.pi


def extended_context(g, s):
    """Bands counted against the extended context."""
    contexts = {g["context"] * g["scaling_factor"], g["max_position_embeddings"]} - {g["context"], 0}
    return [_bands_longer(s["bands"], context, g["rope_theta"]) for context in sorted(contexts)] or None


def scaled_shorter(g, s):
    """Scaling taken to shorten the wavelength."""
    return s["longest_wavelength_tok"] / g["scaling_factor"]

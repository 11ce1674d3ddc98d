"""The ``rope`` family's notes: where each number came from, and what context extension does to the bands.

The llama3 and YaRN descriptions follow the ``rope_scaling`` types of the
``transformers`` library (``low_freq_factor``/``high_freq_factor`` default to 1
and 4, as in Llama 3.1's config).
"""

from __future__ import annotations

import math
from typing import Any

from ..hf_config import ModelConfig
from .rope_config import DEFAULT_ROPE_THETA


def rotary_dim_note(cfg: ModelConfig, rotary_dim: int) -> str:
    """A sentence when not every value of a head is rotated (MLA, or a partial_rotary_factor), else ``""``."""
    if cfg.kv_lora_rank:
        return (f"Multi-head latent attention: only the decoupled rotary part of each query and key "
                f"(qk_rope_head_dim = {cfg.qk_rope_head_dim}) is rotated; the {cfg.qk_nope_head_dim} other values "
                f"per head carry no position.")
    if rotary_dim != cfg.head_dim:
        return f"partial_rotary_factor: only {rotary_dim} of the {cfg.head_dim} values per head are rotated."
    return ""


def plain_number(value: float) -> str:
    """500,000 rather than 500000.0 or 5e+05."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


def _turn_degrees(theta_i: float, distance: int) -> float:
    return math.degrees(theta_i * distance) % 360


def _scaling_notes(settings: dict[str, Any], context: int, factor: float) -> list[str]:
    """What the scaling factor does, and what the config's own ``rope_scaling`` type does beyond it."""
    notes = []
    if factor == 1:
        notes.append("Scaling factor 1: no extension, so the scaled wavelength equals the original; set a "
                     "scaling factor above 1 to see position interpolation.")
    else:
        notes.append(f"Position interpolation divides positions by s = {factor:g}: every angle shrinks by s, every "
                     f"wavelength grows by s, and {factor:g} × {context:,} = {factor * context:,.0f} positions land on "
                     f"the angles seen in training. The short bands lose resolution that way, which is why newer "
                     f"schemes stretch only the long ones.")
    kind = settings["scaling"].get("rope_type") or settings["scaling"].get("type")
    if kind == "llama3":
        low = settings["scaling"].get("low_freq_factor", 1)
        high = settings["scaling"].get("high_freq_factor", 4)
        original = settings["original_context"] or context
        notes.append(f"This config's rope_scaling is llama3-type: bands whose wavelength exceeds {original / low:,.0f} "
                     f"tokens (original context ÷ low_freq_factor {low:g}) are stretched by the factor, bands under "
                     f"{original / high:,.0f} tokens (÷ high_freq_factor {high:g}) are left as trained, and those "
                     f"between are blended. Its longest band is stretched by the full factor, as here.")
    elif kind == "yarn":
        notes.append("This config's rope_scaling is YaRN: bands that complete many turns within the original "
                     "context are left alone, those that complete less than one are interpolated by the full "
                     "factor, a ramp joins them, and attention logits get a temperature correction. Its longest "
                     "band is stretched by the full factor, as here.")
    return notes


def rope_notes(settings: dict[str, Any], inputs: dict[str, Any], values: dict[str, float]) -> list[str]:
    """Where each number came from and what the scaling does, in sentences."""
    theta, d = settings["rope_theta"], settings["rotary_dim"]
    bands, context, factor = d // 2, inputs["original_context"], inputs["scaling_factor"]
    notes = []
    if settings["theta_defaulted"]:
        notes.append(f"The config has no rope_theta, so the usual default {DEFAULT_ROPE_THETA:,.0f} is used (the "
                     f"RoPE paper's base, and the library default for Llama-2, Falcon and DeepSeek).")
    else:
        notes.append(f"rope_theta = {plain_number(theta)} read from the config.")
    if settings["rotary_dim_note"]:
        notes.append(settings["rotary_dim_note"])
    notes.append(f"Each head rotates its {d} values as {bands} pairs; pair i turns rope_theta^(−2i/{d}) radians "
                 f"per token, so wavelengths grow geometrically from 2π ≈ 6.28 tokens to "
                 f"{values['longest_wavelength_tok']:,.0f} tokens.")
    source = ("rope_scaling.original_max_position_embeddings" if settings["original_from_scaling"]
              else "max_position_embeddings")
    where = "as given" if settings["original_given"] else f"from {source}"
    longer = int(values["bands_longer_than_context"])
    notes.append(f"Original context {context:,} tokens ({where}): {longer} of {bands} bands never complete a turn "
                 f"within it, so training only ever showed the model part of their cycle. Those are the bands "
                 f"context extension has to interpolate; the others have turned many times and can be left alone.")
    notes += _scaling_notes(settings, context, factor)
    theta_0, theta_1 = 1.0, theta ** (-2 / d)
    notes.append(f"RoPE is not one rotation: positions 1 and 3 are {_turn_degrees(theta_0, 2):.1f}° apart in band 0, "
                 f"{_turn_degrees(theta_1, 2):.1f}° in band 1 and {_turn_degrees(theta ** (-(d - 2) / d), 2):.4f}° "
                 f"in the last. Two positions are 90° apart only in a band whose angle per token makes it so.")
    return notes

"""The ``rope`` family's misconceptions and the wrong answers each produces (:data:`VARIANTS`).

hidden_size for head_dim, dimensions counted as bands, the last band's exponent
taken as 1, radians for tokens, RoPE as one rotation, bands counted against
the extended context and scaling taken to shorten wavelengths.
"""

from __future__ import annotations

import math

from ..formulas.rope import BANDS_LONGER_THAN_CONTEXT
from ..misconceptions import MisconceptionInfo

MISCONCEPTION_INFOS = (
    MisconceptionInfo(
        "hidden-size-for-head-dim", "Model width used for the head dimension",
        "RoPE rotates each head's query and key separately: the bands come from head_dim (or MLA's "
        "qk_rope_head_dim), not hidden_size.", "/runbook/08-rope-and-long-context/#frequency-bands"),
    MisconceptionInfo(
        "pairs-not-dims", "Dimensions counted as bands",
        "Each band rotates a pair of values, so d values make d/2 bands.",
        "/runbook/08-rope-and-long-context/#frequency-bands"),
    MisconceptionInfo(
        "longest-band-as-theta", "Last band's exponent taken as 1",
        "Bands run i = 0 … d/2 − 1, so the slowest turns rope_theta^(−(d−2)/d) per token; 2π × rope_theta "
        "overshoots by rope_theta^(2/d).", "/runbook/08-rope-and-long-context/#frequency-bands"),
    MisconceptionInfo(
        "wavelength-without-2pi", "Radians taken for tokens",
        "θ_i is an angle per token; one full turn is 2π radians, so the wavelength is 2π ÷ θ_i tokens.",
        "/runbook/08-rope-and-long-context/#frequency-bands"),
    MisconceptionInfo(
        "rope-single-rotation", "RoPE taken as one rotation",
        "RoPE turns its pairs at geometrically spaced rates; only the fastest has a 2π-token wavelength. The "
        "slowest turns far more slowly than that.", "/errata/#rope-single-rotation"),
    MisconceptionInfo(
        "extended-context-for-original", "Bands counted against the extended context",
        "The bands to interpolate are the ones that never turned once during training: count against the "
        "original context, not the extended one or the config's extended max_position_embeddings.",
        "/runbook/08-rope-and-long-context/#context-extension"),
    MisconceptionInfo(
        "scaling-shrinks-wavelength", "Scaling taken to shorten wavelengths",
        "Dividing positions by s slows every rotation by s, so wavelengths grow by s; they do not shrink.",
        "/runbook/08-rope-and-long-context/#context-extension"),
)


def _bands_longer(bands: float, context: float, theta: float) -> float:
    return BANDS_LONGER_THAN_CONTEXT({"bands": bands, "context": context, "rope_theta": theta})


def _hidden_bands(g, s):
    return g["hidden_size"] / 2


def _dims_as_bands(g, s):
    return g["rotary_dim"]


def _longest_as_theta(g, s):
    return 2 * math.pi * g["rope_theta"]


def _without_2pi(key):
    def variant(g, s):
        if key == "shortest":
            return 1.0
        return g["rope_theta"] ** ((g["rotary_dim"] - 2) / g["rotary_dim"])
    return variant


def _extended_context(g, s):
    contexts = {g["context"] * g["scaling_factor"], g["max_position_embeddings"]} - {g["context"], 0}
    return [_bands_longer(s["bands"], context, g["rope_theta"]) for context in sorted(contexts)] or None


def _scaled_shorter(g, s):
    return s["longest_wavelength_tok"] / g["scaling_factor"]


VARIANTS = {
    "bands": (("hidden-size-for-head-dim", _hidden_bands), ("pairs-not-dims", _dims_as_bands)),
    "shortest_wavelength_tok": (("wavelength-without-2pi", _without_2pi("shortest")),),
    "longest_wavelength_tok": (("longest-band-as-theta", _longest_as_theta),
                               ("wavelength-without-2pi", _without_2pi("longest")),
                               ("rope-single-rotation", lambda g, s: 2 * math.pi)),
    "bands_longer_than_context": (("extended-context-for-original", _extended_context),),
    "scaled_longest_wavelength_tok": (("scaling-shrinks-wavelength", _scaled_shorter),),
}

"""The ``rope`` family: RoPE frequency bands and what a context-extension factor does to them.

Rotary position embedding splits each query/key head of d rotated values into
d/2 pairs; pair i turns by θ_i = rope_theta^(−2i/d) radians per token
(i = 0 … d/2 − 1), so its wavelength is λ_i = 2π / θ_i = 2π × rope_theta^(2i/d)
tokens. Steps, in order:

* ``bands`` = d ÷ 2;
* ``shortest_wavelength_tok`` = 2π (band 0 turns one radian per token);
* ``longest_wavelength_tok`` = 2π × rope_theta^((d − 2)/d) (band d/2 − 1);
* ``bands_longer_than_context``: bands whose wavelength exceeds the original
  context L, i.e. that never complete one turn over it: λ_i > L ⟺
  i > bands × ln(L / 2π) / ln(rope_theta), so d/2 − ⌊bands × ln(L/2π) ÷
  ln(rope_theta)⌋ − 1 of them (at least 0). These are the bands the model
  never saw a full cycle of, the ones context extension has to interpolate;
* ``scaled_longest_wavelength_tok`` = s × longest: position interpolation
  divides positions by s, which multiplies every wavelength by s.

Read from the model's raw ``config.json``: ``rope_theta`` (10,000, the RoPE
paper's base, when absent), ``rope_scaling`` (its ``factor`` and
``original_max_position_embeddings``), ``partial_rotary_factor``; under MLA
only ``qk_rope_head_dim`` values per head are rotated. Source of the
construction: Su et al., "RoFormer: Enhanced Transformer with Rotary Position
Embedding" (2021); position interpolation: Chen et al., "Extending Context
Window of Large Language Models via Positional Interpolation" (2023).

The parts: :mod:`..formulas.rope` (the formulas); its mistakes are the registry's (:mod:`..mistakes`). This
module reads the config, runs the steps, writes the notes and draws the problems.
"""

from __future__ import annotations

import math
import random
from typing import Any

from ..catalog import Catalog
from ..errors import ConfigError, InputError
from ..formulas.rope import (
    BANDS,
    BANDS_LONGER_THAN_CONTEXT,
    LONGEST_WAVELENGTH,
    SCALED_LONGEST_WAVELENGTH,
    SHORTEST_WAVELENGTH,
)
from ..hf_config import ModelConfig
from .base import Family, Plan, Result, StepSpec
from .inputs import MODEL, InputSpec, catalog_or_default, clean_inputs, resolve_model

# --- The RoPE settings of a raw ``config.json``: base, rotated width, scaling factor and original context.

DEFAULT_ROPE_THETA = 10_000.0


SPECS = [
    StepSpec(BANDS, rounding="floor", label="Frequency bands per head (rotated values ÷ 2)"),
    StepSpec(SHORTEST_WAVELENGTH, label="Shortest wavelength (band 0, one radian per token)"),
    StepSpec(LONGEST_WAVELENGTH, label="Longest wavelength (the last band)"),
    StepSpec(BANDS_LONGER_THAN_CONTEXT, {"bands": "bands"}, rounding="floor",
             label="Bands that never complete a turn within the original context"),
    StepSpec(SCALED_LONGEST_WAVELENGTH, {"longest_wavelength_tok": "longest_wavelength_tok"},
             label="Longest wavelength with positions divided by s"),
]

def _number(value: Any) -> float | None:
    """A finite real number from a config value, or ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def rope_settings(raw: dict, cfg: ModelConfig, source_field: str) -> dict[str, Any]:
    """The RoPE numbers of a raw ``config.json``.

    Returns ``rope_theta`` (defaulted to 10,000 when absent, with
    ``theta_defaulted``), ``rotary_dim`` (head_dim × partial_rotary_factor, or
    qk_rope_head_dim under MLA), ``scaling`` (the ``rope_scaling`` dict or
    ``{}``), ``factor`` and ``original_context`` (``None`` when the config has
    neither). Raises :class:`ConfigError` (field ``source_field``) for a model
    without RoPE (ALiBi) or a malformed value, naming the key.
    """
    if raw.get("alibi") is True or raw.get("position_embedding_type") == "alibi":
        raise ConfigError("This model uses ALiBi position biases, not RoPE: it has no frequency bands.",
                          field=source_field)
    parameters: dict = raw["rope_parameters"] if isinstance(raw.get("rope_parameters"), dict) else {}
    theta_raw = raw.get("rope_theta", parameters.get("rope_theta"))
    theta = _number(theta_raw) if theta_raw is not None else DEFAULT_ROPE_THETA
    if theta is None or theta <= 1 or theta > 1e12:
        raise ConfigError(f"rope_theta must be a number above 1, not {theta_raw!r}.", field=source_field)
    if cfg.kv_lora_rank:
        rotary_dim = cfg.qk_rope_head_dim
    else:
        fraction_raw = raw.get("partial_rotary_factor", raw.get("rotary_pct", 1))
        fraction = _number(fraction_raw)
        if fraction is None or not 0 < fraction <= 1:
            raise ConfigError(f"partial_rotary_factor must be above 0 and at most 1, not {fraction_raw!r}.",
                              field=source_field)
        rotary_dim = int(cfg.head_dim * fraction)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ConfigError(f"RoPE rotates pairs of values, so the rotated width must be even; this config gives "
                          f"{rotary_dim}.", field=source_field)
    scaling: dict = raw["rope_scaling"] if isinstance(raw.get("rope_scaling"), dict) else {}
    factor = None
    if "factor" in scaling:
        factor = _number(scaling["factor"])
        if factor is None or factor < 1:
            raise ConfigError(f"rope_scaling.factor must be a number of at least 1, not {scaling['factor']!r}.",
                              field=source_field)
    original = (_number(scaling.get("original_max_position_embeddings"))
                or _number(raw.get("max_position_embeddings")) or cfg.max_position_embeddings or None)
    return {"rope_theta": theta, "theta_defaulted": theta_raw is None, "rotary_dim": rotary_dim,
            "scaling": scaling, "factor": factor, "original_context": int(original) if original else None,
            "original_from_scaling": bool(_number(scaling.get("original_max_position_embeddings")))}


# Keys a catalog entry may lack in its original-format config but state in its library-format copy
# (Falcon's RW config.json has neither; models.json keeps FalconConfig's values beside it).
FALLBACK_KEYS = ("rope_theta", "max_position_embeddings")


def catalog_rope_config(model) -> tuple[dict, list[str]]:
    """A catalog model's raw config, with :data:`FALLBACK_KEYS` it lacks filled in from the
    entry's ``config_transformers_format`` copy; also the keys so filled."""
    raw = dict(model.raw_config)
    library = model.entry.get("config_transformers_format") or {}
    filled = [key for key in FALLBACK_KEYS if raw.get(key) is None and library.get(key) is not None]
    raw.update({key: library[key] for key in filled})
    return raw, filled


def raw_rope_config(inputs: dict[str, Any], catalog: Catalog) -> tuple[dict, str, list[str]]:
    """The raw config the inputs name (pasted, or a catalog model's with :data:`FALLBACK_KEYS` filled in),
    the input field to blame for its errors, and the keys filled in."""
    if "config" in inputs:
        return inputs["config"], "config", []
    raw, filled = catalog_rope_config(catalog.model(inputs["model"]))
    return raw, "model", filled


# --- The ``rope`` family's notes: where each number came from, and what context extension does to the bands.

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


ORIGINAL_CONTEXT = InputSpec(
    "original_context", "int", None, "context the model was trained at, tokens (default: the config's "
    "rope_scaling.original_max_position_embeddings, else max_position_embeddings)", minimum=16,
    maximum=10_000_000, unit="tok", label="Original context")
SCALING_FACTOR = InputSpec(
    "scaling_factor", "float", None, "context-extension factor s: positions divided by s (default: the config's "
    "rope_scaling.factor, else 1)", minimum=1, maximum=1024, label="Scaling factor s")
INPUTS = (MODEL, ORIGINAL_CONTEXT, SCALING_FACTOR)
STEP_KEYS = ("bands", "shortest_wavelength_tok", "longest_wavelength_tok", "bands_longer_than_context",
             "scaled_longest_wavelength_tok")


def plan_rope(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """RoPE bands and wavelengths (tokens) of a model, and the longest one after scaling.

    ``raw`` holds ``model`` (catalog id) or ``config``, and optionally
    ``original_context`` (tokens) and ``scaling_factor`` (≥ 1), which default
    to the config's ``rope_scaling`` (else ``max_position_embeddings`` and 1).
    Raises :class:`~..errors.EngineError` subclasses on bad input, including
    :class:`InputError` (field ``original_context``) when the config gives no
    context and none is passed.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    raw_config, source_field, filled = raw_rope_config(inputs, catalog)
    settings = rope_settings(raw_config, cfg, source_field)
    settings["original_given"] = inputs["original_context"] is not None
    if inputs["original_context"] is None:
        if settings["original_context"] is None:
            raise InputError(f"{model_name} states no max_position_embeddings; give the original context "
                             f"(original_context) in tokens.", field="original_context")
        inputs["original_context"] = settings["original_context"]
    if inputs["scaling_factor"] is None:
        inputs["scaling_factor"] = settings["factor"] or 1.0
    settings["rotary_dim_note"] = rotary_dim_note(cfg, settings["rotary_dim"])
    given = {
        "rotary_dim": settings["rotary_dim"],
        "rope_theta": settings["rope_theta"],
        "context": inputs["original_context"],
        "scaling_factor": inputs["scaling_factor"],
        "hidden_size": cfg.hidden_size,
        "head_dim": cfg.head_dim,
        "max_position_embeddings": cfg.max_position_embeddings,
    }
    notes = ([f"{model_name}'s config.json states no {' or '.join(filled)}; the values of the catalog's "
              f"library-format copy of its config are used."] if filled else [])

    def finish(result: Result) -> None:
        result.notes.extend(rope_notes(settings, inputs, result.values))

    return Plan("rope", inputs, list(SPECS), given, notes, {"model_name": model_name}, finish=finish)


# --- problems --------------------------------------------------------------------------------------

FACTORS_DRAWN = (2, 4, 4, 8)


def generate_rope(rng: random.Random, catalog: Catalog) -> dict:
    """A rope problem on a catalog model that states its context; the config's own factor when it has
    one, else 2, 4 or 8."""
    usable = []
    for model in catalog.models.values():
        try:
            settings = rope_settings(catalog_rope_config(model)[0], model.config, "model")
        except ConfigError:
            continue
        if settings["original_context"]:
            usable.append((model.id, settings))
    model_id, settings = rng.choice(usable)
    factor = settings["factor"] or rng.choice(FACTORS_DRAWN)
    return {"model": model_id, "original_context": settings["original_context"], "scaling_factor": factor}


def describe_rope(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in the words an interviewer would use."""
    model = catalog.model(inputs["model"])
    settings = rope_settings(catalog_rope_config(model)[0], model.config, "model")
    theta = (f"rope_theta = {plain_number(settings['rope_theta'])}" if not settings["theta_defaulted"]
             else f"no rope_theta in its config (take the default {DEFAULT_ROPE_THETA:,.0f})")
    if model.config.kv_lora_rank:
        rotated = "only qk_rope_head_dim values per head are rotated (MLA)"
    elif settings["rotary_dim"] != model.config.head_dim:
        rotated = f"only {settings['rotary_dim']} of each head's values are rotated"
    else:
        rotated = "every value of a head is rotated"
    return (f"{model.id} has {theta}, and {rotated}. How many RoPE frequency bands does a head have, and what are "
            f"the shortest and longest wavelengths in tokens? Of those bands, how many never complete one turn "
            f"within its original context of {inputs['original_context']:,} tokens? If positions are divided by a "
            f"scaling factor of {inputs['scaling_factor']:g} to extend the context, what does the longest "
            f"wavelength become?")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
ROPE_RUBRIC = (
    "Counts bands as half the rotated head dimension",
    "Uses 2π for a wavelength and the exponent (d − 2)/d for the slowest band",
    "Counts unseen bands against the original training context, not the extended one",
    "Says scaling stretches wavelengths and which bands each method moves",
)


FAMILIES = (
    Family("rope", "RoPE frequency bands",
           "Wavelength of every RoPE band from rope_theta and the head dimension, and what a context-extension "
           "factor does to them.",
           INPUTS, plan_rope, generate=generate_rope,
           order=120, describe=describe_rope,
           headlines=("longest_wavelength_tok", "bands_longer_than_context"), chapter="08-rope-and-long-context",
           rubric=ROPE_RUBRIC),
)

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

The parts: :mod:`.rope_formulas` (formulas and steps), :mod:`.rope_config` (reading
the config), :mod:`.rope_notes` and :mod:`.rope_variants` (misconceptions).
"""

from __future__ import annotations

import random
from typing import Any

from ..catalog import Catalog
from ..errors import ConfigError, InputError
from .base import Result, evaluate_steps, run
from .family import Family
from .inputs import MODEL, InputSpec, catalog_or_default, clean_inputs, resolve_model
from .rope_config import DEFAULT_ROPE_THETA, catalog_rope_config, raw_rope_config, rope_settings
from .rope_formulas import SPECS
from .rope_notes import plain_number, rope_notes, rotary_dim_note
from .rope_variants import MISCONCEPTION_INFOS, VARIANTS

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


def run_rope(raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
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
    values = evaluate_steps(SPECS, given)
    notes = rope_notes(settings, inputs, values)
    if filled:
        notes.insert(0, f"{model_name}'s config.json states no {' or '.join(filled)}; the values of the catalog's "
                        f"library-format copy of its config are used.")
    return run("rope", inputs, list(SPECS), given, notes, {"model_name": model_name})


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
           INPUTS, run_rope, generate=generate_rope, variants=VARIANTS, misconceptions=MISCONCEPTION_INFOS,
           order=120, describe=describe_rope,
           headlines=("longest_wavelength_tok", "bands_longer_than_context"), chapter="08-rope-and-long-context",
           rubric=ROPE_RUBRIC),
)

"""The RoPE settings of a raw ``config.json``: base, rotated width, scaling factor and original context.

Keys read: ``rope_theta`` (or ``rope_parameters.rope_theta``; 10,000, the RoPE
paper's base, when absent), ``partial_rotary_factor`` (or ``rotary_pct``),
``rope_scaling`` (``factor``, ``original_max_position_embeddings``) and
``max_position_embeddings``; under MLA only ``qk_rope_head_dim`` values per
head are rotated.
"""

from __future__ import annotations

import math
from typing import Any

from ..catalog import Catalog
from ..errors import ConfigError
from ..hf_config import ModelConfig

DEFAULT_ROPE_THETA = 10_000.0

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

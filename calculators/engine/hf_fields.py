"""Reading one field of a pasted ``config.json``: its aliases, and the checks a number must pass.

Every reader raises :class:`~.errors.ConfigError` naming the field (under the
spelling the config used) when the value is not a positive whole number or is
larger than any real model's; a hostile pasted config fails here, before any
arithmetic.
"""

from __future__ import annotations

import math

from .errors import ConfigError

# Larger than any real layer count, width or vocabulary: a bound that keeps the
# arithmetic finite on a hostile pasted config.
MAX_DIMENSION = 10**9

# No number in a real config.json is this large (rope_theta, the largest, is ~10**7); an integer past it
# is refused before any arithmetic, which would otherwise overflow converting it to a float.
MAX_MAGNITUDE = 10**18

# Alternative spellings, tried in order after the Hugging Face name.
ALIASES = {
    "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("n_head", "num_heads", "n_heads"),
    "hidden_size": ("d_model", "n_embd", "dim"),
    "intermediate_size": ("ffn_hidden_size", "inter_dim"),
    "moe_intermediate_size": ("moe_inter_dim",),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv"),
    "first_k_dense_replace": ("n_dense_layers",),
    "num_experts_per_tok": ("n_activated_experts",),
}


def lookup(config: dict, name: str):
    """Return the first present, non-null value among ``name`` and its aliases."""
    for key in (name, *ALIASES.get(name, ())):
        value = config.get(key)
        if value is not None:
            return key, value
    return name, None


def positive_int(config: dict, name: str, *, required: bool = True, default: int = 0) -> int:
    """Read an integer field that must be positive; raise :class:`ConfigError` naming it."""
    key, value = lookup(config, name)
    if value is None:
        if required:
            raise ConfigError(f"The config has no '{name}' field, which is required.", field=name)
        return default
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value != int(value)):
        raise ConfigError(f"'{key}' must be a whole number, not {value!r}.", field=key)
    if int(value) <= 0:
        raise ConfigError(f"'{key}' must be positive, not {value!r}.", field=key)
    if value > MAX_DIMENSION:
        raise ConfigError(f"'{key}' is {value:,.6g}; no real model has more than {MAX_DIMENSION:,}.", field=key)
    return int(value)


def count(config: dict, name: str) -> int:
    """Read an optional whole number that may be zero (shared experts, dense layers …)."""
    key, value = lookup(config, name)
    if value is None or value == 0:
        return 0
    return positive_int(config, name)


def refuse_huge_integers(value, key: str = "config") -> None:
    """Raise :class:`ConfigError` naming the first integer whose magnitude exceeds :data:`MAX_MAGNITUDE`.

    Walks nested objects and lists (an ``int`` of hundreds of digits would raise
    ``OverflowError`` in any float arithmetic further on).
    """
    stack = [(key, value)]
    while stack:
        name, item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_MAGNITUDE:
            raise ConfigError(f"'{name}' is an integer of {len(str(abs(item)))} digits; no real config holds one.",
                              field=name)
        if isinstance(item, dict):
            stack.extend((str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((name, v) for v in item)

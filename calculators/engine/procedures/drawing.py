"""Helpers shared by the families' problem generators (seeded ``random.Random``).

:func:`pinned_catalog` is how a coach's fixed model or card reaches a draw (docs/architecture.md §11): the
family's own generator runs on a catalog holding only that model and card, so every value it draws from
them (the tensor-parallel degree that holds the weights, a context the model supports, a "measured" rate
below the stack's ceiling, a batch its KV budget holds) is drawn for that stack and no other.
"""

from __future__ import annotations

import random

from ..catalog import Catalog
from ..errors import InputError

CONTEXTS = (2048, 4096, 8192, 16384, 32768)
# Weight precisions drawn for problems (bf16 twice as often: it is the default answer).
WEIGHT_DTYPES_DRAWN = ("bf16", "bf16", "fp8", "int8", "int4")
KV_DTYPES_DRAWN = ("bf16", "bf16", "fp8")


def gpu_supports(catalog: Catalog, gpu_id: str, dtype: str) -> bool:
    """True unless ``dtype`` needs tensor cores the card lacks (fp8 on the A100s)."""
    return bool(catalog.gpu(gpu_id).dense_tflops.get(dtype)) if dtype in ("fp8", "fp4") else True


def draw_context(rng: random.Random, catalog: Catalog, model_id: str) -> int:
    """A context limit from :data:`CONTEXTS` that the model supports."""
    limit = catalog.model(model_id).config.max_position_embeddings or 8192
    return rng.choice([c for c in CONTEXTS if c <= limit] or [min(CONTEXTS)])


def draw_model(rng: random.Random, catalog: Catalog) -> str:
    """Any catalog model id."""
    return rng.choice(list(catalog.models))


def computing_gpus(catalog: Catalog) -> list[str]:
    """Catalog GPU ids with a dense bf16 figure on record (a card whose compute could not be sourced,
    such as the MI355X, is left out of drawn problems rather than given a guessed peak). In a catalog
    pinned to one such card (:func:`pinned_catalog`) that card: a memory problem needs no compute figure,
    and a family that does need one says so when it runs."""
    computing = [gpu_id for gpu_id, gpu in catalog.gpus.items() if gpu.dense_tflops.get("bf16")]
    return computing or list(catalog.gpus)


#: The inputs that pin the catalog a problem is drawn from: the model and the card.
STACK_INPUTS = ("model", "gpu")


def pinned_catalog(catalog: Catalog, fixed: dict) -> Catalog:
    """``catalog`` narrowed to the model and card ``fixed`` names (either or both; ``catalog`` itself when
    it names neither), for a generator to draw everything else for that stack.

    ``fixed`` maps input names to values, e.g. ``{"model": "llama-3.1-70b", "gpu": "l4-24gb"}``. Raises
    :class:`.errors.CatalogError` for an id the catalog lacks and :class:`.errors.InputError` for an id
    that is not text.
    """
    models, gpus = catalog.models, catalog.gpus
    for name in STACK_INPUTS:
        if name in fixed and not isinstance(fixed[name], str):
            raise InputError(f"A fixed {name} must be a catalog id, not {fixed[name]!r}.", field=name)
    if "model" in fixed:
        models = {fixed["model"]: catalog.model(fixed["model"])}
    if "gpu" in fixed:
        gpus = {fixed["gpu"]: catalog.gpu(fixed["gpu"])}
    if models is catalog.models and gpus is catalog.gpus:
        return catalog
    return Catalog(models=models, gpus=gpus)


def draw_gpu(rng: random.Random, catalog: Catalog) -> str:
    """A catalog GPU id with a dense bf16 figure on record (:func:`computing_gpus`)."""
    return rng.choice(computing_gpus(catalog))


def weights_phrase(inputs: dict) -> str:
    """"bf16 weights", or for a widened format "int4 weights (charged 4.5 bits each …)"."""
    from ..dtypes import DEFAULT_WEIGHT_BITS, NOMINAL_BITS

    dtype = inputs.get("weights_dtype", "bf16")
    bits = inputs.get("weights_bits") or DEFAULT_WEIGHT_BITS[dtype]
    if bits != NOMINAL_BITS[dtype]:
        return f"{dtype} weights (charged {bits:g} bits each: scales and higher-precision tensors included)"
    return f"{dtype} weights"


def draw_weights_dtype(rng: random.Random, catalog: Catalog, gpu_id: str) -> str:
    """A weight precision for a problem on this card (int8 where the card has no fp8)."""
    weights = rng.choice(WEIGHT_DTYPES_DRAWN)
    return weights if gpu_supports(catalog, gpu_id, weights) else "int8"

"""Seeded problem generation: (family, seed) → the same inputs every time.

Each family draws real configs and cards from the catalog with
``random.Random(seed)``. Ladder problems are drawn so that their weights fit and
serve at least one user, except about one in ten that deliberately does not
(so the candidate learns to say "this does not fit; it needs N cards").
Bump :data:`GENERATOR_VERSION` whenever a draw changes, so stored problems keep
the version that made them.
"""

from __future__ import annotations

import random
import secrets

from calculators.engine.catalog import Catalog, default_catalog
from calculators.engine.procedures import FAMILIES
from calculators.engine.procedures.ladder import TP_DEGREES

from .models import ProblemInstance

GENERATOR_VERSION = 1
NON_FITTING_SHARE = 0.1
MAX_DRAWS = 200

CONTEXTS = (2048, 4096, 8192, 16384, 32768)
WEIGHT_DTYPES = ("bf16", "bf16", "fp8", "int8", "int4")
KV_DTYPES = ("bf16", "bf16", "fp8")


def _gpu_supports(catalog: Catalog, gpu_id: str, dtype: str) -> bool:
    """fp8 weights only on cards with fp8 tensor cores (not the A100s)."""
    return dtype != "fp8" or bool(catalog.gpu(gpu_id).dense_tflops.get("fp8"))


def _context(rng: random.Random, catalog: Catalog, model_id: str) -> int:
    limit = catalog.model(model_id).config.max_position_embeddings or 8192
    return rng.choice([c for c in CONTEXTS if c <= limit] or [min(CONTEXTS)])


def _ladder_candidate(rng: random.Random, catalog: Catalog) -> dict:
    model = rng.choice(list(catalog.models))
    gpu = rng.choice(list(catalog.gpus))
    weights = rng.choice(WEIGHT_DTYPES)
    if not _gpu_supports(catalog, gpu, weights):
        weights = "int8"
    context = _context(rng, catalog, model)
    return {
        "model": model,
        "gpu": gpu,
        "gpus": 1,
        "weights_dtype": weights,
        "kv_dtype": rng.choice(KV_DTYPES) if _gpu_supports(catalog, gpu, "fp8") else "bf16",
        "context": context,
        "utilization": rng.choice((0.85, 0.88, 0.9, 0.9, 0.92, 0.95)),
        "reserve_gib": rng.choice((1.0, 1.5, 2.0, 2.5, 3.0, 4.0)),
        "avg_tokens": rng.randrange(300, max(301, context * 2 // 3), 50),
        "block_size": rng.choice((16, 16, 32)),
    }


def ladder_inputs(rng: random.Random, catalog: Catalog) -> dict:
    """A ladder problem: fitting (smallest TP degree that serves a user) 9 times in 10."""
    want_fit = rng.random() >= NON_FITTING_SHARE
    ladder = FAMILIES["ladder"]
    for _ in range(MAX_DRAWS):
        inputs = _ladder_candidate(rng, catalog)
        result = ladder.run(inputs, catalog)
        if want_fit:
            degree = result.extra["min_tp_degree"]
            if degree is None:
                continue
            inputs["gpus"] = degree
            return inputs
        if not result.extra["fits"]:
            return inputs
    raise RuntimeError("No ladder problem could be drawn from the catalog.")


def kv_inputs(rng: random.Random, catalog: Catalog) -> dict:
    """A KV problem: every attention kind (MHA, GQA, MQA, MLA, windows) comes up."""
    kinds: dict[str, list[str]] = {}
    for model in catalog.models.values():
        kind = "window" if model.config.window_layers else model.config.attention_kind
        kinds.setdefault(kind, []).append(model.id)
    kind = rng.choice(sorted(kinds))
    model = rng.choice(kinds[kind])
    return {"model": model, "kv_dtype": rng.choice(KV_DTYPES), "context": _context(rng, catalog, model)}


def params_inputs(rng: random.Random, catalog: Catalog) -> dict:
    """A parameter-count problem on a random catalog model."""
    return {"model": rng.choice(list(catalog.models))}


def weights_inputs(rng: random.Random, catalog: Catalog) -> dict:
    """A weight-memory problem; int4 sometimes at a stated effective width."""
    dtype = rng.choice(("bf16", "fp16", "fp8", "int8", "int4"))
    inputs = {"model": rng.choice(list(catalog.models)), "weights_dtype": dtype}
    if dtype == "int4":
        inputs["weights_bits"] = rng.choice((4.5, 4.5, 4.8))
    return inputs


GENERATORS = {"ladder": ladder_inputs, "kv": kv_inputs, "params": params_inputs, "weights": weights_inputs}


def generate_inputs(family: str, seed: int, catalog: Catalog | None = None) -> dict:
    """The inputs of problem (``family``, ``seed``); ``KeyError`` for an unknown family."""
    return GENERATORS[family](random.Random(f"{family}:{seed}"), catalog or default_catalog())


def snapshot_for(inputs: dict, catalog: Catalog) -> dict:
    """The raw catalog entries a problem uses, to store beside it."""
    snapshot = {"models": [], "gpus": []}
    if "model" in inputs:
        snapshot["models"].append(catalog.model(inputs["model"]).entry)
    if "gpu" in inputs:
        snapshot["gpus"].append(catalog.gpu(inputs["gpu"]).entry)
    return snapshot


def create_problem(family: str, seed: int | None = None, user=None) -> ProblemInstance:
    """Draw and save a problem; a random seed when none is given."""
    catalog = default_catalog()
    seed = secrets.randbelow(2**31) if seed is None else seed
    inputs = generate_inputs(family, seed, catalog)
    return ProblemInstance.objects.create(
        family=family, seed=seed, generator_version=GENERATOR_VERSION, inputs=inputs,
        snapshot=snapshot_for(inputs, catalog), created_by=user if user and user.is_authenticated else None,
    )

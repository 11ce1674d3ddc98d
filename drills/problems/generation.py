"""Seeded problem generation: (family, seed) → the same inputs every time.

Each family's generator lives with its procedure in the engine
(``Family.generate``) and draws real configs and cards from the catalog with
``random.Random("<family>:<seed>")``. Bump :data:`GENERATOR_VERSION` whenever a
draw changes, so stored problems keep the version that made them (a problem
stores its resolved inputs and catalog entries, so its numbers never move).
"""

from __future__ import annotations

import random
import secrets

from calculators.engine.catalog import Catalog, default_catalog
from calculators.engine.procedures import FAMILIES
from drills.models import ProblemInstance

GENERATOR_VERSION = 3
MAX_SEED = 2**63


def drill_families() -> list:
    """The families that have a problem generator, in page order."""
    return [family for family in FAMILIES.values() if family.generate is not None]


def generate_inputs(family: str, seed: int, catalog: Catalog | None = None) -> dict:
    """The inputs of problem (``family``, ``seed``); ``KeyError`` for a family without drills."""
    generate = FAMILIES[family].generate
    if generate is None:
        raise KeyError(family)
    return generate(random.Random(f"{family}:{seed}"), catalog or default_catalog())


def snapshot_for(inputs: dict, catalog: Catalog) -> dict:
    """The raw catalog entries a problem uses, to store beside it."""
    snapshot = {"models": [], "gpus": []}
    if "model" in inputs:
        snapshot["models"].append(catalog.model(inputs["model"]).entry)
    if "gpu" in inputs:
        snapshot["gpus"].append(catalog.gpu(inputs["gpu"]).entry)
    return snapshot


def draw_problem(family: str, seed: int) -> ProblemInstance:
    """The problem of ``family`` drawn from ``seed``, *not saved* (what an anonymous visitor is shown).

    The same seed always draws the same inputs (``generate_inputs``), so the page can be rebuilt from the
    address alone (``/drills/<family>/new/?seed=N``) and nothing is stored for a visitor.
    """
    catalog = default_catalog()
    inputs = generate_inputs(family, seed, catalog)
    return ProblemInstance(family=family, seed=seed, generator_version=GENERATOR_VERSION, inputs=inputs,
                           snapshot=snapshot_for(inputs, catalog))


def create_problem(family: str, seed: int | None = None, user=None,
                   fixed_inputs: dict | None = None) -> ProblemInstance:
    """Draw and save a problem; a random seed when none is given.

    ``fixed_inputs`` (a bank template's, e.g. ``{"model": "llama-3.1-70b"}``)
    override the drawn values of those inputs.
    """
    catalog = default_catalog()
    seed = secrets.randbelow(2**31) if seed is None else seed
    inputs = {**generate_inputs(family, seed, catalog), **(fixed_inputs or {})}
    return ProblemInstance.objects.create(
        family=family, seed=seed, generator_version=GENERATOR_VERSION, inputs=inputs,
        snapshot=snapshot_for(inputs, catalog), created_by=user if user and user.is_authenticated else None,
    )

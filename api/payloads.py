"""The JSON bodies of the catalog endpoints, built from the engine's own records.

Models: the parsed config (the numbers the formulas read), the exact parameter
counts of :func:`~calculators.engine.hf_config.param_breakdown`, the raw
``config.json`` (ready to be edited and posted back to a calculator) and the
sources. GPUs: memory in bytes, MiB and GiB with which figure the calculators
use, bandwidth, dense TFLOP/s per precision and the 2:4-sparse figures kept
apart. Families: each input's kind, JSON type, default, bounds, unit and
choices, and the step keys with their units.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

from django.urls import reverse

from calculators import simulation
from calculators.engine.catalog import Catalog, CatalogModel, Gpu, default_catalog
from calculators.engine.hf_config import param_breakdown
from calculators.engine.procedures import Family, InputSpec
from calculators.families import FAMILIES

API_VERSION = "v1"

# InputSpec.kind → the JSON type of its value.
JSON_TYPES = {"model": "string", "gpu": "string", "choice": "string", "int": "integer", "float": "number"}


def _whole(value: float) -> int | float:
    """A float that is a whole number as an int (81559.0 MiB → 81559)."""
    return int(value) if float(value).is_integer() else value


# --- models --------------------------------------------------------------------------------------

def model_summary(model: CatalogModel) -> dict[str, Any]:
    """One line of ``/api/v1/models/``."""
    counts = param_breakdown(model.config)
    return {
        "id": model.id,
        "name": model.name,
        "family": model.family,
        "attention": model.attention,
        "moe": model.config.is_moe,
        "total_params": counts.total,
        "active_params": counts.active,
        "url": reverse("api:model", args=[model.id]),
    }


def model_detail(model: CatalogModel) -> dict[str, Any]:
    """``/api/v1/models/<id>/``: the parsed config, the exact counts, the raw config and the sources."""
    counts = param_breakdown(model.config)
    config = dataclasses.asdict(model.config)
    config["notes"] = list(model.config.notes)
    return {
        "id": model.id,
        "name": model.name,
        "family": model.family,
        "attention": model.attention,
        "attention_kind": model.config.attention_kind,
        "moe": model.config.is_moe,
        "config": config,
        "params": {
            "total": counts.total,
            "active": counts.active,
            "breakdown": dataclasses.asdict(counts),
        },
        "published_params": model.published_params,
        "notes": model.notes,
        "config_json": model.raw_config,
        "sources": list(model.source),
    }


# --- GPUs ----------------------------------------------------------------------------------------

SPARSE_NOTE = ("2:4 structured-sparsity figures, kept apart: the calculators never use them "
               "(dense throughput is what a dense model gets).")


def gpu_summary(gpu: Gpu) -> dict[str, Any]:
    """One line of ``/api/v1/gpus/``."""
    return {
        "id": gpu.id,
        "name": gpu.name,
        "vendor": gpu.vendor,
        "memory_gib": gpu.memory_gib,
        "bandwidth_gb_s": gpu.bandwidth_gb_s,
        "dense_tflops": dict(gpu.dense_tflops),
        "url": reverse("api:gpu", args=[gpu.id]),
    }


def gpu_detail(gpu: Gpu) -> dict[str, Any]:
    """``/api/v1/gpus/<id>/``: memory three ways with the figure used, bandwidth, throughput, sources."""
    return {
        "id": gpu.id,
        "name": gpu.name,
        "vendor": gpu.vendor,
        "architecture": gpu.entry.get("architecture"),
        "memory": {
            "bytes": gpu.memory_bytes,
            "mib": _whole(gpu.memory_mib),
            "gib": gpu.memory_gib,
            "marketed": gpu.memory_marketed,
            "used": "driver_reported" if gpu.memory_from_driver else "marketed_decimal_gb",
            "from_driver": gpu.memory_from_driver,
            "note": gpu.memory_note,
        },
        "bandwidth_gb_s": gpu.bandwidth_gb_s,
        "dense_tflops": dict(gpu.dense_tflops),
        "sparse_tflops": dict(gpu.sparse_tflops),
        "sparse_note": SPARSE_NOTE,
        "nvlink_gb_s": gpu.nvlink_gb_s,
        "tdp_w": gpu.tdp_w,
        "sources": list(gpu.source),
    }


# --- families ------------------------------------------------------------------------------------

def input_choices(spec: InputSpec, catalog: Catalog) -> list[str]:
    """The values an input accepts when they are a closed list (catalog ids for ``model``/``gpu``)."""
    if spec.kind == "model":
        return list(catalog.models)
    if spec.kind == "gpu":
        return list(catalog.gpus)
    return list(spec.choices)


def input_payload(spec: InputSpec, catalog: Catalog) -> dict[str, Any]:
    """One input of a family, as the API and the schema describe it."""
    return {
        "name": spec.name,
        "kind": spec.kind,
        "type": JSON_TYPES[spec.kind],
        "default": spec.default,
        "help": spec.help,
        "label": spec.label or None,
        "unit": spec.unit or None,
        "minimum": spec.minimum,
        "maximum": spec.maximum,
        "exclusive_minimum": spec.exclusive_minimum,
        "choices": input_choices(spec, catalog),
        "flag": spec.flag,
    }


@lru_cache(maxsize=None)
def family_steps(slug: str) -> tuple[tuple[str, str, str], ...]:
    """(key, label, unit) of each step, in order, from a run on the family's defaults.

    The step list of a family does not depend on its inputs (only labels and
    formulas may, e.g. a sliding-window model's KV step); the schema tests
    check responses for drawn inputs against these keys.
    """
    result = simulation.run_drill(FAMILIES[slug], {})
    return tuple((step.key, step.label, step.unit) for step in result.steps)


def family_payload(family: Family, catalog: Catalog) -> dict[str, Any]:
    """One family: slug, title, summary, inputs and step keys."""
    accepts_config = any(spec.kind == "model" for spec in family.inputs)
    return {
        "slug": family.slug,
        "title": family.title,
        "summary": family.summary,
        "inputs": [input_payload(spec, catalog) for spec in family.inputs],
        "accepts_config": accepts_config,
        "steps": [{"key": key, "label": label, "unit": unit} for key, label, unit in family_steps(family.slug)],
        "step_keys": [key for key, _, _ in family_steps(family.slug)],
        "url": reverse("api:calc", args=[family.slug]),
    }


def catalog() -> Catalog:
    """The catalog every endpoint reads (the repository's, read once per process)."""
    return default_catalog()

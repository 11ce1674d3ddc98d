"""The OpenAPI 3.1 document of ``/api/v1/``, generated from ``FAMILIES`` and the catalog.

Each calculator family gets its own path, ``/api/v1/calc/<family>/``, whose
query parameters are the family's inputs (type, bounds, enum, default, unit)
and whose 200 response is ``CalcResult_<family>``: the ``calc --json`` shape
with the family's step keys in order. Model and GPU ids are enums of the
catalog's ids. Errors share one ``Error`` schema.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from api import payloads
from api.simulate_schema import simulate_path, simulate_result_path, simulate_schemas
from calculators.engine.catalog import Catalog
from calculators.engine.procedures import Family, InputSpec
from calculators.engine.units import CANONICAL_UNITS
from calculators.families import FAMILIES

OPENAPI_VERSION = "3.1.0"

# docs/architecture.md §10: the fixed vocabulary of a step's unit, with §11's req/s, µs and requests.
STEP_UNITS = list(CANONICAL_UNITS)

PREFIX = f"/api/{payloads.API_VERSION}"


def ref(name: str) -> dict[str, str]:
    """A JSON-schema reference to the component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: str) -> dict[str, Any]:
    return {"application/json": {"schema": ref(schema)}}


def error_responses(*codes: int) -> dict[str, Any]:
    """The OpenAPI responses for the error ``codes`` (400, 404, 405, 429), each the ``Error`` shape."""
    words = {400: "A bad parameter: one sentence, and the input at fault (or null).",
             404: "Unknown family, id or path.",
             405: "A method this endpoint does not take.",
             429: "Too many calls that simulate from this address (anonymous) or account: wait Retry-After "
                  "seconds."}
    return {str(code): {"description": words[code], "content": _json("Error")} for code in codes}


def input_schema(spec: InputSpec, catalog: Catalog) -> dict[str, Any]:
    """The JSON Schema of one input's value: type, bounds, enum, default."""
    schema: dict[str, Any] = {"type": payloads.JSON_TYPES[spec.kind]}
    choices = payloads.input_choices(spec, catalog)
    if choices:
        schema["enum"] = choices
    if spec.minimum is not None:
        schema["exclusiveMinimum" if spec.exclusive_minimum else "minimum"] = spec.minimum
    if spec.maximum is not None:
        schema["maximum"] = spec.maximum
    if spec.default is not None:
        schema["default"] = spec.default
    description = spec.help + (f" ({spec.unit})" if spec.unit else "")
    if spec.default is None:
        description += "; optional, no default"
    schema["description"] = description
    if spec.unit:
        schema["x-unit"] = spec.unit
    return schema


CONFIG_DESCRIPTION = ("A model's Hugging Face config.json, instead of model (extra keys ignored; Falcon's "
                      "RW names and DeepSeek's MLA fields understood).")


def query_parameters(family: Family, catalog: Catalog) -> list[dict[str, Any]]:
    """The GET query parameters of ``family``'s calculator: its inputs, plus ``config`` where it takes a model."""
    params = [{"name": spec.name, "in": "query", "required": False,
               "description": spec.help, "schema": input_schema(spec, catalog)} for spec in family.inputs]
    if any(spec.kind == "model" for spec in family.inputs):
        params.append({"name": "config", "in": "query", "required": False,
                       "description": CONFIG_DESCRIPTION + " As JSON text.",
                       "schema": {"type": "string", "contentMediaType": "application/json"}})
    return params


def body_schema(family: Family, catalog: Catalog) -> dict[str, Any]:
    """The JSON body a POST to ``family``'s calculator takes: ``inputs``, and a pasted ``config`` for a model."""
    properties = {spec.name: input_schema(spec, catalog) for spec in family.inputs}
    body: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"inputs": {"type": "object", "additionalProperties": False, "properties": properties}},
    }
    if any(spec.kind == "model" for spec in family.inputs):
        body["properties"]["config"] = {"type": "object", "description": CONFIG_DESCRIPTION}
    return body


# Families whose default run shows more steps than some inputs give: the moe family's expert-parallel
# steps exist for a mixture of experts only (a dense model stops after six).
MIN_STEPS = {"moe": 6}


def result_schema(family: Family) -> dict[str, Any]:
    """``calc <family> --json``'s shape with this family's step keys, in order."""
    steps = payloads.family_steps(family.slug)
    return {
        "type": "object",
        "description": f"{family.title}: the JSON of manage.py calc {family.slug} --json.",
        "required": ["family", "inputs", "steps", "notes"],
        "additionalProperties": False,
        "properties": {
            "family": {"const": family.slug},
            "inputs": {"type": "object", "description": "The inputs as cleaned (defaults applied)."},
            "steps": {
                "type": "array",
                "prefixItems": [{"allOf": [ref("Step"), {"properties": {"key": {"const": key},
                                                                         "unit": {"const": unit}}}]}
                                for key, _, unit in steps],
                # Further steps of the same shape follow where the inputs call for them (the formats
                # family's block formats add block_size, scale_bits and effective_bits).
                "items": ref("Step"),
                "minItems": MIN_STEPS.get(family.slug, len(steps)),
            },
            "notes": {"type": "array", "items": {"type": "string"}},
        },
    }


def component_schemas(catalog: Catalog) -> dict[str, Any]:
    """The schema's shared components: the error, the catalog's model and GPU objects and each family's result."""
    number_or_null = {"type": ["number", "null"]}
    per_precision = {"type": "object", "additionalProperties": number_or_null}
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "required": ["error", "field"],
            "additionalProperties": False,
            "properties": {
                "error": {"type": "string", "minLength": 1, "description": "One sentence fit to show a user."},
                "field": {"type": ["string", "null"], "description": "The input at fault, or null."},
            },
        },
        "Step": {
            "type": "object",
            "required": ["key", "label", "value", "unit", "formula", "substituted"],
            "additionalProperties": False,
            "properties": {
                "key": {"type": "string"},
                "label": {"type": "string"},
                "value": {"type": "number", "description": "Full precision; rounding is for display only."},
                "unit": {"type": "string", "enum": STEP_UNITS},
                "formula": {"type": "string", "description": "key = the formula"},
                "substituted": {"type": "string", "description": "The formula with values substituted."},
            },
        },
        "Input": {
            "type": "object",
            "required": ["name", "kind", "type", "default", "help", "unit", "minimum", "maximum",
                         "exclusive_minimum", "choices", "flag"],
            "properties": {
                "name": {"type": "string"},
                "kind": {"enum": list(payloads.JSON_TYPES)},
                "type": {"enum": sorted(set(payloads.JSON_TYPES.values()))},
                "default": {"type": ["string", "number", "null"]},
                "help": {"type": "string"},
                "label": {"type": ["string", "null"]},
                "unit": {"type": ["string", "null"]},
                "minimum": number_or_null,
                "maximum": number_or_null,
                "exclusive_minimum": {"type": "boolean"},
                "choices": {"type": "array", "items": {"type": "string"}},
                "flag": {"type": "string", "description": "The manage.py calc flag."},
            },
        },
        "Family": {
            "type": "object",
            "required": ["slug", "title", "summary", "inputs", "steps", "step_keys", "url"],
            "properties": {
                "slug": {"enum": list(FAMILIES)},
                "title": {"type": "string"},
                "summary": {"type": "string"},
                "inputs": {"type": "array", "items": ref("Input")},
                "accepts_config": {"type": "boolean"},
                "steps": {"type": "array", "items": {
                    "type": "object", "required": ["key", "label", "unit"],
                    "properties": {"key": {"type": "string"}, "label": {"type": "string"},
                                   "unit": {"enum": STEP_UNITS}}}},
                "step_keys": {"type": "array", "items": {"type": "string"}},
                "url": {"type": "string"},
            },
        },
        "FamilyList": {"type": "object", "required": ["families"],
                       "properties": {"families": {"type": "array", "items": ref("Family")}}},
        "ModelSummary": {
            "type": "object",
            "required": ["id", "name", "family", "attention", "total_params", "active_params", "url"],
            "properties": {
                "id": {"enum": list(catalog.models)},
                "name": {"type": "string"},
                "family": {"type": "string"},
                "attention": {"type": "string"},
                "moe": {"type": "boolean"},
                "total_params": {"type": "integer", "description": "Every stored parameter, exact."},
                "active_params": {"type": "integer", "description": "Parameters one token touches, exact."},
                "url": {"type": "string"},
            },
        },
        "ModelList": {"type": "object", "required": ["models"],
                      "properties": {"models": {"type": "array", "items": ref("ModelSummary")}}},
        "Model": {
            "type": "object",
            "required": ["id", "name", "family", "attention", "config", "params", "config_json", "sources"],
            "properties": {
                "id": {"enum": list(catalog.models)},
                "name": {"type": "string", "description": "The Hugging Face repository."},
                "family": {"type": "string"},
                "attention": {"type": "string"},
                "attention_kind": {"enum": ["MHA", "GQA", "MQA", "MLA"]},
                "moe": {"type": "boolean"},
                "config": {"type": "object", "description": "The parsed config: the numbers the formulas read.",
                           "required": ["layers", "heads", "kv_heads", "hidden_size", "head_dim",
                                        "intermediate_size", "vocab_size"],
                           "additionalProperties": {"type": ["integer", "boolean", "string", "array"]}},
                "params": {
                    "type": "object",
                    "required": ["total", "active", "breakdown"],
                    "properties": {
                        "total": {"type": "integer"},
                        "active": {"type": "integer"},
                        "breakdown": {"type": "object", "additionalProperties": {"type": "integer"}},
                    },
                },
                "published_params": {"type": "object"},
                "notes": {"type": "string"},
                "config_json": {"type": "object", "description": "The config.json the entry was read from."},
                "sources": {"type": "array", "items": {"type": "object"}},
            },
        },
        "GpuSummary": {
            "type": "object",
            "required": ["id", "name", "memory_gib", "bandwidth_gb_s", "dense_tflops", "url"],
            "properties": {
                "id": {"enum": list(catalog.gpus)},
                "name": {"type": "string"},
                "vendor": {"type": "string"},
                "memory_gib": {"type": "number"},
                "bandwidth_gb_s": {"type": "number"},
                "dense_tflops": per_precision,
                "url": {"type": "string"},
            },
        },
        "GpuList": {"type": "object", "required": ["gpus"],
                    "properties": {"gpus": {"type": "array", "items": ref("GpuSummary")}}},
        "Gpu": {
            "type": "object",
            "required": ["id", "name", "memory", "bandwidth_gb_s", "dense_tflops", "sparse_tflops", "sources"],
            "properties": {
                "id": {"enum": list(catalog.gpus)},
                "name": {"type": "string"},
                "vendor": {"type": "string"},
                "architecture": {"type": ["string", "null"]},
                "memory": {
                    "type": "object",
                    "required": ["bytes", "mib", "gib", "marketed", "used", "from_driver", "note"],
                    "properties": {
                        "bytes": {"type": "integer"},
                        "mib": {"type": "number"},
                        "gib": {"type": "number"},
                        "marketed": {"type": "string"},
                        "used": {"enum": ["driver_reported", "marketed_decimal_gb"],
                                 "description": "Which figure the calculators use."},
                        "from_driver": {"type": "boolean"},
                        "note": {"type": "string"},
                    },
                },
                "bandwidth_gb_s": {"type": "number", "description": "GB/s (10^9 bytes/s)."},
                "dense_tflops": {**per_precision, "description": "Dense TFLOP/s (TOPS for int8) per precision."},
                "sparse_tflops": {**per_precision, "description": "2:4-sparsity figures; never used."},
                "sparse_note": {"type": "string"},
                "nvlink_gb_s": number_or_null,
                "tdp_w": number_or_null,
                "sources": {"type": "array", "items": {"type": "object"}},
            },
        },
        "Index": {
            "type": "object",
            "required": ["version", "schema", "endpoints", "families"],
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "schema": {"type": "string"},
                "endpoints": {"type": "array", "items": {
                    "type": "object", "required": ["method", "path", "description"],
                    "properties": {"method": {"enum": ["GET", "POST"]}, "path": {"type": "string"},
                                   "description": {"type": "string"}}}},
                "families": {"type": "array", "items": {"type": "string"}},
                "error_shape": {"type": "object"},
            },
        },
    }
    for family in FAMILIES.values():
        schemas[f"CalcResult_{family.slug}"] = result_schema(family)
    schemas.update(simulate_schemas())
    return schemas


def _get(operation_id: str, summary: str, schema: str, *errors: int, parameters=None) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "responses": {"200": {"description": summary, "content": _json(schema)}, **error_responses(*errors)},
    }
    if parameters:
        operation["parameters"] = parameters
    return {"get": operation}


def calc_path(family: Family, catalog: Catalog) -> dict[str, Any]:
    """The OpenAPI path item of ``/api/v1/calc/<family>/``: GET with query parameters, POST with a body."""
    responses = {"200": {"description": f"The steps of {family.title.lower()}.",
                         "content": _json(f"CalcResult_{family.slug}")},
                 **error_responses(400)}
    description = (f"{family.summary} Same engine, inputs and step keys as manage.py calc {family.slug} "
                   f"--json; every input defaults to the reference stack.")
    return {
        "get": {
            "operationId": f"calc_{family.slug}",
            "summary": family.title,
            "description": description,
            "tags": ["calculators"],
            "parameters": query_parameters(family, catalog),
            "responses": responses,
        },
        "post": {
            "operationId": f"calc_{family.slug}_post",
            "summary": f"{family.title} (inputs in a JSON body)",
            "description": description + " Computes and stores nothing; the body may carry a pasted config.",
            "tags": ["calculators"],
            "requestBody": {"required": False,
                            "content": {"application/json": {"schema": body_schema(family, catalog)}}},
            "responses": responses,
        },
    }


@lru_cache(maxsize=1)
def openapi_schema() -> dict[str, Any]:
    """The whole OpenAPI 3.1 document (built once per process)."""
    catalog = payloads.catalog()
    model_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
                "description": "A model id: " + ", ".join(catalog.models)}
    gpu_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
              "description": "A GPU id: " + ", ".join(catalog.gpus)}
    slug = {"name": "family", "in": "path", "required": True, "schema": {"type": "string"},
            "description": "A family slug: " + ", ".join(FAMILIES)}
    paths: dict[str, Any] = {
        f"{PREFIX}/": _get("index", "The endpoints of this API", "Index"),
        f"{PREFIX}/schema/": {"get": {"operationId": "schema", "summary": "This OpenAPI 3.1 document",
                                      "responses": {"200": {"description": "The OpenAPI document.",
                                                            "content": {"application/json": {
                                                                "schema": {"type": "object"}}}}}}},
        f"{PREFIX}/models/": _get("models", "The models of the catalog", "ModelList"),
        f"{PREFIX}/models/{{id}}/": _get("model", "One model", "Model", 404, parameters=[model_id]),
        f"{PREFIX}/gpus/": _get("gpus", "The GPUs of the catalog", "GpuList"),
        f"{PREFIX}/gpus/{{id}}/": _get("gpu", "One GPU", "Gpu", 404, parameters=[gpu_id]),
        f"{PREFIX}/families/": _get("families", "The calculator families", "FamilyList"),
        f"{PREFIX}/families/{{family}}/": _get("family", "One calculator family", "Family", 404,
                                               parameters=[slug]),
    }
    for family in FAMILIES.values():
        paths[f"{PREFIX}/calc/{family.slug}/"] = calc_path(family, catalog)
    paths[f"{PREFIX}/simulate/"] = simulate_path(catalog, input_schema, error_responses, _json)
    paths[f"{PREFIX}/simulate/results/{{id}}/"] = simulate_result_path(error_responses, _json)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "LLM serving prep API",
            "version": payloads.API_VERSION,
            "description": ("Read-only JSON API over the catalog of models and GPUs and every calculator "
                            "family. /api/v1/calc/<family>/ returns exactly what manage.py calc <family> "
                            "--json prints. Errors: {\"error\": one sentence, \"field\": the input at fault "
                            "or null}, 400 for bad parameters, 404 for unknown families, ids or paths."),
        },
        "paths": paths,
        "components": {"schemas": component_schemas(catalog)},
        "tags": [{"name": "calculators", "description": "One path per calculator family."},
                 {"name": "simulator", "description": "The serving simulator."}],
    }

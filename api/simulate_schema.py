"""The OpenAPI pieces of ``/api/v1/simulate/``: its parameters, body and result (docs/architecture.md §13).

The query parameters are the simulator's inputs (:data:`calculators.simulation.INPUTS`,
with their types, bounds, enums and defaults) plus ``sweep``, ``concurrency_sweep``, ``trace`` and ``config``;
a POST carries the same names in ``{"inputs": {...}, "config": {...}}``. The result is
``manage.py simulate --json``'s: one run (``inputs``, ``summary``, ``series``), a sweep of rates
(``inputs``, ``sweep``, ``knee_req_s``) or of closed-loop concurrencies (``inputs``, ``sweep``,
``knee_concurrency``).
"""

from __future__ import annotations

from typing import Any

from calculators.engine.catalog import Catalog
from calculators.simulation import INPUTS, MAX_SWEEP_POINTS

TEXT_PARAMETERS = {
    "sweep": ("Arrival rates to sweep, req/s, comma-separated (at most "
              f"{MAX_SWEEP_POINTS}); the result is then the sweep and its knee."),
    "concurrency_sweep": ("Closed-loop concurrencies to sweep, clients, comma-separated (at most "
                          f"{MAX_SWEEP_POINTS}; with think_time_s); the result is then the sweep and its knee in "
                          "clients (knee_concurrency)."),
    "trace": "A CSV trace with the header arrival_s,prompt_tokens,output_tokens (instead of generated arrivals).",
    "config": "A model's Hugging Face config.json, instead of model, as JSON text.",
}

_NUMBER = {"type": ["number", "null"]}
_DISTRIBUTION = {"type": "object", "required": ["mean", "p50", "p90", "p99"],
                 "properties": {key: _NUMBER for key in ("mean", "p50", "p90", "p95", "p99")}}
SUMMARY = {
    "type": "object",
    "description": "One run's results; latencies in ms over the completed requests.",
    "required": ["arrived", "completed", "in_flight", "output_tokens", "ttft_ms", "tpot_ms", "e2e_ms",
                 "throughput_req_s", "output_tok_s", "goodput_req_s", "preemptions", "kv_peak_fraction",
                 "mean_in_system"],
    "properties": {
        "rate_req_s": _NUMBER, "duration_s": {"type": "number"},
        "concurrency": {"type": ["integer", "null"], "description": "A closed loop's clients (null: open loop)."},
        "arrived": {"type": "integer"}, "completed": {"type": "integer"}, "in_flight": {"type": "integer"},
        "output_tokens": {"type": "integer"}, "ttft_ms": _DISTRIBUTION, "tpot_ms": _DISTRIBUTION,
        "itl_ms": _DISTRIBUTION, "e2e_ms": _DISTRIBUTION, "throughput_req_s": {"type": "number"},
        "output_tok_s": {"type": "number"},
        "goodput_req_s": {"type": "number", "description": "Requests that arrived in the run and met both targets, "
                          "per second; one still running at the end counts if it can still meet them."},
        "ttft_missed": {"type": "integer", "description": "Requests of the window that missed (or can no longer "
                        "meet) the TTFT target."},
        "tpot_missed": {"type": "integer", "description": "Requests of the window that missed (or can no longer "
                        "meet) the TPOT target."},
        "preemptions": {"type": "integer"}, "kv_peak_fraction": {"type": "number"},
        "mean_in_system": {"type": "number"}, "steps": {"type": "integer"},
        "utilisation": {"type": "number", "description": "Mean running sequences ÷ what the replicas can hold "
                        "(max_num_seqs, or the KV cache over a request's mean length)."},
        "slots": {"type": ["number", "null"], "description": "What the replicas can run at once (max_num_seqs, "
                  "or the KV cache over a request's mean length)."},
        "queue_growing": {"type": "boolean", "description": "The run ended with more requests in flight than the "
                          "replicas can run at once: a queue behind a full batch, not sustained over the run; such "
                          "a rate is never the knee."},
        "band": {"type": "object", "description": "Above a utilisation of 0.8, when the efficiencies are the "
                 "calibration table's: the same run at the row's optimistic and pessimistic ends.",
                 "properties": {end: {"type": "object", "additionalProperties": {"type": ["number", "null"]}}
                                for end in ("optimistic", "pessimistic")}},
    },
}
SERIES = {
    "type": "object",
    "description": "The run in 120 even intervals: KV-cache use (peak), running and waiting at the end, "
                   "preemptions in the interval.",
    "required": ["t_s", "kv_used_fraction", "running", "waiting", "preemptions"],
    "additionalProperties": {"type": "array", "items": {"type": "number"}},
}


PENDING = {
    "type": "object", "required": ["status", "result_url", "message"], "additionalProperties": False,
    "description": "With a broker, a call that must simulate is run by a worker: ask result_url (also in "
                   "Location) after Retry-After seconds; it answers 202 until the result is there.",
    "properties": {"status": {"const": "pending"}, "result_url": {"type": "string"}, "message": {"type": "string"}},
}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before asking again.",
                               "schema": {"type": "integer", "minimum": 1}}}


def simulate_schemas() -> dict[str, Any]:
    """Component schemas: ``SimulateSummary``, ``SimulateResult`` (a run or a sweep), ``SimulatePending``."""
    inputs = {"type": "object", "description": "The inputs as cleaned (defaults applied), with the KV budget."}
    return {
        "SimulatePending": PENDING,
        "SimulateSummary": SUMMARY,
        "SimulateResult": {
            "oneOf": [
                {"type": "object", "required": ["inputs", "summary", "series"], "additionalProperties": False,
                 "properties": {"inputs": inputs, "summary": {"$ref": "#/components/schemas/SimulateSummary"},
                                "series": SERIES}},
                {"type": "object", "required": ["inputs", "sweep", "knee_req_s"], "additionalProperties": False,
                 "properties": {"inputs": inputs,
                                "sweep": {"type": "array", "items": {"$ref": "#/components/schemas/SimulateSummary"}},
                                "knee_req_s": _NUMBER,
                                "knee_text": {"type": "string", "description": "The knee in words: \"at least X "
                                              "req/s (the highest rate swept)\" when the highest swept rate meets "
                                              "the target."}}},
                {"type": "object", "required": ["inputs", "sweep", "knee_concurrency"], "additionalProperties": False,
                 "description": "A sweep of closed-loop concurrencies: the knee is the highest concurrency whose "
                                "goodput is at least 0.9 × the requests its clients sent per second.",
                 "properties": {"inputs": inputs,
                                "sweep": {"type": "array", "items": {"$ref": "#/components/schemas/SimulateSummary"}},
                                "knee_concurrency": {"type": ["integer", "null"]}}},
            ],
        },
    }


def _responses(error_responses, json_content, *errors: int) -> dict[str, Any]:
    """200 (the result), 202 (pending, with Location and Retry-After) and the error ``errors``."""
    responses = {"200": {"description": "The simulation: manage.py simulate --json's JSON.",
                         "content": json_content("SimulateResult")},
                 "202": {"description": "A worker is simulating the call: its result will be at result_url.",
                         "content": json_content("SimulatePending"),
                         "headers": {**RETRY_AFTER, "Location": {"description": "result_url",
                                                                 "schema": {"type": "string"}}}},
                 **error_responses(*errors)}
    if "429" in responses:
        responses["429"] = {**responses["429"], "headers": RETRY_AFTER}
    return responses


def simulate_result_path(error_responses, json_content) -> dict[str, Any]:
    """The path item of ``/api/v1/simulate/results/{id}/``: a queued call's outcome."""
    token = {"name": "id", "in": "path", "required": True, "description": "The id in a 202's result_url.",
             "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}
    return {"get": {"operationId": "simulate_result", "summary": "A queued simulation's result",
                    "description": "The outcome of a call that simulate answered 202: 200 with the result, 400 "
                                   "with the refusal, 202 while a worker has it, 404 when unknown or expired.",
                    "tags": ["simulator"], "parameters": [token],
                    "responses": _responses(error_responses, json_content, 400, 404)}}


def simulate_path(catalog: Catalog, input_schema, error_responses, json_content) -> dict[str, Any]:
    """The path item of ``/api/v1/simulate/`` (GET with a query string, POST with a body)."""
    schemas = {spec.name: input_schema(spec, catalog) for spec in INPUTS}
    schemas.update({name: {"type": "string", "description": text} for name, text in TEXT_PARAMETERS.items()})
    parameters = [{"name": name, "in": "query", "required": False, "description": schema["description"],
                   "schema": schema} for name, schema in schemas.items()]
    body = {"type": "object", "additionalProperties": False,
            "properties": {"inputs": {"type": "object", "additionalProperties": False, "properties": schemas},
                           "config": {"type": "object", "description": "A model's config.json, instead of model."}}}
    responses = _responses(error_responses, json_content, 400, 429)
    description = ("Simulate the serving of a workload (docs/architecture.md §13): "
                   "manage.py simulate --json over HTTP. Results, and refusals, are cached by the inputs' hash; a "
                   "call may simulate a bounded number of engine steps (fewer when not logged in). A call that "
                   "must simulate counts against its caller's limit (per address when anonymous, per account when "
                   "logged in): over it, 429 with Retry-After. With a broker such a call answers 202 with the "
                   "result's URL.")
    return {
        "get": {"operationId": "simulate", "summary": "Serving simulator", "description": description,
                "tags": ["simulator"], "parameters": parameters, "responses": responses},
        "post": {"operationId": "simulate_post", "summary": "Serving simulator (inputs in a JSON body)",
                 "description": description + " The body may carry a trace or a pasted config.",
                 "tags": ["simulator"],
                 "requestBody": {"required": False, "content": {"application/json": {"schema": body}}},
                 "responses": responses},
    }

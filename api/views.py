"""Views of the read-only JSON API (``/api/v1/``).

Every response is JSON. Errors are ``{"error": "<one sentence>", "field": <input
name or null>}``: 400 for a bad parameter (unknown input, value out of range,
unknown model or GPU id given as an input, a bad pasted config, a malformed
body), 404 for an unknown family, model, GPU or path, 405 for a method the
endpoint does not take. The engine's :class:`EngineError` carries the sentence
and the field; any other exception is a bug and is left to surface.

``/api/v1/calc/<family>/`` runs ``FAMILIES[family].run(raw)`` on the query
string (values as text, exactly as ``manage.py calc`` passes its flags) or on a
POSTed ``{"inputs": {...}, "config": {...}}``, and returns ``Result.to_json()``,
the very dict ``calc <family> --json`` prints. POST exists only so a pasted
``config.json`` need not ride in a query string: it computes and stores nothing.
The API's views are CSRF-exempt (see :func:`methods`): none has an effect.
"""

from __future__ import annotations

import json
from functools import wraps
from typing import Any, Callable

from axes.helpers import get_client_ip_address
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve, reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.csrf import csrf_exempt

from api import payloads
from api.schema import openapi_schema
from calculators import simulation
from calculators.engine.errors import ConfigError, EngineError
from calculators.families import FAMILIES

# Catalog endpoints change only with a deploy; calculator results are pure functions of their inputs.
CATALOG_MAX_AGE = 3600
CALC_MAX_AGE = 300

POST_KEYS = ("inputs", "config")


def error(message: str, field: str | None = None, status: int = 400) -> JsonResponse:
    """The API's error body: one sentence and the offending input (or ``None``)."""
    return JsonResponse({"error": message, "field": field}, status=status)


def methods(*allowed: str) -> Callable:
    """Answer other methods with a JSON 405 (GET implies HEAD).

    The views are CSRF-exempt: none changes anything. The GET-only ones answer
    any unsafe method with this 405 (without the exemption a token-less POST
    would get Django's HTML 403 page instead); calc's POST computes and stores
    nothing.
    """
    allowed_set = set(allowed) | ({"HEAD"} if "GET" in allowed else set())
    allow_header = ", ".join(sorted(allowed_set))

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in allowed_set:
                response = error(f"{request.method} is not allowed here; use {' or '.join(allowed)}.",
                                 status=405)
                response["Allow"] = allow_header
                return response
            return view(request, *args, **kwargs)
        return csrf_exempt(wrapper)
    return decorator


def cached(max_age: int) -> Callable:
    """Mark a successful (200) response ``Cache-Control: public, max-age=…``."""
    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            response = view(request, *args, **kwargs)
            if response.status_code == 200:
                patch_cache_control(response, public=True, max_age=max_age)
            return response
        return wrapper
    return decorator


def _pattern(name: str, placeholder: str) -> str:
    """An endpoint's path with a placeholder, e.g. ``/api/v1/models/{id}/`` (reverse would quote the braces)."""
    return reverse(f"api:{name}", args=["PLACEHOLDER"]).replace("PLACEHOLDER", placeholder)


def ok(payload: Any) -> JsonResponse:
    """A 200 JSON response (lists allowed)."""
    return JsonResponse(payload, safe=False)


# --- index and catalog ---------------------------------------------------------------------------

@methods("GET")
@cached(CATALOG_MAX_AGE)
def index(request: HttpRequest) -> JsonResponse:
    """``/api/v1/``: the endpoints, the families and where the schema is."""
    families = list(FAMILIES)
    endpoints = [
        ("GET", reverse("api:index"), "this list"),
        ("GET", reverse("api:schema"), "the OpenAPI 3.1 schema of this API"),
        ("GET", reverse("api:models"), "the models of the catalog, with exact parameter counts"),
        ("GET", _pattern("model", "{id}"), "one model: parsed config, parameter counts, raw "
                                                      "config.json, sources"),
        ("GET", reverse("api:gpus"), "the GPUs of the catalog"),
        ("GET", _pattern("gpu", "{id}"), "one GPU: memory (bytes, MiB, GiB, which figure is "
                                                    "used), bandwidth, dense and sparse TFLOP/s, sources"),
        ("GET", reverse("api:families"), "the calculator families: inputs, defaults, bounds, step keys"),
        ("GET", _pattern("family", "{family}"), "one calculator family"),
        ("GET", _pattern("calc", "{family}"), "run a family on ?input=value…; the JSON of "
                                                         "manage.py calc FAMILY --json"),
        ("POST", _pattern("calc", "{family}"), 'run a family on {"inputs": {...}, "config": '
                                                          '{...}} (a pasted config.json); same JSON'),
        ("GET", reverse("api:simulate"), "simulate serving a workload on ?input=value… (sweep=R1,R2 or "
                                         "concurrency_sweep=C1,C2 for a sweep and its knee); the JSON of manage.py "
                                         "simulate --json"),
        ("POST", reverse("api:simulate"), 'the same on {"inputs": {...}} (a trace, a pasted config)'),
        ("GET", reverse("api:simulate") + "results/{id}/", "a simulation a worker is running (with a broker, simulate "
                                                     "answers 202 and this result_url)"),
    ]
    return ok({
        "name": "LLM serving prep API",
        "version": payloads.API_VERSION,
        "schema": reverse("api:schema"),
        "endpoints": [{"method": m, "path": p, "description": d} for m, p, d in endpoints],
        "families": families,
        "error_shape": {"error": "one sentence", "field": "the input at fault, or null"},
    })


@methods("GET")
@cached(CATALOG_MAX_AGE)
def models(request: HttpRequest) -> JsonResponse:
    """``/api/v1/models/``."""
    return ok({"models": [payloads.model_summary(m) for m in payloads.catalog().models.values()]})


@methods("GET")
@cached(CATALOG_MAX_AGE)
def model(request: HttpRequest, model_id: str) -> JsonResponse:
    """``/api/v1/models/<id>/``."""
    catalog = payloads.catalog()
    if model_id not in catalog.models:
        return error(f"Unknown model '{model_id}'; known models: {', '.join(catalog.models)}.", status=404)
    return ok(payloads.model_detail(catalog.models[model_id]))


@methods("GET")
@cached(CATALOG_MAX_AGE)
def gpus(request: HttpRequest) -> JsonResponse:
    """``/api/v1/gpus/``."""
    return ok({"gpus": [payloads.gpu_summary(g) for g in payloads.catalog().gpus.values()]})


@methods("GET")
@cached(CATALOG_MAX_AGE)
def gpu(request: HttpRequest, gpu_id: str) -> JsonResponse:
    """``/api/v1/gpus/<id>/``."""
    catalog = payloads.catalog()
    if gpu_id not in catalog.gpus:
        return error(f"Unknown GPU '{gpu_id}'; known GPUs: {', '.join(catalog.gpus)}.", status=404)
    return ok(payloads.gpu_detail(catalog.gpus[gpu_id]))


@methods("GET")
@cached(CATALOG_MAX_AGE)
def families(request: HttpRequest) -> JsonResponse:
    """``/api/v1/families/``."""
    catalog = payloads.catalog()
    return ok({"families": [payloads.family_payload(f, catalog) for f in FAMILIES.values()]})


def unknown_family(slug: str) -> JsonResponse:
    """The 404 for a calculator family ``slug`` that does not exist, naming the ones that do."""
    return error(f"Unknown calculator family '{slug}'; known families: {', '.join(FAMILIES)}.", status=404)


@methods("GET")
@cached(CATALOG_MAX_AGE)
def family(request: HttpRequest, slug: str) -> JsonResponse:
    """``/api/v1/families/<slug>/``."""
    if slug not in FAMILIES:
        return unknown_family(slug)
    return ok(payloads.family_payload(FAMILIES[slug], payloads.catalog()))


@methods("GET")
@cached(CATALOG_MAX_AGE)
def schema(request: HttpRequest) -> JsonResponse:
    """``/api/v1/schema/``: the OpenAPI 3.1 document."""
    return ok(openapi_schema())


# --- calculators ---------------------------------------------------------------------------------

class BadRequest(Exception):
    """A malformed request (not an engine error): its message and field become the 400."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def query_inputs(request: HttpRequest) -> dict[str, Any]:
    """The query string as raw inputs: text values, one per name."""
    raw: dict[str, Any] = {}
    for name, values in request.GET.lists():
        if len(values) > 1:
            raise BadRequest(f"{name} is given {len(values)} times; give it once.", field=name)
        raw[name] = values[0]
    return raw


def body_inputs(request: HttpRequest) -> dict[str, Any]:
    """A POSTed ``{"inputs": {...}, "config": {...}}`` as raw inputs."""
    try:
        body = request.body
    except RequestDataTooBig:
        raise BadRequest("The request body is too large for a config.json.") from None
    try:
        data = json.loads(body.decode("utf-8")) if body.strip() else {}
    except UnicodeDecodeError:
        raise BadRequest("The request body is not UTF-8 text.") from None
    except RecursionError:
        raise BadRequest("The request body is nested too deeply.") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"The request body is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}).") from None
    except ValueError:
        # An integer past Python's 4,300-digit limit on reading one (sys.get_int_max_str_digits()).
        raise BadRequest("The request body holds an integer thousands of digits long.") from None
    if not isinstance(data, dict):
        raise BadRequest('The request body must be a JSON object: {"inputs": {...}, "config": {...}}.')
    unknown = sorted(set(data) - set(POST_KEYS))
    if unknown:
        raise BadRequest(f"Unknown key {', '.join(unknown)} in the body; expected inputs and config.",
                         field=unknown[0])
    inputs = data.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise BadRequest('"inputs" must be a JSON object of input names and values.', field=None)
    raw = dict(inputs)
    if data.get("config") is not None:
        if raw.get("config") is not None:
            raise BadRequest("Give the config once: at the top level or in inputs, not both.", field="config")
        raw["config"] = data["config"]
    return raw


def _field(exc: EngineError, raw: dict[str, Any]) -> str | None:
    """The input an engine error is about (``None`` when it is about no one input).

    A :class:`ConfigError` names a Hugging Face key; the input at fault is then
    the pasted ``config`` (or the catalog ``model`` when none was pasted).
    """
    if isinstance(exc, ConfigError):
        return "config" if raw.get("config") not in (None, "") else "model"
    return getattr(exc, "field", None)


@methods("GET", "POST")
def calc(request: HttpRequest, slug: str) -> JsonResponse:
    """``/api/v1/calc/<family>/``: ``calc <family> --json``'s JSON, or a 400 naming the input at fault."""
    chosen = FAMILIES.get(slug)
    if chosen is None:
        return unknown_family(slug)
    try:
        raw = query_inputs(request) if request.method in ("GET", "HEAD") else body_inputs(request)
    except BadRequest as exc:
        return error(str(exc), exc.field)
    takes_model = any(spec.kind == "model" for spec in chosen.inputs)
    if takes_model and raw.get("model") not in (None, "") and raw.get("config") not in (None, ""):
        return error("Give model or config, not both.", field="config")
    try:
        result = simulation.run_drill(chosen, raw)
    except EngineError as exc:
        return error(str(exc), _field(exc, raw))
    response = ok(result.to_json())
    if request.method in ("GET", "HEAD"):
        patch_cache_control(response, public=True, max_age=CALC_MAX_AGE)
    else:
        patch_cache_control(response, no_store=True)
    return response


@methods("GET", "POST")
def simulate(request: HttpRequest) -> JsonResponse:
    """``/api/v1/simulate/``: ``manage.py simulate --json``'s JSON, or a 400 naming the input at fault.

    Through :func:`calculators.simulation.api_call`: each rate's run is cached by the inputs' hash, and so
    is a refusal; a call may simulate at most ``SIMULATOR_WEB_MAX_STEPS`` engine steps in all
    (``SIMULATOR_ANON_MAX_STEPS`` when not logged in). A call that must simulate counts against its caller
    (their address when anonymous, their account when logged in): over the limit, 429 with ``Retry-After``.
    With a broker, such a call answers 202 with ``result_url`` (and ``Location``), where the result will be.
    """
    try:
        raw = query_inputs(request) if request.method in ("GET", "HEAD") else body_inputs(request)
    except BadRequest as exc:
        return error(str(exc), exc.field)
    if raw.get("model") not in (None, "") and raw.get("config") not in (None, ""):
        return error("Give model or config, not both.", field="config")
    anonymous = not request.user.is_authenticated
    caller = f"addr:{get_client_ip_address(request)}" if anonymous else f"user:{request.user.pk}"
    try:
        outcome = simulation.api_call(raw, caller=caller, anonymous=anonymous)
    except EngineError as exc:
        return error(str(exc), _field(exc, raw))
    if outcome.retry_after_s is not None:
        who = "this address" if anonymous else "your account"
        response = error(f"Too many simulations from {who}: try again in {outcome.retry_after_s} s (results "
                         f"already computed are answered at once; logged-in users may run more).", status=429)
        response["Retry-After"] = str(outcome.retry_after_s)
        return response
    return _simulation_response(request, outcome)


@methods("GET")
def simulate_result(request: HttpRequest, token: str) -> JsonResponse:
    """``/api/v1/simulate/results/<token>/``: a queued call's outcome, 202 while a worker has it, 404 when
    unknown or expired."""
    outcome = simulation.api_outcome(token)
    if outcome is None:
        return error("No simulation has this id: it was never asked for, or its result expired after a day.",
                     status=404)
    return _simulation_response(request, outcome)


def _simulation_response(request: HttpRequest, outcome) -> JsonResponse:
    """200 with the result, 400 with the refusal, or 202 with where the result will be."""
    if outcome.pending:
        url = reverse("api:simulate_result", args=[outcome.token])
        response = JsonResponse({"status": "pending", "result_url": url,
                                 "message": "A worker is simulating this call: ask result_url for its result."},
                                status=202)
        response["Location"] = url
        response["Retry-After"] = "1"
        patch_cache_control(response, no_store=True)
        return response
    if outcome.error is not None:
        return error(outcome.error, outcome.field)
    response = ok(outcome.result)
    if request.method in ("GET", "HEAD"):
        patch_cache_control(response, public=True, max_age=CALC_MAX_AGE)
    else:
        patch_cache_control(response, no_store=True)
    return response


# --- anything else under /api/v1/ ----------------------------------------------------------------

@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """A JSON 404 for any other path; a GET missing its trailing slash is redirected to it."""
    if not request.path.endswith("/") and request.method in ("GET", "HEAD"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.url_name != "not_found":
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    return error(f"No API endpoint at {request.path}; see {reverse('api:index')} for the list.", status=404)

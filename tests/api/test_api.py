"""The read-only JSON API at ``/api/v1/`` (issue 11; docs/architecture.md §10).

Real values through the API (the reference stack's 53 and 191 users, the H100's
ridge point and decode ceiling); the calculator endpoint's JSON equal to
``manage.py calc FAMILY --json`` for every family, on the defaults and on drawn
inputs; every error path with its message and field; the OpenAPI 3.1 document
valid (openapi-spec-validator), listing every family and describing the real
responses; hypothesis fuzzing of query strings and bodies (never a 500, every
error a sentence).
"""

import io
import json
import random
from functools import lru_cache

import pytest
from django.core.management import call_command
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from calculators.engine.catalog import default_catalog
from calculators.families import FAMILIES

API = "/api/v1"
CATALOG = default_catalog()
REFERENCE_CONFIG = dict(CATALOG.model("llama-3.1-8b").raw_config)


def get(path: str, client: Client | None = None, **params):
    return (client or Client()).get(f"{API}{path}", params)


def post(path: str, body, client: Client | None = None):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return (client or Client()).post(f"{API}{path}", data, content_type="application/json")


def values(payload: dict) -> dict:
    return {step["key"]: step["value"] for step in payload["steps"]}


def calc_json(family: str, inputs: dict | None = None, config_file: str | None = None) -> dict:
    """``manage.py calc FAMILY [flags] --json`` in-process, flags from snake-case ``inputs``."""
    args = [family]
    for name, value in (inputs or {}).items():
        args += ["--" + name.replace("_", "-"), str(value)]
    if config_file:
        args += ["--config", config_file]
    out = io.StringIO()
    call_command("calc", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def assert_error(response, status: int, field, *fragments: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert list(body) == ["error", "field"]
    assert body["field"] == field
    message = body["error"]
    assert isinstance(message, str) and message.strip() and message.endswith((".", "?"))
    assert "Traceback" not in message
    for fragment in fragments:
        assert fragment in message, message
    return body


@lru_cache(maxsize=1)
def schema() -> dict:
    return Client().get(f"{API}/schema/").json()


def validator(component: str) -> Draft202012Validator:
    """A JSON Schema 2020-12 validator for one component of the served OpenAPI document."""
    return Draft202012Validator({"$ref": f"#/components/schemas/{component}",
                                 "components": schema()["components"]})


# --- real values ---------------------------------------------------------------------------------

def test_ladder_through_the_api_is_the_reference_stack():
    response = get("/calc/ladder/")
    assert response.status_code == 200
    v = values(response.json())
    assert v["users_worst_case"] == 53
    assert v["users_paged"] == 191
    assert round(v["weights_gib"], 2) == 14.96
    assert v["kv_bytes_per_token"] == 131_072
    assert v["card_gib"] == 79.6474609375  # 81,559 MiB, the driver's total


def test_roofline_ridge_point_of_the_h100():
    response = get("/calc/roofline/", gpu="h100-sxm5-80gb", precision="bf16")
    v = values(response.json())
    assert round(v["ridge_flop_per_byte"], 1) == 295.3  # 989.4 TFLOP/s ÷ 3,350 GB/s
    assert v["ridge_flop_per_byte"] == pytest.approx(989.4e12 / 3350e9, rel=1e-12)


def test_decode_ceiling_of_the_reference_stack():
    v = values(get("/calc/decode/").json())
    assert round(v["ceiling_tok_s"], 1) == 208.6  # 3,350 GB/s ÷ 16,060,522,496 B
    assert round(v["realistic_low_tok_s"], 1) == 135.6
    assert round(v["realistic_high_tok_s"], 1) == 177.3


def test_query_values_reach_the_engine():
    v = values(get("/calc/ladder/", context=4096, kv_dtype="fp8").json())
    assert v["kv_bytes_per_token"] == 65_536
    assert v["per_user_gib"] == pytest.approx(0.25, rel=1e-12)


# --- the same JSON as calc --json ----------------------------------------------------------------

@pytest.mark.parametrize("family", list(FAMILIES))
def test_calc_endpoint_equals_calc_json_on_the_defaults(family):
    response = get(f"/calc/{family}/")
    assert response.status_code == 200
    assert response.json() == calc_json(family)


@pytest.mark.parametrize("family", [slug for slug, f in FAMILIES.items() if f.generate])
@pytest.mark.parametrize("seed", [1, 7])
def test_calc_endpoint_equals_calc_json_on_drawn_inputs(family, seed):
    inputs = FAMILIES[family].generate(random.Random(seed), CATALOG)
    expected = calc_json(family, inputs)
    assert get(f"/calc/{family}/", **{k: str(v) for k, v in inputs.items()}).json() == expected
    # Typed JSON values in a POST body give the same steps (only the echo of text inputs may differ).
    posted = post(f"/calc/{family}/", {"inputs": inputs})
    assert posted.status_code == 200
    assert posted.json()["steps"] == expected["steps"]
    assert posted.json()["notes"] == expected["notes"]


def test_every_family_is_covered():
    assert len(FAMILIES) >= 12
    assert all(FAMILIES[slug].generate for slug in FAMILIES)


@pytest.mark.parametrize("family", ["ladder", "kv", "params", "weights", "decode"])
def test_pasted_config_equals_calc_with_config_file(family, tmp_path):
    config = dict(REFERENCE_CONFIG, num_key_value_heads=4)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    expected = calc_json(family, config_file=str(path))
    assert post(f"/calc/{family}/", {"config": config}).json() == expected
    assert post(f"/calc/{family}/", {"inputs": {"config": config}}).json() == expected
    assert get(f"/calc/{family}/", config=json.dumps(config)).json() == expected


def test_pasted_config_changes_the_numbers():
    config = dict(REFERENCE_CONFIG, num_key_value_heads=4)
    assert values(post("/calc/kv/", {"config": config}).json())["kv_bytes_per_token"] == 65_536


# --- catalog endpoints ---------------------------------------------------------------------------

def test_index_lists_the_endpoints_and_families():
    response = get("/")
    assert response.status_code == 200
    body = response.json()
    paths = {endpoint["path"] for endpoint in body["endpoints"]}
    assert {f"{API}/", f"{API}/schema/", f"{API}/models/", f"{API}/models/{{id}}/", f"{API}/gpus/",
            f"{API}/gpus/{{id}}/", f"{API}/families/", f"{API}/calc/{{family}}/"} <= paths
    assert body["families"] == list(FAMILIES)
    assert body["schema"] == f"{API}/schema/"


def test_models_list_has_exact_parameter_counts():
    body = get("/models/").json()
    by_id = {model["id"]: model for model in body["models"]}
    assert list(by_id) == list(CATALOG.models)
    assert by_id["llama-3.1-8b"]["total_params"] == 8_030_261_248
    assert by_id["mixtral-8x7b-v0.1"]["active_params"] < by_id["mixtral-8x7b-v0.1"]["total_params"]
    assert by_id["llama-3.1-8b"]["url"] == f"{API}/models/llama-3.1-8b/"


def test_model_detail():
    body = get("/models/llama-3.1-8b/").json()
    assert body["id"] == "llama-3.1-8b"
    assert body["family"] == "llama"
    assert body["attention"] == "GQA"
    assert body["config"]["layers"] == 32
    assert body["config"]["kv_heads"] == 8
    assert body["config"]["head_dim"] == 128
    assert body["params"]["total"] == 8_030_261_248
    assert body["params"]["active"] == 8_030_261_248
    assert sum(v for k, v in body["params"]["breakdown"].items() if k != "mlp_experts_active") == 8_030_261_248
    assert body["config_json"] == REFERENCE_CONFIG
    assert body["sources"] and all(isinstance(source, dict) for source in body["sources"])


def test_model_detail_of_an_mla_moe_model():
    body = get("/models/deepseek-v3/").json()
    assert body["attention_kind"] == "MLA"
    assert body["moe"] is True
    assert body["params"]["active"] < body["params"]["total"]


def test_gpu_detail_says_which_memory_figure_is_used_and_keeps_sparse_apart():
    body = get("/gpus/h100-sxm5-80gb/").json()
    memory = body["memory"]
    assert memory["bytes"] == 81_559 * 2**20
    assert memory["mib"] == 81_559
    assert memory["gib"] == 79.6474609375
    assert memory["used"] == "driver_reported" and memory["from_driver"] is True
    assert memory["marketed"] == "80 GB HBM3"
    assert body["bandwidth_gb_s"] == 3350
    assert body["dense_tflops"]["bf16"] == 989.4
    assert body["sparse_tflops"]["bf16"] == 1978.9
    assert "sparse" not in json.dumps(body["dense_tflops"])
    assert body["sources"]


def test_a_gpu_without_a_driver_total_uses_the_marketed_capacity():
    marketed = [g for g in CATALOG.gpus.values() if not g.memory_from_driver]
    if not marketed:
        pytest.skip("every GPU of the catalog has a driver-reported total")
    body = get(f"/gpus/{marketed[0].id}/").json()
    assert body["memory"]["used"] == "marketed_decimal_gb"
    assert body["memory"]["bytes"] == int(marketed[0].marketed_gb * 10**9)


def test_gpus_list():
    body = get("/gpus/").json()
    assert [gpu["id"] for gpu in body["gpus"]] == list(CATALOG.gpus)


def test_families_list_inputs_and_step_keys():
    body = get("/families/").json()
    by_slug = {family["slug"]: family for family in body["families"]}
    assert list(by_slug) == list(FAMILIES)
    ladder = by_slug["ladder"]
    assert ladder["step_keys"] == ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib",
                                   "kv_bytes_per_token", "per_user_gib", "users_worst_case", "users_paged"]
    inputs = {spec["name"]: spec for spec in ladder["inputs"]}
    assert inputs["utilization"] == {**inputs["utilization"], "kind": "float", "type": "number", "default": 0.9,
                                     "minimum": 0.01, "maximum": 1, "exclusive_minimum": False}
    assert inputs["context"]["unit"] == "tok" and inputs["context"]["type"] == "integer"
    assert inputs["kv_dtype"]["choices"] == ["fp32", "bf16", "fp16", "fp8", "int8", "nvfp4", "mxfp4"]
    assert inputs["model"]["choices"] == list(CATALOG.models)
    assert inputs["gpu"]["default"] == "h100-sxm5-80gb"
    assert inputs["reserve_gib"]["flag"] == "--reserve-gib"
    assert ladder["accepts_config"] is True and by_slug["fleet"]["accepts_config"] is False
    for slug, family in by_slug.items():
        assert family["step_keys"] == [step["key"] for step in calc_json(slug)["steps"]]
    assert get("/families/decode/").json() == by_slug["decode"]


@pytest.mark.parametrize("path", ["/", "/models/", "/models/llama-3.1-8b/", "/gpus/", "/gpus/l4/",
                                  "/families/", "/families/ladder/", "/schema/"])
def test_catalog_endpoints_are_cacheable(path):
    response = get(path)
    assert response.status_code == 200
    cache = response["Cache-Control"]
    assert "public" in cache and "max-age=3600" in cache


def test_calc_get_is_cacheable_and_post_is_not_stored():
    assert "public" in get("/calc/ladder/")["Cache-Control"]
    assert "no-store" in post("/calc/ladder/", {})["Cache-Control"]
    assert not get("/calc/ladder/", gpus=0).has_header("Cache-Control")


# --- errors --------------------------------------------------------------------------------------

def test_unknown_family_is_404():
    assert_error(get("/calc/nope/"), 404, None, "Unknown calculator family 'nope'", "ladder")
    assert_error(post("/calc/nope/", {}), 404, None, "Unknown calculator family 'nope'")
    assert_error(get("/families/nope/"), 404, None, "Unknown calculator family 'nope'")


def test_unknown_ids_are_404():
    assert_error(get("/models/gpt-5/"), 404, None, "Unknown model 'gpt-5'", "llama-3.1-8b")
    assert_error(get("/gpus/tpu-v5/"), 404, None, "Unknown GPU 'tpu-v5'", "h100-sxm5-80gb")


def test_unknown_path_is_a_json_404():
    assert_error(get("/nothing/here/"), 404, None, "No API endpoint at /api/v1/nothing/here/")
    response = Client(enforce_csrf_checks=True).post(f"{API}/nothing/")
    assert_error(response, 404, None, "No API endpoint at /api/v1/nothing/")


def test_missing_trailing_slash_redirects():
    response = get("/calc/ladder", gpus=2)
    assert response.status_code == 301
    assert response["Location"] == f"{API}/calc/ladder/?gpus=2"


def test_unknown_input_is_400_naming_it():
    assert_error(get("/calc/ladder/", contxt=4096), 400, "contxt", "Unknown input contxt", "context")
    assert_error(post("/calc/fleet/", {"inputs": {"model": "llama-3.1-8b"}}), 400, "model", "Unknown input model")


def test_config_for_a_family_without_a_model_is_an_unknown_input():
    assert_error(post("/calc/spec/", {"config": REFERENCE_CONFIG}), 400, "config", "Unknown input config")


@pytest.mark.parametrize("family, params, field, fragment", [
    ("ladder", {"gpus": "0"}, "gpus", "gpus must be at least 1, not '0'."),
    ("ladder", {"utilization": "1.5"}, "utilization", "utilization must be at most 1"),
    ("ladder", {"utilization": "0"}, "utilization", "utilization must be at least 0.01"),
    ("ladder", {"context": "4096.5"}, "context", "context must be a whole number"),
    ("ladder", {"context": "lots"}, "context", "context must be a number, not 'lots'."),
    ("ladder", {"reserve_gib": "nan"}, "reserve_gib", "reserve_gib must be a finite number."),
    ("ladder", {"kv_dtype": "fp6"}, "kv_dtype", "kv_dtype must be one of fp32, bf16"),
    ("ladder", {"model": "gpt-5"}, "model", "Unknown model 'gpt-5'"),
    ("roofline", {"gpu": "tpu-v5"}, "gpu", "Unknown GPU 'tpu-v5'"),
    ("spec", {"alpha": "1"}, "alpha", "alpha must be at most 0.99"),
    ("fleet", {"rate": "-3"}, "rate", "rate must be above 0"),
    ("ladder", {"utilization": "9o%"}, "utilization",
     "utilization: Could not read '9o%': 'o%' is not a unit I know; this input expects a plain number"),
    ("ladder", {"utilization": "90 GiB"}, "utilization", "'90 GiB' is a memory size; this input asks for a plain"),
    ("ladder", {"reserve_gib": "-1e3"}, "reserve_gib", "reserve_gib must be at least 0, not '-1e3'."),
])
def test_out_of_range_and_bad_values_are_400(family, params, field, fragment):
    assert_error(get(f"/calc/{family}/", **params), 400, field, fragment)


def test_a_value_given_twice_is_400():
    response = Client().get(f"{API}/calc/ladder/?gpus=1&gpus=2")
    assert_error(response, 400, "gpus", "gpus is given 2 times; give it once.")


def test_bad_configs_are_400_on_config():
    assert_error(get("/calc/kv/", config="{not json"), 400, "config", "The config is not valid JSON")
    assert_error(post("/calc/kv/", {"config": [1, 2]}), 400, "config", "must be a JSON object")
    missing = {k: v for k, v in REFERENCE_CONFIG.items() if k != "num_hidden_layers"}
    assert_error(post("/calc/kv/", {"config": missing}), 400, "config", "num_hidden_layers")
    contradictory = dict(REFERENCE_CONFIG, num_key_value_heads=5)  # 32 query heads are not a multiple of 5
    body = post("/calc/kv/", {"config": contradictory}).json()
    assert body["field"] == "config" and body["error"]


def test_model_and_config_together_are_400():
    body = {"inputs": {"model": "llama-3.1-8b"}, "config": REFERENCE_CONFIG}
    assert_error(post("/calc/ladder/", body), 400, "config", "Give model or config, not both.")
    both = {"inputs": {"config": REFERENCE_CONFIG}, "config": REFERENCE_CONFIG}
    assert_error(post("/calc/ladder/", both), 400, "config", "Give the config once")


@pytest.mark.parametrize("body, field, fragment", [
    ("{", None, "The request body is not valid JSON (line 1"),
    ("[1, 2]", None, "The request body must be a JSON object"),
    ('{"inputs": {}, "seed": 3}', "seed", "Unknown key seed in the body"),
    ('{"inputs": [1]}', None, '"inputs" must be a JSON object'),
    ('{"inputs": {"gpus": [1]}}', "gpus", "gpus must be a number"),
    ('{"inputs": {"gpus": true}}', "gpus", "gpus must be a number, not true."),
    ('{"inputs": {"kv_dtype": 8}}', "kv_dtype", "kv_dtype must be one of"),
    ("[" * 100_000, None, "nested too deeply"),
])
def test_malformed_bodies_are_400(body, field, fragment):
    assert_error(post("/calc/ladder/", body), 400, field, fragment)


def test_a_body_that_is_not_utf8_is_400():
    response = Client().post(f"{API}/calc/ladder/", b"\xff\xfe", content_type="application/json")
    assert_error(response, 400, None, "not UTF-8")


def test_an_oversized_body_is_400(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = post("/calc/ladder/", {"config": dict(REFERENCE_CONFIG, padding="x" * 2000)})
    assert_error(response, 400, None, "The request body is too large")


def test_head_answers_like_get():
    response = Client().head(f"{API}/calc/ladder/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_an_empty_body_means_the_defaults():
    response = Client().post(f"{API}/calc/ladder/", b"", content_type="application/json")
    assert values(response.json())["users_worst_case"] == 53


def test_methods_not_allowed_are_405():
    body = assert_error(Client().post(f"{API}/models/"), 405, None, "POST is not allowed here; use GET.")
    assert body
    response = Client().put(f"{API}/calc/ladder/")
    assert_error(response, 405, None, "PUT is not allowed here; use GET or POST.")
    assert response["Allow"] == "GET, HEAD, POST"


def test_post_to_calc_needs_no_csrf_token():
    client = Client(enforce_csrf_checks=True)
    response = client.post(f"{API}/calc/ladder/", "{}", content_type="application/json")
    assert response.status_code == 200


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
def test_unsafe_methods_on_read_only_endpoints_get_a_json_405_without_a_token(method):
    response = getattr(Client(enforce_csrf_checks=True), method)(f"{API}/gpus/")
    assert_error(response, 405, None, "is not allowed here; use GET.")
    assert response["Allow"] == "GET, HEAD"


def test_the_site_outside_the_api_keeps_its_csrf_check():
    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403


# --- the OpenAPI schema --------------------------------------------------------------------------

def test_schema_is_valid_openapi_3_1():
    document = schema()
    assert document["openapi"].startswith("3.1")
    validate_openapi(document)  # raises on an invalid document


def test_schema_lists_every_family_with_its_parameters():
    document = schema()
    for slug, family in FAMILIES.items():
        operation = document["paths"][f"{API}/calc/{slug}/"]["get"]
        params = {param["name"]: param["schema"] for param in operation["parameters"]}
        for spec in family.inputs:
            described = params[spec.name]
            if spec.kind in ("int", "float"):
                assert described["type"] == ("integer" if spec.kind == "int" else "number")
                if spec.maximum is not None:
                    assert described["maximum"] == spec.maximum
                if spec.minimum is not None:
                    key = "exclusiveMinimum" if spec.exclusive_minimum else "minimum"
                    assert described[key] == spec.minimum
            if spec.choices:
                assert described["enum"] == list(spec.choices)
            if spec.default is not None:
                assert described["default"] == spec.default
        assert ("config" in params) == any(spec.kind == "model" for spec in family.inputs)
        assert set(operation["responses"]) == {"200", "400"}
        assert "post" in document["paths"][f"{API}/calc/{slug}/"]
        result = document["components"]["schemas"][f"CalcResult_{slug}"]
        keys = [item["allOf"][1]["properties"]["key"]["const"] for item in result["properties"]["steps"]["prefixItems"]]
        assert keys == [step["key"] for step in calc_json(slug)["steps"]]
    ladder = {p["name"]: p["schema"] for p in document["paths"][f"{API}/calc/ladder/"]["get"]["parameters"]}
    assert ladder["model"]["enum"] == list(CATALOG.models)
    assert ladder["gpu"]["enum"] == list(CATALOG.gpus)
    assert ladder["utilization"] == {**ladder["utilization"], "type": "number", "minimum": 0.01,
                                     "maximum": 1, "default": 0.9}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_responses_match_the_schema(family):
    validator(f"CalcResult_{family}").validate(get(f"/calc/{family}/").json())
    drawn = FAMILIES[family].generate(random.Random(11), CATALOG)
    validator(f"CalcResult_{family}").validate(get(f"/calc/{family}/", **drawn).json())


@pytest.mark.parametrize("path, component", [
    ("/", "Index"), ("/models/", "ModelList"), ("/models/deepseek-v2/", "Model"), ("/gpus/", "GpuList"),
    ("/gpus/mi300x/", "Gpu"), ("/families/", "FamilyList"), ("/families/rope/", "Family"),
    ("/calc/ladder/?gpus=0", "Error"), ("/models/nope/", "Error"),
])
def test_catalog_responses_match_the_schema(path, component):
    validator(component).validate(Client().get(API + path).json())


def test_schema_error_shape():
    error = schema()["components"]["schemas"]["Error"]
    assert error["required"] == ["error", "field"]


# --- fuzzing -------------------------------------------------------------------------------------

FUZZED = ["ladder", "kv", "decode", "roofline", "spec", "lora", "rope", "fleet", "cost", "tp"]

NUMBERS = st.one_of(
    st.integers(min_value=-10**12, max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e400", "-0", "0x10", "1_000", " 8 ", "", "½", "١٢", "1e-400", "NaN", "inf"]),
)
TEXT = st.text(max_size=30)


def _value_for(spec):
    options = [TEXT, NUMBERS]
    if spec.kind == "model":
        options.append(st.sampled_from(list(CATALOG.models)))
    elif spec.kind == "gpu":
        options.append(st.sampled_from(list(CATALOG.gpus)))
    elif spec.choices:
        options.append(st.sampled_from(list(spec.choices)))
    return st.one_of(*options)


@st.composite
def query(draw, family):
    specs = FAMILIES[family].inputs
    chosen = draw(st.lists(st.sampled_from(specs), unique_by=lambda s: s.name, max_size=len(specs)))
    params = {spec.name: draw(_value_for(spec)) for spec in chosen}
    if draw(st.booleans()):
        params[draw(st.text(min_size=1, max_size=12))] = draw(TEXT)
    return params


def check_answer(response, family):
    assert response.status_code in (200, 400), response.content
    body = response.json()
    if response.status_code == 200:
        validator(f"CalcResult_{family}").validate(body)
    else:
        validator("Error").validate(body)
        assert body["error"].strip()


@pytest.mark.parametrize("family", FUZZED)
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_query_strings_never_500(family, data):
    params = data.draw(query(family))
    check_answer(Client().get(f"{API}/calc/{family}/", params), family)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=10,
)


@pytest.mark.parametrize("family", ["ladder", "kv", "moe"])
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_bodies_never_500(family, data):
    names = [spec.name for spec in FAMILIES[family].inputs] + ["config"]
    inputs = data.draw(st.dictionaries(st.sampled_from(names) | st.text(max_size=8), JSON_VALUES, max_size=4))
    body = {"inputs": inputs}
    if data.draw(st.booleans()):
        # A mutated copy of a real config: keys dropped or set to odd values.
        config = dict(REFERENCE_CONFIG)
        mutable = sorted(config)
        for key in data.draw(st.lists(st.sampled_from(mutable), max_size=3)):
            config[key] = data.draw(JSON_VALUES)
        body = {"inputs": {k: v for k, v in inputs.items() if k not in ("model", "config")}, "config": config}
    check_answer(post(f"/calc/{family}/", body), family)


# --- engine edge cases found by fuzzing this API (each was a 500 before the engine turned it into a
# one-sentence EngineError) ---------------------------------------------------------------------------


DEEPSEEK_V2 = dict(CATALOG.model("deepseek-v2").raw_config)


@pytest.mark.parametrize("architectures", [5, True, [["LlamaForCausalLM"]]])
def test_architectures_not_a_list_of_names_is_a_400(architectures):
    # hf_config.model_type_of iterates and hashes "architectures" unchecked (no model_type in the config).
    config = dict(REFERENCE_CONFIG, architectures=architectures)
    assert_error(post("/calc/kv/", {"config": config}), 400, "config", "architectures")


def test_a_moe_config_with_every_layer_dense_is_a_400():
    # procedures/params.py params_given divides by layers − dense layers, here 1 − 1.
    config = dict(DEEPSEEK_V2, n_layers=1)
    assert_error(post("/calc/ladder/", {"config": config}), 400, "config")


@pytest.mark.parametrize("family, params", [
    ("fleet", {"occupancy": "5e-324"}),  # formula.whole_ceil rounds an infinite replica count
    ("tp", {"utilization": "1e-310", "reserve_gib": "0"}),  # same, in the GPU count
    ("cost", {"tokens_per_s": "5e-232", "utilization": "5e-232"}),  # tokens per hour underflow to 0, then ÷
])
def test_extreme_values_are_a_400_not_an_overflow(family, params):
    response = get(f"/calc/{family}/", **params)
    assert response.status_code == 400
    validator("Error").validate(response.json())


@pytest.mark.parametrize(("params", "inputs"), [
    ({"utilization": "90%"}, {"utilization": 0.9}),
    ({"utilization": "90 %", "context": "2^13"}, {"utilization": 0.9, "context": 8192}),
    ({"reserve_gib": "3072 MiB", "avg_tokens": "2,300"}, {"reserve_gib": 3.0, "avg_tokens": 2300}),
])
def test_inputs_are_read_as_typed_answers_are(params, inputs):
    """A percentage, an expression or a value in another unit of the input's dimension, as in answers."""
    for response in (get("/calc/ladder/", **params), post("/calc/ladder/", {"inputs": params})):
        assert response.status_code == 200, response.content
        body = response.json()
        assert {key: body["inputs"][key] for key in inputs} == inputs
        assert (values(body)["users_worst_case"], values(body)["users_paged"]) == (53, 191)

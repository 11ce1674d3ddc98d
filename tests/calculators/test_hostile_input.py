"""Hostile input (issue 21, finding 4): huge integers, a 100,000-character config, coach Markdown, CSP headers.

Every expectation is a status, a message or a piece of markup read off the request by hand: an integer of
400 digits overflows a float (``OverflowError``), one of 5,000 digits is past Python's 4,300-digit limit on
reading an integer (``ValueError`` from ``json.loads``); both must be a 400 naming the input, never a 500.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from calculators.engine.errors import ConfigError
from calculators.engine.hf_config import parse_config_text
from tests.paths import REPO_ROOT

MODELS = json.loads((REPO_ROOT / "fixtures" / "catalog" / "models.json").read_text())
LLAMA = next(m for m in MODELS if m["id"] == "llama-3.1-8b")["config"]
DIGITS_400 = "1" + "0" * 399
DIGITS_5000 = "1" + "0" * 4999


def config_with(key: str, literal: str) -> str:
    """Llama-3.1-8B's config.json text with ``key`` set to the integer literal ``literal``."""
    text = json.dumps({**LLAMA, key: 0})
    return text.replace(f'"{key}": 0', f'"{key}": {literal}')


@pytest.mark.parametrize("literal", [DIGITS_400, DIGITS_5000, "-" + DIGITS_400])
@pytest.mark.parametrize("key", ["num_hidden_layers", "sliding_window", "rope_theta", "vocab_size"])
def test_a_huge_integer_in_a_config_is_a_config_error(key, literal):
    with pytest.raises(ConfigError) as raised:
        parse_config_text(config_with(key, literal))
    assert "digits" in str(raised.value)


@pytest.mark.parametrize("literal", [DIGITS_400, DIGITS_5000])
@pytest.mark.parametrize("family", ["ladder", "weights", "kv", "prefill", "tp"])
def test_the_api_answers_400_for_a_huge_integer_in_a_posted_config(family, literal):
    body = '{"config": %s}' % config_with("hidden_size", literal)
    response = Client().post(f"/api/v1/calc/{family}/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "digits" in response.json()["error"]


def test_the_api_answers_400_for_a_huge_integer_among_the_inputs():
    response = Client().post("/api/v1/calc/ladder/", '{"inputs": {"context": %s}}' % DIGITS_5000,
                             content_type="application/json")
    assert response.status_code == 400
    assert "thousands of digits" in response.json()["error"]


@pytest.mark.parametrize("literal", [DIGITS_400, DIGITS_5000])
def test_huge_integers_in_query_strings_are_400s(literal):
    client = Client()
    assert client.get("/api/v1/calc/ladder/", {"context": literal}).status_code == 400
    assert client.get("/api/v1/calc/ladder/", {"config": config_with("num_hidden_layers", literal)}).status_code == 400
    page = client.get("/calculators/ladder/", {"config": config_with("num_hidden_layers", literal)})
    assert page.status_code == 200  # the page: the form again, the error beside the config box
    assert "digits" in page.content.decode()


@pytest.mark.django_db
def test_a_100000_character_config_is_posted_to_the_calculator_page():
    padding = {f"x_note_{i}": "n" * 80 for i in range(1000)}  # real configs carry many unread keys
    text = json.dumps({**LLAMA, **padding})
    assert len(text) > 95_000
    text = text[:-1] + ', "z": "' + "z" * (100_000 - len(text) - 9) + '"}'
    assert len(text) == 100_000
    client = Client(enforce_csrf_checks=True)
    page = client.get("/calculators/ladder/")
    token = json.loads(re.search(r"hx-headers='([^']*)'", page.content.decode()).group(1))["X-CSRFToken"]
    response = client.post("/calculators/ladder/", {"config": text, "gpu": "h100-sxm5-80gb", "context": "8192"},
                           headers={"HX-Request": "true", "X-CSRFToken": token})
    assert response.status_code == 200
    body = response.content.decode()
    assert "for the pasted config" in body
    assert re.search(r'id="headline-users_worst_case".*?>\s*53\s*<', body, re.S)


def test_the_calculator_page_sends_a_pasted_config_by_post():
    page = Client().get("/calculators/ladder/").content.decode()
    assert "js/calculator.js" in page
    script = (REPO_ROOT / "static" / "js" / "calculator.js").read_text()
    assert 'event.detail.verb = "post"' in script and "useUrlParams = false" in script


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/calculators/ladder/", "/runbook/", "/accounts/login/", "/healthz",
                                  "/api/v1/", "/no-such-page/"])
def test_every_response_carries_a_csp_and_a_permissions_policy(client, path):
    response = client.get(path)
    csp = response["Content-Security-Policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'",
                      "frame-ancestors 'none'"):
        assert directive in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "camera=()" in response["Permissions-Policy"] and "geolocation=()" in response["Permissions-Policy"]


@pytest.mark.django_db
def test_htmx_injects_no_indicator_style(client):
    page = client.get("/").content.decode()
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles": false}'>""" in page
    assert page.index("htmx-config") < page.index("htmx-2")


TEMPLATES = REPO_ROOT / "templates"


def test_no_template_has_an_inline_script_or_style_attribute():
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        if "export" in path.parts:  # the offline export's standalone files are opened from disk, not served
            continue
        text = path.read_text()
        if re.search(r'\sstyle="', text) or re.search(r"<script(?![^>]*\ssrc=)[^>]*>", text):
            offenders.append(str(path.relative_to(TEMPLATES)))
    assert not offenders, offenders


@pytest.mark.parametrize("literal", [DIGITS_400, DIGITS_5000])
def test_a_huge_integer_in_the_previous_values_is_ignored(literal):
    page = Client().get("/calculators/ladder/", {"previous": '{"users_paged": %s}' % literal})
    assert page.status_code == 200

"""Security: the usual XSS payloads through every place user text comes back as HTML.

Each payload goes in through a form or query string (coach-authored question
Markdown and its live preview, a drill answer, a pasted calculator config,
search, the sign-up username, the lab form); the page that comes back must not
be a 500 and must hold no live markup from it: no ``<script>alert``, no event
handler attribute, no ``javascript:`` URL in an ``href``/``src``, no
``<iframe>``/``<svg>`` element. The page is parsed as a browser would (text,
escaped or not, is not markup); no template in the project uses inline event
handlers, ``javascript:`` URLs, ``<iframe>`` or ``<svg>``, so any of them in a
response is the attack getting through.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.urls import reverse

from drills.models import BankItem, ProblemInstance
from drills.problems.generation import GENERATOR_VERSION
from tests import needs
from tests.paths import REPO_ROOT

pytestmark = pytest.mark.django_db

CATALOG_DIR = REPO_ROOT / "fixtures" / "catalog"

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "[click me](javascript:alert(1))",
    "javascript:alert(1)",
    '<a href="javascript:alert(1)">click</a>',
    '<iframe src="https://evil.example/"></iframe>',
    '" onmouseover="alert(1)',
    "' onmouseover='alert(1)",
    "{{7*7}}",
    "{% debug %}",
    "<ScRiPt>alert(1)</sCrIpT>",
    "<a href=\"jav&#x09;ascript:alert(1)\">tab</a>",
]

class _LiveMarkup(HTMLParser):
    """Collects what a browser would treat as live: elements and attributes, not text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        if tag in ("iframe", "svg", "object", "embed"):
            self.found.append(f"an <{tag}> element")
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"an inline event handler {name}= on <{tag}>")
            if name in ("href", "src", "action", "formaction", "xlink:href") and value:
                url = re.sub(r"[\x00-\x20]", "", value).lower()
                if url.startswith(("javascript:", "vbscript:", "data:text/html")):
                    self.found.append(f"a {url.split(':')[0]}: URL in {name}= on <{tag}>")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and "alert(" in data:
            self.found.append("a <script> running the payload")


def assert_safe(response, payload: str = "") -> str:
    """The response is no 500 and carries none of the payload's markup live; returns the body."""
    assert response.status_code < 500, f"{response.status_code} for payload {payload!r}"
    body = response.content.decode()
    assert not re.search(r"<script[^>]*>\s*alert", body, re.I), f"<script>alert unescaped for {payload!r}"
    parser = _LiveMarkup()
    parser.feed(body)
    parser.close()
    assert parser.found == [], f"{parser.found} in the page for payload {payload!r}"
    return body


def raw_entry(kind: str, entry_id: str) -> dict:
    for entry in json.loads((CATALOG_DIR / f"{kind}.json").read_text()):
        if entry["id"] == entry_id:
            return entry
    raise KeyError(entry_id)


# --- coach-authored question Markdown -------------------------------------------------------


class TestCoachQuestionMarkdown:
    @pytest.mark.parametrize("payload", PAYLOADS)
    @pytest.mark.parametrize("field", ["prompt", "model_answer"])
    def test_the_live_preview_is_sanitised(self, coach_client, payload, field):
        response = coach_client.post(reverse("coaching:question_preview"),
                                     {"field": field, field: f"Intro **bold**\n\n{payload}\n\n{payload} inline"},
                                     headers={"HX-Request": "true"})

        assert response.status_code == 200
        assert_safe(response, payload)

    @pytest.mark.parametrize("payload", PAYLOADS)
    def test_a_saved_question_renders_safely_everywhere_the_coach_sees_it(self, coach_client, coach, payload):
        data = {"prompt": f"Why? {payload}", "model_answer": f"Because.\n\n{payload}",
                "rubric": f"A point\n{payload}", "tags": f"kv, {payload}", "misconceptions": "", "difficulty": "2"}

        saved = coach_client.post(reverse("coaching:question_new"), data)

        assert saved.status_code == 302, assert_safe(saved, payload)
        item = BankItem.objects.get(author=coach)
        assert_safe(coach_client.get(reverse("coaching:question_edit", args=[item.pk])), payload)
        assert_safe(coach_client.get(reverse("coaching:questions")), payload)
        assert_safe(coach_client.get(reverse("coaching:questions"), {"q": payload}), payload)

    @pytest.mark.parametrize("payload", PAYLOADS)
    def test_an_invalid_form_echoes_the_text_safely(self, coach_client, payload):
        # No rubric: the form comes back with what was typed and its preview.
        response = coach_client.post(reverse("coaching:question_new"),
                                     {"prompt": payload, "model_answer": payload, "rubric": "",
                                      "tags": payload, "misconceptions": payload, "difficulty": "2"})

        assert response.status_code == 200
        assert_safe(response, payload)


def test_template_syntax_typed_by_a_coach_stays_text(coach_client, coach):
    preview = coach_client.post(reverse("coaching:question_preview"),
                                {"field": "prompt", "prompt": "Compute {{7*7}} and {% now Y %}"})
    assert "Compute {{7*7}} and {% now Y %}" in preview.content.decode()

    coach_client.post(reverse("coaching:question_new"), {
        "prompt": "Compute {{7*7}}", "model_answer": "{{7*7}}", "rubric": "x", "difficulty": "2"})
    item = BankItem.objects.get(author=coach)
    assert item.prompt == "Compute {{7*7}}"
    assert "Compute {{7*7}}" in coach_client.get(reverse("coaching:question_edit", args=[item.pk])).content.decode()


# --- a drill answer -------------------------------------------------------------------------


@pytest.fixture
def ladder_problem(db):
    inputs = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "weights_dtype": "bf16",
              "kv_dtype": "bf16", "context": 8192, "utilization": 0.9, "reserve_gib": 3.0, "avg_tokens": 2300,
              "block_size": 16}
    snapshot = {"models": [raw_entry("models", "llama-3.1-8b")], "gpus": [raw_entry("gpus", "h100-sxm5-80gb")]}
    return ProblemInstance.objects.create(family="ladder", seed=0, generator_version=GENERATOR_VERSION,
                                          inputs=inputs, snapshot=snapshot)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_drill_answer_is_escaped(candidate_client, htmx_client, candidate, ladder_problem, payload):
    data = {"weights_gib": payload, "users_paged": payload, "users_worst_case": payload}

    assert_safe(candidate_client.post(ladder_problem.get_absolute_url(), data), payload)
    htmx_client.force_login(candidate)
    assert_safe(htmx_client.post(ladder_problem.get_absolute_url(), data), payload)
    assert_safe(candidate_client.get(ladder_problem.get_absolute_url()), payload)


# --- a pasted calculator config -------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("family", ["ladder", "kv"])
def test_a_pasted_config_is_escaped(client, htmx_client, payload, family):
    config = dict(raw_entry("models", "llama-2-7b")["config"])
    config["model_type"] = payload
    config["architectures"] = [payload]

    for pasted in (payload, json.dumps(config), json.dumps({payload: payload})):
        assert_safe(client.get(f"/calculators/{family}/", {"config": pasted}), payload)
        assert_safe(htmx_client.get(f"/calculators/{family}/", {"config": pasted}), payload)


# --- search, sign-up, the lab ---------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
def test_search_echoes_the_query_safely(client, payload):
    assert_safe(client.get("/search/", {"q": payload}), payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_signup_username_is_escaped(client, payload):
    response = client.post("/accounts/signup/", {
        "username": payload, "email": "x@example.com",
        "password1": "a-brand-new-passphrase-42", "password2": "a-brand-new-passphrase-42"})

    assert response.status_code == 200  # Django's username validator refuses these characters
    assert_safe(response, payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_lab_form_is_escaped(candidate_client, payload):
    data = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": "1", "weights_dtype": "bf16",
            "kv_dtype": "bf16", "engine_flags": f"vllm serve x {payload}", "startup_gib": "72.3",
            "decode_tok_s": "150", "knee_batch": "64", "preempt_pct": "97", "prefill_ms": "120",
            "prompt_tokens": "2048"}

    assert_safe(candidate_client.post("/lab/", data), payload)  # saved: the flags come back in the list
    assert_safe(candidate_client.get("/lab/"), payload)
    assert_safe(candidate_client.post("/lab/", {**data, "model": payload, "gpu": payload,
                                                "decode_tok_s": payload}), payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_calibration_paste_and_name_are_escaped(candidate_client, payload):
    """A pasted benchmark line comes back in its sentence, a saved calibration's name in lists and banners."""
    stack = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": "1", "weights_dtype": "bf16",
             "kv_dtype": "bf16", "engine": "vllm"}
    assert_safe(candidate_client.post("/lab/calibrate/", {**stack, "output": f"input=512 {payload}"}), payload)
    typed = "input=512 output=128 concurrency=1 tpot=7.5209\ninput=4096 output=128 concurrency=1 tpot=7.6962\n"
    saved = candidate_client.post("/lab/calibrate/", {**stack, "output": typed, "name": payload, "save": "1"})
    assert saved.status_code == 302
    candidate_client.post(saved["Location"] + "apply/")
    for path in ("/lab/calibrate/", saved["Location"], "/simulator/", "/calculators/decode/"):
        assert_safe(candidate_client.get(path), payload)


# --- static analysis ------------------------------------------------------------------------


def test_bandit_finds_no_high_severity_issue():
    """``bandit -lll`` (high severity only) over the project's packages reports nothing."""
    import subprocess  # nosec B404 - runs the bandit executable with a fixed argument list
    import sys

    bandit = Path(sys.executable).with_name("bandit")
    needs.file(bandit, "bandit is not installed (pip install -e '.[dev]')")
    base = REPO_ROOT
    result = subprocess.run(  # nosec B603 - fixed argument list, no shell
        [str(bandit), "-r", "calculators", "drills", "runbook", "coaching", "api", "config", "accounts", "outbox",
         "-lll", "-q", "-f", "json"],
        cwd=base, capture_output=True, text=True, timeout=300)

    report = json.loads(result.stdout)
    assert report["results"] == [], "\n".join(
        f"{r['filename']}:{r['line_number']} {r['test_id']} {r['issue_text']}" for r in report["results"])
    assert result.returncode == 0, result.stderr

"""The ``spec``, ``formats`` and ``rope`` families through Django: ``manage.py calc``, the calculator
pages and the drill pages.

Values by hand (derivations in tests/engine/test_family_{spec,formats,rope}.py):
spec default α 0.8, γ 4, c 0.05 → E = 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616, bound 3.3616 / 1.2 = 2.8013;
formats fp16 → 16, 5, 10, 65,504, 2^−14, 2^−10; rope Llama-3.1-8B → 64 bands, 2π, 2π × 500,000^(126/128)
= 2,559,195.5 tokens, 29 bands beyond 8,192 tokens, × 8 = 20,473,564 tokens.
"""

import html
import io
import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from calculators.families import FAMILIES
from drills.models import ProblemInstance
from tests.calculators.output import calc_json, field_error, step_keys, step_value
from tests.calculators.output import check_contract as shared_check_contract
from tests.drills.problems.answers import answer_a_new_problem
from tests.paths import REPO_ROOT

REPO = REPO_ROOT
KEYS = {
    "spec": ["expected_tokens", "speedup"],
    "formats": ["total_bits", "exponent_bits", "mantissa_bits", "max_normal", "min_normal", "epsilon"],
    "rope": ["bands", "shortest_wavelength_tok", "longest_wavelength_tok", "bands_longer_than_context",
             "scaled_longest_wavelength_tok"],
}


def check_contract(payload: dict, family: str) -> dict:
    """docs/architecture.md §10's shape; returns the step values by key."""
    return shared_check_contract(payload, family, KEYS[family], notes=True)


# --- manage.py calc --json ----------------------------------------------------------------------------

def test_calc_spec_json_is_the_contract_with_full_precision():
    payload = calc_json("spec", "--alpha", "0.8", "--gamma", "4", "--draft-cost", "0.05")
    values = check_contract(payload, "spec")
    assert payload["inputs"] == {"alpha": 0.8, "gamma": 4, "draft_cost": 0.05}
    assert values["expected_tokens"] == pytest.approx(3.3616, rel=1e-12)
    assert values["speedup"] == pytest.approx(3.3616 / 1.2, rel=1e-12)
    assert [step["unit"] for step in payload["steps"]] == ["tok", "1"]


def test_calc_formats_json_for_fp16_and_e4m3():
    values = check_contract(calc_json("formats", "--format", "fp16"), "formats")
    assert values == {"total_bits": 16, "exponent_bits": 5, "mantissa_bits": 10, "max_normal": 65504,
                      "min_normal": 2**-14, "epsilon": 2**-10}
    assert check_contract(calc_json("formats", "--format", "fp8_e4m3"), "formats")["max_normal"] == 448


def test_calc_rope_json_for_llama_3_1_8b():
    payload = calc_json("rope", "--model", "llama-3.1-8b")
    values = check_contract(payload, "rope")
    assert payload["inputs"] == {"model": "llama-3.1-8b", "original_context": 8192, "scaling_factor": 8.0}
    assert values["bands"] == 64 and values["bands_longer_than_context"] == 29
    assert values["longest_wavelength_tok"] == pytest.approx(2_559_195.5174, rel=1e-10)
    assert values["scaled_longest_wavelength_tok"] == pytest.approx(20_473_564.139, rel=1e-10)


def test_calc_rope_reads_a_config_file(tmp_path):
    # Qwen2.5-7B's config: 1,000,000; 128 → 64 bands; 131,072 tokens → 17 bands; factor 1.
    models = {m["id"]: m for m in json.loads((REPO / "fixtures" / "catalog" / "models.json").read_text())}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(models["qwen2.5-7b"]["config"]))
    values = check_contract(calc_json("rope", "--config", str(path)), "rope")
    assert values["bands_longer_than_context"] == 17
    assert values["scaled_longest_wavelength_tok"] == pytest.approx(values["longest_wavelength_tok"])


@pytest.mark.parametrize("args, message", [
    (["spec", "--alpha", "1"], "alpha must be at most 0.99"),
    (["spec", "--gamma", "0"], "gamma must be at least 1"),
    (["formats", "--format", "fp64"], "format must be one of fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, int4"),
    (["rope", "--model", "deepseek-v2"], "deepseek-v2 states no max_position_embeddings"),
    (["rope", "--scaling-factor", "0.5"], "scaling_factor must be at least 1"),
])
def test_bad_input_in_process_is_a_command_error_with_exit_code_2(args, message):
    with pytest.raises(CommandError) as info:
        call_command("calc", *args, stdout=io.StringIO())
    assert info.value.returncode == 2
    assert str(info.value).startswith(message)


def test_bad_input_exits_2_with_one_sentence_on_stderr():
    process = subprocess.run([sys.executable, "manage.py", "calc", "spec", "--alpha", "1"], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 2, process.stderr
    assert process.stdout == ""
    message = process.stderr.strip()
    assert "Traceback" not in message and "\n" not in message
    assert message.startswith("alpha must be at most 0.99") and message.endswith("divides 0 by 0.")


# --- the calculator pages ------------------------------------------------------------------------------

@pytest.mark.django_db
class TestCalculatorPages:
    @pytest.mark.parametrize("url, key, shown", [
        ("/calculators/spec/", "expected_tokens", "3.362"),
        ("/calculators/spec/", "speedup", "2.801"),
        ("/calculators/formats/?format=fp16", "max_normal", "65,504"),
        ("/calculators/formats/?format=fp8_e4m3", "max_normal", "448"),
        ("/calculators/formats/?format=int8", "min_normal", "-128"),
        ("/calculators/rope/", "bands", "64"),
        ("/calculators/rope/", "bands_longer_than_context", "29"),
        ("/calculators/rope/?model=gemma-2-9b", "bands", "128"),
    ])
    def test_it_renders_the_worked_values(self, candidate_client, url, key, shown):
        response = candidate_client.get(url)

        assert response.status_code == 200
        assert step_value(response.content.decode(), key).split(" ")[0] == shown

    def test_it_lists_every_step_in_order(self, candidate_client):
        for slug, keys in KEYS.items():
            page = candidate_client.get(f"/calculators/{slug}/").content.decode()
            assert step_keys(page) == keys

    @pytest.mark.parametrize("url, field, message", [
        ("/calculators/spec/?alpha=abc&gamma=4", "alpha", "'abc' is not a number; this field expects a plain number"),
        ("/calculators/spec/?alpha=1", "alpha", "Must be at most 0.99."),
        ("/calculators/spec/?gamma=-3", "gamma", "Must be at least 1."),
        ("/calculators/spec/?draft_cost=%3Cscript%3E", "draft_cost", "Could not read '<script>': '<' is not allowed"),
        ("/calculators/formats/?format=fp64", "format", "Select a valid choice"),
        ("/calculators/rope/?original_context=long", "original_context",
         "'long' is not a number; this field takes a whole number."),
        ("/calculators/rope/?scaling_factor=0.1", "scaling_factor", "Must be at least 1."),
        ("/calculators/rope/?model=deepseek-v2", "original_context", "states no max_position_embeddings"),
        ("/calculators/rope/?model=nope", "model", "Select a valid choice"),
    ])
    def test_garbage_query_params_stay_200_with_the_error_beside_the_field(self, candidate_client, url, field, message):
        response = candidate_client.get(url)

        assert response.status_code == 200
        assert message in field_error(response.content.decode(), field)

    def test_a_pasted_config_without_rope_theta_says_it_used_the_default(self, candidate_client):
        models = {m["id"]: m for m in json.loads((REPO / "fixtures" / "catalog" / "models.json").read_text())}
        config = dict(models["llama-3.1-8b"]["config"])
        del config["rope_theta"]

        response = candidate_client.get("/calculators/rope/", {"config": json.dumps(config)})

        page = html.unescape(response.content.decode())
        assert response.status_code == 200
        assert "The config has no rope_theta, so the usual default 10,000 is used" in page


# --- drills ------------------------------------------------------------------------------------------

@pytest.mark.django_db
class TestDrills:
    @pytest.mark.parametrize("slug", list(KEYS))
    def test_new_redirects_to_a_problem_that_grades_a_right_answer_set_at_100_percent(self, candidate_client, slug):
        problem, page, graded = answer_a_new_problem(candidate_client, slug)

        statement = FAMILIES[slug].describe(problem.inputs, _snapshot_catalog(problem))
        assert html.escape(statement, quote=False)[:60] in page.content.decode()
        assert "Score 100 %" in html.unescape(graded.content.decode())

    def test_a_named_misconception_shows_on_the_page(self, candidate_client, candidate):
        problem = ProblemInstance.objects.create(created_by=candidate, family="formats", seed=0, generator_version=1,
                                                 inputs={"format": "fp8_e4m3"}, snapshot={"models": [], "gpus": []})

        # The other steps blank.
        response = candidate_client.post(problem.get_absolute_url(), {"max_normal": "240", "blanks": "count"})

        text = html.unescape(response.content.decode())
        assert "E4M3 read as an IEEE layout" in text
        assert 'href="/runbook/09-number-formats/#fp8"' in response.content.decode()


def _snapshot_catalog(problem):
    from calculators.engine.catalog import catalog_from_entries

    return catalog_from_entries(problem.snapshot.get("models", []), problem.snapshot.get("gpus", []))

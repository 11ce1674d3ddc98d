"""The compute families through Django: ``roofline``, ``decode``, ``prefill`` and ``prefix``.

``manage.py calc FAMILY --json`` prints docs/architecture.md §10's shape with each family's step keys
in order; bad input exits 2 with one sentence on stderr; ``/calculators/<slug>/`` shows the
values and survives garbage; ``/drills/<slug>/new/`` draws a problem whose page grades answers.

Reference values, by hand (docs/architecture.md §2: Llama-3.1-8B, 8,030,261,248 parameters, on one
H100 SXM at 3,350 GB/s and 989.4 dense bf16 TFLOP/s):

* ridge 989.4 ÷ 3,350 × 1,000 = 295.34 FLOP/byte; decode at batch 1 reads 2 × N ÷ (2N B) =
  1 FLOP/byte; batch at the ridge ⌊295.34⌋ = 295;
* decode ceiling 3.35e12 ÷ (8,030,261,248 × 2 B) = 3.35e12 ÷ 16,060,522,496 = 208.59 tok/s;
  × 0.65 = 135.58, × 0.85 = 177.30;
* prefill of 2,048 tokens: 2 × 8,030,261,248 × 2,048 + 4 × 32 × 4,096 × 2,048² =
  35,090,973,327,360 FLOP; ÷ (989.4e12 × 0.4) = 88.67 ms; crossover 16,060,522,496 ÷ 524,288 =
  30,633.015625 tokens;
* prefix of 1,024 tokens: 2 × 8,030,261,248 × 1,024 + 4 × 32 × 4,096 × 1,024² =
  16,995,730,849,792 FLOP; × 0.8 ÷ 3.9576e14 = 34.36 ms; 131,072 B × 1,024 = 0.125 GiB pinned.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest

from drills.models import ProblemInstance
from drills.problems.generation import GENERATOR_VERSION
from tests.calculators.output import calc_json, check_contract, field_error, step_keys, step_value, values
from tests.drills.problems.answers import right_answers
from tests.paths import REPO_ROOT

REPO = REPO_ROOT
CATALOG = REPO / "fixtures" / "catalog"
KEYS = {
    "roofline": ["ridge_flop_per_byte", "decode_flop_per_byte", "prefill_flop_per_byte", "decode_bound",
                 "prefill_bound", "batch_at_ridge", "ridge_reachable"],
    "decode": ["weight_bytes_per_step", "kv_replication", "kv_bytes_per_step", "bytes_per_step", "bandwidth_gb_s",
               "ceiling_tok_s", "realistic_low_tok_s", "realistic_high_tok_s", "mbu", "flops_per_step", "memory_ms",
               "compute_ms", "comm_ms", "step_ms", "tok_s_per_user", "tok_s_per_replica"],
    "prefill": ["linear_flops", "attention_flops", "prefill_flops", "crossover_tokens", "effective_flop_s",
                "prefill_ms", "ttft_ms", "causal_prefill_ms"],
    "prefix": ["prefix_flops", "flops_saved_per_request", "effective_flop_s", "ttft_saved_ms", "kv_bytes_per_token",
               "pinned_gib"],
}
FAMILY_SLUGS = list(KEYS)

# Hand-derived right answers on the reference stack (see the module docstring).
REFERENCE_ANSWERS = {
    "roofline": {"ridge_flop_per_byte": "295.3", "decode_flop_per_byte": "1", "prefill_flop_per_byte": "2048",
                 "decode_bound": "0", "prefill_bound": "1", "batch_at_ridge": "295", "ridge_reachable": "1"},
    "decode": {"weight_bytes_per_step": "16060522496", "kv_bytes_per_step": "0", "bytes_per_step": "16.06 GB",
               "bandwidth_gb_s": "3.35 TB/s", "ceiling_tok_s": "208.6", "realistic_low_tok_s": "135.6",
               "realistic_high_tok_s": "177.3", "mbu": "0", "kv_replication": "1", "flops_per_step": "2 * 8030261248",
               # 16,060,522,496 B ÷ (3,350 GB/s × 0.75) = 6.392 ms; 2N ÷ (989.4 TFLOP/s × 0.5) = 0.03247 ms.
               "memory_ms": "6.392 ms", "compute_ms": "0.03247", "comm_ms": "0", "step_ms": "6.392",
               "tok_s_per_user": "156.4", "tok_s_per_replica": "156.4 tok/s"},
    "prefill": {"linear_flops": "2 * 8030261248 * 2048", "attention_flops": "4 * 32 * 4096 * 2048^2",
                "prefill_flops": "35090973327360", "crossover_tokens": "30633", "effective_flop_s": "395.76 TFLOP/s",
                "prefill_ms": "88.67", "ttft_ms": "88.67 ms",
                # causal: the attention term halved, (32,891,950,071,808 + 2,199,023,255,552 ÷ 2) FLOP
                # ÷ 395.76 TFLOP/s = 85.89 ms
                "causal_prefill_ms": "85.89"},
    "prefix": {"prefix_flops": "16995730849792", "flops_saved_per_request": "0.8 * 16995730849792",
               "effective_flop_s": "3.9576e14", "ttft_saved_ms": "34.36", "kv_bytes_per_token": "131072",
               "pinned_gib": "0.125"},
}
REFERENCE_INPUTS = {
    "roofline": {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "precision": "bf16", "weights_dtype": "bf16",
                 "batch": 1, "prompt_tokens": 2048},
    "decode": {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "weights_dtype": "bf16",
               "kv_dtype": "bf16", "cached_tokens": 0, "efficiency_low": 0.65, "efficiency_high": 0.85},
    "prefill": {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "precision": "bf16",
                "prompt_tokens": 2048, "prefill_mfu": 0.4, "queue_ms": 0.0},
    "prefix": {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "precision": "bf16", "kv_dtype": "bf16",
               "prefix_tokens": 1024, "hit_rate": 0.8, "prefill_mfu": 0.4, "distinct_prefixes": 1},
}


def raw_entry(kind: str, entry_id: str) -> dict:
    return next(e for e in json.loads((CATALOG / f"{kind}.json").read_text()) if e["id"] == entry_id)


def verdicts(response) -> dict[str, str]:
    body = response.content.decode()
    return {key: verdict for verdict, key in
            re.findall(r'class="answer-step[^"]*verdict-([a-z_]+)" id="step-([a-z_]+)"', body)}


# --- manage.py calc ----------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILY_SLUGS)
def test_calc_json_has_the_contract_shape_and_the_step_keys_in_order(family):
    payload = calc_json(family)
    check_contract(payload, family, KEYS[family], notes=True, sentences=True)
    for name, value in REFERENCE_INPUTS[family].items():
        assert payload["inputs"][name] == value


def test_calc_roofline_reference_values_at_full_precision():
    v = values(calc_json("roofline"))
    assert v["ridge_flop_per_byte"] == pytest.approx(989.4 / 3350 * 1000, rel=1e-12)
    assert v["ridge_flop_per_byte"] != 295.3  # full precision, not the display
    assert (v["decode_bound"], v["prefill_bound"], v["batch_at_ridge"]) == (0, 1, 295)


def test_calc_decode_flags_are_the_inputs_in_kebab_case():
    # 8,192 tokens in the cache: 131,072 × 8,192 = 1,073,741,824 B more; 3.35e12 ÷ 17,134,264,320 = 195.51 tok/s.
    # Measured 150 tok/s: 150 × 17,134,264,320 ÷ 3.35e12 = 0.76720.
    payload = calc_json("decode", "--context", "8192", "--measured-tok-s", "150", "--efficiency-low", "0.6",
                        "--efficiency-high", "0.8", "--weights-dtype", "bf16", "--kv-dtype", "bf16", "--gpus", "1")
    v = values(payload)
    assert v["ceiling_tok_s"] == pytest.approx(3350e9 / 17_134_264_320, rel=1e-12)
    assert v["realistic_low_tok_s"] == pytest.approx(0.6 * 3350e9 / 17_134_264_320, rel=1e-12)
    assert v["mbu"] == pytest.approx(150 * 17_134_264_320 / 3350e9, rel=1e-12)
    assert payload["inputs"]["measured_tok_s"] == 150


def test_calc_prefill_and_prefix_reference_values():
    prefill = values(calc_json("prefill", "--queue-ms", "50", "--prompt-tokens", "2048", "--mfu", "0.4"))
    assert prefill["prefill_flops"] == 35_090_973_327_360
    assert prefill["crossover_tokens"] == 30_633.015625
    assert prefill["ttft_ms"] == pytest.approx(50 + 35_090_973_327_360 / 3.9576e14 * 1000, rel=1e-12)
    prefix = values(calc_json("prefix", "--prefix-tokens", "1024", "--hit-rate", "0.8", "--distinct-prefixes", "1"))
    assert prefix["prefix_flops"] == 16_995_730_849_792
    assert prefix["pinned_gib"] == 0.125


def test_command_line_bad_input_exits_2_with_one_sentence_on_stderr():
    process = subprocess.run([sys.executable, "manage.py", "calc", "roofline", "--gpu", "a100-40gb",
                              "--precision", "fp8", "--json"], cwd=REPO, capture_output=True, text=True,
                             timeout=120)
    assert process.returncode == 2
    assert process.stdout == ""
    message = process.stderr.strip()
    assert "\n" not in message and message.endswith(".")
    assert "fp8" in message and "bf16" in message


# --- the calculator pages ----------------------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("family, shown", [
    ("roofline", {"ridge_flop_per_byte": "295.3 FLOP/byte", "decode_bound": "0", "batch_at_ridge": "295 users"}),
    ("decode", {"ceiling_tok_s": "208.6 tok/s", "realistic_low_tok_s": "135.6 tok/s",
                "realistic_high_tok_s": "177.3 tok/s"}),
    ("prefill", {"prefill_flops": "35,090,973,327,360 FLOP", "prefill_ms": "88.67 ms", "ttft_ms": "88.67 ms"}),
    ("prefix", {"ttft_saved_ms": "34.36 ms", "kv_bytes_per_token": "131,072 B", "pinned_gib": "0.125 GiB"}),
])
def test_calculator_page_shows_the_reference_values(candidate_client, family, shown):
    response = candidate_client.get(f"/calculators/{family}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert step_keys(page) == KEYS[family]
    for key, text in shown.items():
        assert step_value(page, key) == text
    assert page.count("<math") == len(KEYS[family])


@pytest.mark.django_db
@pytest.mark.parametrize("family, query, field", [
    ("roofline", {"batch": "abc"}, "batch"),
    ("roofline", {"precision": "fp64"}, "precision"),
    ("roofline", {"gpu": "a100-40gb", "precision": "fp8"}, "precision"),   # the engine's error, beside the field
    ("decode", {"efficiency_low": "0.9", "efficiency_high": "0.8"}, "efficiency_low"),
    ("decode", {"measured_tok_s": "-3"}, "measured_tok_s"),
    ("decode", {"cached_tokens": "1e400"}, "cached_tokens"),
    ("decode", {"context": "1e400"}, "cached_tokens"),  # the older key of a link, read as cached_tokens
    ("prefill", {"prefill_mfu": "nan"}, "prefill_mfu"),
    ("prefill", {"queue_ms": "soon"}, "queue_ms"),
    ("prefix", {"hit_rate": "2"}, "hit_rate"),
    ("prefix", {"distinct_prefixes": "0.5"}, "distinct_prefixes"),
])
def test_calculator_page_stays_up_on_garbage_with_the_error_beside_the_field(candidate_client, family, query, field):
    response = candidate_client.get(f"/calculators/{family}/", {**query, "unknown": "1", "previous": "[1,2"})
    assert response.status_code == 200
    page = response.content.decode()
    assert field_error(page, field)
    assert step_keys(page) == []


@pytest.mark.django_db
def test_calculator_page_takes_an_optional_measurement(candidate_client):
    # 150 × 16,060,522,496 ÷ 3.35e12 = 0.7191.
    page = candidate_client.get("/calculators/decode/", {"measured_tok_s": "150"}).content.decode()
    assert step_value(page, "mbu") == "0.7191"


@pytest.mark.django_db
def test_htmx_request_gets_the_results_partial(htmx_client):
    response = htmx_client.get("/calculators/prefill/", {"queue_ms": "100"})
    page = response.content.decode()
    assert response.status_code == 200 and "<html" not in page
    assert step_value(page, "ttft_ms") == "188.7 ms"  # 100 + 88.67


# --- drills ------------------------------------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("family", FAMILY_SLUGS)
def test_new_drill_saved_is_a_problem_that_grades_its_own_solution_at_100_percent(candidate_client, candidate, family):
    # Since ab440a0 reading /new/ stores nothing; the candidate's Save (a POST) stores the drawn problem.
    candidate_client.force_login(candidate)
    shown = candidate_client.get(f"/drills/{family}/new/?seed=4")
    assert shown.status_code == 200 and not ProblemInstance.objects.exists()
    assert re.search(r'<p class="mb-0 problem-statement">', shown.content.decode())
    response = candidate_client.post(f"/drills/{family}/new/?seed=4", {"save": "1"})
    problem = ProblemInstance.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/drills/{family}/{problem.pk}/"
    assert problem.created_by == candidate and problem.seed == 4
    page = candidate_client.get(response["Location"])
    assert page.status_code == 200
    assert re.search(r'<p class="mb-0 problem-statement">', page.content.decode())
    graded = candidate_client.post(response["Location"], right_answers(problem))
    assert set(verdicts(graded).values()) == {"correct"}
    assert "Score 100 %" in html.unescape(graded.content.decode())


@pytest.mark.django_db
@pytest.mark.parametrize("family", FAMILY_SLUGS)
def test_hand_worked_reference_answers_score_100_percent(candidate_client, candidate, family):
    inputs = REFERENCE_INPUTS[family]
    problem = ProblemInstance.objects.create(created_by=candidate,
        family=family, seed=0, generator_version=GENERATOR_VERSION, inputs=inputs,
        snapshot={"models": [raw_entry("models", inputs["model"])], "gpus": [raw_entry("gpus", inputs["gpu"])]})
    response = candidate_client.post(problem.get_absolute_url(), REFERENCE_ANSWERS[family])
    assert response.status_code == 200
    assert verdicts(response) == {key: "correct" for key in KEYS[family]}
    assert "Score 100 %" in html.unescape(response.content.decode())


@pytest.mark.django_db
def test_a_drill_names_the_sparsity_trap_with_its_errata_link(candidate_client, candidate):
    inputs = REFERENCE_INPUTS["roofline"]
    problem = ProblemInstance.objects.create(created_by=candidate,
        family="roofline", seed=0, generator_version=GENERATOR_VERSION, inputs=inputs,
        snapshot={"models": [raw_entry("models", inputs["model"])], "gpus": [raw_entry("gpus", inputs["gpu"])]})
    response = candidate_client.post(problem.get_absolute_url(), {"ridge_flop_per_byte": "590.7 FLOP/byte",
                                                                      "blanks": "count"})  # the other steps blank
    assert verdicts(response)["ridge_flop_per_byte"] == "misconception"
    assert 'href="/errata/#sparse-tflops"' in response.content.decode()

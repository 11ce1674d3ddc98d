"""The scale families — ``tp``, ``moe``, ``lora`` — through Django: ``calc --json``, the
calculator pages and the drills.

Values derived by hand from ``fixtures/catalog/*.json``:

* tp, the runbook's 700B example: 700e9 parameters at fp8 = 700e9 B = 651.93 GiB; an H100 SXM gives
  81,559 / 1,024 × 0.9 = 71.68 GiB usable; 651.93 / 71.68 = 9.09 → 10 cards, not a degree → 16 = 2 nodes.
* moe, Mixtral-8x7B at bf16: 46,702,792,704 parameters, 12,879,925,248 active (32 layers × 6 idle
  experts × 176,160,768 fewer); 93,405,585,408 B = 86.99 GiB resident; 25,759,850,496 B read and
  25,759,850,496 operations per token; ratio 3.63.
* lora, Llama-3.1-8B rank 16 on q, v: 16 × (4,096 + 4,096) + 16 × (4,096 + 1,024) = 212,992 per layer
  × 32 = 6,815,744 parameters × 2 B = 13 MiB = 0.0127 GiB; a tenth of the 53.73 GiB KV budget
  (5.37 GiB) holds ⌊423.19⌋ = 423.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest

from drills.models import ProblemInstance
from tests.calculators.output import calc_json, field_error, step_keys, step_value, values
from tests.calculators.output import check_contract as shared_check_contract
from tests.drills.problems.answers import answer_a_new_problem
from tests.paths import REPO_ROOT

REPO = REPO_ROOT
GIB = 2**30
KEYS = {
    "tp": ["weights_gib", "kv_bytes_per_token", "kv_replication", "per_user_gib", "usable_per_gpu_gib",
           "room_per_gpu_gib", "min_gpus", "tp_degree", "nodes"],
    "moe": ["total_params", "active_params", "weights_gib", "active_bytes_per_token", "flops_per_token",
            "saving_ratio", "tokens_per_expert", "all_to_all_bytes", "expert_flop_per_byte", "ridge_flop_per_byte",
            "ep_efficient"],
    "lora": ["params_per_layer", "adapter_params", "adapter_gib", "spare_gib", "adapters_fit"],
}
SEED_700B = ["--params-b", "700", "--weights-dtype", "fp8", "--context", "0", "--reserve-gib", "0"]


def check_contract(payload: dict, family: str) -> None:
    shared_check_contract(payload, family, KEYS[family], notes=True, sentences=True)


# --- calc --json --------------------------------------------------------------------------------

def test_tp_json_reproduces_the_700b_example():
    payload = calc_json("tp", *SEED_700B)
    check_contract(payload, "tp")
    v = values(payload)
    assert v["weights_gib"] == pytest.approx(700e9 / GIB, rel=1e-12)  # 651.93, full precision
    assert v["usable_per_gpu_gib"] == pytest.approx(81_559 / 1024 * 0.9, rel=1e-12)
    assert (v["min_gpus"], v["tp_degree"], v["nodes"]) == (10, 16, 2)
    assert all(isinstance(v[key], int) for key in ("min_gpus", "tp_degree", "nodes"))
    assert payload["inputs"]["params_b"] == 700
    assert any("573.46 GiB usable" in note for note in payload["notes"])


def test_tp_json_names_the_over_engineering_tell():
    payload = calc_json("tp", "--proposed-gpus", "4")
    assert values(payload)["tp_degree"] == 1
    assert payload["notes"][0].startswith("Over-engineering tell")


def test_moe_json_is_mixtral_by_default():
    payload = calc_json("moe")
    check_contract(payload, "moe")
    v = values(payload)
    assert (v["total_params"], v["active_params"]) == (46_702_792_704, 12_879_925_248)
    assert v["weights_gib"] == pytest.approx(93_405_585_408 / GIB, rel=1e-12)
    assert v["active_bytes_per_token"] == v["flops_per_token"] == 25_759_850_496
    assert v["saving_ratio"] == pytest.approx(46_702_792_704 / 12_879_925_248, rel=1e-12)


def test_lora_json_is_13_mib_per_adapter_on_the_reference_model():
    payload = calc_json("lora")
    check_contract(payload, "lora")
    v = values(payload)
    assert (v["params_per_layer"], v["adapter_params"]) == (212_992, 6_815_744)
    assert v["adapter_gib"] == 13 / 1024
    assert v["adapters_fit"] == 423


def test_lora_json_takes_a_budget_and_a_config_file(tmp_path):
    models = json.loads((REPO / "fixtures" / "catalog" / "models.json").read_text())
    config = tmp_path / "qwen.json"
    config.write_text(json.dumps(next(m for m in models if m["id"] == "qwen2.5-7b")["config"]))
    # Qwen2.5-7B qv: 180,224 × 28 = 5,046,272 params × 2 B = 10,092,544 B; 2 GiB / that = 212.8 → 212.
    v = values(calc_json("lora", "--config", str(config), "--budget-gib", "2"))
    assert v["adapter_params"] == 5_046_272
    assert v["adapters_fit"] == 212


def test_bad_input_exits_2_with_one_sentence_on_stderr():
    cases = {
        "tp": ["tp", "--gpus-per-node", "6"],
        "moe": ["moe", "--weights-dtype", "int3"],
        "lora": ["lora", "--model", "deepseek-v3"],
    }
    running = {family: subprocess.Popen([sys.executable, "manage.py", "calc", *args, "--json"], cwd=REPO,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for family, args in cases.items()}
    messages = {}
    for family, process in running.items():
        stdout, stderr = process.communicate(timeout=60)
        assert process.returncode == 2, (family, stderr)
        assert stdout == ""
        messages[family] = stderr.strip()
        assert "\n" not in messages[family] and messages[family].endswith("."), (family, stderr)
        assert "Traceback" not in stderr
    # Each sentence names what was wrong.
    assert "gpus_per_node must be a power of two" in messages["tp"]
    assert "int3" in messages["moe"]
    assert "Multi-head latent attention" in messages["lora"]


# --- calculator pages ---------------------------------------------------------------------------

@pytest.mark.django_db
class TestCalculatorPages:
    def test_tp_page_shows_the_700b_example(self, candidate_client):
        response = candidate_client.get("/calculators/tp/", {"params_b": "700", "weights_dtype": "fp8",
                                                             "context": "0", "reserve_gib": "0"})
        assert response.status_code == 200
        page = response.content.decode()
        assert step_keys(page) == KEYS["tp"]
        assert step_value(page, "weights_gib") == "651.93 GiB"
        assert step_value(page, "usable_per_gpu_gib") == "71.68 GiB"
        # Counts show their number first (with or without the unit word, as the display rounding decides).
        assert step_value(page, "min_gpus").split()[0] == "10"
        assert step_value(page, "tp_degree").split()[0] == "16"
        assert step_value(page, "nodes") == "2 nodes"

    def test_moe_page_shows_mixtral(self, candidate_client):
        page = candidate_client.get("/calculators/moe/").content.decode()
        assert step_keys(page) == KEYS["moe"]
        assert step_value(page, "total_params") == "46,702,792,704"
        assert step_value(page, "weights_gib") == "86.99 GiB"
        assert "MoE saves operations, not memory" in html.unescape(page)

    def test_lora_page_shows_the_13_mib_adapter(self, candidate_client):
        page = candidate_client.get("/calculators/lora/", {"targets": "qv", "rank": "16"}).content.decode()
        assert step_keys(page) == KEYS["lora"]
        assert step_value(page, "params_per_layer") == "212,992"
        assert step_value(page, "adapter_params") == "6,815,744"
        assert step_value(page, "adapters_fit") == "423"
        assert "13.0 MiB" in html.unescape(page)

    @pytest.mark.parametrize(("path", "name", "value"), [
        ("/calculators/tp/", "gpus_per_node", "6"),      # the engine's check, beside its field
        ("/calculators/tp/", "params_b", "abc"),
        ("/calculators/tp/", "reserve_gib", "80"),
        ("/calculators/tp/", "proposed_gpus", "0"),
        ("/calculators/moe/", "weights_dtype", "int3"),
        ("/calculators/moe/", "weights_bits", "-1"),
        ("/calculators/lora/", "rank", "abc"),
        ("/calculators/lora/", "targets", "qk"),
        ("/calculators/lora/", "model", "deepseek-v3"),  # MLA: rejected by the engine, on the model
        ("/calculators/lora/", "budget_share", "2"),
    ])
    def test_garbage_stays_200_with_the_error_beside_the_field(self, candidate_client, htmx_client, path, name, value):
        response = candidate_client.get(path, {name: value})
        assert response.status_code == 200
        page = response.content.decode()
        assert field_error(page, name)
        assert step_keys(page) == []
        assert htmx_client.get(path, {name: value}).status_code == 200

    @pytest.mark.parametrize("path", ["/calculators/tp/", "/calculators/moe/", "/calculators/lora/"])
    @pytest.mark.parametrize("query", ["model=nope", "config={bad", "context=1e400", "unknown=1",
                                       "gpus_per_node=1e99", "params_b=nan", "rank=-3", "budget_gib=inf"])
    def test_any_query_string_answers_200(self, candidate_client, path, query):
        assert candidate_client.get(f"{path}?{query}").status_code == 200


# --- drills -------------------------------------------------------------------------------------

@pytest.mark.django_db
class TestDrills:
    @pytest.mark.parametrize("family", ["tp", "moe", "lora"])
    def test_a_new_problem_redirects_and_a_right_answer_set_scores_100(self, candidate_client, family):
        problem, page, graded = answer_a_new_problem(candidate_client, family)

        assert problem.inputs["model"] in html.unescape(page.content.decode())
        assert "Score 100 %" in html.unescape(graded.content.decode())
        verdicts = re.findall(r'class="answer-step[^"]*verdict-([a-z_]+)"', graded.content.decode())
        assert verdicts == ["correct"] * len(KEYS[family])

    def test_a_tp_problem_names_the_non_buyable_degree(self, candidate_client, candidate):
        # Llama-3.1-405B bf16 on H100s: 12 cards → degree 16 (see tests/engine/test_family_tp.py).
        problem = ProblemInstance.objects.create(created_by=candidate,
            family="tp", seed=0, generator_version=1,
            inputs={"model": "llama-3.1-405b", "gpu": "h100-sxm5-80gb", "weights_dtype": "bf16",
                    "kv_dtype": "bf16", "context": 8192, "utilization": 0.9, "reserve_gib": 3.0,
                    "gpus_per_node": 8},
            snapshot=_snapshot("llama-3.1-405b", "h100-sxm5-80gb"))
        response = candidate_client.post(problem.get_absolute_url(), {"min_gpus": "12", "tp_degree": "12",
                                                                        "nodes": "1",
                                                                        "blanks": "count"})  # others blank
        text = html.unescape(response.content.decode())
        verdicts = dict((key, verdict) for verdict, key in re.findall(
            r'class="answer-step[^"]*verdict-([a-z_]+)" id="step-([a-z_]+)"', response.content.decode()))
        assert verdicts["min_gpus"] == "correct"
        assert verdicts["tp_degree"] == verdicts["nodes"] == "misconception"
        assert "Card count that no engine splits over" in text
        # rounded-nodes-down may be declared first by another family (same id, same lesson): no title here.


def _snapshot(model_id: str, gpu_id: str) -> dict:
    models = json.loads((REPO / "fixtures" / "catalog" / "models.json").read_text())
    gpus = json.loads((REPO / "fixtures" / "catalog" / "gpus.json").read_text())
    return {"models": [m for m in models if m["id"] == model_id], "gpus": [g for g in gpus if g["id"] == gpu_id]}

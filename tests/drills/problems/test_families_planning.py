"""The planning families (``slo``, ``fleet``, ``cost``) through Django: ``manage.py calc``, the
calculator pages and the drill pages.

Values are the families' defaults, derived by hand in tests/engine/test_family_{slo,fleet,cost}.py:
slo — Llama-3.1-70B on 8 × H100: 167 sequences (memory binds), 32.63 ms (29.32 ms of reads + 3.30 ms of
all-reduces, docs/architecture.md §12), 5,118.7 tok/s, 2 replicas,
2 nodes; fleet — 20 req/s × 20 s = 400 in flight, ⌈400 ÷ (53 × 0.8)⌉ = 10 replicas = 10 GPUs →
2 nodes; cost — $3 × 8 = $24/h, 10,000 × 3,600 = 36,000,000 tokens, $0.67 per million.
"""

import html
import subprocess
import sys

import pytest

from drills.models import ProblemInstance
from tests.calculators.output import calc_json, field_error, step_keys, step_value, values
from tests.calculators.output import check_contract as shared_check_contract
from tests.drills.problems.answers import answer_a_new_problem
from tests.paths import REPO_ROOT

REPO = REPO_ROOT
KEYS = {
    "slo": ["weights_gib", "replica_kv_budget_gib", "kv_replication", "per_user_gib", "batch_memory_limit",
            "batch_tpot_limit", "max_batch", "bytes_per_step_gib", "tpot_ms", "tokens_per_s", "replicas", "nodes"],
    "fleet": ["concurrency", "replicas", "gpus", "nodes"],
    "cost": ["usd_per_hour", "tokens_per_hour", "usd_per_million_tokens"],
}


def check_contract(payload: dict, family: str) -> None:
    shared_check_contract(payload, family, KEYS[family], labels=True, notes=True)


# --- manage.py calc --json ----------------------------------------------------------------------

def test_calc_slo_json_is_the_70b_node_in_contract_shape():
    payload = calc_json("slo")
    check_contract(payload, "slo")
    v = values(payload)
    assert v["weights_gib"] == pytest.approx(131.41651916503906, rel=1e-12)  # 70,553,706,496 × 2 B
    assert (v["batch_memory_limit"], v["batch_tpot_limit"], v["max_batch"]) == (167, 287, 167)
    assert v["tpot_ms"] == pytest.approx(29.323115647363185 + 3.302479644444445, rel=1e-9)
    assert (v["replicas"], v["nodes"]) == (2, 2)
    assert isinstance(v["max_batch"], int) and isinstance(v["nodes"], int)
    assert payload["inputs"]["model"] == "llama-3.1-70b" and payload["inputs"]["gpus"] == 8


def test_calc_slo_takes_kebab_case_flags():
    # Llama-3.1-8B on one H100 at 20 ms: the target binds at 31 sequences, 7 replicas, 1 node.
    v = values(calc_json("slo", "--model", "llama-3.1-8b", "--gpus", "1", "--tpot-target-ms", "20",
                         "--bandwidth-efficiency", "0.75", "--request-rate", "20", "--output-tokens", "500",
                         "--gpus-per-node", "8"))
    assert (v["max_batch"], v["replicas"], v["nodes"]) == (31, 7, 1)


def test_calc_fleet_json_rounds_up_to_whole_nodes():
    payload = calc_json("fleet", "--rate", "20", "--latency-s", "20", "--users-per-replica", "53",
                        "--gpus-per-replica", "1", "--occupancy", "0.8", "--gpus-per-node", "8", "--spares", "0")
    check_contract(payload, "fleet")
    assert values(payload) == {"concurrency": 400, "replicas": 10, "gpus": 10, "nodes": 2}
    assert [step["unit"] for step in payload["steps"]] == ["users", "replicas", "GPUs", "nodes"]


def test_calc_fleet_spares_are_added_after_rounding():
    # ⌈9.43⌉ + 1 = 11 replicas = 11 GPUs → 2 nodes.
    assert values(calc_json("fleet", "--spares", "1")) == {"concurrency": 400, "replicas": 11, "gpus": 11,
                                                            "nodes": 2}


def test_calc_cost_json_and_a_half_idle_fleet():
    payload = calc_json("cost", "--usd-per-gpu-hour", "3", "--gpus", "8", "--tokens-per-s", "10000")
    check_contract(payload, "cost")
    v = values(payload)
    assert (v["usd_per_hour"], v["tokens_per_hour"]) == (24, 36_000_000)
    assert v["usd_per_million_tokens"] == pytest.approx(2 / 3, rel=1e-12)
    assert [step["unit"] for step in payload["steps"]] == ["USD/h", "tok", "USD/Mtok"]
    half = values(calc_json("cost", "--utilization", "0.5"))
    assert half["usd_per_million_tokens"] == pytest.approx(4 / 3, rel=1e-12)  # twice the busy cost


def test_bad_input_exits_2_with_one_sentence_on_stderr():
    cases = {
        "slo": ["slo", "--gpus", "3"],
        "fleet": ["fleet", "--occupancy", "1.5"],
        "cost": ["cost", "--tokens-per-s", "0"],
    }
    started = {name: subprocess.Popen([sys.executable, "manage.py", "calc", *args], cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name, args in cases.items()}
    expected = {"slo": "does not pack into nodes of 8", "fleet": "occupancy must be at most 1",
                "cost": "tokens_per_s must be above 0"}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 2, (name, stderr)
        assert stdout == "" and "Traceback" not in stderr
        message = stderr.strip()
        assert expected[name] in message
        assert "\n" not in message and message.endswith(".")


# --- calculator pages ---------------------------------------------------------------------------

@pytest.mark.django_db
class TestCalculatorPages:
    def test_the_slo_page_shows_the_batch_the_step_time_and_the_fleet(self, candidate_client):
        response = candidate_client.get("/calculators/slo/")

        assert response.status_code == 200
        page = response.content.decode()
        assert step_keys(page) == KEYS["slo"]
        assert step_value(page, "max_batch") == "167 users"
        assert step_value(page, "tpot_ms") == "32.63 ms"
        assert step_value(page, "tokens_per_s") == "5,118.7 tok/s"
        assert step_value(page, "nodes") == "2 nodes"
        assert "Memory binds" in html.unescape(page)

    def test_the_fleet_page_shows_two_nodes(self, candidate_client):
        page = candidate_client.get("/calculators/fleet/").content.decode()

        assert step_value(page, "concurrency") == "400 users"
        assert step_value(page, "replicas") == "10 replicas"
        assert step_value(page, "nodes") == "2 nodes"

    def test_the_cost_page_shows_the_cost_per_million(self, candidate_client):
        page = candidate_client.get("/calculators/cost/", {"utilization": "0.5"}).content.decode()

        assert step_value(page, "usd_per_hour") == "$24.00/h"
        assert step_value(page, "usd_per_million_tokens") == "$1.33/Mtok"  # $24 ÷ 18,000,000 × 10^6

    @pytest.mark.parametrize("slug, query, errors", [
        ("slo", {"gpus": "3", "mfu": "abc"}, {"mfu": "'abc' is not a number; this field expects a plain number"}),
        ("slo", {"tpot_target_ms": "2"}, {"tpot_target_ms": "reading the weights alone takes 7.02 ms"}),
        ("slo", {"gpus": "3"}, {"gpus": "does not pack into nodes of 8"}),
        # A share of peak next to zero is refused, not turned into "inf ms" (a new user's finding).
        ("slo", {"bandwidth_efficiency": "1e-320"}, {"bandwidth_efficiency": "Must be at least 0.01."}),
        ("fleet", {"rate": "lots", "occupancy": "2", "spares": "-1"},
         {"rate": "'lots' is not a number; this field expects a request rate in req/s, such as 12.5.",
          "occupancy": "Must be at most 1.", "spares": "Must be at least 0."}),
        ("fleet", {"gpus_per_replica": "3"}, {"gpus_per_replica": "does not pack"}),
        # The busy fraction typed under its older name; its error sits beside the field as it is named now
        # (issue 29: memory utilisation and a fleet's busy fraction are two keys).
        ("cost", {"utilization": "0", "gpus": "x", "tokens_per_s": "1e400"},
         {"busy_fraction": "Must be at least 0.01.", "gpus": "'x' is not a number; this field takes a whole number."}),
    ])
    def test_garbage_queries_keep_the_page_and_put_errors_beside_fields(self, candidate_client, slug, query, errors):
        response = candidate_client.get(f"/calculators/{slug}/", query)

        assert response.status_code == 200
        page = response.content.decode()
        for name, text in errors.items():
            assert text in field_error(page, name), name

    def test_the_htmx_partial_carries_the_steps_only(self, htmx_client):
        page = htmx_client.get("/calculators/fleet/", {"spares": "2"}).content.decode()

        assert "<html" not in page
        assert step_value(page, "replicas") == "12 replicas"


# --- drills -------------------------------------------------------------------------------------

@pytest.mark.django_db
class TestDrills:
    @pytest.mark.parametrize("slug", ["slo", "fleet", "cost"])
    def test_a_new_problem_is_graded_and_a_right_sheet_scores_100(self, candidate_client, slug):
        _, _, graded = answer_a_new_problem(candidate_client, slug)

        assert "Score 100 %" in html.unescape(graded.content.decode())

    def test_the_slo_statement_names_the_model_card_and_target(self, candidate_client):
        url = candidate_client.post("/drills/slo/new/?seed=7", {"save": "1"})["Location"]
        problem = ProblemInstance.objects.get()

        text = html.unescape(candidate_client.get(url).content.decode())

        assert problem.inputs["model"] in text
        assert f"TPOT of {problem.inputs['tpot_target_ms']:g} ms" in text

    def test_a_floored_node_count_is_named_on_the_page(self, candidate_client, candidate):
        problem = ProblemInstance.objects.create(created_by=candidate,
            family="fleet", seed=0, generator_version=1, snapshot={"models": [], "gpus": []},
            inputs={"rate": 20.0, "latency_s": 20.0, "users_per_replica": 53, "gpus_per_replica": 1,
                    "occupancy": 0.8, "gpus_per_node": 8, "spares": 0})

        # 400 in flight → 10 replicas, 10 GPUs; 1 node is ⌊10 ÷ 8⌋, rounded down.
        response = candidate_client.post(problem.get_absolute_url(),
                                         {"concurrency": "400", "replicas": "10", "gpus": "10", "nodes": "1"})

        text = html.unescape(response.content.decode())
        assert "Rounded down instead of up" in text
        assert "Score 75 %" in text

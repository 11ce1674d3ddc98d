"""``manage.py grade FAMILY (--seed N | --inputs JSON) --answers FILE [--json]`` (docs/architecture.md §10).

Run as a subprocess, as a user or a CI script would. Expected numbers are derived
by hand from ``fixtures/catalog/*.json``; see the comments.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from drills.models import Attempt
from drills.problems.generation import create_problem, generate_inputs
from tests.paths import REPO_ROOT

BASE_DIR = REPO_ROOT
CATALOG_DIR = BASE_DIR / "fixtures" / "catalog"

STEP_FIELDS = {"key", "verdict", "misconception", "expected", "given", "value", "message"}

# Mixtral-8x7B (what generator v1 drew at seed 5; a seed names a problem for one generator version and one
# catalog, so the answers below grade these inputs, given whole: tests/pinned.py), int4 (4.5 bits) weights,
# fp8 KV, one H100 PCIe, 8,192 tokens,
# 0.90, 3 GiB, 2,350-token conversations in 16-token blocks. By hand:
#   card   81,559 MiB (nvidia-smi; generator v30) = 79.647 GiB;  usable × 0.9 = 71.683 GiB
#   params 46,702,792,704 → × 4.5 / 8 = 26,270,320,896 B = 24.466 GiB (nominal 4 bits: 21.747 GiB)
#   budget 71.683 − 24.466 − 3 = 44.216 GiB
#   kv     2 × 32 × 8 × 128 × 1 = 65,536 B;  per user × 8,192 = 0.50 GiB
#   worst  ⌊44.216 / 0.5⌋ = 88;  the bare card holds ⌊79.647 / 0.5⌋ = 159 at most
SEED_5_ANSWERS = {
    "card_gib": "81559 MiB",      # correct: the driver's figure is the card
    "usable_gib": "79.65",        # misconception: utilisation skipped (the card itself)
    "weights_gib": "21.75",       # misconception: int4 at the nominal 4.0 bits
    "kv_budget_gib": "54.90",     # carried forward: own 79.65 − own 21.75 − 3 = 54.90
    "kv_bytes_per_token": "131072",  # wrong: a bf16 cache (2 × right), no named variant
    "per_user_gib": "0.52",       # close: 4 % over 0.50
    "users_worst_case": "500",    # impossible: above 159
    "users_paged": "",            # unreadable
}
MIXTRAL_LADDER = {
    "model": "mixtral-8x7b-v0.1", "gpu": "h100-pcie-80gb", "gpus": 1, "weights_dtype": "int4", "kv_dtype": "fp8",
    "context": 8192, "utilization": 0.9, "reserve_gib": 3.0, "avg_tokens": 2350, "block_size": 16,
}
SEED_5_VERDICTS = ["correct", "misconception", "misconception", "carried_forward", "wrong", "close",
                   "impossible", "unreadable"]


def grade_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "grade", *args], cwd=BASE_DIR,
                          capture_output=True, text=True, timeout=60)


def write_answers(tmp_path: Path, answers) -> str:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    return str(path)


def graded_json(*args: str) -> dict:
    completed = grade_command(*args, "--json")
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def llama_2_7b_config() -> dict:
    for entry in json.loads((CATALOG_DIR / "models.json").read_text()):
        if entry["id"] == "llama-2-7b":
            return entry["config"]
    raise KeyError("llama-2-7b")


class TestJsonOutput:
    def test_reference_stack_answers_give_the_documented_shape_and_verdicts(self, tmp_path):
        answers = {
            "card_gib": "81559/1024",
            "usable_gib": "71.68 GiB",
            "weights_gib": "16.06",           # the GB number as GiB: gb-gib-mix
            "kv_budget_gib": "52.62",         # own 71.68 − 16.06 − 3 = 52.62: carried forward
            "kv_bytes_per_token": "128 KiB",
            "per_user_gib": 1,                # a JSON number is read as the text "1"
            "users_worst_case": "52",         # ⌊52.62 / 1⌋: carried forward
            "users_paged": "187",             # ⌊52.62 / 0.28125⌋ = ⌊187.09⌋: carried forward
        }

        data = graded_json("ladder", "--inputs", "{}", "--answers", write_answers(tmp_path, answers))

        assert set(data) == {"family", "inputs", "steps", "score"}
        assert data["family"] == "ladder"
        assert data["inputs"] == {
            "model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "weights_dtype": "bf16",
            "weights_bits": None, "kv_dtype": "bf16", "context": 8192, "utilization": 0.9, "reserve_gib": 3.0,
            "avg_tokens": 2300, "block_size": 16, "pp": 1,
        }
        assert [step["key"] for step in data["steps"]] == [
            "card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token", "per_user_gib",
            "users_worst_case", "users_paged"]
        for step in data["steps"]:
            assert STEP_FIELDS <= set(step)
        steps = {step["key"]: step for step in data["steps"]}
        assert [step["verdict"] for step in data["steps"]] == [
            "correct", "correct", "misconception", "carried_forward", "correct", "correct",
            "carried_forward", "carried_forward"]
        assert steps["weights_gib"]["misconception"] == "gb-gib-mix"
        assert steps["card_gib"]["misconception"] is None
        # full precision, not display rounding
        assert steps["card_gib"]["expected"] == 79.6474609375
        assert steps["weights_gib"]["expected"] == pytest.approx(14.957527160644531, rel=1e-12)
        assert steps["kv_budget_gib"]["expected"] == pytest.approx(53.72518768310547, rel=1e-12)
        assert steps["users_paged"]["expected"] == 191
        # given is the raw text, value what was read, in the step's unit
        assert steps["kv_bytes_per_token"]["given"] == "128 KiB"
        assert steps["kv_bytes_per_token"]["value"] == 131072
        assert steps["per_user_gib"]["given"] == "1"
        assert steps["card_gib"]["value"] == 79.6474609375
        assert "with the right inputs this step is 53.73 GiB" in steps["kv_budget_gib"]["message"]
        assert data["score"] == pytest.approx(7 / 8)

    def test_seed_grades_the_problem_the_generator_draws(self, tmp_path):
        data = graded_json("ladder", "--seed", "5", "--answers", write_answers(tmp_path, SEED_5_ANSWERS))
        assert {k: v for k, v in data["inputs"].items() if v is not None} == {
            **generate_inputs("ladder", 5), "pp": 1}  # the ladder draws no pipeline parallelism: its default

        data = graded_json("ladder", "--inputs", json.dumps(MIXTRAL_LADDER), "--answers",
                           write_answers(tmp_path, SEED_5_ANSWERS))
        steps = {step["key"]: step for step in data["steps"]}
        assert steps["card_gib"]["expected"] == 81559 / 1024
        assert steps["kv_bytes_per_token"]["expected"] == 65536
        assert steps["users_worst_case"]["expected"] == 88
        assert [step["verdict"] for step in data["steps"]] == SEED_5_VERDICTS
        assert steps["weights_gib"]["misconception"] == "nominal-4bit"
        assert steps["usable_gib"]["misconception"] == "skipped-utilization"
        assert "at most 159 such users" in steps["users_worst_case"]["message"]
        # 1 + 0 + 0 + 1 + 0 + 0.5 + 0 + 0 = 2.5 / 8
        assert data["score"] == pytest.approx(0.3125)

    def test_a_pasted_config_stands_in_for_a_catalog_model(self, tmp_path):
        # Llama-2-7B (MHA, untied): 32 × (4 × 4,096² + 3 × 4,096 × 11,008 + 2 × 4,096)
        # + 2 × 32,000 × 4,096 + 4,096 = 6,738,415,616 params → × 2 B = 12.55 GiB.
        # Budget 71.6827 − 12.5513 − 3 = 56.13 GiB; KV 2 × 32 × 32 × 128 × 2 = 524,288 B;
        # per user at 4,096: 2.00 GiB → ⌊28.07⌋ = 28; paged 524,288 × 2,304 = 1.125 GiB → ⌊49.89⌋ = 49.
        inputs = json.dumps({"config": llama_2_7b_config(), "context": 4096})
        answers = {"card_gib": "79.65", "usable_gib": "71.68", "weights_gib": "12.55", "kv_budget_gib": "56.13",
                   "kv_bytes_per_token": "524288", "per_user_gib": "2", "users_worst_case": "28",
                   "users_paged": "49"}

        data = graded_json("ladder", "--inputs", inputs, "--answers", write_answers(tmp_path, answers))

        assert [step["verdict"] for step in data["steps"]] == ["correct"] * 8
        assert data["score"] == 1.0
        assert data["inputs"]["config"]["num_key_value_heads"] == 32
        assert "model" not in data["inputs"]

    def test_other_families_grade_their_own_steps(self, tmp_path):
        # DeepSeek-V3 (MLA): 61 × (512 + 64) × 2 = 70,272 B per token; as K and V per head
        # 61 × 128 × (128 + 64 + 128) × 2 = 4,997,120. At 8,192 tokens: 70,272 × 8,192 / 2^30 = 0.536 GiB.
        answers = {"kv_bytes_per_token": "4997120", "kv_replication": "1", "per_user_gib": "0.536"}

        data = graded_json("kv", "--inputs", '{"model": "deepseek-v3"}',
                           "--answers", write_answers(tmp_path, answers))

        assert [(s["key"], s["verdict"], s["misconception"]) for s in data["steps"]] == [
            ("kv_bytes_per_token", "misconception", "latent-as-heads"),
            ("kv_replication", "correct", None),
            ("per_user_gib", "correct", None)]

    def test_a_verdict_in_words_keeps_1_or_0_in_the_json(self, tmp_path):
        # Issue 33 item 2 (DESIGN §10: the JSON keeps 1/0). The roofline on the reference stack: decode at 1
        # FLOP/byte under the 295.3 FLOP/byte ridge is memory-bound (0); prefill at 2,048 is compute-bound (1).
        answers = {"decode_bound": "memory-bound", "prefill_bound": "Compute", "ridge_reachable": "yes"}

        data = graded_json("roofline", "--inputs", "{}", "--answers", write_answers(tmp_path, answers))

        steps = {s["key"]: s for s in data["steps"]}
        assert [(steps[key]["verdict"], steps[key]["value"], steps[key]["expected"], steps[key]["given"])
                for key in answers] == [("correct", 0, 0, "memory-bound"), ("correct", 1, 1, "Compute"),
                                        ("correct", 1, 1, "yes")]

    def test_without_json_it_prints_one_line_per_step_and_the_score(self, tmp_path):
        completed = grade_command("ladder", "--inputs", "{}", "--answers",
                                  write_answers(tmp_path, {"users_worst_case": "53"}))

        assert completed.returncode == 0, completed.stderr
        lines = completed.stdout.strip().splitlines()
        assert len(lines) == 9
        assert re.match(r"users_worst_case\s+correct\s", lines[6])
        assert lines[-1] == "score: 0.125"


@pytest.mark.django_db
def test_the_page_and_the_command_agree_on_every_verdict(candidate_client, candidate, tmp_path):
    url = create_problem("ladder", seed=5, user=candidate, fixed_inputs=MIXTRAL_LADDER).get_absolute_url()
    # The blank step counts as unanswered only when asked, as the page's second button does.
    candidate_client.post(url, {**SEED_5_ANSWERS, "blanks": "count"})
    on_page = list(Attempt.objects.get().steps.values_list("verdict", flat=True))

    data = graded_json("ladder", "--inputs", json.dumps(MIXTRAL_LADDER), "--answers",
                       write_answers(tmp_path, SEED_5_ANSWERS))

    assert on_page == [step["verdict"] for step in data["steps"]] == SEED_5_VERDICTS
    assert Attempt.objects.get().score == pytest.approx(data["score"])


class TestBadInput:
    @pytest.mark.parametrize(("args", "needle"), [
        (["roofline-x", "--seed", "1"], "invalid choice"),
        (["ladder", "--inputs", "{not json"], "not valid JSON"),
        (["ladder", "--inputs", "[1, 2]"], "JSON object"),
        (["ladder", "--inputs", '{"model": "gpt-9"}'], "Unknown model 'gpt-9'"),
        (["ladder", "--inputs", '{"utilization": 2}'], "utilization"),
        (["ladder", "--seed", "1", "--inputs", "{}"], "not allowed with"),
        (["ladder"], "--seed --inputs"),
    ], ids=["unknown-family", "invalid-json", "not-an-object", "unknown-model", "out-of-range",
            "both-seed-and-inputs", "neither-seed-nor-inputs"])
    def test_exits_2_with_one_sentence(self, tmp_path, args, needle):
        completed = grade_command(*args, "--answers", write_answers(tmp_path, {}))

        assert completed.returncode == 2
        assert completed.stdout == ""
        message = completed.stderr.strip()
        assert needle in message
        assert "\n" not in message
        assert "Traceback" not in message
        assert message.endswith(".")

    def test_a_missing_answers_file_exits_2(self, tmp_path):
        missing = tmp_path / "nowhere.json"

        completed = grade_command("ladder", "--seed", "1", "--answers", str(missing))

        assert completed.returncode == 2
        assert completed.stderr.strip() == f"Cannot read the answers file {missing}: No such file or directory."

    def test_an_answers_file_that_is_not_an_object_exits_2(self, tmp_path):
        completed = grade_command("ladder", "--seed", "1", "--answers", write_answers(tmp_path, ["53"]))

        assert completed.returncode == 2
        assert completed.stderr.strip() == ("The answers file must hold a JSON object mapping step keys "
                                            "to answers.")

"""``manage.py calc FAMILY [flags] [--json]`` (docs/architecture.md §10).

The JSON shape and values are checked in-process with ``call_command``; exit codes
and stderr are checked by running ``manage.py calc`` in subprocesses (started
together, so the whole file stays fast).
"""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.calculators.output import calc_json, values
from tests.calculators.output import check_contract as shared_check_contract
from tests.paths import REPO_ROOT

REPO = REPO_ROOT
MODELS = {entry["id"]: entry for entry in json.loads((REPO / "fixtures" / "catalog" / "models.json").read_text())}
LADDER_KEYS = ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token", "per_user_gib",
               "users_worst_case", "users_paged"]
GIB = 2**30


def check_contract(payload: dict, family: str, keys: list[str]) -> None:
    shared_check_contract(payload, family, keys, labels=True)


@pytest.fixture
def config_file(tmp_path):
    def write(model_id: str, **changes) -> str:
        config = dict(MODELS[model_id]["config"])
        for key, value in changes.items():
            if value is ...:
                config.pop(key)
            else:
                config[key] = value
        path = tmp_path / f"{model_id}.json"
        path.write_text(json.dumps(config))
        return str(path)
    return write


# --- the JSON contract ------------------------------------------------------------------------

def test_ladder_json_is_the_reference_stack_with_full_precision_values():
    payload = calc_json("ladder")
    check_contract(payload, "ladder", LADDER_KEYS)
    assert [step["unit"] for step in payload["steps"]] == ["GiB", "GiB", "GiB", "GiB", "B", "GiB", "users",
                                                           "users"]
    v = values(payload)
    assert v["card_gib"] == 79.6474609375  # 81,559 MiB ÷ 1,024
    assert v["usable_gib"] == pytest.approx(71.68271484375, rel=1e-12)  # × 0.90
    # 8,030,261,248 × 2 B ÷ 2^30 = 14.957527160644531: full precision, not the displayed 14.96.
    assert v["weights_gib"] == pytest.approx(16_060_522_496 / GIB, rel=1e-12)
    assert v["weights_gib"] != 14.96
    assert v["kv_budget_gib"] == pytest.approx(53.72518768310547, rel=1e-12)  # 71.6827 − 14.9575 − 3
    assert v["kv_bytes_per_token"] == 131_072  # 2 × 32 × 8 × 128 × 2
    assert v["per_user_gib"] == 1.0  # 131,072 × 8,192 = 2^30
    assert v["users_worst_case"] == 53 and v["users_paged"] == 191
    steps = {step["key"]: step for step in payload["steps"]}
    assert steps["kv_bytes_per_token"]["substituted"] == "2 × 32 × 8 × 128 × 2 B = 131,072 B"
    inputs = payload["inputs"]
    for name, default in [("model", "llama-3.1-8b"), ("gpu", "h100-sxm5-80gb"), ("gpus", 1),
                          ("weights_dtype", "bf16"), ("kv_dtype", "bf16"), ("context", 8192),
                          ("utilization", 0.9), ("reserve_gib", 3.0), ("avg_tokens", 2300), ("block_size", 16)]:
        assert inputs[name] == default
    assert "weights_bits" in inputs


def test_ladder_flags_are_the_inputs_in_kebab_case():
    payload = calc_json("ladder", "--model", "llama-3.1-70b", "--gpu", "h100-sxm5-80gb", "--gpus", "1",
                        "--weights-dtype", "fp8", "--kv-dtype", "bf16", "--context", "8192",
                        "--utilization", "0.9", "--reserve-gib", "3", "--avg-tokens", "2300", "--block-size", "16")
    v = values(payload)
    # 70,553,706,496 B = 65.708 GiB of fp8 weights; 2.974 GiB left; 2.5 GiB per user → 1 user; 4 paged.
    assert v["weights_gib"] == pytest.approx(70_553_706_496 / GIB, rel=1e-12)
    assert (v["users_worst_case"], v["users_paged"]) == (1, 4)
    assert payload["inputs"]["model"] == "llama-3.1-70b" and payload["inputs"]["weights_dtype"] == "fp8"


def test_ladder_weights_bits_flag():
    v = values(calc_json("ladder", "--weights-dtype", "int4", "--weights-bits", "4"))
    # 8,030,261,248 × 4 ÷ 8 = 4,015,130,624 B; budget 64.943 GiB → 64 worst, ⌊230.91⌋ = 230 paged.
    assert v["weights_gib"] == pytest.approx(4_015_130_624 / GIB, rel=1e-12)
    assert (v["users_worst_case"], v["users_paged"]) == (64, 230)


def test_ladder_that_does_not_fit_says_so_in_its_notes():
    payload = calc_json("ladder", "--model", "llama-3.1-70b")
    assert values(payload)["users_worst_case"] == 0
    # 131.4165 + 3 − 71.6827 = 62.73 GiB short; two cards serve 2 users.
    assert "62.73 GiB short" in payload["notes"][0] and "2 × H100 SXM5 80GB" in payload["notes"][0]


def test_params_json():
    payload = calc_json("params", "--model", "mixtral-8x7b-v0.1")
    check_contract(payload, "params", ["total_params", "active_params"])
    # 46,702,792,704 total; 46,702,792,704 − 32 × 6 × 176,160,768 = 12,879,925,248 active.
    assert values(payload) == {"total_params": 46_702_792_704, "active_params": 12_879_925_248}
    assert all(isinstance(value, int) for value in values(payload).values())


def test_weights_json():
    payload = calc_json("weights", "--model", "llama-3.1-8b", "--weights-dtype", "int4")
    check_contract(payload, "weights", ["total_params", "weight_bytes", "weights_gib"])
    v = values(payload)
    # 8,030,261,248 × 4.5 ÷ 8 = 4,517,021,952 B = 4.2068 GiB.
    assert v["total_params"] == 8_030_261_248
    assert v["weight_bytes"] == 4_517_021_952
    assert v["weights_gib"] == pytest.approx(4_517_021_952 / GIB, rel=1e-12)


def test_kv_json():
    payload = calc_json("kv", "--model", "gemma-2-9b", "--context", "2048", "--kv-dtype", "bf16")
    check_contract(payload, "kv", ["kv_bytes_per_token", "kv_replication", "per_user_gib"])
    # 2 × 42 × 8 × 256 × 2 = 344,064 B; at 2,048 (under the 4,096 window) 344,064 × 2,048 B = 0.65625 GiB.
    assert values(payload) == {"kv_bytes_per_token": 344_064, "kv_replication": 1, "per_user_gib": 0.65625}


def test_config_file_stands_in_for_the_model(config_file):
    payload = calc_json("ladder", "--config", config_file("llama-3.1-8b"))
    assert "model" not in payload["inputs"]
    assert payload["inputs"]["config"]["num_hidden_layers"] == 32
    assert (values(payload)["users_worst_case"], values(payload)["users_paged"]) == (53, 191)


def test_falcon_rw_config_file_counts_its_parameters(config_file):
    payload = calc_json("params", "--config", config_file("falcon-7b"))
    # 32 × (41,877,504 + 165,183,488) + 299,904 + 295,469,056 = 6,921,720,704 (see test_param_count.py).
    assert values(payload)["total_params"] == 6_921_720_704
    assert any("tie_word_embeddings is absent" in note for note in payload["notes"])


def test_text_output_is_a_table_with_display_rounding():
    out = io.StringIO()
    call_command("calc", "ladder", stdout=out)
    text = out.getvalue()
    assert text.startswith("ladder: ")
    line = next(row for row in text.splitlines() if row.startswith("users_worst_case"))
    assert "53 users" in line
    line = next(row for row in text.splitlines() if row.startswith("weights_gib"))
    assert "14.96 GiB" in line
    assert "note: " in text


@pytest.mark.parametrize("args", [["ladder", "--utilization", "1.5"], ["ladder", "--model", "nope"]])
def test_bad_input_in_process_is_a_command_error_with_exit_code_2(args):
    with pytest.raises(CommandError) as info:
        call_command("calc", *args, stdout=io.StringIO())
    assert info.value.returncode == 2


# --- exit codes and stderr of the real command ---------------------------------------------------------

def nan_config(directory: Path) -> str:
    config = json.dumps(MODELS["llama-2-7b"]["config"]).replace('"num_hidden_layers": 32',
                                                                '"num_hidden_layers": NaN')
    path = directory / "nan.json"
    path.write_text(config)
    return str(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Start every command at once; return {case: CompletedProcess-like (returncode, stdout, stderr)}."""
    directory = tmp_path_factory.mktemp("calc")
    good = directory / "llama.json"
    good.write_text(json.dumps(MODELS["llama-3.1-8b"]["config"]))
    invalid = directory / "invalid.json"
    invalid.write_text('{"num_hidden_layers": 32,\n')
    incomplete = directory / "incomplete.json"
    incomplete.write_text(json.dumps({k: v for k, v in MODELS["llama-3.1-8b"]["config"].items()
                                      if k != "num_hidden_layers"}))
    cases = {
        "ok_json": ["ladder", "--json"],
        "ok_table": ["kv", "--config", str(good)],
        "unknown_model": ["ladder", "--model", "llama-9"],
        "unknown_gpu": ["ladder", "--gpu", "h300"],
        "utilization": ["ladder", "--utilization", "1.5"],
        "misspelt_flag": ["ladder", "--contxt", "8192"],
        "flag_without_value": ["ladder", "--context"],
        "not_a_number": ["ladder", "--gpus", "two"],
        "unknown_dtype": ["weights", "--weights-dtype", "int3"],
        "unknown_family": ["frobnicate"],
        "unreadable_config": ["ladder", "--config", str(directory / "missing.json")],
        "invalid_config": ["ladder", "--config", str(invalid)],
        "incomplete_config": ["params", "--config", str(incomplete)],
        "nan_config": ["kv", "--config", nan_config(directory)],
        "model_and_config": ["ladder", "--model", "llama-3.1-8b", "--config", str(good)],
    }
    started = {name: subprocess.Popen([sys.executable, "manage.py", "calc", *args], cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name, args in cases.items()}
    results = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        results[name] = (process.returncode, stdout, stderr)
    return results


def test_command_line_success_exits_0_with_json_on_stdout(runs):
    code, stdout, stderr = runs["ok_json"]
    assert code == 0, stderr
    payload = json.loads(stdout)
    check_contract(payload, "ladder", LADDER_KEYS)
    assert (values(payload)["users_worst_case"], values(payload)["users_paged"]) == (53, 191)


def test_command_line_config_file_prints_a_table(runs):
    code, stdout, stderr = runs["ok_table"]
    assert code == 0, stderr
    assert "131,072 B" in stdout  # 2 × 32 × 8 × 128 × 2
    assert "1.00 GiB" in stdout  # per user at 8,192


@pytest.mark.parametrize(
    "case, expected",
    [
        ("unknown_model", "Unknown model 'llama-9'"),
        ("unknown_gpu", "Unknown GPU 'h300'"),
        ("utilization", "utilization must be at most 1"),
        ("misspelt_flag", "--contxt"),
        ("flag_without_value", "--context"),
        ("not_a_number", "gpus must be a number"),
        ("unknown_dtype", "weights_dtype must be one of"),
        ("unknown_family", "frobnicate"),
        ("unreadable_config", "Cannot read the config file"),
        ("invalid_config", "not valid JSON"),
        ("incomplete_config", "num_hidden_layers"),
        ("nan_config", "num_hidden_layers"),
        ("model_and_config", "not both"),
    ],
)
def test_bad_input_exits_2_with_one_sentence_on_stderr(runs, case, expected):
    code, stdout, stderr = runs[case]
    assert code == 2, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
    message = stderr.strip()
    assert "\n" not in message, message
    assert message.endswith("."), message
    assert not message.startswith("CommandError")
    assert expected in message


def run_from_argv(capsys, *args) -> tuple[int, str, str]:
    """``manage.py calc ARGS`` in this process, through the command's own argv parsing:
    (exit code, stdout, stderr)."""
    from calculators.management.commands.calc import Command

    code = 0
    try:
        Command().run_from_argv(["manage.py", "calc", *args])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("args", "sentence"), [
    (["ladder", "--reserve-gib", "-1e3"], "reserve_gib must be at least 0, not '-1e3'."),
    (["ladder", "--reserve-gib", "-1"], "reserve_gib must be at least 0, not '-1'."),
    (["tp", "--reserve-gib=-0.5"], "reserve_gib must be at least 0, not '-0.5'."),
    (["fleet", "--spares", "−1"], "spares must be at least 0, not '−1'."),
    (["ladder", "--utilization", "-90%"], "utilization must be at least 0.01, not '-90%'."),
    (["ladder", "--contxt", "-1"], "Unrecognized arguments: --contxt -1."),
])
def test_a_leading_minus_is_a_value_that_a_non_negative_input_refuses_in_one_sentence(capsys, args, sentence):
    assert run_from_argv(capsys, *args) == (2, "", sentence + "\n")


def test_a_leading_minus_is_read_where_the_quantity_may_be_negative(capsys):
    """A KV budget may be negative (what is left over): ``calc parse -1e3`` reads it, not a flag."""
    assert run_from_argv(capsys, "parse", "-1e3", "--unit", "GiB") == (0, "-1,000.00 GiB\n", "")
    assert run_from_argv(capsys, "parse", "-14.96", "--unit", "GiB") == (0, "-14.96 GiB\n", "")


def test_flags_take_percentages_and_expressions_as_answers_do(capsys):
    code, stdout, stderr = run_from_argv(capsys, "ladder", "--utilization", "90%", "--context", "2^13", "--json")
    assert code == 0, stderr
    payload = json.loads(stdout)
    assert (payload["inputs"]["utilization"], payload["inputs"]["context"]) == (0.9, 8192)
    # The reference stack's numbers (docs/architecture.md §2), as with --utilization 0.9 --context 8192.
    assert (values(payload)["users_worst_case"], values(payload)["users_paged"]) == (53, 191)


@pytest.mark.parametrize(("flags", "inputs"), [
    (["--utilization", "92.5%"], {"utilization": 0.925}),
    (["--reserve-gib", "3072 MiB"], {"reserve_gib": 3.0}),
    (["--avg-tokens", "2,300"], {"avg_tokens": 2300}),
    (["--reserve-gib", "-0"], {"reserve_gib": 0.0}),
])
def test_flag_values_are_read_in_the_inputs_unit(flags, inputs):
    payload = calc_json("ladder", *flags)
    assert {key: payload["inputs"][key] for key in inputs} == inputs


@pytest.mark.parametrize(("flags", "message"), [
    (["--utilization", "90 GiB"], "utilization: '90 GiB' is a memory size; this input asks for a plain number."),
    # "8k" reads as 8,000 tokens since the count scales of cd1165b (as "4 Ktok" always did): an unknown suffix instead.
    (["--context", "8q"], "context: Could not read '8q': 'q' is not a unit I know; this input expects a token count"),
    (["--context", "8192.5 tok"], "context must be a whole number, not '8192.5 tok'."),
])
def test_a_flag_value_of_the_wrong_kind_is_one_sentence(flags, message):
    with pytest.raises(CommandError) as caught:
        call_command("calc", "ladder", *flags)
    assert str(caught.value).startswith(message)

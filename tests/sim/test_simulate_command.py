"""``manage.py simulate … --json`` (docs/architecture.md §13): the JSON shape, a trace file, a sweep, and bad input
as exit 2 with one sentence."""

import io
import json
import subprocess
import sys
from pathlib import Path

from django.core.management import call_command

REPO = Path(__file__).resolve().parents[2]
SUMMARY_KEYS = {"arrived", "completed", "in_flight", "output_tokens", "ttft_ms", "tpot_ms", "e2e_ms",
                "throughput_req_s", "output_tok_s", "goodput_req_s", "preemptions", "kv_peak_fraction",
                "mean_in_system"}


def simulate_json(*args) -> dict:
    out = io.StringIO()
    call_command("simulate", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_one_run_prints_inputs_summary_and_series():
    result = simulate_json("--rate", "5", "--duration-s", "20", "--seed", "3")
    assert set(result) == {"inputs", "summary", "series"}
    summary = result["summary"]
    assert SUMMARY_KEYS <= set(summary)
    assert set(summary["ttft_ms"]) >= {"mean", "p50", "p90", "p99"}
    assert result["inputs"]["rate"] == 5.0 and result["inputs"]["kv_blocks"] == 27_507
    assert len(result["series"]["t_s"]) == 120 and result["series"]["t_s"][-1] == 20.0


def test_a_trace_file_sets_the_requests_and_the_duration(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,512,16\n1.5,256,4\n")
    result = simulate_json("--trace", str(trace))
    assert result["summary"]["arrived"] == 2 and result["summary"]["output_tokens"] == 20
    assert result["inputs"]["duration_s"] == 2.0 and result["inputs"]["trace_chars"] > 0


def test_a_sweep_prints_one_summary_per_rate_and_the_knee():
    result = simulate_json("--sweep", "10,60", "--duration-s", "30")
    assert set(result) == {"inputs", "sweep", "knee_req_s", "knee_text"}
    assert [s["rate_req_s"] for s in result["sweep"]] == [10, 60]
    assert result["knee_req_s"] == 10


def test_bad_input_exits_2_with_one_sentence():
    runs = [subprocess.Popen([sys.executable, "manage.py", "simulate", *args, "--json"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for args in (["--rate", "0"], ["--router", "random"], ["--trace", "/no/such.csv"],
                         ["--sweep", "5,5,5"])]
    outcomes = [(run.wait(timeout=120), run.stderr.read().strip()) for run in runs]
    assert [code for code, _ in outcomes] == [2, 2, 2, 2]
    assert outcomes[3][1] == "sweep lists 5 req/s more than once: give each rate once."
    assert outcomes[0][1] == "rate must be above 0, not '0'."
    assert "router must be one of round-robin, least-loaded, prefix" in outcomes[1][1]
    assert outcomes[2][1].startswith("Cannot read the trace file /no/such.csv")
    assert all("Traceback" not in err for _, err in outcomes)

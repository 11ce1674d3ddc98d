"""The simulator's step inputs beside the efficiencies (issue 31, item 2): ``--step-overhead-ms``,
``--prefill-mfu`` and ``--allreduce-latency-us`` reach every step, on the command line, the API and the page.

By hand, on the reference stack (Llama-3.1-8B bf16, H100 SXM) at 0.05 req/s (one request at a time):

(each run given the stated convention, the quantities' defaults, in place of the calibration table's row):

- a fixed overhead of 2 ms a step adds 2 ms to every decode step, so to the mean TPOT;
- a 2,048-token prefill is 35,090,973,327,360 FLOP; at prefill MFU 0.8 of 989.4 TFLOP/s it takes 44.334 ms
  (88.667 ms at the default 0.4), and it is the TTFT;
- on two cards each decode step runs two all-reduces per layer, 2 × 32 = 64; raising the latency of one
  from 10 to 110 µs adds 64 × 100 µs = 6.4 ms to every step.
"""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command

from calculators.sim.config import STATED_CONVENTION
from calculators.sim.run import simulate

REPO = Path(__file__).resolve().parents[2]
# The stated convention (the quantities' defaults) in place of the calibration table's row, so each flag's effect
# is the by-hand one above.
LOW = {"rate": 0.05, "duration_s": 1200, "prompt_tokens": 64, "output_tokens": 32, **STATED_CONVENTION}
STATED_FLAGS = [part for key, value in STATED_CONVENTION.items() if key != "step_overhead_ms"
                for part in ("--" + key.replace("_", "-"), f"{value:g}")]


def test_a_step_overhead_adds_to_every_decode_step():
    without = simulate(LOW)["summary"]["tpot_ms"]["mean"]
    out = io.StringIO()
    call_command("simulate", "--rate", "0.05", "--duration-s", "1200", "--prompt-tokens", "64", "--output-tokens",
                 "32", "--step-overhead-ms", "2", *STATED_FLAGS, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["inputs"]["step_overhead_ms"] == 2.0
    assert result["summary"]["tpot_ms"]["mean"] - without == pytest.approx(2.0, abs=2e-3)


def test_the_prefill_mfu_sets_a_long_prompts_ttft():
    result = simulate({**LOW, "prompt_tokens": 2048, "output_tokens": 8, "prefill_mfu": 0.8})
    assert result["summary"]["ttft_ms"]["mean"] == pytest.approx(35_090_973_327_360 / (989.4e12 * 0.8) * 1000,
                                                                 abs=1e-3)


def test_the_allreduce_latency_is_paid_twice_a_layer_under_tensor_parallelism():
    default = simulate({**LOW, "gpus": 2})["summary"]["tpot_ms"]["mean"]
    slower = simulate({**LOW, "gpus": 2, "allreduce_latency_us": 110})["summary"]["tpot_ms"]["mean"]
    assert slower - default == pytest.approx(64 * 0.1, abs=2e-3)


BAD = [("--step-overhead-ms", "-1", "step_overhead_ms"), ("--prefill-mfu", "1.5", "prefill_mfu"),
       ("--allreduce-latency-us", "-5", "allreduce_latency_us")]


def test_bad_step_inputs_exit_2_naming_the_field():
    runs = [subprocess.Popen([sys.executable, "manage.py", "simulate", flag, value, "--json"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for flag, value, _ in BAD]
    outcomes = [(run.wait(timeout=120), run.stderr.read().strip()) for run in runs]
    assert [code for code, _ in outcomes] == [2, 2, 2]
    for (_, _, field), (_, err) in zip(BAD, outcomes):
        assert field in err and "Traceback" not in err and err.count("\n") == 0


@pytest.mark.django_db
@pytest.mark.parametrize("flag, value, field", BAD)
def test_bad_step_inputs_are_a_400_in_the_api_and_a_form_error_on_the_page(client, flag, value, field):
    cache.clear()
    response = client.get("/api/v1/simulate/", {field: value, "duration_s": 5})
    assert response.status_code == 400 and response.json()["field"] == field
    page = client.get("/simulator/", {field: value, "sweep": "5"})
    assert page.status_code == 200
    form = page.context["form"]
    assert field in form.errors and form[field].value() == value  # what was typed stays in the box

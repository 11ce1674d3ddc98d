"""Closed-loop load (issue 31, item 2; docs/architecture.md §13): ``--concurrency N`` clients, each sending its next
request when its last one ends (``--think-time-s`` later), as ``vllm bench serve --max-concurrency`` runs.

By hand, on the reference stack (Llama-3.1-8B bf16, H100 SXM), 512-token prompts, 256-token outputs, 60 s:

- one client, no think time: exactly one request is in the system at every instant (mean 1.0), requests run back
  to back, so ⌊60,000 ÷ mean end-to-end⌋ of them finish and the next one is still running at the end;
- 8 clients thinking 1 s: each client is in the system e2e ÷ (e2e + 1,000 ms) of the time (Little's law on a
  closed loop), so the mean in the system is 8 × e2e ÷ (e2e + 1,000).
"""

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command

from calculators.engine.errors import InputError
from calculators.sim.config import MAX_REQUESTS, STATED_CONVENTION
from calculators.sim.run import simulate

REPO = Path(__file__).resolve().parents[2]
BASE = {"duration_s": 60, "prompt_tokens": 512, "output_tokens": 256}
# The stated convention (the quantities' defaults) in place of the calibration table's row: the 36 requests below.
STATED_FLAGS = [part for key, value in STATED_CONVENTION.items()
                for part in ("--" + key.replace("_", "-"), f"{value:g}")]


def test_one_client_keeps_exactly_one_request_in_flight():
    out = io.StringIO()
    call_command("simulate", "--concurrency", "1", "--duration-s", "60", *STATED_FLAGS, "--json", stdout=out)
    summary = json.loads(out.getvalue())["summary"]
    assert summary["mean_in_system"] == 1.0
    assert summary["completed"] == math.floor(60_000 / summary["e2e_ms"]["mean"]) == 36
    assert (summary["arrived"], summary["in_flight"]) == (37, 1)


def test_think_time_holds_littles_law_for_a_closed_loop():
    summary = simulate({**BASE, **STATED_CONVENTION, "concurrency": 8, "think_time_s": 1.0})["summary"]
    e2e = summary["e2e_ms"]["mean"]
    assert summary["mean_in_system"] == pytest.approx(8 * e2e / (e2e + 1000), rel=0.01)
    assert summary["rate_req_s"] is None


def test_a_closed_loop_sends_at_most_the_bound_of_requests():
    summary = simulate({"concurrency": 512, "max_num_seqs": 512, "prompt_tokens": 16, "output_tokens": 1,
                        "duration_s": 600})["summary"]
    assert summary["arrived"] == MAX_REQUESTS


def test_a_closed_loop_with_a_sweep_is_refused():
    with pytest.raises(InputError) as caught:
        simulate({**BASE, "concurrency": 4, "sweep": "1,2"})
    assert caught.value.field == "concurrency"


BAD = [("--concurrency", "0", "concurrency"), ("--think-time-s", "-1", "think_time_s")]


def test_bad_closed_loop_inputs_exit_2_naming_the_field():
    runs = [subprocess.Popen([sys.executable, "manage.py", "simulate", flag, value, "--json"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for flag, value, _ in BAD]
    outcomes = [(run.wait(timeout=120), run.stderr.read().strip()) for run in runs]
    assert outcomes == [(2, "concurrency must be at least 1, not '0'."),
                        (2, "think_time_s must be at least 0, not '-1'.")]


@pytest.mark.django_db
@pytest.mark.parametrize("flag, value, field", BAD)
def test_bad_closed_loop_inputs_are_a_400_in_the_api(client, flag, value, field):
    cache.clear()
    response = client.get("/api/v1/simulate/", {field: value, "duration_s": 5})
    assert response.status_code == 400 and response.json()["field"] == field

"""Closed-loop load (issue 31, item 2; docs/architecture.md §13): ``--concurrency N`` clients, each sending its next
request when its last one ends (``--think-time-s`` later), as ``vllm bench serve --max-concurrency`` runs.

By hand, on the reference stack (Llama-3.1-8B bf16, H100 SXM), 512-token prompts, 256-token outputs, 60 s:

- one client, no think time: at most one request is in the system at any instant; between a response and the next
  request only the client's turnaround passes (under one decode step, about 6.4 ms here), so 36 requests of
  1,659.6 ms finish in 60 s (36 × 1,659.6 = 59,747 ms, plus 36 turnarounds under 6.45 ms each: under 59,979 ms),
  the 37th is still running at the end, and the mean in the system is above 1 − 36 × 6.45 ÷ 60,000 = 0.996;
- 8 clients thinking 1 s: each client is in the system e2e ÷ (e2e + 1,000 ms) of the time (Little's law on a
  closed loop; its turnaround, half a decode step on average, is under 0.2 % of that cycle), so the mean in the
  system is 8 × e2e ÷ (e2e + 1,000); over 600 s, as the clients' staggered start idles them for part of the first
  cycle only (under 3 s of 600).

Lock-step (issue 31's leftover): 8 clients sending 1,024-token prompts together would share one prefill step of
8 × 1,024 = 8,192 tokens (the step's whole budget) for ever, as fixed lengths give every request the same life; each
TTFT would be about eight lone prefills. Staggered over one cycle and arriving within a decode step of their last
response, each prefill waits at most one decode step and shares its step with at most the other seven's decodes:
TTFT at most a lone request's plus two decode steps, and below two lone prefills.
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
from calculators.sim.workload import client_stagger

REPO = Path(__file__).resolve().parents[2]
BASE = {"duration_s": 60, "prompt_tokens": 512, "output_tokens": 256}
# The stated convention (the quantities' defaults) in place of the calibration table's row: the 36 requests below.
STATED_FLAGS = [part for key, value in STATED_CONVENTION.items()
                for part in ("--" + key.replace("_", "-"), f"{value:g}")]


def test_one_client_keeps_one_request_in_flight_but_for_its_turnarounds():
    out = io.StringIO()
    call_command("simulate", "--concurrency", "1", "--duration-s", "60", *STATED_FLAGS, "--json", stdout=out)
    summary = json.loads(out.getvalue())["summary"]
    e2e, tpot = summary["e2e_ms"]["mean"], summary["tpot_ms"]["mean"]
    assert (round(e2e, 1), round(tpot, 2)) == (1659.6, 6.43)
    assert 1 - 36 * 6.45 / 60_000 < summary["mean_in_system"] < 1
    assert summary["completed"] == math.floor(60_000 / (e2e + 6.45)) == 36
    assert (summary["arrived"], summary["in_flight"]) == (37, 1)


def test_clients_start_one_in_each_share_of_the_cycle():
    shares = client_stagger(8, seed=3)
    assert shares[0] == 0 and list(shares) == sorted(shares)
    assert all((k - 1) / 8 < share < (k + 1) / 8 for k, share in enumerate(shares))
    assert client_stagger(8, seed=3) == shares != client_stagger(8, seed=4)
    assert client_stagger(1, seed=3) == (0.0,)


def test_fixed_lengths_do_not_keep_closed_loop_clients_in_lock_step():
    base = {**BASE, **STATED_CONVENTION, "prompt_tokens": 1024, "output_tokens": 128}
    alone = simulate({**base, "concurrency": 1})["summary"]
    eight = simulate({**base, "concurrency": 8})["summary"]
    lone_ttft, step8 = alone["ttft_ms"]["p99"], eight["tpot_ms"]["p99"]
    assert eight["ttft_ms"]["p99"] <= lone_ttft + 2 * step8
    assert eight["ttft_ms"]["p99"] < 2 * lone_ttft


def test_think_time_holds_littles_law_for_a_closed_loop():
    summary = simulate({**BASE, **STATED_CONVENTION, "concurrency": 8, "think_time_s": 1.0,
                        "duration_s": 600})["summary"]
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

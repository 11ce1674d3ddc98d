"""A result's band (issue 31, item 2; docs/architecture.md §13): above a replica utilisation of 0.8 the run is
repeated at the calibration row's optimistic and pessimistic ends, and the summary carries both.

By hand, on the reference stack (27,507 blocks of 16 tokens = 440,112 tokens; at most 256 sequences), 512-token
prompts and 256-token outputs: the replica can run min(256, 440,112 ÷ 768 = 573) = 256 sequences, so a closed loop
of N clients keeps about N running, a utilisation of N ÷ 256: 100 clients 0.39 (no band), 240 clients 0.94.
"""

import pytest

from calculators.engine.calibration import COSTS, default_calibration
from calculators.sim.config import band_setups, build_setup, clean_sim_inputs
from calculators.sim.run import BAND_UTILISATION, simulate

BASE = {"prompt_tokens": 512, "output_tokens": 256, "duration_s": 60}


def test_below_the_threshold_a_result_has_no_band():
    summary = simulate({**BASE, "concurrency": 100})["summary"]
    # A client is not running while its request waits for its prefill: a few per cent of a cycle below N ÷ 256.
    assert summary["utilisation"] == pytest.approx(100 / 256, rel=0.05)
    assert summary["utilisation"] < BAND_UTILISATION and "band" not in summary


def test_near_saturation_the_band_brackets_the_central_run():
    summary = simulate({**BASE, "concurrency": 240})["summary"]
    # At most 240 ÷ 256 (some of the time a client's request is waiting for a slot or its prefill).
    assert BAND_UTILISATION < summary["utilisation"] <= 240 / 256
    band = summary["band"]
    for key, (metric, pick) in {"tpot_ms_p50": ("tpot_ms", "p50"), "ttft_ms_p99": ("ttft_ms", "p99"),
                                "e2e_ms_p50": ("e2e_ms", "p50")}.items():
        assert band["optimistic"][key] <= summary[metric][pick] <= band["pessimistic"][key], key
    assert band["optimistic"]["goodput_req_s"] >= band["pessimistic"]["goodput_req_s"]


def test_the_ends_are_the_row_s_and_a_typed_efficiency_has_no_band():
    row = default_calibration().row("h100-sxm5-80gb", "bf16")
    inputs = clean_sim_inputs({})
    optimistic, pessimistic = band_setups(inputs, build_setup(inputs))
    for key, value in row.values.items():
        if key == "bandwidth_efficiency_large_batch":
            continue
        best, worst = (value.low, value.high) if key in COSTS else (value.high, value.low)
        assert getattr(optimistic.replica, key) == best and getattr(pessimistic.replica, key) == worst, key
    typed = clean_sim_inputs({"bandwidth_efficiency": 0.6})
    assert band_setups(typed, build_setup(typed)) is None
    summary = simulate({**BASE, "concurrency": 240, "bandwidth_efficiency": 0.6})["summary"]
    assert summary["utilisation"] > BAND_UTILISATION and "band" not in summary

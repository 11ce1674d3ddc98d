"""The serving simulator (docs/architecture.md §13) on its own output: step model agreement, Little's law,
conservation, determinism, queue growth above capacity, and workloads whose values are derived by hand.

Reference stack (docs/architecture.md §2): Llama-3.1-8B bf16 on one H100 SXM, at the stated convention (the
quantities' defaults, given in place of the calibration table's row). By hand: the weights are
8,030,261,248 × 2 = 16,060,522,496 B, read at 3,350 GB/s × 0.75 = 2.5125 TB/s in 6.3922 ms; a
2,048-token prefill is 2 × 8,030,261,248 × 2,048 + 4 × 32 × 32 × 128 × 2,048² = 35,090,973,327,360
FLOP at 989.4 TFLOP/s × 0.4, 88.667 ms; the KV budget is 81,559 MiB × 0.9 − 14.9575 GiB − 3 GiB =
53.7252 GiB, ⌊53.7252 × 2^30 ÷ (16 × 131,072 B)⌋ = 27,507 blocks of 16 tokens.
"""

import json

import pytest

from calculators.engine.errors import InputError
from calculators.engine.step_model import step_ms
from calculators.families import FAMILIES
from calculators.sim.config import STATED_CONVENTION, Setup, build_setup, clean_sim_inputs
from calculators.sim.results import knee, knee_text, misses, percentile, queue_growing, still_meets, weighted_percentile
from calculators.sim.run import run_workload, simulate
from calculators.sim.workload import Workload, generate, parse_trace


def ms(value):
    """A time as the summary rounds it (to the µs)."""
    return pytest.approx(value, abs=6e-4)


WEIGHTS_READ_MS = 16_060_522_496 / 2.5125e12 * 1000
PREFILL_2048_MS = 35_090_973_327_360 / (989.4e12 * 0.4) * 1000


def reference_setup():
    return build_setup(clean_sim_inputs(dict(STATED_CONVENTION)))


def test_reference_kv_budget_and_blocks_match_the_ladder():
    setup = reference_setup()
    assert setup.kv_budget_gib == pytest.approx(53.7252, abs=1e-4)
    assert setup.blocks == 27_507
    assert setup.kv_tokens == 440_112


def test_low_rate_tpot_is_the_decode_step_at_batch_one_and_the_average_context():
    prompt, output = 64, 32
    result = simulate({"rate": 0.05, "duration_s": 3600, "prompt_tokens": prompt, "output_tokens": output,
                       **STATED_CONVENTION})
    mean_tpot = result["summary"]["tpot_ms"]["mean"]
    # Decode steps read contexts 64 … 94: on average prompt + (output − 2) ÷ 2 = 79 tokens.
    step = step_ms(reference_setup().replica, decode_batch=1, decode_context_tokens=79).step_ms
    assert mean_tpot == pytest.approx(step, rel=0.05)
    decode = {s.key: s.value for s in FAMILIES["decode"].run({"context": 79, "batch": 1}).steps}
    assert mean_tpot == pytest.approx(decode["step_ms"], rel=0.05)
    assert mean_tpot == pytest.approx(WEIGHTS_READ_MS + 79 * 131_072 / 2.5125e9, rel=0.05)  # 6.396 ms


@pytest.mark.parametrize("prompt, expected_ms", [(64, WEIGHTS_READ_MS), (2048, PREFILL_2048_MS)])
def test_low_rate_ttft_is_the_step_with_prefill_at_batch_zero(prompt, expected_ms):
    # 64 tokens: the weights' read (memory-bound); 2,048: the prefill's FLOPs at MFU 0.4 (compute-bound).
    result = simulate({"rate": 0.05, "duration_s": 3600, "prompt_tokens": prompt, "output_tokens": 8,
                       **STATED_CONVENTION})
    ttft = result["summary"]["ttft_ms"]
    step = step_ms(reference_setup().replica, decode_batch=0, decode_context_tokens=0,
                   prefill_chunks=[(prompt, 0)]).step_ms
    assert ttft["mean"] == pytest.approx(step, rel=0.01)
    assert ttft["p50"] == pytest.approx(expected_ms, rel=0.001)


def test_littles_law_holds_on_the_output():
    summary = simulate({"rate": 20, "duration_s": 300, "prompt_dist": "lognormal",
                        "output_dist": "uniform"})["summary"]
    assert summary["mean_in_system"] == pytest.approx(
        summary["throughput_req_s"] * summary["e2e_ms"]["mean"] / 1000, rel=0.03)


def test_requests_and_tokens_are_conserved_under_preemption():
    inputs = clean_sim_inputs({"rate": 40, "duration_s": 60, "output_tokens": 1500, "output_dist": "lognormal",
                               "utilization": 0.3, "replicas": 2, "router": "least-loaded",
                               "prefix_fraction": 0.5})
    workload = generate(inputs)
    result = run_workload(inputs, workload, build_setup(inputs))
    summary = result["summary"]
    assert summary["preemptions"] > 0 and summary["kv_peak_fraction"] == 1.0
    assert summary["arrived"] == len(workload) == summary["completed"] + summary["in_flight"]
    assert summary["in_flight"] > 0
    assert sum(result["series"]["preemptions"]) == summary["preemptions"]
    completed_tokens = sum(o for o, f in zip(workload.output, _finishes(inputs, workload)) if f is not None)
    assert completed_tokens < summary["output_tokens"] < sum(workload.output)


def _finishes(inputs, workload):
    from calculators.sim import run as run_module

    captured = {}
    original = run_module.summarize

    def capture(workload, records, **kwargs):
        captured["records"] = records
        return original(workload, records, **kwargs)

    run_module.summarize = capture
    try:
        run_workload(inputs, workload, build_setup(inputs))
    finally:
        run_module.summarize = original
    return captured["records"].finish_ms


def test_the_same_seed_gives_the_same_summary_byte_for_byte():
    raw = {"rate": 30, "duration_s": 60, "arrival": "gamma", "cv": 2, "prompt_dist": "lognormal",
           "prefix_fraction": 0.3, "replicas": 2, "router": "prefix"}
    first, second = simulate(raw), simulate(raw)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert json.dumps(simulate({**raw, "seed": 1})["summary"]) != json.dumps(first["summary"])


def test_above_capacity_the_queue_grows_and_p99_ttft_roughly_doubles_with_the_duration():
    short = simulate({"rate": 60, "duration_s": 60})["summary"]
    long = simulate({"rate": 60, "duration_s": 120})["summary"]
    assert long["in_flight"] > 1.8 * short["in_flight"]
    assert 1.6 < long["ttft_ms"]["p99"] / short["ttft_ms"]["p99"] < 2.4


def _workload(arrivals_s, prompt, output, *, shared=0, group=0, duration_s=100.0):
    count = len(arrivals_s)
    return Workload([t * 1000 for t in arrivals_s], [prompt] * count, [output] * count, [group] * count,
                    [shared] * count, duration_s * 1000, None)


def test_the_newest_sequence_is_preempted_when_a_block_runs_out_and_recomputes():
    # Ten 16-token blocks; two 64-token prompts (4 blocks each) prefill together, then decode.
    # Their first decode step opens a fifth block each (10 used); sixteen steps later each needs a
    # sixth: only one can have it, so the newer request (B) is preempted having produced 17 tokens,
    # and comes back for a recompute of 64 + 17 = 81 tokens (6 blocks) once A has finished and freed
    # its 8 blocks (64 + 63 cached tokens).
    inputs = clean_sim_inputs({})
    base = reference_setup()
    setup = Setup(base.replica, 10, 16, base.kv_budget_gib, base.weights_gib, base.kv_bytes_per_token_replica)
    workload = _workload([0.0, 0.0], 64, 64)
    summary = run_workload(inputs, workload, setup)["summary"]
    assert summary["preemptions"] == 1
    assert summary["completed"] == 2 and summary["output_tokens"] == 128
    assert summary["kv_peak_fraction"] == 1.0
    replica = base.replica
    first = step_ms(replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=[(64, 0), (64, 0)]).step_ms
    assert summary["ttft_ms"]["mean"] == ms(first)
    # A: the shared prefill, 16 decode steps beside B, then 47 alone.
    two = sum(step_ms(replica, decode_batch=2, decode_context_tokens=2 * (64 + k)).step_ms for k in range(16))
    one = sum(step_ms(replica, decode_batch=1, decode_context_tokens=64 + k).step_ms for k in range(16, 63))
    recompute = step_ms(replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=[(81, 0)]).step_ms
    rest = sum(step_ms(replica, decode_batch=1, decode_context_tokens=81 + k).step_ms for k in range(46))
    a_e2e, b_e2e = first + two + one, first + two + one + recompute + rest
    assert summary["e2e_ms"]["mean"] == ms((a_e2e + b_e2e) / 2)
    assert summary["e2e_ms"]["p99"] == ms(a_e2e + 0.99 * (b_e2e - a_e2e))


def test_a_cached_prefix_skips_its_tokens_on_the_next_request_of_its_group():
    # 2,048-token prompts, the first 1,024 shared: the second request prefills 1,024 tokens after
    # 1,024 cached ones.
    inputs = clean_sim_inputs({})
    setup = reference_setup()
    summary = run_workload(inputs, _workload([0.0, 10.0], 2048, 2, shared=1024), setup)["summary"]
    miss = step_ms(setup.replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=[(2048, 0)]).step_ms
    hit = step_ms(setup.replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=[(1024, 1024)]).step_ms
    assert summary["ttft_ms"]["p50"] == ms((miss + hit) / 2)
    assert hit < 0.55 * miss


def test_chunked_prefill_splits_a_prompt_over_the_token_budget():
    # 20,000 tokens under a 8,192-token budget: chunks of 8,192, 8,192 and 3,616 after 0, 8,192, 16,384.
    inputs = clean_sim_inputs({})
    setup = reference_setup()
    summary = run_workload(inputs, _workload([0.0], 20_000, 2), setup)["summary"]
    chunks = [(8192, 0), (8192, 8192), (3616, 16384)]
    expected = sum(step_ms(setup.replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=[chunk]).step_ms
                   for chunk in chunks)
    assert summary["ttft_ms"]["mean"] == ms(expected)


def test_round_robin_spreads_requests_and_prefix_routing_keeps_groups_together():
    raw = {"rate": 40, "duration_s": 60, "prompt_tokens": 2048, "prefix_fraction": 0.9, "replicas": 4}
    spread = simulate({**raw, "router": "round-robin"})["summary"]
    affine = simulate({**raw, "router": "prefix"})["summary"]
    # Each of the 16 groups' prefixes is prefilled once per replica it meets: affinity prefills less.
    assert affine["ttft_ms"]["mean"] < spread["ttft_ms"]["mean"]


def test_a_sweep_reports_each_rate_and_the_knee():
    result = simulate({"sweep": "80,20,40", "duration_s": 60})
    assert [s["rate_req_s"] for s in result["sweep"]] == [20, 40, 80]
    assert result["knee_req_s"] == 40  # 39.6 req/s good at 40, 4.75 at 80 (the H100 16-bit row, generator v28)
    assert knee([{"rate_req_s": 5, "goodput_req_s": 4.4}]) is None


def test_percentiles_interpolate_and_weighted_ones_take_the_nearest_rank():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([10.0, 20.0], 99) == pytest.approx(19.9)
    assert weighted_percentile([5.0, 1.0], [1, 3], 75) == 1.0
    assert weighted_percentile([5.0, 1.0], [1, 3], 76) == 5.0


def test_trace_rows_are_read_sorted_and_bad_rows_are_named():
    text = "arrival_s,prompt_tokens,output_tokens\n2.5,100,20\n0.5,300,7\n"
    inputs = clean_sim_inputs({"trace": text})
    workload = parse_trace(text, inputs)
    assert workload.arrival_ms == [500.0, 2500.0] and workload.prompt == [300, 100]
    assert workload.duration_ms == 3000.0
    with pytest.raises(InputError, match="row 3: prompt_tokens must be a whole number"):
        parse_trace("arrival_s,prompt_tokens,output_tokens\n0,1,1\n1,0.5,3\n", inputs)
    with pytest.raises(InputError, match="header"):
        parse_trace("t,p,o\n0,1,1\n", inputs)


@pytest.mark.parametrize("raw, message", [
    ({"duration_s": 3601}, "duration_s must be at most 3,600"),
    ({"rate": 20, "duration_s": 3000}, "at most 50,000"),
    ({"sweep": ",".join(str(r) for r in range(1, 14))}, "at most 12 rates"),
    ({"sweep": "5,abc"}, "'abc' is not a rate"),
    ({"max_batched_tokens": 128}, "at least max_num_seqs"),
    ({"arrival": "weibull"}, "arrival must be one of poisson, gamma"),
    ({"trace": "arrival_s,prompt_tokens,output_tokens\n0,1,1\n", "sweep": "1,2"}, "not both"),
    ({"prompt_tokens": 131_072, "output_tokens": 131_072, "utilization": 0.3, "rate": 0.1}, "cannot fit"),
])
def test_bad_input_is_one_clear_sentence(raw, message):
    with pytest.raises(InputError, match=message):
        simulate(raw)


@pytest.mark.parametrize("model, gpus", [("llama-3.1-8b", 1), ("llama-3.1-70b", 4), ("mixtral-8x7b-v0.1", 2),
                                         ("deepseek-v2-lite", 1)])
def test_decode_only_steps_from_their_lines_equal_the_step_model(model, gpus):
    from calculators.sim.engine import Records, ReplicaEngine

    setup = build_setup(clean_sim_inputs({"model": model, "gpus": gpus}))
    engine = ReplicaEngine(setup.replica, setup.blocks, 16, 8192, 256, Records(0))
    for batch, context in ((1, 0), (1, 79), (37, 25_000), (256, 2_000_000)):
        engine.dec_count, engine.dec_ctx = batch, context
        expected = step_ms(setup.replica, decode_batch=batch, decode_context_tokens=context).step_ms
        assert engine._decode_step_ms() == pytest.approx(expected, rel=1e-12)


# The window rule (docs/architecture.md §13): a short run's goodput counts the requests still running at its end
# that can still meet their targets, so its knee is the long run's. Sweeps span light to medium load and past it.
WINDOW_STACKS = [
    ({"model": "llama-3.1-70b", "gpus": 4, "prompt_tokens": 1800, "output_tokens": 500, "output_dist": "uniform",
      "ttft_slo_ms": 2000}, "1,2,3", 2.0),
    ({"model": "mixtral-8x7b-v0.1", "gpus": 2, "prompt_tokens": 1000, "output_tokens": 200, "output_dist": "uniform",
      "ttft_slo_ms": 1000, "tpot_slo_ms": 30}, "3,6,9,12", 12.0),
    ({"model": "qwen2.5-7b", "gpu": "a100-sxm4-80gb", "prompt_tokens": 1000, "output_tokens": 300,
      "prompt_dist": "uniform", "ttft_slo_ms": 1000, "tpot_slo_ms": 30}, "3,6,9,12", 3.0),
]


@pytest.mark.parametrize("raw, sweep, expected_knee", WINDOW_STACKS, ids=["70b-4xh100", "mixtral-2xh100", "qwen-a100"])
def test_a_60_s_run_finds_the_knee_of_a_600_s_run(raw, sweep, expected_knee):
    short = simulate({**raw, **STATED_CONVENTION, "sweep": sweep, "duration_s": 60, "seed": 3})
    long = simulate({**raw, **STATED_CONVENTION, "sweep": sweep, "duration_s": 600, "seed": 3})
    assert short["knee_req_s"] == long["knee_req_s"] == expected_knee


# The simulator page's defaults (calculators/sim_forms.py): Llama-3.1-8B bf16 on one H100 SXM, 512-token prompts,
# 256-token outputs, 500 ms TTFT and 50 ms TPOT targets, 60 s, seed 0, sweep 5 … 40, with the calibration row the
# user's page had (prefill MFU 0.31, step overhead 1.8 ms, bandwidth efficiency 0.8, MFU 0.5 and 12 µs all-reduces).
# Since the per-collective refit the H100's 16-bit row reads 0.78 at batch 1, so the typed 0.8 stands alone (no
# large-batch companion: 0.8 at every batch). The row refitted since keeps 0.99 of every rate to 40 req/s.
PAGE_SWEEP = "5,10,15,20,25,30,35,40"
USERS_ROW = {"bandwidth_efficiency": 0.8, "mfu": 0.5, "prefill_mfu": 0.31, "allreduce_latency_us": 12,
             "step_overhead_ms": 1.8}


def test_a_rate_ending_with_a_growing_queue_is_not_the_knee_of_the_default_page_sweep():
    # At 25 req/s over 60 s the window rule reads 1,444 of 1,511 arrivals as good (24.07 req/s, 0.963 of the
    # rate) though only 1,241 completed: the run ends with 270 requests in flight, 14 more than the 256 the
    # replica runs at once (max_num_seqs), queued behind a full batch. Over 300 s the same rate keeps 0.808 of
    # its rate, so the knee is 20 req/s over either duration.
    short = simulate({**USERS_ROW, "sweep": PAGE_SWEEP, "duration_s": 60})
    at_25 = next(s for s in short["sweep"] if s["rate_req_s"] == 25)
    assert (at_25["arrived"], at_25["completed"], at_25["in_flight"], at_25["slots"]) == (1511, 1241, 270, 256)
    assert at_25["goodput_req_s"] == pytest.approx(1444 / 60, abs=1e-6) and at_25["queue_growing"]
    assert at_25["goodput_req_s"] >= 0.9 * 25  # the share alone would have made it the knee
    at_20 = next(s for s in short["sweep"] if s["rate_req_s"] == 20)
    assert at_20["in_flight"] == 93 and not at_20["queue_growing"]
    long = simulate({**USERS_ROW, "sweep": PAGE_SWEEP, "duration_s": 300})
    assert short["knee_req_s"] != 25
    assert short["knee_req_s"] == long["knee_req_s"] == 20
    assert short["knee_text"] == long["knee_text"] == "20 req/s"


def test_the_queue_rule_and_the_knee_in_words():
    growing = {"rate_req_s": 25.0, "goodput_req_s": 24.07, "in_flight": 270, "slots": 256}
    assert queue_growing(growing) and not queue_growing({**growing, "in_flight": 256})
    assert not queue_growing({"rate_req_s": 25.0, "goodput_req_s": 24.07})  # a point stored before the rule
    assert not queue_growing({**growing, "rate_req_s": None})  # a closed loop's or a trace's run
    kept = {"rate_req_s": 20.0, "goodput_req_s": 19.5, "in_flight": 93, "slots": 256}
    assert knee([kept, growing]) == 20 and knee_text([kept, growing]) == "20 req/s"
    assert knee_text([kept]) == "at least 20 req/s (the highest rate swept)"
    assert knee_text([growing]).startswith("none")


def test_a_sweep_whose_highest_rate_meets_the_target_reads_at_least_that_rate():
    result = simulate({"sweep": "5,10", "duration_s": 30})
    assert result["knee_req_s"] == 10 and result["knee_text"] == "at least 10 req/s (the highest rate swept)"
    # The page's defaults under today's row: 40 req/s over 60 s keeps 39.62 of 40 req/s, 165 in flight of 256.
    default = simulate({"sweep": PAGE_SWEEP, "duration_s": 60})
    assert default["knee_text"] == "at least 40 req/s (the highest rate swept)"
    assert not any(s["queue_growing"] for s in default["sweep"])


def test_a_rate_listed_twice_is_an_input_error_naming_the_sweep():
    with pytest.raises(InputError, match=r"sweep lists 5 req/s more than once") as error:
        clean_sim_inputs({"sweep": "5,5,5"})
    assert error.value.field == "sweep"
    with pytest.raises(InputError, match=r"sweep lists 10 req/s more than once"):
        clean_sim_inputs({"sweep": "10,5,10.0"})


def test_the_issue_example_no_longer_reads_knee_none_over_60_s():
    # Issue 31, item 7: Llama-3.1-70B on 4 H100s, 1,800-token prompts, 500 output tokens (uniform), a 2,000 ms
    # TTFT target, rates 1,2,3,4,6,8 over the default 60 s: counting only completed requests gave 0.85 req/s at
    # 1 req/s (51 of 58 arrived done, 7 still decoding within their targets) and "Knee: none"; 600 s finds 2.
    result = simulate({**WINDOW_STACKS[0][0], **STATED_CONVENTION, "sweep": "1,2,3,4,6,8", "duration_s": 60})
    first = result["sweep"][0]
    assert (first["arrived"], first["completed"]) == (58, 51)
    assert first["goodput_req_s"] == pytest.approx(58 / 60, abs=1e-6)
    assert result["knee_req_s"] == 2.0


@pytest.mark.parametrize("first_ms, tokens, last_ms, expected", [
    (None, 0, 0.0, True),          # waiting 400 ms of a 500 ms TTFT target: can still meet it
    (1_600.0, 1, 1_600.0, False),  # first token 600 ms after arrival: TTFT already missed
    (1_300.0, 1, 1_300.0, True),   # one token so far: no TPOT yet
    (1_300.0, 11, 1_800.0, True),  # (1,800 − 1,300) ÷ 10 = 50 ms, at the 50 ms target
    (1_300.0, 11, 1_810.0, False),  # 51 ms a token: missed
])
def test_a_request_running_at_the_window_end_counts_if_it_still_can(first_ms, tokens, last_ms, expected):
    assert still_meets(1_000.0, first_ms, tokens, last_ms, 1_400.0, 500.0, 50.0) is expected


def test_a_request_waiting_past_its_ttft_target_at_the_window_end_does_not_count():
    assert still_meets(1_000.0, None, 0, 0.0, 1_501.0, 500.0, 50.0) is False


@pytest.mark.parametrize("first_ms, tokens, last_ms, end_ms, expected", [
    (None, 0, 0.0, 1_501.0, (True, False)),       # 501 ms without a first token: TTFT missed, no TPOT yet
    (1_600.0, 11, 2_100.0, 2_200.0, (True, False)),  # first token late; (2,100 − 1,600) ÷ 10 = 50 ms: TPOT kept
    (1_600.0, 11, 2_110.0, 2_200.0, (True, True)),   # late and 51 ms a token: both missed
    (1_300.0, 11, 1_810.0, 2_200.0, (False, True)),  # on time, 51 ms a token
])
def test_a_running_request_says_which_target_it_can_no_longer_meet(first_ms, tokens, last_ms, end_ms, expected):
    assert misses(1_000.0, first_ms, tokens, last_ms, end_ms, 500.0, 50.0) == expected


def test_a_runs_misses_account_for_the_requests_goodput_leaves_out():
    """Every request of the window that is not good missed at least one target, and none missed more than
    both: arrived − good lies between the larger count of misses and their sum."""
    summary = simulate({**WINDOW_STACKS[0][0], "rate": 5, "duration_s": 60})["summary"]  # 123 of 306 miss TPOT
    lost = summary["arrived"] - round(summary["goodput_req_s"] * 60)
    assert lost > 0
    ttft, tpot = summary["ttft_missed"], summary["tpot_missed"]
    assert max(ttft, tpot) <= lost <= ttft + tpot


def test_a_run_without_efficiencies_reads_the_calibration_row_for_its_card_and_precision():
    # Issue 31, item 1: the simulator's efficiencies, all-reduce latency and step overhead default to the table's
    # row (no named engine) for the card and weight precision, with the row's large-batch efficiency and overhead
    # growth per TP card; the TPOT at light load is that calibrated replica's decode step.
    from calculators.engine.calibration import default_calibration
    from calculators.engine.step_model import Replica

    row = default_calibration().row("h100-sxm5-80gb", "bf16")
    inputs = clean_sim_inputs({})
    for key in ("bandwidth_efficiency", "mfu", "prefill_mfu", "allreduce_latency_us", "step_overhead_ms"):
        assert inputs[key] == row.values[key].value
    replica = build_setup(inputs).replica
    assert replica.bandwidth_efficiency_large_batch == row.values["bandwidth_efficiency_large_batch"].value
    calibrated = Replica.calibrated("llama-3.1-8b", "h100-sxm5-80gb")
    result = simulate({"rate": 0.05, "duration_s": 3600, "prompt_tokens": 64, "output_tokens": 32})
    step = step_ms(calibrated, decode_batch=1, decode_context_tokens=79).step_ms
    assert result["summary"]["tpot_ms"]["mean"] == pytest.approx(step, rel=0.01)
    assert step > step_ms(reference_setup().replica, decode_batch=1, decode_context_tokens=79).step_ms  # + overhead
    # A typed efficiency stands alone (flat over the batch); a card without a row reads the stated convention.
    typed = build_setup(clean_sim_inputs({"bandwidth_efficiency": 0.6})).replica
    assert typed.bandwidth_efficiency_large_batch is None
    assert {key: clean_sim_inputs({"gpu": "l4"})[key] for key in STATED_CONVENTION} == STATED_CONVENTION

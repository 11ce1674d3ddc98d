"""The lab's fit of step overhead, bandwidth efficiency and prefill MFU (drills/lab/fit.py), and its refusals."""


import pytest

from calculators.engine.quantities import default
from drills.lab.bench_output import Point, read_benchmark
from drills.lab.fit import FitRefused, Stack, fit
from tests.paths import REPO_ROOT

FIXTURES = REPO_ROOT / "fixtures" / "lab" / "benchmarks"
STACK = Stack("llama-3.1-8b", "h100-sxm5-80gb")

# By hand: Llama-3.1-8B bf16 reads 8,030,261,248 × 2 = 16,060,522,496 bytes of weights and 131,072 bytes of KV
# per cached token (32 layers × 8 KV heads × 128 × 2 × 2 B) a decode step; one H100 SXM reads 3,350 GB/s. One
# sequence at 512 + 128 ÷ 2 = 576 tokens: 16,136,019,968 B ÷ 3.35e12 B/s = 4.81672 ms at full bandwidth; at
# 4,096 + 64 = 4,160 tokens: 16,605,782,016 B → 4.95695 ms. At efficiency 0.8 and a 1.5 ms overhead the TPOTs
# are 4.81672 ÷ 0.8 + 1.5 = 7.52090 ms and 4.95695 ÷ 0.8 + 1.5 = 7.69619 ms.
ALONE_SHORT = dict(input_tokens=512, output_tokens=128, concurrency=1)
ALONE_LONG = dict(input_tokens=4096, output_tokens=128, concurrency=1)


def test_two_lone_streams_give_efficiency_and_overhead_by_hand():
    result = fit(STACK, [Point("short", tpot_mean_ms=7.52090, **ALONE_SHORT),
                         Point("long", tpot_mean_ms=7.69619, **ALONE_LONG)])
    assert result.fitted == ("bandwidth_efficiency", "step_overhead_ms")
    assert result.values["bandwidth_efficiency"] == pytest.approx(0.8, abs=2e-4)
    assert result.values["step_overhead_ms"] == pytest.approx(1.5, abs=2e-3)
    table = default("prefill_mfu", gpu="h100-sxm5-80gb", precision="bf16")  # the H100 16-bit row's
    assert result.values["prefill_mfu"] == pytest.approx(table, rel=1e-12)  # no TTFT measured: the table's
    assert f"No point informs the prefill MFU, so it keeps the table's {table:g}." in result.notes
    assert all(abs(r.error) < 1e-4 for r in result.residuals)
    assert result.ranges["prompt tokens"] == (512, 4096)


def test_fewer_points_than_constants_is_refused():
    with pytest.raises(FitRefused) as refused:
        fit(STACK, [Point("short", tpot_mean_ms=7.5209, **ALONE_SHORT)])
    assert str(refused.value) == ("1 measured point cannot fix 2 constants (bandwidth efficiency and step overhead): "
                                  "give at least 2, e.g. a sweep over concurrency.")


def test_points_that_cannot_tell_two_constants_apart_are_refused():
    with pytest.raises(FitRefused) as refused:
        fit(STACK, [Point("a", tpot_mean_ms=7.5, **ALONE_SHORT), Point("b", tpot_mean_ms=7.6, **ALONE_SHORT)])
    assert str(refused.value) == ("The points cannot tell the bandwidth efficiency from the step overhead: they were "
                                  "measured at one load and one length; add a point at another concurrency or "
                                  "prompt length.")


def test_an_efficiency_above_one_is_refused():
    # 3.0 and 3.1 ms: faster than 4.82 ms at full bandwidth; the overhead would be negative, so it is held at 0 and
    # u = (4.81672 × 3.0 + 4.95695 × 3.1) ÷ (4.81672² + 4.95695²) = 0.6244, an efficiency of 1.60.
    with pytest.raises(FitRefused) as refused:
        fit(STACK, [Point("a", tpot_mean_ms=3.0, **ALONE_SHORT), Point("b", tpot_mean_ms=3.1, **ALONE_LONG)])
    assert str(refused.value) == ("The fit puts the bandwidth efficiency at 1.60, above 1: the points are faster than "
                                  "this card can go. Check the model, card, TP degree and precision (a quantised "
                                  "checkpoint, or more cards than the form says?).")


def test_a_point_without_lengths_is_refused():
    with pytest.raises(FitRefused, match=r"^a gives no prompt and output lengths, which the fit needs"):
        fit(STACK, [Point("a", tpot_mean_ms=7.5, concurrency=1), Point("b", tpot_mean_ms=7.6, **ALONE_LONG)])


def test_the_vllm_sweep_fits_all_three_with_residuals_and_its_range():
    points = read_benchmark((FIXTURES / "vllm_bench_serve_summary.txt").read_text()).points
    result = fit(STACK, points)
    assert result.fitted == ("bandwidth_efficiency", "prefill_mfu", "step_overhead_ms")
    assert 0 < result.values["bandwidth_efficiency"] <= 1 and 0 < result.values["prefill_mfu"] <= 1
    assert result.values["step_overhead_ms"] > 0
    tpot = [r for r in result.residuals if r.metric == "TPOT mean"]
    assert len(tpot) == 3 and all(abs(r.error) < 0.02 for r in tpot)
    lone_ttft = [r for r in result.residuals if r.metric == "TTFT mean"][0]
    assert abs(lone_ttft.error) < 1e-6  # the one TTFT fitted: a lone request's, the prefill step itself
    assert result.ranges["prompt tokens"] == (1024, 1024)
    assert result.ranges["sequences in a step"][0] == 1 and round(result.ranges["sequences in a step"][1]) == 32
    assert result.outside(prompt_tokens=1024, output_tokens=128) == []
    assert result.outside(prompt_tokens=4096, output_tokens=128, tp=2) == [
        "4,096 prompt tokens is outside the 1,024 the calibration was fitted on; its constants are "
        "extrapolated there.",
        "The calibration was fitted at TP 1, not 2: its step overhead includes that degree's collectives."]
    low, high = result.band("bandwidth_efficiency")
    assert low < result.values["bandwidth_efficiency"] <= high <= 1

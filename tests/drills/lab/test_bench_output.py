"""Each benchmark format the lab reads, from its fixture (fixtures/lab/benchmarks/), and bad pastes' sentences."""

import json

import pytest

from drills.lab.bench_output import catalog_gpu, catalog_model, read_benchmark
from tests.paths import REPO_ROOT

FIXTURES = REPO_ROOT / "fixtures" / "lab" / "benchmarks"


def read(name):
    return read_benchmark((FIXTURES / name).read_text())


def test_vllm_summary_sweep_is_three_closed_loop_points():
    reading = read("vllm_bench_serve_summary.txt")
    assert reading.format == "vllm-summary" and reading.problems == []
    assert [p.concurrency for p in reading.points] == [1, 8, 32]
    first, _, last = reading.points
    assert (first.requests, first.duration_s, first.input_tokens, first.output_tokens) == (100, 98.44, 1024, 128)
    assert (first.ttft_mean_ms, first.ttft_p99_ms, first.tpot_mean_ms, first.tpot_p99_ms) == (29.34, 35.21, 7.52, 8.12)
    assert (first.itl_mean_ms, first.itl_p99_ms) == (7.52, 7.97)
    assert (last.request_throughput, last.output_throughput, last.total_token_throughput) == (15.17, 1942.04, 17478.38)
    assert last.rate is None and last.load == "closed"
    assert reading.setup.model == "llama-3.1-8b" and reading.setup.engine == "vllm"


def test_vllm_json_is_an_open_loop_point():
    reading = read("vllm_bench_serve_result.json")
    assert reading.format == "vllm-json" and reading.problems == []
    (point,) = reading.points
    assert point.load == "open" and point.rate == 4.0 and point.concurrency is None
    assert (point.input_tokens, point.output_tokens, point.requests, point.duration_s) == (1024, 128, 600, 150.62)
    assert (point.ttft_mean_ms, point.ttft_p99_ms, point.tpot_mean_ms, point.itl_p99_ms) == (33.48, 58.33, 7.71, 26.04)
    assert reading.setup.model == "llama-3.1-8b"


def test_trtllm_bench_report_gives_setup_and_point():
    reading = read("trtllm_bench_report.txt")
    assert reading.format == "trtllm-bench" and reading.problems == []
    setup = reading.setup
    assert (setup.model, setup.gpu, setup.tp, setup.weights_dtype, setup.kv_dtype, setup.engine) == (
        "llama-3.1-8b", "h100-sxm5-80gb", 1, "fp8", "fp8", "tensorrt-llm")
    assert "GUARANTEED_NO_EVICT" in setup.flags
    (point,) = reading.points
    assert (point.requests, point.concurrency, point.input_tokens, point.output_tokens) == (3000, 64, 1024, 128)
    assert point.duration_s == pytest.approx(59.7795829)
    assert (point.ttft_mean_ms, point.ttft_p99_ms, point.tpot_mean_ms, point.tpot_p99_ms) == (
        121.3472, 318.663, 9.0411, 10.7725)
    assert (point.request_throughput, point.output_throughput, point.e2e_mean_ms) == (50.1844, 6423.5978, 1269.5669)


@pytest.mark.parametrize("name, fmt, concurrency, lengths, ttft, itl", [
    ("genai_perf_table.txt", "genai-perf", 16, (550.04, 256.0), (46.18, 109.88), (10.12, 11.52)),
    ("aiperf_table.txt", "aiperf", 4, (1000.0, 200.0), (33.71, 66.15), (7.88, 8.51)),
])
def test_genai_perf_and_aiperf_tables(name, fmt, concurrency, lengths, ttft, itl):
    reading = read(name)
    assert reading.format == fmt and reading.problems == []
    (point,) = reading.points
    assert point.concurrency == concurrency and (point.input_tokens, point.output_tokens) == lengths
    assert (point.ttft_mean_ms, point.ttft_p99_ms) == ttft
    assert (point.itl_mean_ms, point.itl_p99_ms) == itl
    assert (point.tpot_mean_ms, point.tpot_p99_ms) == itl  # their ITL is (e2e − TTFT) ÷ (tokens − 1)
    assert reading.setup.model == "llama-3.1-8b"


def test_typed_points():
    reading = read("typed_points.txt")
    assert reading.format == "typed" and reading.problems == []
    assert [(p.input_tokens, p.output_tokens, p.concurrency, p.ttft_mean_ms, p.tpot_mean_ms)
            for p in reading.points] == [(512, 256, 1, 16.4, 6.88), (512, 256, 16, 31.9, 9.95),
                                         (2048, 256, 4, 52.7, 7.96)]
    assert reading.points[1].request_throughput == 6.2


def test_a_bad_line_names_the_line_and_what_was_expected():
    text = (FIXTURES / "vllm_bench_serve_summary.txt").read_text().replace(
        "Mean TPOT (ms):                          9.31", "Mean TPOT (ms):                          9,3l")
    reading = read_benchmark(text)
    assert reading.problems == [
        "Line 53, “Mean TPOT (ms):                          9,3l”: expected a number after “Mean TPOT (ms):”."]


def test_a_typed_line_with_an_unknown_key():
    reading = read_benchmark("input=512 output=128 concurency=4 tpot=7\n")
    assert len(reading.problems) == 1
    assert reading.problems[0].startswith("Line 1, “input=512 output=128 concurency=4 tpot=7”: expected key=value "
                                          "pairs with keys among input, output, concurrency")
    assert "(not “concurency=4”)" in reading.problems[0]


def test_inconsistent_numbers_are_refused_with_their_sentence():
    text = (FIXTURES / "vllm_bench_serve_summary.txt").read_text().replace(
        "Request throughput (req/s):              6.51", "Request throughput (req/s):              8.51")
    reading = read_benchmark(text)
    assert reading.problems == ["Result 2 (line 37): 400 requests in 61.41 s is 6.51 req/s, but the output says "
                                "8.51 req/s."]
    data = json.loads((FIXTURES / "vllm_bench_serve_result.json").read_text())
    data["p99_ttft_ms"] = 20.0
    reading = read_benchmark(json.dumps(data))
    assert reading.problems == ["Result 1: the p99 TTFT (20 ms) is below its median (31.97 ms), which no set of "
                                "requests gives."]


def test_broken_json_and_an_empty_paste():
    assert read_benchmark('{"request_throughput": 3,').problems[0].startswith(
        "The paste starts like JSON but is not valid JSON (line 1")
    assert read_benchmark("   \n").problems[0].startswith("Nothing was read: paste the summary vllm bench serve")


def test_names_to_catalog_ids():
    assert catalog_model("meta-llama/Meta-Llama-3.1-8B-Instruct") == "llama-3.1-8b"
    assert catalog_model("/models/Llama-3.1-70B-Instruct/") == "llama-3.1-70b"
    assert catalog_model("someone/unknown-model") is None
    assert catalog_gpu("NVIDIA H100 80GB HBM3") == "h100-sxm5-80gb"
    assert catalog_gpu("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb"
    assert catalog_gpu("NVIDIA H200") == "h200-sxm-141gb"

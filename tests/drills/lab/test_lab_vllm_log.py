"""A pasted vLLM start-up log read into the ladder's steps (drills/lab/vllm_log.py) and shown in the lab.

By hand on the reference stack (Llama-3.1-8B bf16, one H100 SXM, utilisation 0.9, 8,192 tokens, 16-token
blocks): usable 81,559 MiB × 0.9 = 71.6827 GiB; weights 14.9575 GiB; budget 71.6827 − 14.9575 − 3 = 53.7252
GiB; 131,072 B per token, so the cache holds 53.7252 × 2^30 ÷ 131,072 = 440,117 tokens (27,507 whole
blocks); requests of 8,192 tokens at once: 440,117 ÷ 8,192 = 53.73.
"""

from __future__ import annotations

import pytest

from drills.lab.services import predict
from drills.lab.vllm_log import read_startup_log

SETUP = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "weights_dtype": "bf16", "kv_dtype": "bf16",
         "engine_flags": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"}

V1_MATCHING = """\
INFO 05-01 12:00:01 [gpu_model_runner.py:1329] Model loading took 14.9888 GiB and 4.512 seconds
INFO 05-01 12:00:09 [gpu_worker.py:227] Available KV cache memory: 53.72 GiB
INFO 05-01 12:00:09 [kv_cache_utils.py:634] GPU KV cache size: 440,064 tokens
INFO 05-01 12:00:09 [kv_cache_utils.py:637] Maximum concurrency for 8,192 tokens per request: 53.72x
"""


def log_comparison(log_text: str, **setup):
    prediction = predict({**SETUP, **setup}, {"startup_log": log_text})
    return next(c for c in prediction.comparisons if c.key == "log")


def test_the_v1_lines_are_read():
    log = read_startup_log(V1_MATCHING)
    assert (log.weights_gib, log.available_gib, log.kv_tokens) == (14.9888, 53.72, 440_064)
    assert (log.concurrency_tokens, log.concurrency) == (8192, 53.72)


def test_a_log_that_agrees_with_the_ladder_says_so():
    comparison = log_comparison(V1_MATCHING)
    assert comparison.tone == "success" and "matches the ladder within 2 %" in comparison.verdict
    ladder_tokens = next(f for f in comparison.predicted if f.label == "Ladder: KV cache, tokens").value
    assert ladder_tokens == pytest.approx(440_117, abs=1)


def test_a_smaller_kv_budget_is_the_reserve_step_and_its_size_is_derived():
    # 71.6827 − 14.99 − 52.00 = 4.6927 GiB kept for activations where the ladder keeps 3.
    comparison = log_comparison("Model loading took 14.99 GiB and 5 seconds\nAvailable KV cache memory: 52.00 GiB\n")
    assert comparison.verdict.startswith("The reserve step: vLLM kept 4.69 GiB per card")
    reserve = next(f for f in comparison.derived if f.label == "Implied activation reserve per card")
    assert reserve.value == pytest.approx(4.6927, abs=1e-4)


def test_twice_the_tokens_in_the_same_memory_is_the_bytes_per_token_step():
    # 53.72 GiB over 880,128 tokens is 65,537.6 B a token: an fp8 cache, not the form's bf16.
    comparison = log_comparison("Available KV cache memory: 53.72 GiB\nGPU KV cache size: 880,128 tokens\n")
    assert comparison.verdict.startswith("The KV bytes per token step: the log stores 65,538 B per token, "
                                         "the ladder 131,072 B")


def test_v0_wording_with_worker_prefixes_and_blocks():
    text = ("(VllmWorker rank=0 pid=4242) INFO 01-02 03:04:05 Loading model weights took 14.9595 GB\n"
            "(VllmWorker rank=1 pid=4243) INFO 01-02 03:04:05 Loading model weights took 99.0 GB\n"
            "INFO 01-02 03:04:09 # GPU blocks: 27507, # CPU blocks: 2048\n")
    log = read_startup_log(text)
    assert log.weights_gib == 14.9595 and log.blocks == 27_507  # rank 0's line, the first
    comparison = log_comparison(text)
    assert comparison.tone == "success"
    assert next(f for f in comparison.derived if f.label == "Log: KV cache, tokens").value == 440_112


def test_a_concurrency_quoted_at_another_length_points_at_the_context_limit():
    # 440,112 tokens ÷ 4,096 = 107.45 requests: the cache agrees, the length is not the ladder's 8,192.
    comparison = log_comparison("# GPU blocks: 27507\nMaximum concurrency for 4,096 tokens per request: 107.45x\n")
    assert comparison.verdict.startswith("The per-user step's length: the log sized requests at 4,096 tokens")


def test_text_that_is_not_a_vllm_log_is_said_to_be_unrecognised():
    comparison = log_comparison("hello\nworld")
    assert comparison.verdict.startswith("No line of a vLLM start-up log was recognised")


@pytest.mark.django_db
def test_the_lab_page_reads_a_pasted_log_as_the_only_measurement(client):
    data = {**SETUP, "gpus": "1", "startup_log": V1_MATCHING.replace("53.72 GiB", "52.00 GiB")}
    page = client.post("/lab/", data).content.decode()
    assert "Your start-up log against the ladder" in page and "The reserve step: vLLM kept" in page


@pytest.mark.django_db
def test_a_pasted_log_is_stored_with_the_run_and_read_again_when_it_is_reopened(candidate_client):
    from drills.models import LabRun

    log_text = V1_MATCHING.replace("53.72 GiB", "52.00 GiB")
    response = candidate_client.post("/lab/", {**SETUP, "gpus": "1", "startup_log": log_text})

    run = LabRun.objects.get()
    assert response.status_code == 302 and run.startup_log == log_text.strip()  # the form trims the ends
    page = candidate_client.get(run.get_absolute_url()).content.decode()
    # The textarea shows the log as pasted, and the comparison is read from it again: 53.7252 − 52.00 = 1.73 GiB.
    assert "Available KV cache memory: 52.00 GiB" in page
    assert "Your start-up log against the ladder" in page and "The reserve step: vLLM kept" in page


@pytest.mark.django_db
def test_a_run_saved_without_a_log_reopens_without_one(candidate_client):
    from drills.models import LabRun

    candidate_client.post("/lab/", {**SETUP, "gpus": "1", "decode_tok_s": "150"})

    run = LabRun.objects.get()
    page = candidate_client.get(run.get_absolute_url()).content.decode()
    assert run.startup_log == "" and "Your start-up log against the ladder" not in page

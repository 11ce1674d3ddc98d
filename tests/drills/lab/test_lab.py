"""The lab (/lab/): a candidate's measurements beside the engine's predictions, and their saved runs.

Hand derivations on the reference stack (Llama-3.1-8B, bf16, one H100 SXM, docs/architecture.md §2):

* weights 8,030,261,248 × 2 B = 16,060,522,496 B; ceiling 3,350 GB/s ÷ 16,060,522,496 B = 208.6 tok/s;
  MBU of a measured 150 tok/s = 150 × 16,060,522,496 ÷ 3,350,000,000,000 = 0.7191;
* card 81,559 MiB = 79.65 GiB; usable × 0.9 = 71.68 GiB; budget 71.68 − 14.96 − 3 = 53.73 GiB; 53 users at 8,192;
* ridge 989.4 ÷ 3.35 = 295.3 FLOP/byte; batch at the ridge ⌊295.3 × 2 B ÷ 2 FLOP⌋ = 295;
* cache pool: 53.725 GiB ÷ (131,072 B × 16) = 53.725 × 512 = 27,507 blocks;
* prefill of 2,048 tokens: 2 × 8,030,261,248 × 2,048 + 4 × 32 × 4,096 × 2,048² = 35,090,973,327,360 FLOP;
  MFU at 120 ms = 35,090,973,327,360 ÷ (0.120 s × 989.4 × 10¹²) = 0.2956.
"""

from __future__ import annotations

import pytest
from django.test import Client

from drills.lab.flags import read_engine_flags
from drills.lab.services import predict
from drills.models import LabRun
from tests.factories import UserFactory
from tests.page_text import visible

pytestmark = pytest.mark.django_db

SETUP = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": "1", "weights_dtype": "bf16", "kv_dtype": "bf16",
         "engine_flags": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"}
MEASURED = {"startup_gib": "72.3", "decode_tok_s": "150", "knee_batch": "64", "preempt_pct": "97",
            "prefill_ms": "120", "prompt_tokens": "2048"}


def run_data(**changes) -> dict:
    return {**SETUP, **MEASURED, **changes}


def comparison(prediction, key):
    return next(c for c in prediction.comparisons if c.key == key)


def figure(comparison_, label_start):
    return next(f for f in [*comparison_.predicted, *comparison_.derived] if f.label.startswith(label_start))


class TestPredictions:
    @pytest.fixture
    def prediction(self):
        return predict({**SETUP, "gpus": 1}, {"startup_gib": 72.3, "decode_tok_s": 150, "knee_batch": 64,
                                              "preempt_pct": 97, "prefill_ms": 120, "prompt_tokens": 2048})

    def test_the_mbu_of_a_measured_rate_is_the_engines(self, prediction):
        decode = comparison(prediction, "decode")

        assert figure(decode, "MBU").value == pytest.approx(150 * 16_060_522_496 / 3_350e9)
        assert figure(decode, "MBU").text == "0.7191 (71.9 %)"
        assert figure(decode, "Ceiling").text == "208.6 tok/s"
        assert figure(decode, "Realistic").text == "135.6 tok/s to 177.3 tok/s"
        assert decode.tone == "success"

    def test_the_ladder_gives_the_memory_figures(self, prediction):
        memory = comparison(prediction, "memory")

        assert figure(memory, "Card").text == "79.65 GiB"
        assert figure(memory, "Engine's share").text == "71.68 GiB"
        assert figure(memory, "Weights").text == "14.96 GiB"
        assert figure(memory, "KV budget").text == "53.73 GiB"
        assert figure(memory, "Users at the context limit").text == "53 users"
        assert figure(memory, "Measured − predicted").text == "+0.62 GiB"  # 72.3 − 71.68

    def test_the_roofline_gives_the_batch_at_the_ridge(self, prediction):
        knee = comparison(prediction, "knee")

        assert figure(knee, "Ridge point").text == "295.3 FLOP/byte"
        assert figure(knee, "Batch at the ridge").value == 295
        assert figure(knee, "Measured ÷ batch").text == "0.22"  # 64 ÷ 295

    def test_the_cache_pool_in_blocks_and_the_share_used_at_preemption(self, prediction):
        preemption = comparison(prediction, "preemption")

        assert figure(preemption, "Cache pool").text == "27,507"
        assert figure(preemption, "Share of the pool").value == pytest.approx(0.97)

    def test_the_mfu_comes_from_the_prefill_familys_flops(self, prediction):
        prefill = comparison(prediction, "prefill")

        assert figure(prefill, "Prefill FLOPs").value == 35_090_973_327_360
        assert figure(prefill, "MFU").value == pytest.approx(35_090_973_327_360 / (0.120 * 989.4e12))
        assert figure(prefill, "MFU").text == "0.2956 (29.6 %)"

    # MFU = 35,090,973,327,360 FLOP ÷ (t × 989.4 × 10¹² FLOP/s): 45 ms → 0.7882, 80 ms → 0.4433, 120 ms → 0.2956,
    # against the 35–50 % prefill kernels usually reach.
    @pytest.mark.parametrize(("prefill_ms", "mfu_text", "verdict_start", "tone"), [
        (45, "0.7882 (78.8 %)", "Above the 35–50 % MFU prefill kernels usually reach", "warning"),
        (80, "0.4433 (44.3 %)", "Within the 35–50 % MFU prefill kernels reach", "success"),
        (120, "0.2956 (29.6 %)", "Below the 35–50 % MFU prefill kernels usually reach", "warning"),
    ])
    def test_the_prefill_verdict_says_above_within_or_below_the_usual_range(self, prefill_ms, mfu_text,
                                                                            verdict_start, tone):
        prefill = comparison(predict({**SETUP, "gpus": 1}, {"prefill_ms": prefill_ms, "prompt_tokens": 2048}),
                             "prefill")

        assert figure(prefill, "MFU").text == mfu_text
        assert prefill.verdict.startswith(verdict_start)
        assert prefill.tone == tone

    def test_every_comparison_explains_the_usual_reasons_for_a_gap(self, prediction):
        assert [c.key for c in prediction.comparisons] == ["memory", "decode", "knee", "preemption", "prefill"]
        assert all(len(c.reasons) >= 3 for c in prediction.comparisons)
        assert "CUDA graphs" in " ".join(comparison(prediction, "memory").reasons)
        assert "allocator" in " ".join(comparison(prediction, "memory").reasons)

    def test_flags_set_the_memory_fraction_and_a_sequence_cap_explains_the_knee(self):
        prediction = predict({**SETUP, "gpus": 1, "engine_flags": "--gpu-memory-utilization=0.8 --max-num-seqs 64"},
                             {"knee_batch": 64})

        assert figure(comparison(prediction, "memory"), "Engine's share").text == "63.72 GiB"  # 79.65 × 0.8
        assert "max-num-seqs cap of 64" in comparison(prediction, "knee").verdict
        assert prediction.flags_read == ["--gpu-memory-utilization 0.8", "--max-num-seqs 64"]

    def test_unreadable_flags_are_ignored(self):
        found, read = read_engine_flags('--gpu-memory-utilization lots --max-model-len "8192 --enforce-eager')

        assert found == {"eager": True}
        assert read == ["--enforce-eager: CUDA graphs off"]

    def test_a_rate_above_the_bandwidth_bound_is_flagged(self):
        prediction = predict({**SETUP, "gpus": 1}, {"decode_tok_s": 400})

        assert comparison(prediction, "decode").tone == "danger"
        assert "Faster than the bandwidth allows" in comparison(prediction, "decode").verdict


class TestLabPage:
    def test_the_page_has_the_form_and_a_nav_link(self, client):
        response = client.get("/lab/")

        page = response.content.decode()
        assert response.status_code == 200
        assert 'href="/lab/"' in page and 'aria-current="page" href="/lab/"' in page
        for name in ("model", "gpu", "weights_dtype", "kv_dtype", "engine_flags", "startup_gib", "decode_tok_s",
                     "knee_batch", "preempt_pct", "prefill_ms", "prompt_tokens"):
            assert f'name="{name}"' in page

    def test_a_visitor_sees_the_predictions_beside_the_measurements_without_saving(self, client):
        response = client.post("/lab/", run_data())

        text = visible(response)
        assert response.status_code == 200
        assert "0.7191 (71.9 %)" in text and "208.6 tok/s" in text
        assert "71.68 GiB" in text and "53.73 GiB" in text and "295 users" in text
        assert "0.2956 (29.6 %)" in text and "27,507" in text
        assert "Usual reasons for a gap" in text
        assert LabRun.objects.count() == 0

    def test_a_candidates_run_is_saved_and_shown_at_its_own_address(self, candidate_client, candidate):
        response = candidate_client.post("/lab/", run_data())

        run = LabRun.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/lab/{run.pk}/"
        assert (run.user, run.model, run.decode_tok_s, run.knee_batch, run.prompt_tokens) == (
            candidate, "llama-3.1-8b", 150, 64, 2048)
        assert run.summary["decode"] == pytest.approx(0.7191, abs=1e-4)
        text = visible(candidate_client.get(run.get_absolute_url()))
        assert "0.7191 (71.9 %)" in text and "Your runs" in text
        assert "72 %" in visible(candidate_client.get("/lab/"))  # the MBU in the list of runs

    def test_runs_are_never_shown_to_another_user(self, candidate_client):
        candidate_client.post("/lab/", run_data(engine_flags="alice-secret-flags"))
        run = LabRun.objects.get()
        bob = Client()
        bob.force_login(UserFactory(username="bob"))

        assert bob.get(run.get_absolute_url()).status_code == 404
        assert "alice-secret-flags" not in bob.get("/lab/").content.decode()
        assert "No runs yet" in bob.get("/lab/").content.decode()
        assert Client().get(run.get_absolute_url()).status_code == 302  # a visitor is sent to log in

    def test_bad_input_is_kept_with_errors_beside_the_fields(self, candidate_client):
        response = candidate_client.post("/lab/", run_data(decode_tok_s="fast", preempt_pct="150",
                                                           startup_gib="90"))

        page = response.content.decode()
        assert response.status_code == 200
        assert 'value="fast"' in page and 'value="150"' in page and 'value="90"' in page
        assert 'id="id_decode_tok_s-error"' in page and 'id="id_preempt_pct-error"' in page
        text = visible(response)
        assert "'fast' is not a number; this field expects a token rate in tok/s, such as 208.5." in text
        assert "Must be at most 100." in text
        assert 'aria-invalid="true"' in page
        assert LabRun.objects.count() == 0

    def test_a_memory_in_gb_and_a_scaled_count_are_read_as_the_calculators_read_them(self, candidate_client):
        """80 GB is 80e9 B = 80e9 / 2^30 = 74.5058 GiB; 2k tokens are 2,000. The visitor's page says what each box
        was read as; the candidate's run stores the values read."""
        text = visible(Client().post("/lab/", run_data(startup_gib="80 GB", prompt_tokens="2k")))
        assert "Read '80 GB' as 74.51 GiB." in text and "Read '2k' as 2,000 tokens." in text
        assert "Read '150'" not in text  # a plain number is not echoed

        candidate_client.post("/lab/", run_data(startup_gib="80 GB", prompt_tokens="2k"))
        run = LabRun.objects.get()
        assert run.startup_gib == pytest.approx(80e9 / 2**30) and run.prompt_tokens == 2000

    @pytest.mark.parametrize(("name", "typed", "message"), [
        # 5 MB = 5e6 / 2^30 = 0.004657 GiB, under the 0.01 GiB the field takes.
        ("startup_gib", "5 MB", "Must be at least 0.01. Read '5 MB' as 0.004657 GiB."),
        ("knee_batch", "2^-1", "Read '2^-1' as 0.5; this field takes a whole number."),
        ("gpus", "two", "'two' is not a number; this field takes a whole number."),
        ("prefill_ms", "12 GB", "'12 GB' is a memory size; this field asks for a duration in ms."),
    ])
    def test_a_bad_number_says_what_was_read_and_what_was_expected(self, client, name, typed, message):
        response = client.post("/lab/", run_data(**{name: typed}))

        assert message in visible(response)
        assert f'id="id_{name}-error"' in response.content.decode()
        assert LabRun.objects.count() == 0

    def test_more_memory_than_the_card_holds_is_an_error_beside_the_field(self, client):
        response = client.post("/lab/", run_data(startup_gib="85"))

        assert 'id="id_startup_gib-error"' in response.content.decode()
        assert "More than the card holds" in visible(response)

    def test_a_prefill_time_needs_its_prompt_length(self, client):
        response = client.post("/lab/", run_data(prompt_tokens=""))

        assert 'id="id_prompt_tokens-error"' in response.content.decode()

    def test_at_least_one_measurement_is_needed(self, client):
        response = client.post("/lab/", {**SETUP})

        assert "Enter at least one measurement" in visible(response)

    def test_an_unknown_model_or_card_is_an_error_not_a_500(self, client):
        response = client.post("/lab/", run_data(model="gpt-99", gpu="toaster"))

        assert response.status_code == 200
        assert "Select a valid choice" in visible(response)

    @pytest.mark.parametrize("changes", [
        {"gpu": "a100-sxm4-80gb", "weights_dtype": "fp8"},    # no fp8 throughput on the A100: bf16 peak used
        {"model": "deepseek-v3", "gpus": "1"},                 # does not fit one card: no user fits
        {"model": "gemma-2-9b", "kv_dtype": "fp8", "prompt_tokens": "1"},
    ])
    def test_odd_but_well_formed_setups_are_predicted(self, client, changes):
        response = client.post("/lab/", run_data(**changes))

        assert response.status_code == 200
        assert "Measured against predicted" in visible(response)

    def test_a_flag_the_engine_rejects_is_an_error_beside_the_flags(self, client):
        response = client.post("/lab/", run_data(engine_flags="--max-model-len 99999999"))

        assert response.status_code == 200
        assert 'id="id_engine_flags-error"' in response.content.decode()
        assert "context must be at most 10,000,000" in visible(response)
        assert 'value="72.3"' in response.content.decode()

    def test_an_htmx_post_returns_the_lab_fragment(self, htmx_client, candidate):
        htmx_client.force_login(candidate)

        response = htmx_client.post("/lab/", run_data())

        body = response.content.decode().strip()
        assert body.startswith('<div id="lab"') and "<html" not in body
        assert "0.7191 (71.9 %)" in visible(response)
        assert LabRun.objects.filter(user=candidate).count() == 1

"""The calibration table and its validation against public measurements (docs/architecture.md §12).

The table (``fixtures/catalog/calibration.json``) is read through the quantities: a card with a row gets the
row's value, a card without one the quantity's default. The measurement set (``fixtures/calibration/
measurements.yaml``) is checked for what issue 31 asks of it, and the fit's errors are held to the bounds
``bench/validate_serving.py`` reaches (before: every card at the defaults; LOSO: each source predicted by a
table fitted without it).
"""

from __future__ import annotations

import re

import pytest
import yaml

from calculators.engine import validation as V
from calculators.engine.calibration import (
    KEYS,
    LARGE_BATCH,
    allreduce_latency_at,
    bandwidth_efficiency_at,
    calibration_from_entries,
    default_calibration,
    eager_launch_ms,
    precision_of,
)
from calculators.engine.errors import CatalogError
from calculators.engine.quantities import INPUTS, default


def test_a_card_without_a_row_reads_the_quantity_default():
    # The L4 has no measurements, so no row: every calibrated key is its quantity's own default.
    assert default_calibration().row("l4", "bf16") is None
    for key in KEYS:
        assert default(key, gpu="l4", precision="bf16") == INPUTS[key].default


def test_a_row_overrides_the_default_for_its_card_and_precision_only():
    table = default_calibration()
    row = table.row("h100-sxm5-80gb", "fp8", "tensorrt-llm")
    assert row is not None and row.fitted_on
    band = row.values["prefill_mfu"]
    assert band.low <= band.value <= band.high
    assert default("prefill_mfu", gpu="h100-sxm5-80gb", precision="fp8", engine="tensorrt-llm") == band.value
    assert default("prefill_mfu", gpu="h100-sxm5-80gb", precision="fp8", engine="tensorrt-llm",
                   end="low") == band.low
    # No precision or engine given: the quantity's default, as before the table.
    assert default("prefill_mfu") == INPUTS["prefill_mfu"].default


def test_precision_families_and_the_interpolations():
    assert [precision_of(d) for d in ("bf16", "fp16", "fp8", "nvfp4", "mxfp4")] == [
        "16-bit", "16-bit", "fp8", "fp4", "fp4"]
    assert bandwidth_efficiency_at(1, 0.6, 0.9) == 0.6
    assert bandwidth_efficiency_at(LARGE_BATCH * 4, 0.6, 0.9) == 0.9
    assert bandwidth_efficiency_at(8, 0.6, 0.9) == pytest.approx(0.75)  # log2(8) = 3 of log2(64) = 6
    assert allreduce_latency_at(8, 12.0, 4.0) == 24.0 and allreduce_latency_at(1, 12.0, 4.0) == 12.0  # 3 doublings
    assert allreduce_latency_at(2, 12.0, 4.0) == 16.0


def test_a_bad_row_is_refused_with_a_sentence():
    row = {"gpu": "h100-sxm5-80gb", "precision": "fp8", "values": {"mfu": {"value": 0.5, "low": 0.6, "high": 0.7}}}
    with pytest.raises(CatalogError, match="low 0.6 ≤ value 0.5"):
        calibration_from_entries([row])
    with pytest.raises(CatalogError, match="unknown key"):
        calibration_from_entries([{"gpu": "h100-sxm5-80gb", "precision": "fp8", "values": {"mbu": 0.5}}])
    twice = {"gpu": "h100-sxm5-80gb", "precision": "fp8", "values": {"mfu": 0.5}}
    with pytest.raises(CatalogError, match="given twice"):
        calibration_from_entries([twice, twice])


def test_the_measurement_set_covers_what_issue_31_asks():
    sources, cases = V.load_cases()
    assert len(cases) >= 40 and len(sources) >= 6
    assert {c.source for c in cases} == set(sources)
    assert {c.kind for c in cases} == {"throughput", "ttft", "tpot", "e2e"}
    assert len({c.workload["gpu"] for c in cases}) >= 4
    assert {1, 2, 4, 8} <= {int(c.workload["tp"]) for c in cases}
    assert {"16-bit", "fp8", "fp4"} <= {c.group[1] for c in cases}
    assert len({c.id for c in cases}) == len(cases)
    # Every bias issue 31 names has cases that show it.
    biases = yaml.safe_load(V.MEASUREMENTS.read_text())["biases"]
    assert set(biases) == {"small_batch_decode", "prefill_efficiency_per_card", "short_prompt_ttft_under_tp",
                           "closed_loop_clients", "per_card_and_precision", "near_saturation"}
    ids = {c.id for c in cases}
    assert all(shown and set(shown) <= ids for shown in biases.values())
    for case in cases:
        # Only numbers read in a source: the value is in the quote (thousands separators dropped; seconds
        # quoted for end-to-end runs of tens of seconds).
        numbers = {float(n) for n in re.findall(r"\d+(?:\.\d+)?", case.quote.replace(",", ""))}
        assert case.value in numbers or case.value / 1000 in numbers, case.id


@pytest.fixture(scope="module")
def errors():
    _, cases = V.load_cases()
    before = [V.error(c, {}) for c in cases]
    full = V.fit(cases)
    fitted = [V.error(c, full) for c in cases]
    loso = V.leave_one_source_out(cases)
    return cases, before, fitted, loso


def test_the_fit_beats_the_defaults_and_holds_the_bounds_reached(errors):
    cases, before, fitted, loso = errors
    # The bounds bench/validate_serving.py prints today (issue 31's targets are 15 % overall and 20 % for
    # TTFT leave-one-source-out, no case beyond 40 %: see docs/performance.md). Before the
    # grouped-query reads of the 2023 engines (kv_reads) and the pooled prior the defaults were 33.6 % off and
    # leave-one-source-out 30.1 %; before TensorRT-LLM of 2023 was its own engine (tensorrt-llm-2023) 21.8 %, TTFT
    # 22.7 %; before the hierarchical pull toward the pool (ROW_PULL), the governs() gate, the step overhead's
    # growth per TP doubling (not per card) and the pool's MFU_CEILING 20.5 %, TTFT 19.9 %, TPOT 30.0 %, fitted
    # 7.1 % (in-sample pays a little for the pool's pull), 8 cases beyond 40 %; before TP's cost grew per
    # all-reduce (allreduce_latency_at) rather than per step 18.0 %, TTFT 13.9 %, 6 cases beyond 40 % (NeMo's
    # three TP 8 runs, TensorRT-LLM's 70B first token at TP 4 and the two 2023 vLLM runs; those two remain);
    # before a single-card engine read the any-engine all-reduce keys (ALLREDUCE_KEYS) 15.2 %; before the 2023
    # vLLM paid its declared eager launch cost (launch_ms) 14.9 %, the defaults 27.9 %, end-to-end 21.8 %, and its
    # two runs read −56.9 % and −58.0 % left out. Every target of issue 31 is met: 15 % overall, 20 % TTFT, no case
    # beyond 40 %.
    assert V.mape(before) == pytest.approx(26.8, abs=0.1)
    assert V.mape(fitted) <= 8.1
    assert V.mape(list(loso.values())) <= 14.0 < V.TARGETS["overall"]
    ttft = [loso[c.id] for c in cases if c.kind == "ttft"]
    assert V.mape(ttft) <= 12.4
    tpot = [loso[c.id] for c in cases if c.kind == "tpot"]
    assert V.mape(tpot) <= 7.9
    e2e = [loso[c.id] for c in cases if c.kind == "e2e"]
    assert V.mape(e2e) <= 18.2
    assert max(abs(e) for e in loso.values()) <= V.TARGETS["case"] / 100
    # The 2023 vLLM runs left out: the any-engine costs of today's engines plus the declared launch cost.
    assert loso["llmb-a100-40gb-70b-vllm-32-1-2048"] == pytest.approx(-0.199, abs=0.002)
    assert loso["llmb-a100-40gb-70b-vllm-24-1024-1024"] == pytest.approx(-0.255, abs=0.002)


def test_an_engine_without_cuda_graphs_pays_the_declared_launch_cost_per_layer():
    # fixtures/catalog/calibration.json's eager_launch: vLLM PR 1440 (Llama 2 7B, one card: about 1.2 s eager,
    # 1.05 s graphed, 100 output tokens) gives 0.15 s / 99 decode steps / 32 layers = 0.0473 ms a layer; metaseq PR
    # 270 (OPT-175B, 96 layers, 8-way model parallel on 8 A100s: about 95 ms eager, 66 ms graphed a token) gives
    # 29 / 96 = 0.302 ms a layer at TP 8, so (0.302 − 0.047) / 3 = 0.085 ms more per doubling.
    table = default_calibration()
    assert (table.eager.ms_per_layer, table.eager.ms_per_layer_per_tp_doubling) == (0.047, 0.085)
    assert 0.15 / 99 / 32 * 1000 == pytest.approx(table.eager.ms_per_layer, abs=0.0005)
    assert 29 / 96 == pytest.approx(table.eager.ms_per_layer + 3 * table.eager.ms_per_layer_per_tp_doubling,
                                    abs=0.0005)
    assert {source["address"] for source in table.eager.sources} == {
        "https://github.com/vllm-project/vllm/pull/1440", "https://github.com/facebookresearch/metaseq/pull/270"}
    # Llama 2 70B (80 layers) at TP 8: 80 × (0.047 + 3 × 0.085) = 80 × 0.302 = 24.16 ms a decode step; on one
    # card 80 × 0.047 = 3.76 ms; at TP 4 80 × 0.217 = 17.36 ms.
    assert eager_launch_ms(80, 8, 0.047, 0.085) == pytest.approx(24.16)
    assert table.decode_launch_ms("vllm-2023", 80, 8) == pytest.approx(24.16)
    assert table.decode_launch_ms("vllm-2023", 80, 1) == pytest.approx(3.76)
    assert table.decode_launch_ms("vllm-2023", 80, 4) == pytest.approx(17.36)
    # Engines that replay decode as CUDA graphs (every other key, and no engine) pay nothing.
    for engine in ("vllm", "tensorrt-llm", "tensorrt-llm-2023", ""):
        assert table.decode_launch_ms(engine, 80, 8) == 0.0
    # The validation adds it to each decode step of a 2023 vLLM run, and only there.
    _, cases = V.load_cases()
    by_id = {c.id: c for c in cases}
    assert V.launch_ms(by_id["llmb-a100-40gb-70b-vllm-32-1-2048"]) == pytest.approx(24.16)
    assert V.launch_ms(by_id["llmb-a100-40gb-70b-trt-32-1-2048"]) == 0.0
    assert sum(V.launch_ms(c) > 0 for c in cases) == 2
    # A static batch of 32 from one prompt token: 2,047 decode steps, each 24.16 ms longer end to end.
    case = by_id["llmb-a100-40gb-70b-vllm-32-1-2048"]
    p = V.defaults()
    plain = V._make_plan(V.Case(case.id + "-graphed", case.source, case.metric, case.value,
                                {**case.workload, "engine": "vllm"}), V.default_catalog())
    assert V.predict(case, p) - (plain.prefill.time(p, 8) * plain.prefill_steps + 2047 * plain.decode.time(p, 8)) \
        == pytest.approx(2047 * 24.16, rel=1e-9)


def test_a_bad_engine_declaration_is_refused_with_a_sentence():
    eager = {"ms_per_layer": 0.047, "ms_per_layer_per_tp_doubling": 0.085}
    assert calibration_from_entries([], {"vllm-2023": {"cuda_graphs": False}}, eager).eager_engines == {"vllm-2023"}
    assert calibration_from_entries([], {"vllm": {"cuda_graphs": True}}, eager).eager_engines == frozenset()
    with pytest.raises(CatalogError, match="cuda_graphs must be true or false, read 'no'"):
        calibration_from_entries([], {"vllm-2023": {"cuda_graphs": "no"}}, eager)
    with pytest.raises(CatalogError, match="vllm-2023 run without CUDA graphs, but the table declares no"):
        calibration_from_entries([], {"vllm-2023": {"cuda_graphs": False}})
    with pytest.raises(CatalogError, match="expected ms_per_layer and ms_per_layer_per_tp_doubling"):
        calibration_from_entries([], {}, {"ms_per_layer": "fast"})
    with pytest.raises(CatalogError, match="cannot be negative"):
        calibration_from_entries([], {}, {**eager, "ms_per_layer": -0.1})


def test_an_engine_that_reads_kv_per_query_head_reads_the_group_s_share_again():
    # Llama-3.1-70B: 64 query heads share 8 K/V heads, so a pre-XQA engine reads the KV cache 8 times a step.
    _, cases = V.load_cases()
    old = next(c for c in cases if c.id == "trt-h100-fp8-70b-64-2048-2048")
    new = next(c for c in cases if c.id == "nim-70b-5000-500-c1-itl")
    assert (V.kv_reads(old), V.kv_reads(new)) == (8.0, 1.0)
    # TP 2, 64 sequences at 2,048 + 1,024 tokens: the step's KV bytes (163,840 B per token at fp8) read 8 times.
    plan = V._plan(old, V.default_catalog())
    once = V._make_plan(V.Case(old.id + "-once", old.source, old.metric, old.value,
                               {k: v for k, v in old.workload.items() if k != "decode_attention"}),
                        V.default_catalog()).decode.memory
    kv_ms = 64 * 3072 * 163_840 / (2 * 3_350e9) * 1000
    assert plan.decode.memory - once == pytest.approx(7 * kv_ms, rel=1e-6)


def test_a_row_never_reads_memory_less_efficiently_at_large_batch():
    for row in default_calibration().rows.values():
        assert row.values["bandwidth_efficiency"].value <= row.values["bandwidth_efficiency_large_batch"].value


def test_the_fit_s_fast_step_is_the_engine_s_step():
    # validation decomposes the one serving step once per case; a replica given the same efficiencies,
    # overhead and latency costs the same decode step through step_ms.
    from calculators.engine.step_model import Replica, step_ms

    p = {"bandwidth_efficiency": 0.6, "bandwidth_efficiency_large_batch": 0.9, "mfu": 0.3, "prefill_mfu": 0.5,
         "step_overhead_ms": 2.0, "allreduce_latency_us": 12.0, "allreduce_latency_per_tp_doubling_us": 4.0}
    _, cases = V.load_cases()
    case = next(c for c in cases if c.id == "trt-h100-fp8-70b-64-2048-2048")  # TP 2, a batch of 64
    # As an engine that groups the query heads runs it (the engine's step reads the KV cache once).
    grouped = {k: v for k, v in case.workload.items() if k != "decode_attention"}
    plan = V._make_plan(V.Case(case.id + "-grouped", case.source, case.metric, case.value, grouped),
                        V.default_catalog())
    replica = Replica.from_catalog("llama-3.1-70b", "h100-sxm5-80gb", 2, weights_dtype="fp8", kv_dtype="fp8", **p)
    expected = step_ms(replica, decode_batch=64, decode_context_tokens=64 * (2048 + 1024)).step_ms
    assert plan.decode.time(p, 2) == pytest.approx(expected, rel=1e-9)
    # The overhead is the step's; its all-reduces on two cards cost 12 + 4 × log2(2) = 16 µs each, 160 of them.
    cost = step_ms(replica, decode_batch=64, decode_context_tokens=64 * (2048 + 1024))
    assert cost.step_ms - (max(cost.memory_ms, cost.compute_ms) + cost.comm_ms) == pytest.approx(2.0)
    grows = cost.comm_ms
    flat = step_ms(Replica.from_catalog("llama-3.1-70b", "h100-sxm5-80gb", 2, weights_dtype="fp8", kv_dtype="fp8",
                                        **{**p, "allreduce_latency_per_tp_doubling_us": 0.0}),
                   decode_batch=64, decode_context_tokens=64 * (2048 + 1024)).comm_ms
    assert grows - flat == pytest.approx(160 * 4.0 / 1000, rel=1e-9)


def test_a_calibrated_replica_reads_its_row():
    from calculators.engine.step_model import Replica

    row = default_calibration().row("h100-sxm5-80gb", "fp8", "tensorrt-llm")
    replica = Replica.calibrated("llama-3.1-8b", "h100-sxm5-80gb", weights_dtype="fp8", kv_dtype="fp8",
                                 engine="tensorrt-llm")
    assert replica.prefill_mfu == row.values["prefill_mfu"].value
    assert replica.step_overhead_ms == row.values["step_overhead_ms"].value
    plain = Replica.calibrated("llama-3.1-8b", "l4")  # no row: the quantities' defaults
    assert (plain.mfu, plain.step_overhead_ms) == (INPUTS["mfu"].default, INPUTS["step_overhead_ms"].default)


def test_the_stored_validation_is_what_the_engine_computes(errors):
    # fixtures/calibration/validation.json (bench/validate_serving.py --write; /simulator/fidelity/ shows it) is
    # not stale: every case's errors and the MAPE per metric are this run's.
    cases, before, fitted, loso = errors
    report = V.load_report()
    stored = {row["id"]: row for row in report["cases"]}
    assert set(stored) == {c.id for c in cases}
    for case, b, f in zip(cases, before, fitted):
        row = stored[case.id]
        assert (row["before"], row["fitted"], row["loso"]) == (round(b, 4), round(f, 4), round(loso[case.id], 4))
        assert row["measured"] == case.value and row["kind"] == case.kind
    assert report["mape"]["overall"]["loso"] == round(V.mape(list(loso.values())), 2)
    assert report["mape"]["ttft"]["loso"] == round(V.mape([loso[c.id] for c in cases if c.kind == "ttft"]), 2)
    assert report["targets"] == {"overall": 15.0, "ttft": 20.0, "case": 40.0}


def test_a_key_no_case_of_a_card_is_bound_by_reads_the_pool():
    # NeMo's A100 80GB batch-1 runs prefill 128 tokens: 1.7 TFLOP, 5.5 ms at the A100's 312 TFLOPS, under the
    # 13.5 GB of weights' 6.6 ms at 2.04 TB/s — memory-bound at any prefill MFU above about 0.6, so moving the
    # pool's 0.94 by 15 % leaves the prediction where it was: not this card's to fit. Its batch-8 run prefills
    # 1,024 tokens (44 ms at MFU 1): compute-bound, so it governs.
    _, cases = V.load_cases()
    b1 = [c for c in cases if c.id == "nemo-a100-7b-tp1-b1"]
    b8 = [c for c in cases if c.id == "nemo-a100-7b-tp1-b8"]
    table = {V.POOLED: {**{k: V.defaults()[k] for k in V.PER_ROW}, "prefill_mfu": 0.94}}
    assert not V.governs(b1, "prefill_mfu", table)
    assert V.governs(b8, "prefill_mfu", table)
    assert V.governs(b1, "bandwidth_efficiency", table)

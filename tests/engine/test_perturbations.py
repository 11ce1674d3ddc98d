"""Misconceptions as perturbations (docs/architecture.md §11): one registry, and every step downstream gets the name."""

from __future__ import annotations

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.grader import chains, grade
from calculators.engine.mistakes import MISCONCEPTIONS, MISTAKES, Mistake, check_unique
from calculators.families import FAMILIES

H100, A100 = "h100-sxm5-80gb", "a100-sxm4-80gb"
# Outside the catalog: 24 layers of 32 query and 8 K/V heads of 80 (61,440 B of KV per token at bf16).
PASTED = {"model_type": "llama", "hidden_size": 2560, "num_hidden_layers": 24, "num_attention_heads": 32,
          "num_key_value_heads": 8, "head_dim": 80, "intermediate_size": 6912, "vocab_size": 50000,
          "max_position_embeddings": 8192, "tie_word_embeddings": False}


def step(result, answers, key):
    graded = next(s for s in grade(result, answers).steps if s.key == key)
    return graded.verdict, graded.misconception


def test_an_id_declared_twice_fails():
    # Engine v3: one registry (mistakes/__init__.py) checked at import; a family no longer registers or reuses
    # records, so the check is on a registry with a second "gb-gib-mix".
    with pytest.raises(ValueError, match="declared twice"):
        check_unique((*MISTAKES, Mistake("gb-gib-mix", ("Another wording", "…"), "/errata/")))
    assert check_unique(MISTAKES) == MISCONCEPTIONS


def test_every_family_builds_its_perturbations_without_a_missing_value():
    """A variant that needs a value its family lacks is a bug (it used to be swallowed as a KeyError)."""
    catalog = default_catalog()
    for slug, family in FAMILIES.items():
        results = [family.run({}, catalog)]
        if family.generate:
            results += [family.run(family.generate(random.Random(f"{slug}:{i}"), catalog), catalog)
                        for i in range(15 if family.prepare is None else 3)]  # simulated: a sweep each
        for result in results:
            for chain in chains(result):
                assert chain.id in MISCONCEPTIONS, (slug, chain.id)


@pytest.mark.parametrize(("inputs", "users"), [
    # Query heads for K/V heads: 2 × 32 × 32 × 128 × 2 = 524,288 B per token, 4 GiB per user at 8,192:
    # ⌊53.73 ÷ 4⌋ = 13 on the H100, ⌊54.04 ÷ 4⌋ = 13 on the A100.
    ({}, "13"),
    ({"gpu": A100}, "13"),
    # The pasted model: 2 × 24 × 32 × 80 × 2 = 245,760 B, 1.875 GiB per user; weights 3.58 GiB:
    # ⌊(71.68 − 3.58 − 3) ÷ 1.875⌋ = ⌊34.72⌋ = 34; on the A100 ⌊65.42 ÷ 1.875⌋ = 34.
    ({"config": PASTED}, "34"),
    ({"config": PASTED, "gpu": A100}, "34"),
])
def test_query_heads_reach_the_user_count_two_steps_down(inputs, users):
    result = FAMILIES["ladder"].run(inputs)
    assert step(result, {"users_worst_case": users}, "users_worst_case") == ("misconception",
                                                                            "query-heads-for-kv-heads")


@pytest.mark.parametrize(("inputs", "per_user"), [
    ({}, "0.5"),                                   # 131,072 B ÷ 2 × 8,192 = 0.5 GiB
    ({"model": "llama-3.1-70b"}, "1.25"),          # 327,680 B ÷ 2 × 8,192 = 1.25 GiB
    ({"config": PASTED}, "0.234375"),              # 61,440 B ÷ 2 × 8,192 = 0.234 GiB
])
def test_the_missing_factor_two_is_named_downstream_of_the_per_token_step(inputs, per_user):
    result = FAMILIES["kv"].run(inputs)
    assert step(result, {"per_user_gib": per_user}, "per_user_gib") == ("misconception", "missing-kv-factor-2")


def test_prefill_at_n_flops_per_token_is_named_in_every_step_it_reaches():
    # Llama-3.1-8B, 2,048 tokens, H100 at MFU 0.4 (395.76 TFLOP/s): linear N × P = 8,030,261,248 × 2,048
    # = 16,445,975,035,904; + attention 2,199,023,255,552 = 18,644,998,291,456 FLOPs → 47.11 ms.
    result = FAMILIES["prefill"].run({})
    assert step(result, {"linear_flops": "16445975035904"}, "linear_flops") == ("misconception", "prefill-n-not-2n")
    assert step(result, {"prefill_flops": "18644998291456"}, "prefill_flops") == ("misconception",
                                                                                "prefill-n-not-2n")
    assert step(result, {"prefill_ms": "47.11"}, "prefill_ms") == ("misconception", "prefill-n-not-2n")
    # Typed N × P first, the rest follows from it: carried forward, full credit.
    graded = {s.key: s.verdict for s in grade(result, {"linear_flops": "16445975035904",
                                                        "attention_flops": "2199023255552",
                                                        "prefill_flops": "18644998291456"}).steps}
    assert graded["prefill_flops"] == "carried_forward"


@pytest.mark.parametrize(("inputs", "concurrency", "replicas"), [
    # 20 req/s × 20 s = 400 in flight; the latency read as 20,000 s: 400,000, ⌈400,000 ÷ (53 × 0.8)⌉ = 9,434.
    ({}, "400000", "9434"),
    # 5 req/s × 12 s = 60; as 12,000 s: 60,000, ⌈60,000 ÷ (30 × 0.8)⌉ = 2,500.
    ({"rate": 5, "latency_s": 12, "users_per_replica": 30}, "60000", "2500"),
])
def test_littles_law_with_milliseconds_as_seconds_reaches_the_replicas(inputs, concurrency, replicas):
    result = FAMILIES["fleet"].run(inputs)
    assert step(result, {"concurrency": concurrency}, "concurrency") == ("misconception", "littles-law-ms-s")
    assert step(result, {"replicas": replicas}, "replicas") == ("misconception", "littles-law-ms-s")


def test_a_fraction_above_one_and_a_verdict_that_is_neither_one_nor_zero_are_impossible():
    decode = FAMILIES["decode"].run({"measured_tok_s": 150})
    assert step(decode, {"mbu": "1.2"}, "mbu")[0] == "impossible"
    roofline = FAMILIES["roofline"].run({})
    assert step(roofline, {"decode_bound": "2"}, "decode_bound")[0] == "impossible"
    # A realistic rate above the ceiling (208.6 tok/s at batch 1 on the H100) cannot be.
    assert step(decode, {"realistic_high_tok_s": "250"}, "realistic_high_tok_s")[0] == "impossible"


@pytest.mark.parametrize(("inputs", "one_prefix"), [
    # 4 distinct prefixes of 1,024 tokens at 131,072 B: 0.5 GiB pinned; one prefix only: 0.125 GiB.
    ({"distinct_prefixes": 4}, "0.125"),
    # Llama-3.1-70B (327,680 B per token), 3 prefixes of 2,048: 1.875 GiB; one: 0.625 GiB.
    ({"model": "llama-3.1-70b", "gpus": 2, "distinct_prefixes": 3, "prefix_tokens": 2048}, "0.625"),
])
def test_one_prefix_counted_for_all_is_named(inputs, one_prefix):
    result = FAMILIES["prefix"].run(inputs)
    assert step(result, {"pinned_gib": one_prefix}, "pinned_gib") == ("misconception", "distinct-prefixes-ignored")


@pytest.mark.parametrize(("inputs", "typed"), [
    ({}, "16.81"),                                             # 3.3616 ÷ (4 × 0.05) = 16.81
    ({"alpha": 0.6, "gamma": 3, "draft_cost": 0.1}, "7.253"),   # (1 + 0.6 + 0.36 + 0.216) ÷ 0.3 = 7.253
])
def test_the_targets_own_pass_dropped_from_the_cost_is_named(inputs, typed):
    result = FAMILIES["spec"].run(inputs)
    assert step(result, {"speedup": typed}, "speedup") == ("misconception", "spec-no-plus-one")


def test_int4_read_as_unsigned_and_a_subnormal_for_the_smallest_normal_are_named():
    int4 = FAMILIES["formats"].run({"format": "int4"})
    assert step(int4, {"max_normal": "15"}, "max_normal") == ("misconception", "int4-unsigned")
    assert step(int4, {"min_normal": "0"}, "min_normal") == ("misconception", "int4-unsigned")
    fp16 = FAMILIES["formats"].run({"format": "fp16"})
    assert step(fp16, {"min_normal": "2^-24"}, "min_normal") == ("misconception", "fp16-subnormal-for-normal")


def test_partial_rotary_ignored_reaches_the_wavelengths():
    # The pasted model with partial_rotary_factor 0.5: 40 of 80 values rotate. Taking all 80, the longest
    # wavelength is 2π × 10,000^(78/80) = 2π × 10^3.9 = 49,909.6 tokens (right: 2π × 10^3.8 = 39,644).
    config = {**PASTED, "partial_rotary_factor": 0.5, "rope_theta": 10000}
    result = FAMILIES["rope"].run({"config": config})
    assert step(result, {"longest_wavelength_tok": "49910"}, "longest_wavelength_tok") == (
        "misconception", "partial-rotary-ignored")


@pytest.mark.parametrize(("layers", "gpu"), [
    # 160 layers on the L4: 180.74 GiB of weights + one user (2 × 160 × 24 × 256 × 2 B × 4,096 = 15 GiB)
    # over 17.24 GiB of room per card: ⌈11.35⌉ = 12 cards; 16 does not divide 24 heads, so 24 (3 nodes).
    (160, "l4"),
    # 320 layers on the L40S: (360.74 + 30) ÷ 37.49 = 10.42 → 11 cards; again 16 → 24.
    (320, "l40s"),
])
def test_tp_proposes_only_degrees_that_divide_the_heads_and_names_one_that_does_not(layers, gpu):
    config = {"model_type": "llama", "hidden_size": 6144, "num_hidden_layers": layers, "num_attention_heads": 24,
              "num_key_value_heads": 24, "head_dim": 256, "intermediate_size": 24576, "vocab_size": 32000,
              "max_position_embeddings": 8192, "tie_word_embeddings": False}
    result = FAMILIES["tp"].run({"config": config, "gpu": gpu, "context": 4096})
    assert result.values["tp_degree"] == 24
    assert step(result, {"tp_degree": "16"}, "tp_degree") == ("misconception", "tp-not-dividing-heads")


@pytest.mark.parametrize(("gpu", "typed"), [
    (H100, "61600"),   # 989.4 TFLOP/s ÷ (2 × 8,030,261,248) = 61,604 tok/s (the memory roof: 208.6)
    (A100, "19430"),   # 312 TFLOP/s ÷ 16,060,522,496 FLOP per token = 19,426 tok/s (memory roof: 127.0)
])
def test_a_decode_ceiling_taken_from_the_flops_is_named(gpu, typed):
    result = FAMILIES["decode"].run({"gpu": gpu})
    assert step(result, {"ceiling_tok_s": typed}, "ceiling_tok_s") == ("misconception", "ceiling-from-flops")


# A mixture of experts outside the catalog: 16 routed experts, 2 per token.
PASTED_MOE = {"model_type": "mixtral", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
              "num_key_value_heads": 4, "intermediate_size": 5632, "num_local_experts": 16, "num_experts_per_tok": 2,
              "vocab_size": 32000, "max_position_embeddings": 4096, "tie_word_embeddings": False}


@pytest.mark.parametrize(("inputs", "a_only", "b_only", "fit"), [
    # Llama-3.1-8B, rank 16 on q and v: right 16 × (4,096 + 4,096) + 16 × (4,096 + 1,024) = 212,992 per layer.
    # A only: 16 × (4,096 + 4,096) = 131,072; B only: 16 × (4,096 + 1,024) = 81,920. A only × 32 layers × 2 B =
    # 8 MiB = 0.0078125 GiB; spare (79.65 × 0.9 − 14.96 − 3) × 0.1 = 5.3726 GiB on the H100 → ⌊687.7⌋ = 687.
    ({}, "131072", "81920", "687"),
    # The A100: (80 × 0.9 − 14.96 − 3) × 0.1 = 5.4043 GiB → ⌊691.7⌋ = 691.
    ({"gpu": A100}, "131072", "81920", "691"),
    # The pasted model (2,560 wide, K/V 8 × 80 = 640): A only 16 × 2 × 2,560 = 81,920; B only 16 × (2,560 + 640)
    # = 51,200. A only × 24 × 2 B = 0.003662 GiB; spare (71.68 − 3.58 − 3) × 0.1 = 6.5100 GiB → ⌊1,777.7⌋.
    ({"config": PASTED}, "81920", "51200", "1777"),
    # On the A100: (72 − 3.58 − 3) × 0.1 = 6.5417 GiB → ⌊1,786.3⌋ = 1,786.
    ({"config": PASTED, "gpu": A100}, "81920", "51200", "1786"),
])
def test_lora_rank_counted_for_one_factor_is_named_down_to_the_adapters_that_fit(inputs, a_only, b_only, fit):
    result = FAMILIES["lora"].run(inputs)
    assert step(result, {"params_per_layer": a_only}, "params_per_layer") == ("misconception", "lora-rank-once")
    assert step(result, {"params_per_layer": b_only}, "params_per_layer") == ("misconception", "lora-rank-once")
    layers = result.given["layers"]
    assert step(result, {"adapter_params": str(int(a_only) * layers)}, "adapter_params") == (
        "misconception", "lora-rank-once")
    assert step(result, {"adapters_fit": fit}, "adapters_fit") == ("misconception", "lora-rank-once")


@pytest.mark.parametrize(("inputs", "batch_at_ridge"), [
    # Every parameter active: 2 FLOPs per weight of 2 bytes, so the batch at the ridge is the ridge itself:
    # H100 989.4 ÷ 3.35 = 295.3 → 295 (Mixtral's right answer is 1,070); A100 312 ÷ 2.039 = 153.0 → 153.
    ({"model": "mixtral-8x7b-v0.1"}, "295"),
    ({"model": "mixtral-8x7b-v0.1", "gpu": A100}, "153"),
    ({"config": PASTED_MOE}, "295"),
    ({"config": PASTED_MOE, "gpu": A100}, "153"),
])
def test_moe_roofline_computed_as_if_every_parameter_were_active_is_named(inputs, batch_at_ridge):
    result = FAMILIES["roofline"].run(inputs)
    assert step(result, {"batch_at_ridge": batch_at_ridge}, "batch_at_ridge") == (
        "misconception", "moe-ridge-as-dense-active")
    # Decode at batch 1 with no context: 2 × N FLOPs over N × 2 bytes = 1.0 FLOP/byte, not the MoE's k/E share.
    assert step(result, {"decode_flop_per_byte": "1"}, "decode_flop_per_byte") == (
        "misconception", "moe-ridge-as-dense-active")


@pytest.mark.parametrize(("inputs", "tokens", "intensity"), [
    # Mixtral (8 experts, 2 per token) at batch 64: right 64 × 2 ÷ 8 = 16 tokens per expert; as if dense, the
    # whole batch of 64, and 2 × 64 ÷ 2 bytes = 64 FLOP/byte (right: 16).
    ({"model": "mixtral-8x7b-v0.1"}, "64", "64"),
    ({"model": "mixtral-8x7b-v0.1", "gpu": A100, "batch": 256}, "256", "256"),
    # The pasted MoE (16 experts, 2 per token): right 64 × 2 ÷ 16 = 8; as if dense 64.
    ({"config": PASTED_MOE}, "64", "64"),
    ({"config": PASTED_MOE, "gpu": A100, "batch": 256}, "256", "256"),
])
def test_expert_matmuls_batched_like_a_dense_model_are_named(inputs, tokens, intensity):
    result = FAMILIES["moe"].run(inputs)
    assert step(result, {"tokens_per_expert": tokens}, "tokens_per_expert") == (
        "misconception", "moe-ridge-as-dense-active")
    assert step(result, {"expert_flop_per_byte": intensity}, "expert_flop_per_byte") == (
        "misconception", "moe-ridge-as-dense-active")


def test_a_dense_model_has_no_dense_active_slip():
    result = FAMILIES["roofline"].run({})  # Llama-3.1-8B: every parameter is active already
    assert not any(chain.id == "moe-ridge-as-dense-active" for chain in chains(result))

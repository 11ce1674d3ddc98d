"""The ladder, kv, params and weights procedures (docs/architecture.md §2, §9 formulas 1–3, §10 contracts).

Numbers are derived by hand in the comments: GiB = 2^30 bytes, the H100 SXM's
card is the driver's 81,559 MiB, Llama-3.1-8B has 8,030,261,248 parameters
(see test_param_count.py for that count).
"""

import json

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import CatalogError, ConfigError, EngineError, InputError
from calculators.families import FAMILIES

GIB = 2**30
H100_GIB = 81_559 / 1024  # 79.6474609375
LLAMA_8B = 8_030_261_248
LLAMA_70B = 70_553_706_496  # 80 × 855,654,400 + 2 × 1,050,673,152 + 8,192
LADDER_KEYS = ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token", "per_user_gib",
               "users_worst_case", "users_paged"]


def ladder(**inputs):
    return FAMILIES["ladder"].run(inputs)


def kv(**inputs):
    return FAMILIES["kv"].run(inputs)


def approx(value):
    return pytest.approx(value, rel=1e-12)


# --- the reference stack (docs/architecture.md §2) --------------------------------------------------------

@pytest.fixture(scope="module")
def reference():
    return ladder()


def test_reference_stack_steps_come_in_contract_order(reference):
    assert [step.key for step in reference.steps] == LADDER_KEYS
    assert [step.unit for step in reference.steps] == ["GiB", "GiB", "GiB", "GiB", "B", "GiB", "users", "users"]


def test_reference_stack_card_is_81_559_mib(reference):
    # 81,559 MiB ÷ 1,024 = 79.6474609375 GiB → 79.65.
    assert reference.values["card_gib"] == 79.6474609375
    assert reference.step("card_gib").substituted == "1 × 81,559 MiB = 79.65 GiB"


def test_reference_stack_usable_memory_is_71_68_gib(reference):
    # 79.6474609375 × 0.90 = 71.68271484375.
    assert reference.values["usable_gib"] == approx(71.68271484375)
    assert reference.step("usable_gib").substituted == "79.65 GiB × 0.9 = 71.68 GiB"


def test_reference_stack_weights_are_14_96_gib(reference):
    # 8,030,261,248 × 2 bytes = 16,060,522,496 B ÷ 2^30 = 14.957527160644531 GiB.
    assert reference.values["weights_gib"] == approx(16_060_522_496 / GIB)
    assert reference.step("weights_gib").substituted == "8,030,261,248 × 16 bit ÷ 8 bit/B = 14.96 GiB"


def test_reference_stack_kv_budget_is_53_73_gib(reference):
    # 71.68271484375 − 14.957527160644531 − 1 × 3 = 53.72518768310547.
    assert reference.values["kv_budget_gib"] == approx(53.72518768310547)
    assert reference.step("kv_budget_gib").substituted == "71.68 GiB − 14.96 GiB − 1 × 3.00 GiB = 53.73 GiB"


def test_reference_stack_kv_is_128_kib_per_token(reference):
    # 2 × 32 layers × 8 KV heads × 128 head_dim × 2 bytes = 131,072 = 128 KiB.
    assert reference.values["kv_bytes_per_token"] == 131_072
    assert reference.step("kv_bytes_per_token").substituted == "2 × 32 × 8 × 128 × 2 B = 131,072 B"


def test_reference_stack_user_at_8192_tokens_holds_1_gib(reference):
    # 131,072 B × 8,192 tokens = 2^17 × 2^13 = 2^30 B = 1.00 GiB.
    assert reference.values["per_user_gib"] == 1.0


def test_reference_stack_serves_53_users_worst_case(reference):
    # ⌊53.725 ÷ 1.00⌋ = 53.
    assert reference.values["users_worst_case"] == 53


def test_reference_stack_serves_191_users_paged(reference):
    # 2,300 tokens → ⌈2,300 ÷ 16⌉ = 144 blocks = 2,304 tokens × 131,072 B = 301,989,888 B = 0.28125 GiB;
    # ⌊53.725 ÷ 0.28125⌋ = ⌊191.02⌋ = 191.
    assert reference.values["users_paged"] == 191
    assert reference.extra["paged_user_gib"] == 0.28125
    paged_note = next(note for note in reference.notes if note.startswith("Paged"))
    assert "144 blocks of 16 (2,304 tokens)" in paged_note


def test_reference_stack_says_which_memory_figure_it_used(reference):
    assert any("81,559 MiB" in note and "driver" in note for note in reference.notes)
    assert reference.extra["fits"] is True and reference.extra["min_tp_degree"] == 1


def test_reference_stack_echoes_its_inputs(reference):
    # docs/architecture.md §2: Llama-3.1-8B, bf16, one H100 SXM, 8,192, 0.90, 3 GiB, 2,300 tokens, 16-token blocks.
    inputs = reference.inputs
    assert (inputs["model"], inputs["gpu"], inputs["gpus"]) == ("llama-3.1-8b", "h100-sxm5-80gb", 1)
    assert (inputs["weights_dtype"], inputs["kv_dtype"], inputs["context"]) == ("bf16", "bf16", 8192)
    assert (inputs["utilization"], inputs["reserve_gib"]) == (0.9, 3.0)
    assert (inputs["avg_tokens"], inputs["block_size"]) == (2300, 16)


def test_reference_stack_json_keeps_full_precision_and_whole_counts(reference):
    steps = {step["key"]: step for step in reference.to_json()["steps"]}
    assert steps["weights_gib"]["value"] == approx(14.957527160644531)  # not the displayed 14.96
    assert steps["users_worst_case"]["value"] == 53 and isinstance(steps["users_worst_case"]["value"], int)
    assert steps["kv_bytes_per_token"]["value"] == 131_072
    assert isinstance(steps["kv_bytes_per_token"]["value"], int)
    assert steps["kv_bytes_per_token"]["formula"] == (
        "kv_bytes_per_token = 2 × layers × kv_heads × head_dim × kv_bytes")
    json.dumps(reference.to_json())  # serialisable as it is


# --- Llama-3.1-70B -------------------------------------------------------------------------------

def test_llama_70b_at_fp8_on_one_h100_serves_one_user():
    result = ladder(model="llama-3.1-70b", weights_dtype="fp8")
    v = result.values
    assert v["card_gib"] == 79.6474609375
    assert v["usable_gib"] == approx(71.68271484375)  # 71.7
    # 70,553,706,496 params × 1 byte ÷ 2^30 = 65.70825958251953 GiB → 65.7.
    assert v["weights_gib"] == approx(LLAMA_70B / GIB)
    # 71.68271484375 − 65.70825958251953 − 3 = 2.974455261230469 → 2.97.
    assert v["kv_budget_gib"] == pytest.approx(2.974455261230469, rel=1e-9)
    # 2 × 80 × 8 × 128 × 2 = 327,680 B; × 8,192 = 2,684,354,560 B = 2.5 GiB.
    assert v["kv_bytes_per_token"] == 327_680
    assert v["per_user_gib"] == 2.5
    assert v["users_worst_case"] == 1  # ⌊2.97 ÷ 2.5⌋
    # 2,304 tokens × 327,680 B = 0.703125 GiB; ⌊2.97 ÷ 0.703125⌋ = ⌊4.23⌋ = 4.
    assert v["users_paged"] == 4
    assert result.extra["fits"] is True
    # As quoted: 65.7 GiB weights, 71.7 usable, 2.97 budget.
    assert (round(v["weights_gib"], 1), round(v["usable_gib"], 1), round(v["kv_budget_gib"], 2)) == (65.7, 71.7, 2.97)


def test_llama_70b_at_bf16_on_one_h100_serves_nobody_and_says_why():
    result = ladder(model="llama-3.1-70b")
    v = result.values
    # 70,553,706,496 × 2 B ÷ 2^30 = 131.41651916503906 GiB of weights.
    assert v["weights_gib"] == approx(2 * LLAMA_70B / GIB)
    # 71.68271484375 − 131.41651916503906 − 3 = −62.73380432128906.
    assert v["kv_budget_gib"] == pytest.approx(-62.73380432128906, rel=1e-9)
    assert v["users_worst_case"] == 0 and v["users_paged"] == 0
    assert result.extra["fits"] is False
    assert result.extra["shortfall_gib"] == pytest.approx(62.73380432128906, rel=1e-9)
    # Two cards: 2 × 71.68271484375 − 131.41651916503906 − 2 × 3 = 5.9489 GiB ≥ one 2.5 GiB user.
    assert result.extra["min_tp_degree"] == 2
    first = result.notes[0]
    assert "62.73 GiB short" in first and "71.68 GiB usable" in first
    assert "2 × H100 SXM5 80GB" in first


def test_llama_70b_at_bf16_on_two_h100s_serves_two_users():
    v = ladder(model="llama-3.1-70b", gpus=2).values
    # 2 × 79.6474609375 = 159.294921875 GiB pooled; × 0.9 = 143.3654296875.
    assert v["card_gib"] == 159.294921875
    # 143.3654296875 − 131.41651916503906 − 6 = 5.948910522460937.
    assert v["kv_budget_gib"] == pytest.approx(5.948910522460937, rel=1e-9)
    assert v["users_worst_case"] == 2  # ⌊5.95 ÷ 2.5⌋
    assert v["users_paged"] == 8  # ⌊5.95 ÷ 0.703125⌋ = ⌊8.46⌋


def test_weights_that_fit_but_leave_no_room_for_one_user():
    # 70B at fp8 with a 16,384-token limit: one user needs 327,680 × 16,384 B = 5 GiB; budget 2.97 GiB.
    result = ladder(model="llama-3.1-70b", weights_dtype="fp8", context=16384)
    assert result.values["per_user_gib"] == 5.0
    assert result.values["users_worst_case"] == 0
    assert result.values["users_paged"] == 4  # the average conversation still fits 4 times
    assert result.extra["fits"] is False
    # 5 − 2.974455261230469 = 2.025544738769531 GiB short of one user.
    assert result.extra["shortfall_gib"] == pytest.approx(2.025544738769531, rel=1e-9)
    # Two cards: 143.3654296875 − 65.70825958251953 − 6 = 71.657 GiB → 14 users.
    assert result.extra["min_tp_degree"] == 2
    assert result.notes[0].startswith("The weights fit")


def test_llama_405b_at_bf16_needs_more_than_a_node_of_h100s():
    result = ladder(model="llama-3.1-405b")
    # 405,853,388,800 × 2 B = 755.96 GiB > 8 × 71.68 − 8 × 3 = 549.46 GiB.
    assert result.values["weights_gib"] == approx(2 * 405_853_388_800 / GIB)
    assert result.extra["min_tp_degree"] is None
    assert "Even 8 × H100 SXM5 80GB cannot serve one user at the context limit" in result.notes[0]


# --- replicas of several cards ------------------------------------------------------------------

@pytest.mark.parametrize(
    "gpus, budget, worst, paged",
    [
        # pool = N × 0.9 × 79.6474609375 − N × 3 − 14.957527160644531
        (2, 122.40790252685547, 122, 435),   # 143.3654296875 − 6 − 14.9575; ⌊122.41 ÷ 0.28125⌋ = 435
        (4, 259.7733322143555, 259, 923),    # 286.730859375 − 12 − 14.9575; ⌊923.64⌋
        (8, 534.5041915893555, 534, 1900),   # 573.46171875 − 24 − 14.9575; ⌊1,900.46⌋
    ],
)
def test_replica_pools_cards_pays_a_reserve_per_card_and_holds_one_copy_of_weights(gpus, budget, worst, paged):
    v = ladder(gpus=gpus).values
    assert v["card_gib"] == gpus * H100_GIB
    assert v["usable_gib"] == approx(gpus * H100_GIB * 0.9)
    assert v["weights_gib"] == approx(16_060_522_496 / GIB)  # one copy, whatever N
    assert v["kv_budget_gib"] == pytest.approx(budget, rel=1e-12)
    assert v["per_user_gib"] == 1.0
    assert (v["users_worst_case"], v["users_paged"]) == (worst, paged)


# --- the H100 PCIe: its driver total, as the SXM part's ---------------------------------------------

def test_h100_pcie_uses_its_driver_total_and_says_so():
    result = ladder(gpu="h100-pcie-80gb")
    v = result.values
    # nvidia-smi prints 81,559 MiB for the PCIe card too: 81,559 ÷ 1,024 = 79.6474609375 GiB (was 80e9 B, 74.51).
    assert v["card_gib"] == 79.6474609375
    assert result.step("card_gib").substituted == "1 × 81,559 MiB = 79.65 GiB"
    # × 0.9 = 71.68271484375; − 14.957527160644531 − 3 = 53.72518768310547.
    assert v["kv_budget_gib"] == pytest.approx(53.72518768310547, rel=1e-12)
    assert v["users_worst_case"] == 53
    assert v["users_paged"] == 191  # ⌊53.725 ÷ 0.28125⌋ = ⌊191.02⌋
    assert any("81,559 MiB as the driver reports it" in note for note in result.notes)


# --- int4 at its effective width ---------------------------------------------------------------

def test_int4_weights_are_charged_4_5_bits_by_default():
    result = ladder(weights_dtype="int4")
    v = result.values
    # 8,030,261,248 × 4.5 ÷ 8 = 4,517,021,952 B ÷ 2^30 = 4.206804513931274 GiB.
    assert v["weights_gib"] == approx(4_517_021_952 / GIB)
    # 71.68271484375 − 4.206804513931274 − 3 = 64.47591032981873 → 64 worst, ⌊229.25⌋ = 229 paged.
    assert (v["users_worst_case"], v["users_paged"]) == (64, 229)
    assert any("4.5 bits" in note and "nominal 4" in note for note in result.notes)
    assert "4.5 bit" in result.step("weights_gib").substituted


def test_int4_with_weights_bits_4_is_charged_the_nominal_width():
    result = ladder(weights_dtype="int4", weights_bits=4)
    v = result.values
    # 8,030,261,248 × 4 ÷ 8 = 4,015,130,624 B = 3.739381790161133 GiB; budget 64.94333305358887.
    assert v["weights_gib"] == approx(4_015_130_624 / GIB)
    assert (v["users_worst_case"], v["users_paged"]) == (64, 230)  # ⌊230.91⌋
    assert not any("bits" in note for note in result.notes)


def test_int4_at_q4_k_m_width_4_8_bits():
    v = ladder(weights_dtype="int4", weights_bits=4.8).values
    # 8,030,261,248 × 4.8 ÷ 8 = 4,818,156,748.8 B = 4.48725814819336 GiB; budget 64.19545669555664.
    assert v["weights_gib"] == pytest.approx(4_818_156_748.8 / GIB, rel=1e-12)
    assert (v["users_worst_case"], v["users_paged"]) == (64, 228)  # ⌊228.25⌋


def test_llama_70b_int4_on_one_h100():
    v = ladder(model="llama-3.1-70b", weights_dtype="int4").values
    # 70,553,706,496 × 4.5 ÷ 8 = 39,686,459,904 B = 36.960896015167236 GiB;
    # 71.68271484375 − 36.9609 − 3 = 31.72181882858276 → ⌊12.69⌋ = 12 worst, ⌊45.12⌋ = 45 paged.
    assert v["weights_gib"] == approx(39_686_459_904 / GIB)
    assert (v["users_worst_case"], v["users_paged"]) == (12, 45)


# --- KV precision and windows in the ladder ------------------------------------------------------

@pytest.mark.parametrize(
    "kv_dtype, per_token, per_user, worst, paged",
    [
        # fp8: 2 × 32 × 8 × 128 × 1 = 65,536 B; × 8,192 = 0.5 GiB; ⌊107.45⌋; 2,304 tok = 0.140625 GiB → ⌊382.05⌋.
        ("fp8", 65_536, 0.5, 107, 382),
        # fp32: × 4 bytes = 262,144 B; 2 GiB per user → ⌊26.86⌋; 0.5625 GiB paged → ⌊95.51⌋.
        ("fp32", 262_144, 2.0, 26, 95),
    ],
)
def test_reference_stack_with_another_kv_precision(kv_dtype, per_token, per_user, worst, paged):
    v = ladder(kv_dtype=kv_dtype).values
    assert v["kv_bytes_per_token"] == per_token
    assert v["per_user_gib"] == per_user
    assert (v["users_worst_case"], v["users_paged"]) == (worst, paged)


def test_mistral_ladder_caps_each_user_at_the_window():
    v = ladder(model="mistral-7b-v0.1").values
    # Weights 7,241,732,096 × 2 B = 13.488777160644531 GiB; budget 71.6827 − 13.4888 − 3 = 55.19393768310547.
    assert v["kv_budget_gib"] == pytest.approx(55.19393768310547, rel=1e-12)
    # Every layer windowed at 4,096: 131,072 B × 4,096 = 0.5 GiB, not 1 GiB at 8,192.
    assert v["per_user_gib"] == 0.5
    assert v["users_worst_case"] == 110  # ⌊110.39⌋
    assert v["users_paged"] == 196  # 2,304 tokens < window: 0.28125 GiB → ⌊196.25⌋


def test_mistral_paged_user_longer_than_the_window_is_capped_too():
    # 5,000 tokens → 313 blocks = 5,008 tokens, but each layer keeps 4,096: 0.5 GiB → ⌊110.39⌋ = 110.
    assert ladder(model="mistral-7b-v0.1", avg_tokens=5000).values["users_paged"] == 110


def test_gemma_2_ladder_windows_half_its_layers():
    v = ladder(model="gemma-2-9b").values
    # 9,241,705,984 × 2 B = 17.21401882171631 GiB; budget 71.6827 − 17.2140 − 3 = 51.46869602203369.
    assert v["kv_budget_gib"] == pytest.approx(51.46869602203369, rel=1e-12)
    # 2 × 42 × 8 × 256 × 2 = 344,064 B per token (every layer full).
    assert v["kv_bytes_per_token"] == 344_064
    assert v["per_user_gib"] == 1.96875  # see the kv tests
    assert v["users_worst_case"] == 26  # ⌊26.14⌋
    # 2,304 tokens < 4,096 window: 344,064 × 2,304 B = 0.73828125 GiB → ⌊69.71⌋.
    assert v["users_paged"] == 69
    # 5,000 tokens → 5,008: 8,192 B × 21 × (5,008 + 4,096) = 1.4586181640625 GiB → ⌊35.29⌋.
    assert ladder(model="gemma-2-9b", avg_tokens=5000).values["users_paged"] == 35


# --- the kv family ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "model, per_token, context, per_user",
    [
        # MHA: 2 × 32 layers × 32 KV heads × 128 × 2 B = 524,288; × 4,096 = 2 GiB.
        ("llama-2-7b", 524_288, 4096, 2.0),
        # GQA: 2 × 80 × 8 × 128 × 2 = 327,680; × 8,192 = 2.5 GiB.
        ("llama-3.1-70b", 327_680, 8192, 2.5),
        # MQA: 2 × 32 × 1 × 64 × 2 = 8,192; × 2,048 = 16 MiB = 0.015625 GiB.
        ("falcon-7b", 8_192, 2048, 0.015625),
        # MLA: 61 layers × (512 latent + 64 rope) × 2 B = 70,272; × 8,192 = 575,668,224 B = 0.5361328125 GiB.
        ("deepseek-v3", 70_272, 8192, 0.5361328125),
        # MLA: 27 × 576 × 2 = 31,104; × 8,192 ÷ 2^30 = 0.2373046875 GiB.
        ("deepseek-v2-lite", 31_104, 8192, 0.2373046875),
        # MLA: 60 × 576 × 2 = 69,120; × 8,192 ÷ 2^30 = 0.52734375 GiB.
        ("deepseek-v2", 69_120, 8192, 0.52734375),
        # Qwen2.5-7B, window disabled: 2 × 28 × 4 × 128 × 2 = 57,344; × 8,192 = 0.4375 GiB.
        ("qwen2.5-7b", 57_344, 8192, 0.4375),
    ],
)
def test_kv_per_token_and_per_user(model, per_token, context, per_user):
    result = kv(model=model, context=context)
    assert [step.key for step in result.steps] == ["kv_bytes_per_token", "kv_replication", "per_user_gib"]
    assert result.values["kv_replication"] == 1  # one card: one copy
    assert result.values["kv_bytes_per_token"] == per_token
    assert result.values["per_user_gib"] == per_user


def test_mla_substitution_and_note():
    result = kv(model="deepseek-v3")
    assert result.step("kv_bytes_per_token").substituted == "61 × (512 + 64) × 2 B = 70,272 B"
    assert any("latent" in note and "512" in note and "nominal" in note for note in result.notes)


def test_mqa_note():
    assert any("Multi-query" in note for note in kv(model="falcon-7b").notes)


@pytest.mark.parametrize("context, per_user", [
    (8192, 0.5),    # all 32 layers capped at 4,096: 131,072 × 4,096 B = 0.5 GiB
    (4096, 0.5),    # = the window
    (2048, 0.25),   # under the window: 131,072 × 2,048 B = 0.25 GiB
])
def test_mistral_every_layer_windowed_at_4096(context, per_user):
    result = kv(model="mistral-7b-v0.1", context=context)
    assert result.values["kv_bytes_per_token"] == 131_072  # before any window
    assert result.values["per_user_gib"] == per_user


@pytest.mark.parametrize("context, per_user", [
    # 8,192 B per layer per token (2 × 8 × 256 × 2). At 8,192: 21 global × 8,192 × 8,192 = 1,409,286,144 B
    # + 21 local × 8,192 × 4,096 = 704,643,072 B → 2,113,929,216 B = 1.96875 GiB.
    (8192, 1.96875),
    # At 2,048 (under the window): 42 × 8,192 × 2,048 = 704,643,072 B = 0.65625 GiB.
    (2048, 0.65625),
])
def test_gemma_2_has_21_local_and_21_global_layers(context, per_user):
    result = kv(model="gemma-2-9b", context=context)
    assert result.values["kv_bytes_per_token"] == 344_064
    assert result.values["per_user_gib"] == per_user
    assert any("21 of 42 layers" in note and "4,096" in note for note in result.notes)


@pytest.mark.parametrize("kv_dtype, per_token", [
    ("fp8", 65_536),    # 2 × 32 × 8 × 128 × 1
    ("int8", 65_536),
    ("fp16", 131_072),
    ("fp32", 262_144),  # × 4 bytes
])
def test_kv_precision_sets_bytes_per_value(kv_dtype, per_token):
    assert kv(kv_dtype=kv_dtype).values["kv_bytes_per_token"] == per_token


def test_kv_of_a_pasted_config_dict_and_text():
    config = {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256}
    for pasted in (config, json.dumps(config)):
        result = kv(config=pasted)
        assert result.values["kv_bytes_per_token"] == 131_072  # 2 × 32 × 8 × 128 × 2
        # tie_word_embeddings absent: the default is said in the output.
        assert any("tie_word_embeddings is absent" in note for note in result.notes)


# --- params and weights ----------------------------------------------------------------------

def test_params_of_llama_3_1_8b():
    result = FAMILIES["params"].run({"model": "llama-3.1-8b"})
    assert [step.key for step in result.steps] == ["total_params", "active_params"]
    assert [step.unit for step in result.steps] == ["1", "1"]
    assert result.values == {"total_params": 8_030_261_248, "active_params": 8_030_261_248}
    # 2 × 128,256 × 4,096 + 32 × 41,943,040 + 32 × 176,160,768 + 266,240 norms.
    assert result.step("total_params").substituted == (
        "2 × 128,256 × 4,096 + 32 × 41,943,040 + 32 × 176,160,768 + 266,240 = 8,030,261,248")


def test_params_of_mixtral_subtract_the_idle_experts():
    result = FAMILIES["params"].run({"model": "mixtral-8x7b-v0.1"})
    # 46,702,792,704 − 32 layers × 6 idle experts × 176,160,768 = 12,879,925,248.
    assert result.values == {"total_params": 46_702_792_704, "active_params": 12_879_925_248}
    assert result.step("active_params").substituted == (
        "46,702,792,704 − 32 × 6 × 176,160,768 = 12,879,925,248")


def test_params_of_deepseek_v3():
    result = FAMILIES["params"].run({"model": "deepseek-v3"})
    # 671,026,419,200 − 58 × 248 idle experts × 44,040,192 = 37,552,297,472.
    assert result.values == {"total_params": 671_026_419_200, "active_params": 37_552_297_472}
    assert any("DeepSeek quotes them without it" in note for note in result.notes)


def test_params_say_when_tying_was_defaulted():
    notes = FAMILIES["params"].run({"model": "falcon-7b"}).notes
    assert any("tied to" in note and "defaulted" in note for note in notes)
    assert any("plain (two-matrix)" in note for note in notes)


def test_params_say_qwen_has_qkv_biases():
    assert any("biases" in note for note in FAMILIES["params"].run({"model": "qwen2.5-7b"}).notes)


@pytest.mark.parametrize(
    "inputs, weight_bytes",
    [
        ({}, 16_060_522_496),                                   # 8,030,261,248 × 16 ÷ 8
        ({"weights_dtype": "fp8"}, 8_030_261_248),              # × 8 ÷ 8
        ({"weights_dtype": "fp32"}, 32_121_044_992),            # × 32 ÷ 8
        ({"weights_dtype": "int4"}, 4_517_021_952),             # × 4.5 ÷ 8
        ({"weights_dtype": "int4", "weights_bits": 4}, 4_015_130_624),
        ({"weights_dtype": "int4", "weights_bits": 4.8}, 4_818_156_748.8),
        ({"model": "llama-3.1-70b", "weights_dtype": "fp8"}, 70_553_706_496),
    ],
)
def test_weight_memory(inputs, weight_bytes):
    result = FAMILIES["weights"].run(inputs)
    assert [step.key for step in result.steps] == ["total_params", "weight_bytes", "weights_gib"]
    assert [step.unit for step in result.steps] == ["1", "B", "GiB"]
    assert result.values["weight_bytes"] == pytest.approx(weight_bytes, rel=1e-15)
    assert result.values["weight_gib"] == pytest.approx(weight_bytes / GIB, rel=1e-15)


def test_weights_note_the_effective_int4_width():
    notes = FAMILIES["weights"].run({"weights_dtype": "int4"}).notes
    assert any("4.5 bits per weight" in note and "nominal 4" in note for note in notes)


@pytest.mark.parametrize("path, seconds", [
    ("safetensors", 141_107_412_992 / 1.1e9),  # 70,553,706,496 × 2 B ÷ 1.1 GB/s = 128.28 s
    ("direct-io", 141_107_412_992 / 35e9),     # ÷ 35 GB/s = 4.03 s
])
def test_a_loader_adds_the_cold_starts_weight_loading(path, seconds):
    result = FAMILIES["weights"].run({"model": "llama-3.1-70b", "load_path": path})

    assert [step.key for step in result.steps][-1] == "weights_load_s"
    assert result.values["weights_load_s"] == pytest.approx(seconds, rel=1e-15)
    assert result.step("weights_load_s").unit == "s"
    assert result.extra["load_gb_s"] == {"safetensors": 1.1, "direct-io": 35.0}[path]
    assert any("InstantTensor benchmark table" in note for note in result.notes)


def test_reference_weights_substitution():
    result = FAMILIES["weights"].run({})
    assert result.step("weight_bytes").substituted == "8,030,261,248 × 16 bit ÷ 8 bit/B = 16,060,522,496 B"
    assert result.step("weight_gib").substituted == "16,060,522,496 B = 14.96 GiB"


# --- input validation: every InputError names its snake-case input ---------------------------------

@pytest.mark.parametrize(
    "family, inputs, field",
    [
        ("ladder", {"utilization": 1.5}, "utilization"),
        ("ladder", {"utilization": 0}, "utilization"),        # the minimum is excluded
        ("ladder", {"utilization": "most"}, "utilization"),
        ("ladder", {"context": 0}, "context"),
        ("ladder", {"context": -8192}, "context"),
        ("ladder", {"context": 8192.5}, "context"),
        ("ladder", {"context": True}, "context"),
        ("ladder", {"context": float("nan")}, "context"),
        ("ladder", {"context": "1e400"}, "context"),           # infinite
        ("ladder", {"gpus": 0}, "gpus"),
        ("ladder", {"gpus": 2.5}, "gpus"),
        ("ladder", {"gpus": 1025}, "gpus"),
        ("ladder", {"reserve_gib": -1}, "reserve_gib"),
        ("ladder", {"avg_tokens": 0}, "avg_tokens"),
        ("ladder", {"block_size": 0}, "block_size"),
        ("ladder", {"weights_dtype": "int3"}, "weights_dtype"),
        ("ladder", {"weights_bits": 0}, "weights_bits"),
        ("ladder", {"weights_bits": 33}, "weights_bits"),
        ("ladder", {"kv_dtype": "int4"}, "kv_dtype"),          # not a KV cache precision
        ("ladder", {"contxt": 8192}, "contxt"),                # unknown input
        ("kv", {"context": -1}, "context"),
        ("kv", {"kv_dtype": "bf8"}, "kv_dtype"),
        ("kv", {"gpus": 3}, "gpus"),                           # 3 does not divide 32 query heads
        ("weights", {"weights_dtype": "int2"}, "weights_dtype"),
        ("weights", {"weights_bits": -4}, "weights_bits"),
        ("params", {"context": 8192}, "context"),
    ],
)
def test_input_errors_name_the_snake_case_input(family, inputs, field):
    with pytest.raises(InputError) as info:
        FAMILIES[family].run(inputs)
    assert info.value.field == field
    message = str(info.value)
    assert field in message
    assert message.endswith(".") and "\n" not in message


def test_out_of_range_message_spells_the_bound_as_a_plain_number():
    with pytest.raises(InputError) as info:
        ladder(context=100_000_000)
    assert "10,000,000" in str(info.value)


def test_unknown_model_or_gpu_is_a_catalog_error():
    with pytest.raises(CatalogError) as info:
        ladder(model="gpt-5")
    assert "gpt-5" in str(info.value) and info.value.field == "model"
    with pytest.raises(CatalogError) as info:
        ladder(gpu="h300")
    assert info.value.field == "gpu"


def test_pasted_config_text_that_is_not_json_names_the_config_input():
    with pytest.raises(ConfigError) as info:
        ladder(config='{"num_hidden_layers": 32,')
    assert info.value.field == "config"
    assert "line 1" in str(info.value)


def test_pasted_config_missing_a_field_is_reported_against_the_config_input_naming_the_key():
    with pytest.raises(ConfigError) as info:
        kv(config={"num_attention_heads": 32, "hidden_size": 4096, "intermediate_size": 11008,
                    "vocab_size": 32000})
    assert info.value.field == "config"  # the procedure's input, as the form shows it
    assert "num_hidden_layers" in str(info.value)  # the sentence names the missing key


def test_every_engine_error_is_a_value_error_with_one_sentence():
    for bad in ({"utilization": 2}, {"model": "nope"}, {"config": "[]"}):
        with pytest.raises(EngineError) as info:
            ladder(**bad)
        assert isinstance(info.value, ValueError)
        assert str(info.value).strip().endswith(".")


def test_pasted_config_replaces_the_model():
    config = json.loads(json.dumps(default_catalog().model("llama-3.1-8b").raw_config))
    result = ladder(config=config)
    assert "model" not in result.inputs and result.inputs["config"] == config
    assert (result.values["users_worst_case"], result.values["users_paged"]) == (53, 191)


def test_an_average_conversation_longer_than_the_context_limit_is_capped_at_the_limit():
    # 9,000 tokens against an 8,192-token limit: a conversation cannot outgrow the limit, so paged uses
    # 8,192 tokens (512 blocks of 16) and counts as many users as the worst case, 53.
    from calculators.families import FAMILIES

    result = FAMILIES["ladder"].run({"avg_tokens": 9000})
    assert result.values["users_paged"] == 53
    assert result.values["users_worst_case"] == 53
    assert any("longer than the context limit" in note for note in result.notes)


def test_weights_below_one_bit_are_rejected():
    from calculators.engine.errors import InputError
    from calculators.families import FAMILIES

    with pytest.raises(InputError) as info:
        FAMILIES["ladder"].run({"weights_bits": 1e-300})
    assert info.value.field == "weights_bits"


def test_ladder_warns_when_the_context_is_beyond_the_models_window():
    """Llama-3.1-8B's config says max_position_embeddings = 131,072: 200,000 tokens earns a note, 131,072 none."""
    from calculators.engine.catalog import default_catalog
    from calculators.families import FAMILIES

    ladder = FAMILIES["ladder"]
    beyond = ladder.run({"context": 200_000}, default_catalog())
    assert any("beyond the model's own window (max_position_embeddings = 131,072)" in note for note in beyond.notes)
    at_limit = ladder.run({"context": 131_072}, default_catalog())
    assert not any("beyond the model's own window" in note for note in at_limit.notes)


LLAMA_2_7B_CONFIG = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                     "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
                     "max_position_embeddings": 4096, "torch_dtype": "float16"}


@pytest.mark.parametrize(("family", "inputs", "sentence"), [
    ("kv", {"context": 32_768}, "The context limit (32,768 tokens)"),
    ("ladder", {"context": 32_768, "avg_tokens": 2_300}, "The context limit (32,768 tokens)"),
    ("decode", {"context": 32_768}, "The context (32,768 tokens)"),
])
def test_a_context_beyond_a_pasted_models_window_gets_a_note(family, inputs, sentence):
    """The README's own example: Llama-2-7B (max_position_embeddings = 4,096) at 32,768 tokens; 4,096 is no note."""
    from calculators.engine.catalog import default_catalog
    from calculators.families import FAMILIES

    run = FAMILIES[family].run
    beyond = run({**inputs, "config": LLAMA_2_7B_CONFIG}, default_catalog())
    expected = f"{sentence} is beyond the model's own window (max_position_embeddings = 4,096)"
    assert sum(expected in note for note in beyond.notes) == 1
    within = run({**inputs, "context": 4_096, "config": LLAMA_2_7B_CONFIG}, default_catalog())
    assert not any("beyond the model's own window" in note for note in within.notes)

"""Grading worked answers step by step (calculators.engine.grader), on real catalog models.

No Django, no database: only ``calculators.engine``. Every expected number is
derived by hand from ``fixtures/catalog/models.json`` and ``gpus.json``; the
derivation sits in a comment beside it.

The reference stack (docs/architecture.md §2), by hand:

* card: the H100 SXM reports 81,559 MiB → 81,559 / 1,024 = 79.6474609375 GiB
  (in decimal GB: 81,559 × 2^20 = 85,520,809,984 B = 85.52 GB);
* usable: 79.6474609375 × 0.90 = 71.68271484375 GiB;
* Llama-3.1-8B parameters: embeddings 2 × 128,256 × 4,096 = 1,050,673,152 (untied);
  per layer q 4,096² + k 4,096 × 1,024 + v 4,096 × 1,024 + o 4,096² = 41,943,040,
  MLP 3 × 4,096 × 14,336 = 176,160,768, norms 2 × 4,096 = 8,192 → 218,112,000 × 32
  = 6,979,584,000; final norm 4,096 → 8,030,261,248;
* weights at bf16: 8,030,261,248 × 2 = 16,060,522,496 B = 14.9575 GiB (16.06 GB);
* KV budget: 71.68271484375 − 14.9575271606 − 3 = 53.7251876831 GiB;
* KV per token: 2 × 32 layers × 8 K/V heads × 128 × 2 B = 131,072 B (128 KiB);
* per user at 8,192: 131,072 × 8,192 = 2^30 B = 1.00 GiB;
* worst case: ⌊53.725 / 1⌋ = 53 users;
* paged: ⌈2,300 / 16⌉ = 144 blocks = 2,304 tokens; 131,072 × 2,304 = 301,989,888 B
  = 0.28125 GiB; ⌊53.725 / 0.28125⌋ = ⌊191.02⌋ = 191 users.
"""

from __future__ import annotations

import pytest

from calculators.engine.grader import CREDIT, VERDICTS, grade
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.families import FAMILIES

GIB = 2**30

CARD = 81_559 / 1_024                      # 79.6474609375 GiB
USABLE = CARD * 0.9                        # 71.68271484375 GiB
WEIGHTS = 8_030_261_248 * 2 / GIB          # 14.957527160644531 GiB
BUDGET = USABLE - WEIGHTS - 3              # 53.72518768310547 GiB

REFERENCE_RIGHT = {
    "card_gib": "79.65",
    "usable_gib": "71.68",
    "weights_gib": "14.96",
    "kv_budget_gib": "53.73",
    "kv_bytes_per_token": "131072",
    "per_user_gib": "1",
    "users_worst_case": "53",
    "users_paged": "191",
}


def run(family: str, **inputs):
    return FAMILIES[family].run(inputs)


def grade_family(family: str, answers: dict, **inputs):
    return grade(run(family, **inputs), answers)


def by_key(graded) -> dict:
    return {step.key: step for step in graded.steps}


def verdicts(graded) -> dict:
    return {step.key: step.verdict for step in graded.steps}


# --- all correct -------------------------------------------------------------


class TestAllCorrect:
    def test_reference_ladder_answered_right_in_mixed_notations_scores_one(self):
        answers = {
            "card_gib": "81559/1024",        # = 79.6474609375 exactly
            "usable_gib": "71.68 GiB",
            "weights_gib": "16.06 GB",       # 16.06e9 / 2^30 = 14.957 GiB
            "kv_budget_gib": "53.73",
            "kv_bytes_per_token": "2*32*8*128*2",
            "per_user_gib": "1",
            "users_worst_case": "53",
            "users_paged": "191",
        }

        graded = grade_family("ladder", answers)

        assert set(verdicts(graded).values()) == {"correct"}
        assert graded.score == 1.0
        steps = by_key(graded)
        assert steps["card_gib"].value == 79.6474609375
        assert steps["kv_bytes_per_token"].value == 131_072
        assert steps["weights_gib"].value == pytest.approx(16.06e9 / GIB)

    def test_a_gb_answer_for_a_gib_step_says_which_conversion_was_applied(self):
        graded = grade_family("ladder", {"weights_gib": "16.06 GB"})

        step = by_key(graded)["weights_gib"]
        assert step.verdict == "correct"
        assert step.conversion == "Read 16.06 GB and converted it to 14.96 GiB."
        assert step.message.startswith("Read 16.06 GB and converted it to 14.96 GiB.")

    def test_a_bare_number_in_the_step_unit_needs_no_conversion_sentence(self):
        step = by_key(grade_family("ladder", {"weights_gib": "14.96"}))["weights_gib"]

        assert step.verdict == "correct"
        assert step.conversion is None
        assert step.message == "Correct."

    @pytest.mark.parametrize(("key", "text"), [
        ("kv_bytes_per_token", "128 KiB"),          # 128 × 1,024 = 131,072 B
        ("kv_bytes_per_token", "2^17"),             # 131,072
        ("kv_bytes_per_token", "131,072 B"),
        ("per_user_gib", "1 GiB"),
        ("per_user_gib", "131072 * 8192 B"),        # = 2^30 B = 1 GiB
        ("usable_gib", "79.65 × 0.9"),              # 71.685, 0.003 % off
        ("kv_budget_gib", "(71.68 - 14.96 - 3) GiB"),  # 53.72
        ("users_worst_case", "53 users"),
        ("users_paged", "191"),
    ])
    def test_each_notation_of_a_right_answer_is_correct(self, key, text):
        step = by_key(grade_family("ladder", {key: text}))[key]

        assert step.verdict == "correct", step.message
        assert step.credit == 1.0

    def test_expected_values_are_the_reference_stack_derived_by_hand(self):
        steps = by_key(grade_family("ladder", {}))

        assert steps["card_gib"].expected == 79.6474609375
        assert steps["usable_gib"].expected == pytest.approx(71.68271484375)
        assert steps["weights_gib"].expected == pytest.approx(14.957527160644531)
        assert steps["kv_budget_gib"].expected == pytest.approx(53.72518768310547)
        assert steps["kv_bytes_per_token"].expected == 131_072
        assert steps["per_user_gib"].expected == 1.0
        assert steps["users_worst_case"].expected == 53
        assert steps["users_paged"].expected == 191

    def test_steps_are_graded_in_the_ladder_order(self):
        keys = [step.key for step in grade_family("ladder", {}).steps]

        assert keys == ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib",
                        "kv_bytes_per_token", "per_user_gib", "users_worst_case", "users_paged"]


# --- error carried forward ------------------------------------------------------


class TestErrorCarriedForward:
    def test_gb_weights_typed_as_gib_carry_through_budget_and_both_user_counts(self):
        # Slip at step 3: 16.06 (the GB number) typed as GiB.
        # budget from the candidate's own usable 71.68: 71.68 − 16.06 − 3 = 52.62
        # worst  = ⌊52.62 / 1.00⌋ = 52
        # paged  = ⌊52.62 / 0.28125⌋ = ⌊187.09⌋ = 187
        answers = {**REFERENCE_RIGHT, "weights_gib": "16.06", "kv_budget_gib": "52.62",
                   "users_worst_case": "52", "users_paged": "187"}

        graded = grade_family("ladder", answers)

        steps = by_key(graded)
        assert steps["weights_gib"].verdict == "misconception"
        assert steps["weights_gib"].misconception == "gb-gib-mix"
        for key in ("kv_budget_gib", "users_worst_case", "users_paged"):
            assert steps[key].verdict == "carried_forward", (key, steps[key].message)
            assert steps[key].credit == 1.0
        assert steps["kv_budget_gib"].carried_expected == pytest.approx(52.62)
        assert steps["users_worst_case"].carried_expected == 52
        assert steps["users_paged"].carried_expected == 187
        # 7 steps at credit 1, the slip at 0.
        assert graded.score == pytest.approx(7 / 8)

    def test_the_carried_message_gives_the_own_value_and_the_right_one(self):
        answers = {**REFERENCE_RIGHT, "weights_gib": "16.06", "kv_budget_gib": "52.62"}

        step = by_key(grade_family("ladder", answers))["kv_budget_gib"]

        assert step.message == ("Follows from your earlier values (52.62 GiB); with the right inputs "
                                "this step is 53.73 GiB.")

    def test_kv_per_token_four_times_too_big_carries_into_per_user_and_both_counts(self):
        # 524,288 B (query heads: 2 × 32 × 32 × 128 × 2) is 4 × 131,072.
        # per user = 524,288 × 8,192 / 2^30 = 4.00 GiB
        # worst    = ⌊53.725 / 4⌋ = ⌊13.43⌋ = 13
        # paged    = 524,288 × 2,304 = 1,207,959,552 B = 1.125 GiB; ⌊53.725 / 1.125⌋ = ⌊47.76⌋ = 47
        answers = {**REFERENCE_RIGHT, "kv_bytes_per_token": "524288", "per_user_gib": "4",
                   "users_worst_case": "13", "users_paged": "47"}

        graded = grade_family("ladder", answers)

        assert verdicts(graded) == {
            "card_gib": "correct", "usable_gib": "correct", "weights_gib": "correct",
            "kv_budget_gib": "correct", "kv_bytes_per_token": "misconception",
            "per_user_gib": "carried_forward", "users_worst_case": "carried_forward",
            "users_paged": "carried_forward",
        }
        assert graded.score == pytest.approx(7 / 8)

    def test_card_in_gb_carries_through_every_later_step(self):
        # card 85.52 (GB number as GiB); usable 85.5208 × 0.9 = 76.9687 → "76.97";
        # budget 76.97 − 14.9575 − 3 = 59.0125 → "59.01"; worst ⌊59.01⌋ = 59;
        # paged ⌊59.01 / 0.28125⌋ = ⌊209.81⌋ = 209.
        answers = {**REFERENCE_RIGHT, "card_gib": "85.52", "usable_gib": "76.97",
                   "kv_budget_gib": "59.01", "users_worst_case": "59", "users_paged": "209"}

        graded = grade_family("ladder", answers)

        assert verdicts(graded) == {
            "card_gib": "misconception", "usable_gib": "carried_forward", "weights_gib": "correct",
            "kv_budget_gib": "carried_forward", "kv_bytes_per_token": "correct",
            "per_user_gib": "correct", "users_worst_case": "carried_forward",
            "users_paged": "carried_forward",
        }

    def test_the_right_answer_after_a_slip_is_still_correct(self):
        # budget slipped to 52.62, but the candidate then quotes the right 53 users.
        answers = {**REFERENCE_RIGHT, "weights_gib": "16.06", "kv_budget_gib": "52.62"}

        steps = by_key(grade_family("ladder", answers))

        assert steps["users_worst_case"].verdict == "correct"
        assert steps["users_paged"].verdict == "correct"

    def test_an_unreadable_step_leaves_later_steps_checked_against_the_right_values(self):
        # kv unreadable: per user is checked against 1.00 GiB, not a carried value.
        answers = {**REFERENCE_RIGHT, "kv_bytes_per_token": "abc"}

        steps = by_key(grade_family("ladder", answers))

        assert steps["kv_bytes_per_token"].verdict == "unreadable"
        assert steps["per_user_gib"].verdict == "correct"

    def test_int4_nominal_bytes_carry_into_weight_gib(self):
        # weights family, Llama-3.1-8B int4: nominal 8,030,261,248 × 4 / 8 = 4,015,130,624 B;
        # carried GiB = 4,015,130,624 / 2^30 = 3.7394 (right: 4.5 bits → 4.2068 GiB).
        graded = grade_family("weights", {"total_params": "8030261248", "weight_bytes": "4015130624",
                                          "weight_gib": "3.739"},
                              model="llama-3.1-8b", weights_dtype="int4")

        assert verdicts(graded) == {"total_params": "correct", "weight_bytes": "misconception",
                                    "weight_gib": "carried_forward"}

    def test_mixtral_total_with_a_slip_carries_into_active_parameters(self):
        # Mixtral-8x7B: experts 3 × 4,096 × 14,336 = 176,160,768 each; a token skips
        # 6 of 8 in 32 layers: 32 × 6 × 176,160,768 = 33,822,867,456.
        # Right total 46,702,792,704 (active 12,879,925,248). Typed total 45,000,000,000
        # → carried active 45,000,000,000 − 33,822,867,456 = 11,177,132,544.
        graded = grade_family("params", {"total_params": "45e9", "active_params": "11177132544"},
                              model="mixtral-8x7b-v0.1")

        steps = by_key(graded)
        assert steps["total_params"].verdict == "close"   # 3.6 % off 46.70 B
        assert steps["active_params"].verdict == "carried_forward"
        assert steps["active_params"].expected == 12_879_925_248


# --- named misconceptions ----------------------------------------------------------

# (family, inputs, answers, step key, misconception id)
MISCONCEPTION_CASES = [
    # query heads: 2 × layers × query heads × head_dim × 2 B
    ("kv", {"model": "llama-3.1-8b"}, {"kv_bytes_per_token": "524288"},       # 2×32×32×128×2
     "kv_bytes_per_token", "query-heads-for-kv-heads"),
    ("kv", {"model": "llama-3.1-70b"}, {"kv_bytes_per_token": "2621440"},     # 2×80×64×128×2
     "kv_bytes_per_token", "query-heads-for-kv-heads"),
    ("kv", {"model": "falcon-7b"}, {"kv_bytes_per_token": "581632"},          # 2×32×71×64×2 (MQA)
     "kv_bytes_per_token", "query-heads-for-kv-heads"),
    ("ladder", {}, {"kv_bytes_per_token": "512 KiB"},                          # 524,288 on the ladder
     "kv_bytes_per_token", "query-heads-for-kv-heads"),
    # K and V counted once: half the right value
    ("kv", {"model": "llama-3.1-8b"}, {"kv_bytes_per_token": "65536"},        # 32×8×128×2
     "kv_bytes_per_token", "missing-kv-factor-2"),
    ("kv", {"model": "llama-3.1-70b"}, {"kv_bytes_per_token": "163840"},      # 80×8×128×2
     "kv_bytes_per_token", "missing-kv-factor-2"),
    ("kv", {"model": "llama-2-7b"}, {"kv_bytes_per_token": "262144"},         # 32×32×128×2
     "kv_bytes_per_token", "missing-kv-factor-2"),
    # bits for bytes: × 8
    ("kv", {"model": "llama-3.1-8b"}, {"kv_bytes_per_token": "2*32*8*128*16"},  # 1,048,576
     "kv_bytes_per_token", "bits-for-bytes"),
    ("kv", {"model": "llama-2-7b"}, {"kv_bytes_per_token": "4194304"},        # 2×32×32×128×16
     "kv_bytes_per_token", "bits-for-bytes"),
    ("kv", {"model": "deepseek-v3"}, {"kv_bytes_per_token": "562176"},        # 61×(512+64)×16
     "kv_bytes_per_token", "bits-for-bytes"),
    ("weights", {"model": "llama-2-7b"}, {"weight_bytes": "6738415616*16"},    # params × 16 bits
     "weight_bytes", "bits-for-bytes"),
    ("ladder", {}, {"weights_gib": "119.66"},                                  # 14.9575 × 8
     "weights_gib", "bits-for-bytes"),
    # GB and GiB mixed
    ("ladder", {}, {"weights_gib": "16.06"},                                   # 16,060,522,496 B / 1e9
     "weights_gib", "gb-gib-mix"),
    ("ladder", {}, {"card_gib": "85.52"},                                      # 85,520,809,984 B / 1e9
     "card_gib", "gb-gib-mix"),
    ("ladder", {"model": "llama-2-7b", "gpu": "a100-sxm4-80gb", "context": 4096},
     {"card_gib": "85.9"},                                                     # 81,920 × 2^20 / 1e9 = 85.90
     "card_gib", "gb-gib-mix"),
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"weights_gib": "13.48"},
     "weights_gib", "gb-gib-mix"),                                             # 6,738,415,616 × 2 / 1e9
    ("weights", {"model": "llama-2-7b"}, {"weight_gib": "13.48"},
     "weight_gib", "gb-gib-mix"),
    ("kv", {"model": "llama-3.1-8b", "context": 8192}, {"per_user_gib": "1.0737"},
     "per_user_gib", "gb-gib-mix"),                                            # 2^30 B = 1.0737 GB
    ("ladder", {}, {"users_worst_case": "57"},                                 # ⌊53.725 × 1.0737⌋
     "users_worst_case", "gb-gib-mix"),
    # utilisation skipped
    ("ladder", {}, {"usable_gib": "79.65"},                                    # usable = card
     "usable_gib", "skipped-utilization"),
    ("ladder", {}, {"kv_budget_gib": "61.69"},                                 # 79.6475 − 14.9575 − 3
     "kv_budget_gib", "skipped-utilization"),
    ("ladder", {}, {"users_worst_case": "61"},                                 # ⌊61.69⌋
     "users_worst_case", "skipped-utilization"),
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"kv_budget_gib": "64.10"},
     "kv_budget_gib", "skipped-utilization"),                                  # 79.6475 − 12.5513 − 3
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"users_worst_case": "32"},
     "users_worst_case", "skipped-utilization"),                               # ⌊64.096 / 2.00⌋
    # activation reserve skipped
    ("ladder", {}, {"kv_budget_gib": "56.73"},                                 # 71.6827 − 14.9575
     "kv_budget_gib", "skipped-activation-reserve"),
    ("ladder", {}, {"users_worst_case": "56"},                                 # ⌊56.725⌋
     "users_worst_case", "skipped-activation-reserve"),
    ("ladder", {}, {"users_paged": "201"},                                     # ⌊56.725 / 0.28125⌋ = ⌊201.7⌋
     "users_paged", "skipped-activation-reserve"),
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"kv_budget_gib": "59.13"},
     "kv_budget_gib", "skipped-activation-reserve"),                           # 71.6827 − 12.5513
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"users_worst_case": "29"},
     "users_worst_case", "skipped-activation-reserve"),                        # ⌊59.131 / 2⌋
    # int4 sized at the nominal 4.0 bits instead of 4.5
    ("ladder", {"weights_dtype": "int4"}, {"weights_gib": "3.74"},             # 8,030,261,248 × 4/8 / 2^30
     "weights_gib", "nominal-4bit"),
    ("ladder", {"model": "llama-3.1-70b", "weights_dtype": "int4", "gpus": 2}, {"weights_gib": "32.85"},
     "weights_gib", "nominal-4bit"),                                           # 70,553,706,496 / 2 / 2^30
    ("weights", {"model": "llama-3.1-70b", "weights_dtype": "int4"}, {"weight_bytes": "35276853248"},
     "weight_bytes", "nominal-4bit"),                                          # 70,553,706,496 × 4 / 8
    ("weights", {"model": "llama-3.1-8b", "weights_dtype": "int4", "weights_bits": 4.8},
     {"weight_bytes": "4015130624"}, "weight_bytes", "nominal-4bit"),          # 8,030,261,248 × 4 / 8
    # ladder stopped at the weights line: budget = card − weights
    ("ladder", {}, {"kv_budget_gib": "64.69"},                                 # 79.6475 − 14.9575
     "kv_budget_gib", "stopped-at-weights"),
    ("ladder", {}, {"users_worst_case": "64"},                                 # ⌊64.69⌋
     "users_worst_case", "stopped-at-weights"),
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"kv_budget_gib": "67.10"},
     "kv_budget_gib", "stopped-at-weights"),                                   # 79.6475 − 12.5513
    # worst case and paged swapped
    ("ladder", {}, {"users_worst_case": "191"}, "users_worst_case", "worst-case-vs-paged"),
    ("ladder", {}, {"users_paged": "53"}, "users_paged", "worst-case-vs-paged"),
    # Llama-2-7B at 4,096: budget 71.6827 − 12.5513 − 3 = 56.1314; per user 524,288 × 4,096 = 2 GiB
    # → worst ⌊28.07⌋ = 28; paged 524,288 × 2,304 = 1.125 GiB → ⌊49.89⌋ = 49.
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"users_worst_case": "49"},
     "users_worst_case", "worst-case-vs-paged"),
    ("ladder", {"model": "llama-2-7b", "context": 4096}, {"users_paged": "28"},
     "users_paged", "worst-case-vs-paged"),
    # tied embeddings miscounted
    # Gemma-2-9B (tied): 42 × (attn 44,040,192 + MLP 154,140,672 + 4 norms 14,336) = 8,324,198,400
    # + 256,000 × 3,584 = 917,504,000 + final norm 3,584 = 9,241,705,984; a second copy → 10,159,209,984.
    ("params", {"model": "gemma-2-9b"}, {"total_params": "10159209984"},
     "total_params", "forgot-tied-embeddings"),
    # Falcon-7B (tied by default): 32 × (qkv 4,544 × 73 × 64 + dense 4,544² + MLP 2 × 4,544 × 18,176
    # + layer norm 9,088) = 6,626,242,560 + 65,024 × 4,544 = 295,469,056 + ln_f 9,088 = 6,921,720,704;
    # a second copy → 7,217,189,760.
    ("params", {"model": "falcon-7b"}, {"total_params": "7217189760"},
     "total_params", "forgot-tied-embeddings"),
    # Untied Llama-3.1-8B with its output head dropped: 8,030,261,248 − 525,336,576 = 7,504,924,672.
    ("params", {"model": "llama-3.1-8b"}, {"total_params": "7504924672"},
     "total_params", "forgot-tied-embeddings"),
    # Untied Llama-2-7B (6,738,415,616) with one 32,000 × 4,096 matrix dropped: 6,607,343,616.
    ("params", {"model": "llama-2-7b"}, {"total_params": "6607343616"},
     "total_params", "forgot-tied-embeddings"),
    # Gemma weights with the second copy: 10,159,209,984 × 2 B = 20,318,419,968 B = 18.92 GiB.
    ("ladder", {"model": "gemma-2-9b"}, {"weights_gib": "18.92"}, "weights_gib", "forgot-tied-embeddings"),
    # sliding window ignored: every token charged in every layer
    # Mistral-7B, every layer windowed at 4,096: 131,072 × 32,768 / 2^30 = 4.00 GiB (right: 0.50).
    ("kv", {"model": "mistral-7b-v0.1", "context": 32768}, {"per_user_gib": "4"},
     "per_user_gib", "window-ignored"),
    # Gemma-2-9B at 8,192: 2 × 42 × 8 × 256 × 2 = 344,064 B; ignored 344,064 × 8,192 / 2^30 = 2.625 GiB
    # (right: 344,064 × (21 × 8,192 + 21 × 4,096) / 42 / 2^30 = 1.96875 GiB).
    ("kv", {"model": "gemma-2-9b", "context": 8192}, {"per_user_gib": "2.625"},
     "per_user_gib", "window-ignored"),
    # Mistral ladder at 32,768: weights 7,241,732,096 × 2 / 2^30 = 13.4888; budget 55.1939;
    # right ⌊55.19 / 0.5⌋ = 110, window ignored ⌊55.19 / 4⌋ = 13.
    ("ladder", {"model": "mistral-7b-v0.1", "context": 32768}, {"users_worst_case": "13"},
     "users_worst_case", "window-ignored"),
    # MLA latent sized as K and V per head
    # DeepSeek-V3: 61 × 128 heads × (128 nope + 64 rope + 128 v) × 2 = 4,997,120 (right 61 × 576 × 2 = 70,272)
    ("kv", {"model": "deepseek-v3"}, {"kv_bytes_per_token": "4997120"}, "kv_bytes_per_token", "latent-as-heads"),
    # ... or as MHA with head_dim = 7,168 / 128 = 56: 2 × 61 × 128 × 56 × 2 = 1,748,992
    ("kv", {"model": "deepseek-v3"}, {"kv_bytes_per_token": "1748992"}, "kv_bytes_per_token", "latent-as-heads"),
    # DeepSeek-V2-Lite: 27 × 16 × 320 × 2 = 276,480 (right 27 × 576 × 2 = 31,104)
    ("kv", {"model": "deepseek-v2-lite"}, {"kv_bytes_per_token": "276480"},
     "kv_bytes_per_token", "latent-as-heads"),
    ("kv", {"model": "deepseek-v2-lite"}, {"kv_bytes_per_token": "221184"},  # 2 × 27 × 16 × 128 × 2
     "kv_bytes_per_token", "latent-as-heads"),
]


def _case_id(case):
    family, inputs, answers, key, misconception = case
    return f"{misconception}-{family}-{inputs.get('model', 'llama-3.1-8b')}-{answers[key]}"


class TestNamedMisconceptions:
    @pytest.mark.parametrize("case", MISCONCEPTION_CASES, ids=_case_id)
    def test_the_classic_wrong_value_is_named(self, case):
        family, inputs, answers, key, misconception = case

        step = by_key(grade_family(family, answers, **inputs))[key]

        assert step.verdict == "misconception", step.message
        assert step.misconception == misconception
        assert step.credit == 0.0
        info = MISCONCEPTIONS[misconception]
        assert step.misconception_info is info
        assert info.title in step.message
        assert "Expected" in step.message
        assert info.link.startswith("/")

    def test_every_named_misconception_is_exercised_on_at_least_two_catalog_models(self):
        seen: dict[str, set] = {}
        for _family, inputs, _answers, _key, misconception in MISCONCEPTION_CASES:
            seen.setdefault(misconception, set()).add(inputs.get("model", "llama-3.1-8b"))

        # The foundation's misconceptions (the shared variants by step key, and the GB/GiB slip every GiB step
        # gets from the perturbation registry); later families test their own ids beside their procedures.
        # Engine v3: step_variants.py is gone; these are the ids it declared, plus the GB/GiB slip.
        foundation = {"query-heads-for-kv-heads", "missing-kv-factor-2", "bits-for-bytes", "latent-as-heads",
                      "nominal-4bit", "window-ignored", "skipped-utilization", "forgot-tied-embeddings",
                      "stopped-at-weights", "skipped-activation-reserve", "worst-case-vs-paged", "gb-gib-mix"}
        assert set(seen) == foundation
        assert {m: models for m, models in seen.items() if len(models) < 2} == {}

    def test_query_heads_on_an_mha_model_is_the_right_answer_not_a_misconception(self):
        # Llama-2-7B has 32 K/V heads = 32 query heads: 2 × 32 × 32 × 128 × 2 = 524,288 is right.
        step = by_key(grade_family("kv", {"kv_bytes_per_token": "524288"}, model="llama-2-7b"))[
            "kv_bytes_per_token"]

        assert step.verdict == "correct"
        assert step.misconception is None

    def test_window_ignored_inside_the_window_is_the_right_answer(self):
        # Gemma-2-9B at 4,096 tokens = its window: 344,064 × 4,096 / 2^30 = 1.3125 GiB either way.
        step = by_key(grade_family("kv", {"per_user_gib": "1.3125"}, model="gemma-2-9b", context=4096))[
            "per_user_gib"]

        assert step.verdict == "correct"
        assert step.misconception is None

    def test_paged_equal_to_worst_case_is_the_right_answer(self):
        # Context 2,304 = ⌈2,300/16⌉ × 16: both counts charge 2,304 tokens, 0.28125 GiB → 191 each.
        graded = grade_family("ladder", {"users_worst_case": "191", "users_paged": "191"}, context=2304)

        assert verdicts(graded)["users_worst_case"] == "correct"
        assert verdicts(graded)["users_paged"] == "correct"

    def test_a_misconception_made_after_a_slip_is_named_on_the_candidates_own_values(self):
        # card typed 85.52 (GB), usable then typed equal to that card: utilisation skipped on own values.
        graded = grade_family("ladder", {"card_gib": "85.52", "usable_gib": "85.52"})

        step = by_key(graded)["usable_gib"]
        assert step.verdict == "misconception"
        assert step.misconception == "skipped-utilization"

    def test_a_misconception_is_named_before_the_impossible_bound_is_checked(self):
        # 191 worst-case users exceeds the 79 the bare card could hold, but it is the paged count.
        step = by_key(grade_family("ladder", {"users_worst_case": "191"}))["users_worst_case"]

        assert step.verdict == "misconception"


# --- impossible, close, wrong, unreadable -------------------------------------------


class TestImpossible:
    @pytest.mark.parametrize("text", ["80", "500", "1e6"])
    def test_more_worst_case_users_than_the_bare_card_holds(self, text):
        # No weights at all: ⌊79.6475 GiB / 1.00 GiB⌋ = 79 users.
        step = by_key(grade_family("ladder", {"users_worst_case": text}))["users_worst_case"]

        assert step.verdict == "impossible"
        assert step.credit == 0.0
        assert "79.65 GiB holds at most 79 such users" in step.message
        assert step.message.endswith("Expected 53 users.")

    def test_one_user_under_the_bare_card_bound_is_not_impossible(self):
        step = by_key(grade_family("ladder", {"users_worst_case": "79"}))["users_worst_case"]

        assert step.verdict == "wrong"

    def test_more_paged_users_than_the_bare_card_holds(self):
        # ⌊79.6475 / 0.28125⌋ = ⌊283.19⌋ = 283; 284 is impossible, 283 merely wrong.
        graded = grade_family("ladder", {"users_paged": "284"})
        assert by_key(graded)["users_paged"].verdict == "impossible"
        assert "at most 283 such users" in by_key(graded)["users_paged"].message

        assert verdicts(grade_family("ladder", {"users_paged": "283"}))["users_paged"] == "wrong"

    def test_usable_memory_above_the_card(self):
        step = by_key(grade_family("ladder", {"usable_gib": "90"}))["usable_gib"]

        assert step.verdict == "impossible"
        assert "cannot exceed the card memory (79.65 GiB)" in step.message

    def test_kv_budget_above_usable_memory(self):
        step = by_key(grade_family("ladder", {"kv_budget_gib": "75"}))["kv_budget_gib"]

        assert step.verdict == "impossible"
        assert "cannot exceed the usable memory (71.68 GiB)" in step.message

    @pytest.mark.parametrize(("family", "key", "text"), [
        ("ladder", "weights_gib", "-14.96"),
        ("ladder", "kv_bytes_per_token", "-131072"),
        ("ladder", "per_user_gib", "-1"),
        ("params", "total_params", "-8030261248"),
        ("weights", "weight_bytes", "0"),
    ])
    def test_a_negative_or_zero_size(self, family, key, text):
        step = by_key(grade_family(family, {key: text}))[key]

        assert step.verdict == "impossible"
        assert "always positive" in step.message

    def test_a_negative_user_count(self):
        step = by_key(grade_family("ladder", {"users_paged": "-1"}))["users_paged"]

        assert step.verdict == "impossible"
        assert "cannot be negative" in step.message


class TestCloseAndWrong:
    def test_within_ten_percent_gets_half_credit_and_says_how_far_off(self):
        # 15.5 / 14.9575 − 1 = 3.63 %
        step = by_key(grade_family("ladder", {"weights_gib": "15.5"}))["weights_gib"]

        assert step.verdict == "close"
        assert step.credit == 0.5
        assert "3.6% off 14.96 GiB" in step.message

    def test_close_to_the_carried_value_names_that_value_not_the_expected_one(self):
        # 100,000 B a token (wrong) × 8,192 tokens ÷ 2^30 = 0.763 GiB; 0.77 is 0.9 % off that, 23 % off 1.00 GiB.
        step = by_key(grade_family("ladder", {"kv_bytes_per_token": "100000", "per_user_gib": "0.77"}))["per_user_gib"]

        assert (step.verdict, step.credit) == ("close", 0.5)
        assert step.carried_expected == pytest.approx(100_000 * 8192 / 2**30)
        assert step.message == ("Close: 0.9% off 0.763 GiB, what your earlier values give; half credit for rounded "
                                "working. With the right inputs this step is 1.00 GiB.")

    def test_the_close_band_ends_at_ten_percent(self):
        # 16.4 / 14.9575 − 1 = 9.6 % (close); 16.5 / 14.9575 − 1 = 10.3 % (wrong)
        assert verdicts(grade_family("ladder", {"weights_gib": "16.4"}))["weights_gib"] == "close"
        assert verdicts(grade_family("ladder", {"weights_gib": "16.5"}))["weights_gib"] == "wrong"

    def test_the_marketed_80_gb_converted_to_gib_is_close_not_correct(self):
        # 80e9 / 2^30 = 74.51 GiB, 6.5 % under the 79.65 GiB the driver reports.
        step = by_key(grade_family("ladder", {"card_gib": "80 GB"}))["card_gib"]

        assert step.verdict == "close"
        assert "6.5% off 79.65 GiB" in step.message
        assert step.conversion == "Read 80 GB and converted it to 74.51 GiB."

    @pytest.mark.parametrize("text", ["53.7", "51", "55"])
    def test_users_want_the_whole_number(self, text):
        # 53.7 is 1.3 % off, 51 and 55 are 3.8 % off: close, never correct.
        step = by_key(grade_family("ladder", {"users_worst_case": text}))["users_worst_case"]

        assert step.verdict == "close"
        assert step.credit == 0.5
        # Only a fractional count is told to round down; 51 was not a rounding slip.
        assert ("users are whole" in step.message) == (text == "53.7")

    def test_a_unit_slip_upstream_names_the_users_unless_the_candidate_typed_that_step_right(self):
        # Weights in GB (16,060,522,496 B = 16.06 GB) taken as GiB: 71.68 − 16.06 − 3 = 52.62 → 52 users;
        # the GiB figure read as GB (14.96 ÷ 1.0737 = 13.93): 71.68 − 13.93 − 3 = 54.75 → 54.
        for text in ("52", "54"):
            step = by_key(grade_family("ladder", {"users_worst_case": text}))["users_worst_case"]
            assert (step.verdict, step.misconception) == ("misconception", "gb-gib-mix")
        # With the weights typed right, the slip was not made there: 52 is a near miss.
        step = by_key(grade_family("ladder", {"weights_gib": "14.96", "users_worst_case": "52"}))["users_worst_case"]
        assert step.verdict == "close"

    def test_far_off_is_wrong_and_gives_the_expected_value(self):
        # 40 GiB is 2.67 × 14.96 GiB: no precision's width (30 would be fp32's 4 bytes per parameter, a named slip).
        step = by_key(grade_family("ladder", {"weights_gib": "40"}))["weights_gib"]

        assert step.verdict == "wrong"
        assert step.credit == 0.0
        assert step.message == "Expected 14.96 GiB."

    def test_wrong_bytes_per_token_gives_the_expected_bytes(self):
        step = by_key(grade_family("kv", {"kv_bytes_per_token": "100000"}))["kv_bytes_per_token"]

        assert step.verdict == "wrong"
        assert step.message == "Expected 131,072 B."


class TestUnreadable:
    def test_text_that_is_not_a_number(self):
        step = by_key(grade_family("ladder", {"weights_gib": "abc"}))["weights_gib"]

        assert step.verdict == "unreadable"
        assert step.value is None
        assert step.credit == 0.0
        assert "'abc' is not a number" in step.message

    def test_a_bandwidth_on_a_memory_step_says_it_is_a_bandwidth(self):
        step = by_key(grade_family("ladder", {"kv_budget_gib": "52 GiB/s"}))["kv_budget_gib"]

        assert step.verdict == "unreadable"
        assert "bandwidth" in step.message
        assert "memory size" in step.message

    @pytest.mark.parametrize("text", ["", "   ", None])
    def test_an_empty_answer_names_the_expected_value(self, text):
        step = by_key(grade_family("ladder", {"card_gib": text}))["card_gib"]

        assert step.verdict == "unreadable"
        assert step.message == "No answer given; expected 79.65 GiB."

    def test_a_missing_key_is_an_empty_answer_and_unknown_keys_are_ignored(self):
        graded = grade_family("ladder", {"not_a_step": "53"})

        assert len(graded.steps) == 8
        assert set(verdicts(graded).values()) == {"unreadable"}


# --- score ----------------------------------------------------------------------------


class TestScore:
    def test_credits_per_verdict(self):
        assert CREDIT == {"correct": 1.0, "carried_forward": 1.0, "close": 0.5, "misconception": 0.0,
                          "impossible": 0.0, "wrong": 0.0, "unreadable": 0.0}
        assert set(VERDICTS) == set(CREDIT)

    def test_score_is_the_mean_credit(self):
        # 6 correct + close (15.5) + wrong (30) = (6 + 0.5 + 0) / 8 = 0.8125
        answers = {**REFERENCE_RIGHT, "weights_gib": "15.5", "users_paged": "30"}
        graded = grade_family("ladder", answers)
        assert verdicts(graded)["weights_gib"] == "close"
        assert verdicts(graded)["users_paged"] == "wrong"

        assert graded.score == pytest.approx(0.8125)

    def test_nothing_answered_scores_zero(self):
        assert grade_family("ladder", {}).score == 0.0

    def test_every_step_a_different_verdict_scores_between_zero_and_one(self):
        graded = grade_family("ladder", ALL_VERDICTS_ANSWERS)

        assert sorted(set(verdicts(graded).values())) == sorted(VERDICTS)
        # correct 1 + misconception 0 + carried 1 + unreadable 0 + close 0.5 + wrong 0 + impossible 0
        # + correct 1 = 3.5 / 8
        assert graded.score == pytest.approx(3.5 / 8)

    def test_to_json_has_the_design_shape(self):
        data = grade_family("ladder", {"weights_gib": "16.06 GB"}).to_json()

        assert set(data) == {"family", "inputs", "steps", "score"}
        assert data["family"] == "ladder"
        for step in data["steps"]:
            assert {"key", "verdict", "misconception", "expected", "given", "value", "message"} <= set(step)
        assert data["steps"][2]["given"] == "16.06 GB"
        assert data["steps"][2]["value"] == pytest.approx(14.957, rel=1e-4)


# One answer sheet on the reference stack that draws every verdict (also used by the page tests).
ALL_VERDICTS_ANSWERS = {
    "card_gib": "79.65",            # correct
    "usable_gib": "79.65",          # misconception: skipped-utilization (usable = card)
    "weights_gib": "abc",           # unreadable
    # carried: own usable 79.65 − 14.9575 (right weights) − 3 = 61.69
    "kv_budget_gib": "61.69",       # carried_forward
    "kv_bytes_per_token": "140000",  # close: 6.8 % over 131,072, no named variant
    # own kv 140,000 × 8,192 / 2^30 = 1.068 GiB carried; 3.0 is far from 1.00 and 1.07
    "per_user_gib": "3",            # wrong
    "users_worst_case": "500",      # impossible: at most 79
    "users_paged": "191",           # correct
}


# --- degenerate own values --------------------------------------------------------------


class TestDegenerateOwnValues:
    """A candidate's own earlier value may be 0 or huge: the later steps are still graded.

    (Regression: carried-forward evaluation used to divide by a typed 0, or overflow on a
    typed 1e308, and the exception escaped grade() — a 500 on the page.)
    """

    @pytest.mark.parametrize(("answers", "first_verdict"), [
        ({"per_user_gib": "0", "users_worst_case": "5"}, "impossible"),      # ⌊53.73 / 0⌋ undefined
        ({"kv_bytes_per_token": "0", "users_paged": "5"}, "impossible"),     # ⌊53.73 / (0 × 2,304)⌋
        ({"kv_budget_gib": "1e308", "users_worst_case": "5"}, "impossible"),  # above the 71.68 usable
        ({"per_user_gib": "1e-320", "users_worst_case": "5"}, "wrong"),      # 53.73 / 1e-320 overflows
    ], ids=["per-user-zero", "kv-zero", "budget-1e308", "per-user-denormal"])
    def test_grading_continues_after_a_degenerate_own_value(self, answers, first_verdict):
        graded = grade_family("ladder", answers)

        first, later = list(answers)
        assert by_key(graded)[first].verdict == first_verdict
        # 5 users: far from the right count and from no defined carried value.
        assert by_key(graded)[later].verdict == "wrong"
        assert by_key(graded)[later].carried_expected is None


class TestExpectedValueShown:
    def test_the_shown_expected_value_of_a_large_step_can_be_typed_back(self):
        # Reference: "Expected 14.96 GiB." and 14.96 is within 0.5 % of 14.9575.
        step = by_key(grade_family("ladder", {"weights_gib": "40"}))["weights_gib"]
        assert step.message == "Expected 14.96 GiB."

        assert verdicts(grade_family("ladder", {"weights_gib": "14.96"}))["weights_gib"] == "correct"

    def test_a_small_expected_value_is_shown_precisely_enough_to_type_back(self):
        # Falcon-7B (MQA): 2 × 32 × 1 × 64 × 2 = 8,192 B per token; at 2,048 tokens
        # 8,192 × 2,048 / 2^30 = 0.015625 GiB. Shown as "0.02 GiB", which is 28 % off.
        answers = {"per_user_gib": "1"}
        step = by_key(grade_family("kv", answers, model="falcon-7b", context=2048))["per_user_gib"]
        shown = step.message.removeprefix("Expected ").removesuffix(".")

        retyped = by_key(grade_family("kv", {"per_user_gib": shown}, model="falcon-7b", context=2048))
        assert retyped["per_user_gib"].verdict == "correct", (shown, retyped["per_user_gib"].message)

"""Slips a new user's answers showed graded as rounding or plain "wrong", now named (DESIGN §4, §11).

* A decimal/binary prefix mix typed with its unit (``32 MB`` where the answer is 32 MiB) was "Close: 4.6 % off",
  half credit for rounding: it is the "decimal and binary units mixed" mistake, with a named mistake's credit.
* A weight size at another precision's width (bf16's 2 bytes per parameter in an fp8 problem) and one card's
  memory for a replica of N were only "wrong": each is a mistake of the registry, tried wherever its quantities are.
* The conversion echo showed "0.06 GiB" for 64 MiB; the worked weight bytes read "× 8 bit = " the same number.

Every expected figure below is derived by hand in the comment beside it.
"""

from __future__ import annotations

import pytest

from calculators.engine.grader import CREDIT, grade
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.engine.units import format_faithful, prefix_partner
from calculators.families import FAMILIES


def graded(family: str, key: str, text: str, **inputs):
    result = FAMILIES[family].run(inputs)
    return next(step for step in grade(result, {key: text}).steps if step.key == key)


# Falcon-7B (MQA: 1 K/V head of 64, 32 layers) with an fp8 cache: 2 × 32 × 1 × 64 × 1 B = 4,096 B per token;
# × 8,192 tokens = 33,554,432 B = 32 MiB = 0.03125 GiB per user.
FALCON_FP8 = {"model": "falcon-7b", "kv_dtype": "fp8", "context": 8192, "gpus": 1}


class TestDecimalAndBinaryPrefixesMixed:
    def test_mb_typed_for_the_mib_answer_is_named_not_rounding(self):
        step = graded("kv", "per_user_gib", "32 MB", **FALCON_FP8)

        assert step.expected == 0.03125
        # 32 × 10^6 B ÷ 2^20 = 30.52 MiB; in GiB 32 × 10^6 ÷ 2^30 = 0.0298 (4.6 % short of 0.03125).
        assert (step.verdict, step.misconception, step.credit) == ("misconception", "gb-gib-mix",
                                                                  CREDIT["misconception"])
        assert step.message.startswith(
            "Read 32 MB and converted it to 0.0298 GiB. Decimal and binary units mixed: 32 MB is 30.52 MiB; the "
            "answer is 32 MiB. ")
        assert step.message.endswith("Expected 0.0312 GiB.")

    def test_mb_typed_for_a_ladder_sized_answer_of_0_625_gib(self):
        # Llama-3.1-8B bf16: 131,072 B per token × 5,120 tokens = 671,088,640 B = 640 MiB = 0.625 GiB per user.
        step = graded("kv", "per_user_gib", "640 MB", model="llama-3.1-8b", context=5120)

        assert step.expected == 0.625
        # 640 × 10^6 ÷ 2^20 = 610.35 MiB.
        assert step.misconception == "gb-gib-mix"
        assert "640 MB is 610.4 MiB; the answer is 640 MiB." in step.message

    def test_gb_typed_for_the_gib_answer_and_gib_for_a_gb_number(self):
        # The reference weights: 8,030,261,248 × 2 B = 16,060,522,496 B = 14.9575 GiB = 16.06 GB.
        step = graded("ladder", "weights_gib", "14.96 GB")
        # 14.96 × 10^9 ÷ 2^30 = 13.93 GiB.
        assert step.misconception == "gb-gib-mix"
        assert "14.96 GB is 13.93 GiB; the answer is 14.96 GiB." in step.message
        step = graded("ladder", "weights_gib", "16.06 GiB")
        # 16.06 × 2^30 ÷ 10^9 = 17.24 GB; the answer in GB is 16,060,522,496 ÷ 10^9 = 16.06.
        assert step.misconception == "gb-gib-mix"
        assert "16.06 GiB is 17.24 GB; the answer is 16.06 GB." in step.message

    def test_the_right_size_in_either_system_stays_correct(self):
        # 32 MiB = 33,554,432 B = 33.55 MB; 34 MB is that rounded to the two figures typed.
        for text in ("32 MiB", "33.55 MB", "34 MB", "0.03125 GiB"):
            assert graded("kv", "per_user_gib", text, **FALCON_FP8).verdict == "correct", text

    def test_a_near_miss_in_the_same_system_is_still_close(self):
        # 31 MiB is 3.1 % short of 32 MiB: no prefix reads it as the answer.
        step = graded("kv", "per_user_gib", "31 MiB", **FALCON_FP8)
        assert step.verdict == "close" and step.misconception is None

    def test_the_partner_units(self):
        assert [prefix_partner(symbol) for symbol in ("MB", "MiB", "GB/s", "GiB/s", "KiB", "kB", "TB", "B", "ms")] == [
            "MiB", "MB", "GiB/s", "GB/s", "kB", "KiB", "TiB", None, None]


class TestConversionEcho:
    def test_the_converted_value_keeps_enough_figures(self):
        step = graded("kv", "per_user_gib", "64 MiB", **FALCON_FP8)
        # 64 MiB = 0.0625 GiB exactly, twice the answer: "0.06 GiB" would hide both facts.
        assert step.conversion == "Read 64 MiB and converted it to 0.0625 GiB."

    def test_faithful_display(self):
        assert format_faithful(0.0625, "GiB") == "0.0625 GiB"
        assert format_faithful(0.03125, "GiB") == "0.03125 GiB"
        assert format_faithful(32e6 / 2**30, "GiB") == "0.0298 GiB"
        assert format_faithful(14.96, "GiB") == "14.96 GiB"  # the fixed two decimals already show it
        assert format_faithful(640e6 / 2**30, "GiB") == "0.596 GiB"  # 0.59605


# Mistral-7B-v0.1: 7,241,732,096 parameters (the weights family's own count).
MISTRAL_FP8 = {"model": "mistral-7b-v0.1", "weights_dtype": "fp8"}


class TestAnotherPrecisionsWidth:
    @pytest.mark.parametrize("text", [
        "14.48 GB",  # bf16: 7,241,732,096 × 2 B = 14,483,464,192 B
        "28.97 GB",  # fp32: × 4 B = 28,966,928,384 B
        "4.074 GB",  # int4 at 4.5 bits: × 0.5625 B = 4,073,474,304 B
    ])
    def test_weight_bytes_at_another_width_are_named(self, text):
        step = graded("weights", "weight_bytes", text, **MISTRAL_FP8)
        assert step.expected == 7_241_732_096
        assert (step.verdict, step.misconception) == ("misconception", "other-precision-width")
        assert step.message.endswith(f"{MISCONCEPTIONS['other-precision-width'].explanation} "
                                     f"Expected 7,241,732,096 B.")

    def test_the_reference_ladder_sized_at_fp8_or_fp32(self):
        # bf16 reference: 16,060,522,496 B = 14.9575 GiB; at 1 B per parameter 7.4787 GiB, at 4 B 29.915 GiB.
        for text in ("7.48", "29.92"):
            assert graded("ladder", "weights_gib", text).misconception == "other-precision-width", text

    def test_a_bare_4_bits_is_not_another_precision(self):
        # 7,241,732,096 × 0.5 B = 3.62 GB: no precision is charged a bare 4.0 bits (int4 is 4.5, MXFP4 4.25).
        assert graded("weights", "weight_bytes", "3.62 GB", **MISTRAL_FP8).verdict == "wrong"

    def test_the_worked_substitution_turns_bits_into_bytes(self):
        result = FAMILIES["weights"].run(MISTRAL_FP8)
        assert result.step("weight_bytes").substituted == "7,241,732,096 × 8 bit ÷ 8 bit/B = 7,241,732,096 B"


class TestOneCardsMemoryForTheReplica:
    # Qwen3-235B-A22B on 2 × B200: a B200 reports 183,359 MiB = 179.0615 GiB; the replica 358.1230 GiB.
    TWO_B200 = {"model": "qwen3-235b-a22b", "gpu": "b200", "gpus": 2}

    def test_one_cards_memory_is_named(self):
        step = graded("ladder", "card_gib", "179.06 GiB", **self.TWO_B200)
        assert step.expected == pytest.approx(358.123046875)
        assert (step.verdict, step.misconception) == ("misconception", "one-card-memory")
        assert step.message.startswith("One card's memory for the replica: ")

    def test_it_is_carried_to_the_usable_memory(self):
        # Usable memory from one card: 179.0615 × 0.9 = 161.1553 GiB (the replica's is 322.31).
        result = FAMILIES["ladder"].run(self.TWO_B200)
        steps = {step.key: step for step in grade(result, {"usable_gib": "161.16"}).steps}
        assert steps["usable_gib"].misconception == "one-card-memory"
        # Typed after the one-card figure, it follows from the candidate's own card memory: full credit there.
        steps = {step.key: step for step in grade(result, {"card_gib": "179.06", "usable_gib": "161.16"}).steps}
        assert steps["card_gib"].misconception == "one-card-memory"
        assert steps["usable_gib"].verdict == "carried_forward"

    def test_on_one_card_there_is_no_such_slip(self):
        # One B200: 179.06 GiB is the right answer.
        assert graded("ladder", "card_gib", "179.06 GiB", model="qwen3-8b", gpu="b200", gpus=1).verdict == "correct"

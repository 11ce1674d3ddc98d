"""Grading that reads like an interviewer (issue 33 item 2, DESIGN §14): one class per notation.

No Django: only ``calculators.engine``. Expected values are derived by hand beside each case; the reference
stack's ladder (docs/architecture.md §2) is derived in ``tests/engine/test_grader.py``'s docstring.
"""

from __future__ import annotations

import pytest

from calculators.engine.grader import grade
from calculators.families import FAMILIES

GIB = 2**30


def graded_step(family: str, key: str, text: str, **inputs):
    """The grade of one step answered with ``text`` (the other steps left blank)."""
    graded = grade(FAMILIES[family].run(inputs), {key: text})
    return next(step for step in graded.steps if step.key == key)


class TestLowerCaseByteUnits:
    """``gb``, ``gib``, ``tb/s`` in a memory or bandwidth step read as GB, GiB, TB/s, said so; ``Gb`` is refused."""

    def test_weights_in_lower_case_gb_are_correct_with_a_note(self):
        # Llama-3.1-8B at bf16: 8,030,261,248 × 2 = 16,060,522,496 B = 16.06 GB = 14.9575 GiB;
        # 16.06e9 / 2^30 = 14.9570 GiB, 0.003 % off.
        step = graded_step("ladder", "weights_gib", "16.06 gb")

        assert step.verdict == "correct"
        assert step.value == pytest.approx(16.06e9 / GIB)
        assert step.message == ("Read 'gb' as GB (unit symbols are case-sensitive). Read 16.06 GB and converted it "
                                "to 14.96 GiB. Correct.")

    def test_a_bandwidth_in_lower_case_tb_per_s_is_read_as_tb_per_s(self):
        # decode on the reference stack: one H100 SXM, 3,350 GB/s (the catalog's figure).
        step = graded_step("decode", "bandwidth_gb_s", "3.35 tb/s")

        assert step.expected == 3350
        assert step.verdict == "correct"
        assert step.conversion.startswith("Read 'tb/s' as TB/s (unit symbols are case-sensitive).")

    def test_gigabits_or_gigabytes_is_unreadable_with_a_sentence(self):
        step = graded_step("ladder", "weights_gib", "16.06 Gb")

        assert step.verdict == "unreadable"
        assert step.value is None
        assert step.message == ("Could not read '16.06 Gb': 'Gb' could mean bits or bytes, so it is not guessed: "
                                "write GB for bytes (bits are written 'bit'); this step expects a memory size in "
                                "GiB, such as 14.96 or 15 GiB.")


    def test_a_lower_case_byte_unit_in_a_time_step_says_what_it_would_be(self):
        # decode's step time is a time (ms): a lower-case byte unit there (alone or inside an expression such as
        # 52 gb / 3.35 tb/s) is named for what it would be, and why it is not read, rather than "unknown".
        step = graded_step("decode", "step_ms", "52 gb")

        assert step.verdict == "unreadable"
        assert step.message == ("Could not read '52 gb': 'gb' is read as GB only in a memory or bandwidth step: "
                                "write GB (unit symbols are case-sensitive); this step expects a duration in ms, "
                                "such as 15.5 or 0.0155 s.")


class TestSignificantFigures:
    """An answer equal to the right value rounded to the figures typed (at least two) is correct, with a note.

    The reference ladder's KV budget is 71.6827 − 14.9575 − 3 = 53.7252 GiB (57.687 GB); the decode family on the
    reference stack gives 1 ÷ (16,060,522,496 B ÷ (3,350 GB/s × 0.75)) = 1 ÷ 6.3922 ms = 156.44 tok/s per user.
    """

    def test_two_figures_outside_the_tolerance_are_correct_with_a_note(self):
        # 54 is 0.51 % off 53.7252 (the tolerance is 0.5 %), and 53.7252 to two figures is 54.
        step = graded_step("ladder", "kv_budget_gib", "54")

        assert step.verdict == "correct"
        assert step.message == "Correct to 2 significant figures: 53.73 GiB rounds to '54'."

    def test_figures_are_counted_in_the_unit_typed(self):
        # 53.7252 GiB = 57.687 GB, to two figures 58 GB (0.54 % off 57.687: outside the tolerance).
        step = graded_step("ladder", "kv_budget_gib", "58 GB")

        assert step.verdict == "correct"
        assert step.message == ("Read 58 GB and converted it to 54.02 GiB. Correct to 2 significant figures: "
                                "53.73 GiB rounds to '58 GB'.")

    def test_an_integers_trailing_zeros_are_not_significant(self):
        # "160" has two significant figures (its trailing zero is not one): 156.44 to two is 160 (2.3 % off).
        step = graded_step("decode", "tok_s_per_user", "160")
        assert step.verdict == "correct"
        assert step.message == "Correct to 2 significant figures: 156.4 tok/s rounds to '160'."
        # "150", two figures too: 156.44 does not round to 150; 4.1 % off, close.
        step = graded_step("decode", "tok_s_per_user", "150")
        assert step.verdict == "close"
        assert step.message == ("Close: 4.1% off 156.4 tok/s (to the figures you typed it rounds to 160); half "
                                "credit for rounded working.")

    def test_a_trailing_zero_after_the_point_is_significant(self):
        # "160.0" has four figures: 156.44 to four is 156.4, not 160.0 (2.3 % off): close.
        step = graded_step("decode", "tok_s_per_user", "160.0 tok/s")

        assert step.verdict == "close"
        assert step.message == ("Close: 2.3% off 156.4 tok/s (to the figures you typed it rounds to 156.4 tok/s); "
                                "half credit for rounded working.")

    def test_the_right_answer_to_two_figures_comes_before_a_misconception(self):
        # DESIGN §10's order: correct first. 54 is also within 0.5 % of the budget with GB and GiB mixed, but it
        # is the right answer to two figures; "54.0" (three figures, so 53.7 was wanted) is that misconception.
        assert graded_step("ladder", "kv_budget_gib", "54").verdict == "correct"
        step = graded_step("ladder", "kv_budget_gib", "54.0")
        assert (step.verdict, step.misconception) == ("misconception", "gb-gib-mix")

    def test_one_figure_is_not_rounded(self):
        # "80" has one significant figure (an integer's trailing zero is not one): the rule wants two, so 80 for
        # the H100's 79.6475 GiB is not "79.65 to one figure" but the marketed 80 GB taken as GiB.
        step = graded_step("ladder", "card_gib", "80")
        assert (step.verdict, step.misconception) == ("misconception", "gb-gib-mix")
        # "80." (the point makes the zero a figure) is 79.6475 to two figures: correct.
        assert graded_step("ladder", "card_gib", "80.").verdict == "correct"

    def test_a_truncated_answer_stays_close(self):
        # 53.7252 truncated to 53 is 1.35 % off (shown to one decimal, 1.3 %); rounded it is 54.
        step = graded_step("ladder", "kv_budget_gib", "53")

        assert (step.verdict, step.credit) == ("close", 0.5)
        assert step.message == ("Close: 1.3% off 53.73 GiB (to the figures you typed it rounds to 54); half "
                                "credit for rounded working.")

    def test_an_expression_is_not_rounded(self):
        # 2 × 80 = 160, the number "160" typed is right to two figures, but worked out, not rounded: 2.3 % off.
        step = graded_step("decode", "tok_s_per_user", "2*80")

        assert step.verdict == "close"
        assert step.message == "Close: 2.3% off 156.4 tok/s; half credit for rounded working."

    def test_a_whole_number_step_wants_the_whole_number(self):
        # paged users: ⌊53.7252 / 0.28125⌋ = 191; "190" is 191 to two figures, but a count is exact.
        step = graded_step("ladder", "users_paged", "190")

        assert step.verdict == "close"

    def test_the_order_of_checks_holds_and_carried_forward_rounds_too(self):
        # usable typed 74.5 (close: 3.9 % off 71.68); the budget on it is 74.5 − 14.9575 − 3 = 56.5425 GiB,
        # which to two figures is 57 (0.81 % off 56.5425); 57 is 6.1 % off the right 53.7252, so not correct.
        graded = grade(FAMILIES["ladder"].run({}), {"usable_gib": "74.5", "kv_budget_gib": "57"})
        steps = {step.key: step for step in graded.steps}

        assert steps["usable_gib"].verdict == "close"
        assert steps["kv_budget_gib"].verdict == "carried_forward"
        assert steps["kv_budget_gib"].carried_expected == pytest.approx(74.5 - 8_030_261_248 * 2 / GIB - 3)
        assert steps["kv_budget_gib"].message == ("Follows from your earlier values (56.54 GiB, to 2 significant "
                                                  "figures); with the right inputs this step is 53.73 GiB.")
        # and a right answer to two figures is correct before it is carried forward: usable 71.5 gives 53.54,
        # to which 54 also rounds, but 54 is the right answer to two figures first.
        graded = grade(FAMILIES["ladder"].run({}), {"usable_gib": "71.5", "kv_budget_gib": "54"})
        assert [step.verdict for step in graded.steps if step.key == "kv_budget_gib"] == ["correct"]


class TestVerdictWords:
    """Bound and yes/no steps take words as well as 1 and 0; the grade keeps the value 1 or 0 (DESIGN §10).

    The roofline on the reference stack (batch 1, a 2,048-token prompt): decode's intensity is 1 FLOP/byte, under the
    ridge of 989.4 TFLOP/s ÷ 3,350 GB/s = 295.3 FLOP/byte (memory-bound, 0); prefill's is 2,048 (compute-bound, 1);
    a batch of ⌊295.3⌋ = 295 reaches the ridge (yes, 1).
    """

    @pytest.mark.parametrize(("key", "text", "value"), [
        ("decode_bound", "memory-bound", 0), ("decode_bound", "Memory", 0), ("decode_bound", "memory bound", 0),
        ("decode_bound", "0", 0), ("prefill_bound", "compute-bound", 1), ("prefill_bound", "COMPUTE", 1),
        ("prefill_bound", "Compute-bound.", 1), ("prefill_bound", "1", 1), ("ridge_reachable", "yes", 1),
        ("ridge_reachable", "Yes", 1), ("ridge_reachable", "1", 1),
    ])
    def test_a_right_verdict_in_words_or_digits_is_correct_and_graded_as_1_or_0(self, key, text, value):
        step = graded_step("roofline", key, text)

        assert (step.verdict, step.value, step.expected, step.given) == ("correct", value, value, text)
        assert step.message == "Correct."
        assert step.to_json()["value"] == value

    def test_a_wrong_verdict_in_words_names_its_misconception_in_words(self):
        step = graded_step("roofline", "decode_bound", "compute-bound")

        assert (step.verdict, step.misconception, step.value) == ("misconception", "prefill-decode-swap", 1)
        assert step.message.endswith("Expected memory-bound (0).")
        step = graded_step("roofline", "ridge_reachable", "no")
        assert (step.verdict, step.value, step.message) == ("wrong", 0, "Expected yes (1).")

    @pytest.mark.parametrize(("key", "text", "message"), [
        ("decode_bound", "yes", "'yes' is not an answer this step reads; it asks for compute-bound (1) or "
                                "memory-bound (0)."),
        ("ridge_reachable", "memory-bound", "'memory-bound' is not an answer this step reads; it asks for yes (1) or "
                                            "no (0)."),
        ("ridge_reachable", "maybe", "'maybe' is not an answer this step reads; it asks for yes (1) or no (0)."),
    ])
    def test_a_word_of_another_verdict_is_unreadable_with_a_sentence(self, key, text, message):
        step = graded_step("roofline", key, text)

        assert (step.verdict, step.value, step.message) == ("unreadable", None, message)

    def test_a_number_other_than_1_or_0_is_impossible_and_says_which_words(self):
        step = graded_step("roofline", "decode_bound", "2")

        assert step.verdict == "impossible"
        assert step.message == ("Impossible: this step is a verdict: compute-bound (1) or memory-bound (0). Expected "
                                "memory-bound (0).")

    @pytest.mark.parametrize(("family", "key", "words"), [
        ("roofline", "decode_bound", ("compute-bound", "memory-bound")),
        ("roofline", "prefill_bound", ("compute-bound", "memory-bound")),
        ("roofline", "ridge_reachable", ("yes", "no")),
        ("moe", "ep_efficient", ("yes", "no")),
        ("disagg", "disagg_pays", ("yes", "no")),
    ])
    def test_every_verdict_step_reads_its_words(self, family, key, words):
        result = FAMILIES[family].run({})
        expected = result.values[key]
        right, other = (words[0], words[1]) if expected == 1 else (words[1], words[0])

        assert graded_step(family, key, right).verdict == "correct"
        assert graded_step(family, key, other).value == 1 - expected

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

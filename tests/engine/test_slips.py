"""Slips named from the one registry (DESIGN §11): a binary prefix 1,024× off on every byte and GiB step, and the TP
degree typed for the K/V copies.

Every value below is worked by hand from the shown formulas; none is read back from the engine.
"""

from __future__ import annotations

import pytest

from calculators.engine.grader import grade
from calculators.families import FAMILIES

# /drills/kv/2/: qwen3-30b-a3b (48 layers, 4 K/V heads of 128), fp8, 8-way TP, 2,048 tokens.
# 2 × 48 × 4 × 128 × 1 B = 49,152 B per token (= 48 KiB); 8 cards over 4 K/V heads keep max(1, 8 ÷ 4) = 2 copies;
# 49,152 B × 2,048 × 2 ÷ 2^30 = 0.1875 GiB (= 192 MiB).
QWEN_TP8 = {"model": "qwen3-30b-a3b", "kv_dtype": "fp8", "gpus": 8, "context": 2048}


def verdicts(family: str, inputs: dict, answers: dict) -> dict[str, tuple[str, str | None]]:
    """Each answered step's (verdict, mistake id)."""
    graded = grade(FAMILIES[family].run(inputs), answers)
    return {s.key: (s.verdict, s.misconception) for s in graded.steps if s.key in answers}


def test_the_kv_problem_as_the_user_typed_it():
    result = FAMILIES["kv"].run(QWEN_TP8)
    assert result.values == {"kv_bytes_per_token": 49152, "kv_replication": 2, "per_user_gib": 0.1875}
    # The KiB number in the bytes box, the TP degree for the copies, the MiB number in the GiB box.
    found = verdicts("kv", QWEN_TP8, {"kv_bytes_per_token": "48", "kv_replication": "8", "per_user_gib": "192"})
    assert found == {"kv_bytes_per_token": ("misconception", "binary-prefix-slip"),
                     "kv_replication": ("misconception", "tp-degree-for-copies"),
                     "per_user_gib": ("misconception", "binary-prefix-slip")}
    graded = grade(result, {"per_user_gib": "192"})
    assert graded.steps[-1].message.startswith("Binary prefix slipped (1,024× off)")
    assert graded.steps[-1].message.endswith("Expected 0.188 GiB.")


def test_the_right_answers_stay_right_and_the_reverse_slip_is_named():
    right = verdicts("kv", QWEN_TP8, {"kv_bytes_per_token": "49152", "kv_replication": "2", "per_user_gib": "0.188"})
    assert {v for v, _ in right.values()} == {"correct"}
    # The reverse: bytes typed as if KiB were asked (× 1,024), GiB typed as if TiB were (0.1875 ÷ 1,024 = 0.000183).
    found = verdicts("kv", QWEN_TP8, {"kv_bytes_per_token": "50331648", "kv_replication": "2",
                                      "per_user_gib": "0.000183"})
    assert found["kv_bytes_per_token"] == found["per_user_gib"] == ("misconception", "binary-prefix-slip")
    # Eight copies carried forward: 49,152 B × 2,048 × 8 ÷ 2^30 = 0.75 GiB follows from the typed copies.
    carried = verdicts("kv", QWEN_TP8, {"kv_bytes_per_token": "49152", "kv_replication": "8", "per_user_gib": "0.75"})
    assert carried["per_user_gib"] == ("carried_forward", None)


def test_the_tp_degree_is_no_slip_where_it_is_the_copies():
    # An MLA latent is kept whole on every card: deepseek-v3.2-exp on 8 cards keeps 8 copies, so 8 is right.
    assert verdicts("kv", {"model": "deepseek-v3.2-exp", "kv_dtype": "bf16", "gpus": 8, "context": 2048},
                    {"kv_replication": "8"}) == {"kv_replication": ("correct", None)}
    # qwen3-30b-a3b on 4 cards: its 4 K/V heads split one per card, 1 copy; 4 is the degree.
    assert verdicts("kv", {**QWEN_TP8, "gpus": 4}, {"kv_replication": "4"}) == {
        "kv_replication": ("misconception", "tp-degree-for-copies")}


@pytest.mark.parametrize(("family", "inputs", "key", "typed"), [
    # weights, llama-3.1-8b bf16: 8,030,261,248 × 2 B = 16,060,522,496 B = 15,684,104 KiB = 15,316.5 MiB.
    ("weights", {}, "weight_bytes", "15684104"),
    ("weights", {}, "weights_gib", "15316.5"),
    # decode, the same weights read per step at batch 1: 16,060,522,496 B, typed in KiB.
    ("decode", {}, "weight_bytes_per_step", "15684104"),
    # disagg, llama-3.1-70b bf16: 2 × 80 × 8 × 128 × 2 B = 327,680 B = 320 KiB per token; a 4,096-token prompt
    # sends 327,680 × 4,096 = 1,342,177,280 B = 1,310,720 KiB.
    ("disagg", {}, "kv_bytes_per_token", "320"),
    ("disagg", {}, "kv_transfer_bytes", "1310720"),
    # lora, rank 16 on q and v of llama-3.1-8b: 6,815,744 parameters × 2 B = 13,631,488 B = 13 MiB (0.0127 GiB).
    ("lora", {}, "adapter_gib", "13"),
])
def test_other_families_byte_and_gib_steps_get_the_slip(family, inputs, key, typed):
    assert verdicts(family, inputs, {key: typed})[key] == ("misconception", "binary-prefix-slip")


def test_the_right_value_is_never_named_a_slip():
    # The same steps typed right stay right: 15.0 GiB for 14.957 is right to the figures typed, not 1,024× off.
    found = verdicts("weights", {}, {"weight_bytes": "16060522496", "weights_gib": "14.96"})
    assert found == {"weight_bytes": ("correct", None), "weights_gib": ("correct", None)}

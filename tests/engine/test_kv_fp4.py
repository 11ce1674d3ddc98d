"""FP4 KV caches (issue 17 item 4): nvfp4 and mxfp4 as KV precisions at their effective widths, wherever
a KV precision is chosen."""

import pytest

from calculators.engine.catalog import KV_DTYPES, kv_bits_per_value, kv_bytes_per_value
from calculators.engine.errors import InputError
from calculators.engine.grader import grade
from calculators.engine.step_model import Replica, step_ms
from calculators.families import FAMILIES


def test_block_formats_are_charged_their_scales():
    # nvfp4: 4-bit elements + one 8-bit E4M3 scale per 16 values; mxfp4: + one 8-bit E8M0 scale per 32.
    assert kv_bits_per_value("nvfp4") == 4 + 8 / 16 == 4.5
    assert kv_bits_per_value("mxfp4") == 4 + 8 / 32 == 4.25
    assert kv_bytes_per_value("nvfp4") == 0.5625 and kv_bytes_per_value("mxfp4") == 0.53125
    assert kv_bytes_per_value("fp8") == 1 and kv_bits_per_value("bf16") == 16
    with pytest.raises(InputError) as exc:
        kv_bytes_per_value("fp4")
    assert exc.value.field == "kv_dtype" and "nvfp4" in str(exc.value)


def test_every_family_that_chooses_a_kv_precision_offers_both():
    choosing = [family for family in FAMILIES.values() if any(spec.name == "kv_dtype" for spec in family.inputs)]
    assert len(choosing) >= 8
    for family in choosing:
        spec = next(spec for spec in family.inputs if spec.name == "kv_dtype")
        assert {"nvfp4", "mxfp4"} <= set(spec.choices) == set(KV_DTYPES), family.slug


def test_kv_and_ladder_at_fp4():
    # Llama-3.1-8B: 2 × 32 layers × 8 K/V heads × 128 × 0.5625 B = 36,864 B (bf16: 131,072).
    nv = FAMILIES["kv"].run({"kv_dtype": "nvfp4"}).values
    assert nv["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 0.5625 == 36_864
    assert nv["per_user_gib"] == 36_864 * 8192 / 2**30 == 0.28125
    mx = FAMILIES["kv"].run({"model": "llama-3.1-70b", "kv_dtype": "mxfp4", "context": 131_072}).values
    assert mx["kv_bytes_per_token"] == 2 * 80 * 8 * 128 * 0.53125 == 87_040
    ladder = FAMILIES["ladder"].run({"kv_dtype": "nvfp4"}).values
    # The reference stack's 53.73 GiB budget over 0.28125 GiB per user at 8,192 tokens.
    assert ladder["users_worst_case"] == int(ladder["kv_budget_gib"] / 0.28125) == 191


def test_the_decode_step_reads_the_smaller_cache():
    replica = Replica.from_catalog("llama-3.1-8b", "b200", kv_dtype="nvfp4", bandwidth_efficiency=1.0)
    cost = step_ms(replica, decode_batch=1, decode_context_tokens=8192)
    assert cost.bytes == 16_060_522_496 + 8192 * 36_864
    decode = FAMILIES["decode"].run({"gpu": "b200", "kv_dtype": "nvfp4", "context": 8192}).values
    assert decode["kv_bytes_per_step"] == 8192 * 36_864


def test_a_bare_half_byte_is_the_nominal_width_misconception():
    result = FAMILIES["kv"].run({"kv_dtype": "mxfp4"})
    step = grade(result, {"kv_bytes_per_token": "32768"}).steps[0]
    assert (step.verdict, step.misconception) == ("misconception", "nominal-4bit")
    right = grade(result, {"kv_bytes_per_token": "34816"}).steps[0]
    assert right.verdict == "correct"


def test_the_form_labels_the_effective_width():
    from calculators.forms import CalculatorForm

    form = CalculatorForm(FAMILIES["kv"], {})
    labels = dict(form.fields["kv_dtype"].choices)
    assert labels["nvfp4"] == "nvfp4 · 4.5 bits effective" and labels["mxfp4"] == "mxfp4 · 4.25 bits effective"
    assert labels["fp8"] == "fp8 · 8 bits"


@pytest.mark.parametrize("slug", ["ladder", "decode", "slo", "pareto"])
def test_an_fp4_cache_on_a_card_without_fp4_says_no_engine_runs_it(slug):
    note = "lists no FP4 tensor cores, and engines offer nvfp4 KV caches only on cards that have them"
    assert any(note in n for n in FAMILIES[slug].run({"kv_dtype": "nvfp4"}).notes)  # H100: fp8 at most
    assert not any("FP4 tensor cores" in n for n in FAMILIES[slug].run({"kv_dtype": "nvfp4", "gpu": "b200"}).notes)

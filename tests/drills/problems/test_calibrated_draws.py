"""Drawn problems store the efficiencies their steps use, read from the calibration table (issue 31, item 1;
docs/architecture.md §12; generator v10).

A family that takes a bandwidth efficiency, an MFU, a prefill MFU or an all-reduce latency and does not draw it
stores the calibration table's value for the drawn card and precision beside its draw (the quantity's default for
a card without a row), so the problem states it and a refitted table never moves a stored problem's numbers.
"""

import random

import pytest

from calculators.engine import calibration
from calculators.engine.calibration import calibration_from_entries, default_calibration
from calculators.engine.catalog import default_catalog
from calculators.engine.procedures.inputs import calibrated_defaults
from calculators.engine.quantities import INPUTS, default
from calculators.families import FAMILIES
from drills.problems.generation import GENERATOR_VERSION, generate_inputs

REFERENCE = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "weights_dtype": "bf16"}
CALIBRATED = ("bandwidth_efficiency", "mfu", "allreduce_latency_us")


def test_the_generator_version_names_the_stored_efficiencies():
    assert GENERATOR_VERSION >= 10


@pytest.mark.parametrize("family, keys", [("decode", CALIBRATED), ("pareto", CALIBRATED),
                                          ("preempt", ("prefill_mfu",)), ("disagg", ("prefill_mfu",))])
def test_a_draw_stores_the_table_s_values_for_its_card_and_precision(family, keys):
    for seed in range(6):
        inputs = generate_inputs(family, seed)
        precision = inputs.get("weights_dtype", "bf16")
        for key in keys:
            assert inputs[key] == default(key, gpu=inputs["gpu"], precision=precision), (seed, key)


def test_the_reference_card_reads_its_row_not_the_stated_convention():
    # H100 SXM at 16-bit has a row for no named engine; its values, not the quantities' defaults, are drawn.
    row = default_calibration().row("h100-sxm5-80gb", "bf16")
    assert row is not None and row.engine == ""
    inputs = generate_inputs("decode", 0, fixed=REFERENCE)
    for key in CALIBRATED:
        assert inputs[key] == row.values[key].value
    # A card without a row: the quantities' own defaults.
    assert calibrated_defaults(FAMILIES["decode"].inputs, {"gpu": "l4"}) == {
        key: INPUTS[key].default for key in CALIBRATED}


def test_a_drawn_value_is_kept_and_a_slo_draw_keeps_its_own_efficiencies():
    # slo draws its bandwidth efficiency and MFU as part of the exercise: those stay; only the all-reduce
    # latency, which it does not draw, comes from the table.
    inputs = generate_inputs("slo", 3)
    drawn = FAMILIES["slo"].generate(random.Random("slo:3"), default_catalog())
    assert inputs["bandwidth_efficiency"] == drawn["bandwidth_efficiency"]
    assert inputs["allreduce_latency_us"] == default("allreduce_latency_us", gpu=inputs["gpu"],
                                                     precision=inputs.get("weights_dtype", "bf16"))


def test_a_stored_problem_keeps_its_numbers_when_the_table_is_refitted(monkeypatch):
    inputs = generate_inputs("decode", 0, fixed=REFERENCE)
    before = {s.key: s.value for s in FAMILIES["decode"].run(dict(inputs)).steps}
    refitted = calibration_from_entries([{"gpu": "h100-sxm5-80gb", "precision": "16-bit", "values": {
        "bandwidth_efficiency": 0.5, "mfu": 0.2, "allreduce_latency_us": 40.0}}])
    monkeypatch.setattr(calibration, "default_calibration", lambda: refitted)
    # The stored inputs hold the efficiencies: the same steps under the new table.
    assert {s.key: s.value for s in FAMILIES["decode"].run(dict(inputs)).steps} == before
    # A new draw reads the new table.
    again = generate_inputs("decode", 0, fixed=REFERENCE)
    assert (again["bandwidth_efficiency"], again["mfu"], again["allreduce_latency_us"]) == (0.5, 0.2, 40.0)
    assert {s.key: s.value for s in FAMILIES["decode"].run(dict(again)).steps}["step_ms"] > before["step_ms"]


def test_the_problem_statement_shows_the_efficiencies_used():
    inputs = generate_inputs("decode", 0, fixed=REFERENCE)
    text = FAMILIES["decode"].describe(inputs, default_catalog())
    assert f"{inputs['bandwidth_efficiency']:g} of peak bandwidth" in text
    assert f"{inputs['allreduce_latency_us']:g} µs per all-reduce" in text


def test_prose_quotes_a_card_s_calibrated_value_by_shortcode():
    from runbook.shortcodes import ShortcodeError, resolve

    value = default("prefill_mfu", gpu="a100-sxm4-80gb", precision="bf16")
    assert resolve("default", "prefill_mfu gpu=a100-sxm4-80gb").text == f"{value * 100:g} %"
    assert resolve("default", "prefill_mfu").text == f"{INPUTS['prefill_mfu'].default * 100:g} %"
    assert resolve("default", "step_overhead_ms gpu=l4").text == "0 ms"  # no row: the stated default
    with pytest.raises(ShortcodeError, match="gpu=ID"):
        resolve("default", "prefill_mfu card=l4")

"""The pareto family offline (runbook/export/calculators.py, static/js/offline-calculator.js): the export's
tables reproduce the engine's steps, and the driver re-runs them at each degree and grid batch to draw the
same curve the engine's step model gives."""

import json
import subprocess

import pytest
from django.conf import settings

from calculators.engine.errors import InputError
from calculators.families import FAMILIES
from runbook.export.calculators import FormulaTable, build_programs, formulas_script, page_data
from tests import needs

CASES = [
    {},
    {"model": "llama-3.1-70b", "gpus": 8, "tpot_target_ms": 30},
    {"model": "mixtral-8x7b-v0.1", "gpus": 2, "weights_dtype": "fp8", "kv_dtype": "nvfp4", "tpot_target_ms": 40},
    {"model": "falcon-7b", "gpu": "a100-sxm4-80gb", "context": 2048},
    {"model": "llama-3.1-70b", "gpus": 16, "context": 131_072},
]
REFUSED = [{"gpus": 3}, {"tpot_target_ms": 2}, {"model": "llama-3.1-70b", "gpus": 1}]


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    table = FormulaTable()
    program = build_programs(["pareto"], table)["pareto"]
    assert program.verified >= 20
    raws = [FAMILIES["pareto"].run(case).inputs for case in CASES]
    refused = [{**FAMILIES["pareto"].run({}).inputs, **case} for case in REFUSED]
    driver = (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text()
    script = tmp_path_factory.mktemp("pareto") / "curve.js"
    script.write_text(
        "global.window = {}; global.document = {readyState: 'complete', getElementById: () => null};\n"
        + driver + "\n" + formulas_script(table) + "\nconst data = " + json.dumps(page_data({"pareto": program}, table))
        + ";\nconst run = raw => { try { const r = window.OfflineCompute(data.programs.pareto, raw, data); "
          "return {values: r.values, curve: r.curve}; } catch (e) { return {error: e.message}; } };\n"
        + "process.stdout.write(JSON.stringify({cases: " + json.dumps(raws) + ".map(run), refused: "
        + json.dumps(refused) + ".map(run)}));\n")
    return raws, refused, json.loads(subprocess.run([needs.tool("node"), str(script)], capture_output=True, text=True,
                                                    check=True).stdout)


def test_the_steps_offline_are_the_engines(offline):
    raws, _, shown = offline
    for inputs, got in zip(raws, shown["cases"]):
        expected = FAMILIES["pareto"].run(inputs).values
        assert set(got["values"]) == set(expected)
        for key, value in expected.items():
            assert got["values"][key] == pytest.approx(value, rel=1e-9), (inputs, key)


def test_the_curve_offline_is_the_step_models(offline):
    raws, _, shown = offline
    for inputs, got in zip(raws, shown["cases"]):
        curve = FAMILIES["pareto"].run(inputs).extra["curve"]
        assert got["curve"]["marked"] == curve["marked"]
        assert (got["curve"]["best"]["gpus"], got["curve"]["best"]["batch"]) == (curve["best"]["gpus"],
                                                                                 curve["best"]["batch"])
        for mine, theirs in zip(got["curve"]["degrees"], curve["degrees"], strict=True):
            assert mine["gpus"] == theirs["gpus"] and mine["refused"] == theirs["refused"], inputs
            assert [p["batch"] for p in mine["points"]] == [p["batch"] for p in theirs["points"]]
            for a, b in zip(mine["points"], theirs["points"]):
                assert a["step_ms"] == pytest.approx(b["step_ms"], rel=1e-9)
                assert a["tok_s_per_card"] == pytest.approx(b["tok_s_per_card"], rel=1e-9)
                assert a["meets_target"] == b["meets_target"]


def test_refusals_offline_say_what_the_engine_says(offline):
    _, refused, shown = offline
    for inputs, got in zip(refused, shown["refused"]):
        with pytest.raises(InputError) as exc:
            FAMILIES["pareto"].run(inputs)
        assert got == {"error": str(exc.value)}

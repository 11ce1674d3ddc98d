"""The quantities registry (docs/architecture.md §11): one key, one unit, one formula per quantity, older keys read."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.formula import Formula, FormulaUnitError, Var
from calculators.engine.grader import grade
from calculators.engine.procedures.base import StepSpec
from calculators.engine.quantities import ALIASES, FAMILY_ALIASES, QUANTITIES, canonical_key
from calculators.families import FAMILIES

GIB = 2**30
ROOT = Path(__file__).resolve().parents[2]

# A model outside the catalog, pasted as its config.json: 24 layers, width 2,560, 32 query heads and 8 K/V
# heads of 80, an untied 50,000-token vocabulary.
PASTED = {"model_type": "llama", "hidden_size": 2560, "num_hidden_layers": 24, "num_attention_heads": 32,
          "num_key_value_heads": 8, "head_dim": 80, "intermediate_size": 6912, "vocab_size": 50000,
          "max_position_embeddings": 8192, "tie_word_embeddings": False}
# Parameters: 2 × 50,000 × 2,560 (untied) + 24 × (attention 2,560 × 80 × (32 + 8 + 8) + 32 × 80 × 2,560
# + MLP 3 × 2,560 × 6,912 + norms 2 × 2,560) + final norm 2,560
#   = 256,000,000 + 24 × (9,830,400 + 6,553,600 + 53,084,160 + 5,120) + 2,560 = 1,923,361,280.
PASTED_PARAMS = 1_923_361_280


def _runs():
    catalog = default_catalog()
    for slug, family in FAMILIES.items():
        yield slug, family.run({}, catalog)
        if family.generate:
            for seed in range(25 if family.prepare is None else 3):  # a simulated drill runs a sweep
                yield slug, family.run(family.generate(random.Random(f"{slug}:{seed}"), catalog), catalog)


RUNS = list(_runs())


def _run(slug: str, stack: dict):
    """Run a family on the inputs of ``stack`` it takes."""
    family = FAMILIES[slug]
    names = {spec.name for spec in family.inputs} | {"config"}
    return family.run({k: v for k, v in stack.items() if k in names})


def test_every_step_of_every_family_is_a_declared_quantity_in_its_unit_and_formula():
    for slug, result in RUNS:
        for spec in result.specs:
            declared = QUANTITIES.get(spec.key)
            assert declared is not None, f"{slug}.{spec.key} is not in the quantities registry"
            assert spec.unit == declared.unit, f"{slug}.{spec.key} is in {spec.unit}, declared {declared.unit}"
            assert any(spec.formula is form for form in declared.formulas), (
                f"{slug}.{spec.key} computes with {spec.formula!r}, not one of the declared forms")


def test_a_formula_or_step_stating_a_unit_other_than_its_quantitys_fails():
    """Issue 29 item 5: key, unit and label come from the quantity; a step may override the label only."""
    bytes_per_token = (Var("layers", "1", "layers"), Var("kv_bytes", "B", "bytes per value"))
    with pytest.raises(FormulaUnitError, match="kv_bytes_per_token states GiB; its quantity is in B"):
        Formula("kv_bytes_per_token", bytes_per_token, lambda s: s["layers"] * s["kv_bytes"], unit="GiB")
    with pytest.raises(FormulaUnitError, match="names no quantity"):
        Formula("no_such_quantity", bytes_per_token, lambda s: s["layers"] * s["kv_bytes"])
    taken = Formula("kv_bytes_per_token", bytes_per_token, lambda s: s["layers"] * s["kv_bytes"])
    assert (taken.unit, taken.label) == ("B", "KV cache per token")
    step = StepSpec(taken)
    assert (step.key, step.unit, step.label) == ("kv_bytes_per_token", "B", "KV cache per token")
    assert StepSpec(taken, label="KV cache per token (every layer)").label == "KV cache per token (every layer)"
    with pytest.raises(TypeError):
        StepSpec("kv_bytes_per_token", "KV cache per token", taken)  # the old shape: key and label typed again


def test_no_formula_in_the_code_states_its_quantitys_unit_or_label_again():
    """A ``Formula(...)`` call states ``unit=`` only for a key that is no quantity, and ``label=`` only to name
    its form differently from the quantity; a ``StepSpec(...)``'s ``label=`` differs from its quantity's."""
    found = []
    for path in sorted((ROOT / "calculators").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("Formula", "StepSpec")):
                continue
            words = {kw.arg: kw.value for kw in node.keywords}
            key = node.args[0] if node.func.id == "Formula" and node.args else None
            declared = QUANTITIES.get(key.value) if isinstance(key, ast.Constant) else None
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if node.func.id == "Formula" and "unit" in words and (declared is not None or key is None):
                found.append(f"{where} states the unit of a quantity")
            label = words.get("label")
            if declared is not None and isinstance(label, ast.Constant) and label.value == declared.label:
                found.append(f"{where} repeats the quantity's label")
    assert found == []


def test_one_formula_never_serves_two_keys_and_keys_name_their_formulas():
    owner = {}
    for key, declared in QUANTITIES.items():
        assert declared.bounds in ("fraction", "flag", "positive", "nonnegative", "any")
        for form in declared.formulas:
            assert form.key == key, f"{form!r} is declared for {key}"
            assert form.unit == declared.unit
            assert owner.setdefault(id(form), key) == key, f"{form!r} serves {owner[id(form)]} and {key}"


def test_aliases_point_at_declared_quantities_and_are_not_keys_themselves():
    for old, new in list(ALIASES.items()) + [(old, new) for (_, old), new in FAMILY_ALIASES.items()]:
        assert new in QUANTITIES
    assert all(old not in QUANTITIES for old in ALIASES)
    assert canonical_key("weight_gib") == "weights_gib"
    assert canonical_key("bytes_per_step", "slo") == "bytes_per_step_gib"
    assert canonical_key("bytes_per_step", "decode") == "bytes_per_step"  # decode's is in bytes


@pytest.mark.parametrize(("model", "params"), [
    ({"model": "llama-3.1-8b"}, 8_030_261_248),
    ({"model": "mistral-7b-v0.1"}, 7_241_732_096),
    ({"config": PASTED}, PASTED_PARAMS),
])
def test_families_that_share_a_quantity_agree_on_it(model, params):
    """Weights in GiB at bf16 are params × 2 ÷ 2^30 in the weights family, the ladder, slo and tp alike."""
    stack = {**model, "gpu": "h100-sxm5-80gb", "weights_dtype": "bf16"}
    expected = params * 2 / GIB
    for slug in ("weights", "ladder", "slo", "tp"):
        result = _run(slug, stack)
        assert result.values["weights_gib"] == pytest.approx(expected, rel=1e-12), slug
    assert FAMILIES["params"].run(dict(model)).values["total_params"] == params


@pytest.mark.parametrize(("model", "per_token"), [
    ({"model": "llama-3.1-8b"}, 2 * 32 * 8 * 128 * 2),       # 131,072 B
    ({"model": "llama-3.1-70b"}, 2 * 80 * 8 * 128 * 2),      # 327,680 B
    ({"config": PASTED}, 2 * 24 * 8 * 80 * 2),               # 61,440 B
])
def test_kv_per_token_is_one_quantity_everywhere(model, per_token):
    for slug in ("kv", "ladder", "tp", "prefix", "disagg", "preempt"):
        result = _run(slug, {**model, "gpu": "h200-sxm-141gb"})
        assert result.values["kv_bytes_per_token"] == per_token, slug


@pytest.mark.parametrize("gpu", ["h100-sxm5-80gb", "a100-sxm4-80gb"])
def test_the_ridge_point_is_one_formula_in_roofline_and_moe(gpu):
    roofline = FAMILIES["roofline"].run({"model": "llama-3.1-8b", "gpu": gpu}).values["ridge_flop_per_byte"]
    moe = FAMILIES["moe"].run({"model": "mixtral-8x7b-v0.1", "gpu": gpu}).values["ridge_flop_per_byte"]
    card = default_catalog().gpu(gpu)
    assert roofline == moe == pytest.approx(card.dense_tflops["bf16"] * 1e12 / (card.bandwidth_gb_s * 1e9))


def test_older_keys_still_read_and_grade_under_the_key_the_answers_used():
    weights = FAMILIES["weights"].run({"model": "llama-3.1-8b"})
    assert weights.values["weight_gib"] == weights.values["weights_gib"] == pytest.approx(16_060_522_496 / GIB)
    assert weights.step("weight_gib").key == "weights_gib"
    graded = grade(weights, {"total_params": "8030261248", "weight_bytes": "16060522496", "weight_gib": "14.96"})
    assert [(s.key, s.verdict) for s in graded.steps] == [
        ("total_params", "correct"), ("weight_bytes", "correct"), ("weight_gib", "correct")]
    slo = FAMILIES["slo"].run({})
    assert slo.values["bytes_per_step"] == slo.values["bytes_per_step_gib"]
    by_old = {s.key: s.verdict for s in grade(slo, {"bytes_per_step": f"{slo.values['bytes_per_step_gib']:.4f}"}).steps}
    assert by_old["bytes_per_step"] == "correct"

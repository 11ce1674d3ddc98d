"""A family is a record (docs/architecture.md §11, issue 16 item 5): its input labels, headline steps, chapter,
difficulty, roles and rubric live on the :class:`Family`, so a new family is one module.

Two guards: no module outside the family modules keeps a table keyed by family slug, and a family that exists
only in this test file gets a calculator page, report headlines, an API entry, a bank template and an offline
export entry without any other module knowing its name.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

from calculators.engine.errors import InputError
from calculators.engine.formula import Formula, Var
from calculators.engine.procedures import Family, InputSpec, StepSpec
from calculators.engine.procedures.base import Plan
from calculators.engine.procedures.inputs import GPU, catalog_or_default, clean_inputs
from calculators.families import FAMILIES, input_label
from calculators.forms import CalculatorForm
from tests import needs
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
SKIPPED_PARTS = {"tests", "migrations", ".venv", "node_modules", "procedures", "staticfiles", "var"}
# The quantity registry's older step keys of one family (§11 aliases) are the registry's, not the family's pages.
ALLOWED = {"calculators/engine/quantities.py:FAMILY_ALIASES"}


def _slug_keys(node: ast.Dict) -> set[str]:
    """The family slugs among a dict literal's keys (a ``(slug, …)`` tuple key counts as its slug)."""
    found = set()
    for key in node.keys:
        if isinstance(key, ast.Tuple) and key.elts:
            key = key.elts[0]
        if isinstance(key, ast.Constant) and key.value in FAMILIES:
            found.add(key.value)
    return found


def slug_tables(root: Path = ROOT) -> list[str]:
    """``path:line`` of every dict literal outside the family modules whose keys are mostly family slugs
    (two or more, at least half of them), or ``(slug, …)`` tuples. A payload that happens to have a ``params``
    and a ``moe`` field among a dozen is not a table by family."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if SKIPPED_PARTS & set(relative.parts):
            continue
        tree = ast.parse(path.read_text())
        allowed = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.AnnAssign | ast.Assign)
                   for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                   if f"{relative}:{getattr(target, 'id', '')}" in ALLOWED}
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and id(node) not in allowed:
                slugs = len(_slug_keys(node))
                tuple_keyed = any(isinstance(key, ast.Tuple) for key in node.keys)
                if (tuple_keyed and slugs) or (slugs >= 2 and 2 * slugs >= len(node.keys)):
                    found.append(f"{relative}:{node.lineno}")
    return found


def test_no_module_keeps_a_table_keyed_by_family_slug():
    assert slug_tables() == []


def test_the_guard_finds_a_slug_table(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pages.py").write_text('HEADLINES = {"kv": ("a",), "ladder": ("b",)}\n'
                                               'ADAPTERS = {("ladder", "avg_tokens"): 1}\nOTHER = {"kv": 1}\n')
    assert slug_tables(tmp_path) == ["pkg/pages.py:1", "pkg/pages.py:2"]


def test_every_family_input_carries_its_form_label():
    missing = [(slug, spec.name) for slug, family in FAMILIES.items() for spec in family.inputs if not spec.label]
    assert missing == []
    # The labels the pages showed before they moved onto the inputs.
    assert FAMILIES["ladder"].inputs[0].label == "Model"
    assert input_label("gpus") == "GPUs per replica" and input_label("alpha") == "Acceptance rate α"
    assert input_label("no_such_input") == "No such input"


def test_every_headline_is_a_step_of_its_family():
    for slug, family in FAMILIES.items():
        result = family.run({})
        keys = [step.key for step in result.steps]
        assert set(family.headline_keys(result)) <= set(keys), slug
    assert FAMILIES["ladder"].headlines == ("users_worst_case", "users_paged")


# --- a family that exists only here -----------------------------------------------------------------------

WIDGETS = InputSpec("widgets", "int", 4, "widgets per batch", minimum=1, maximum=100, label="Widgets per batch",
                    hint="How many widgets one batch carries.")
DOUBLED = Formula("doubled_widgets",
                  (Var("widgets", "1", "widgets per batch"),), lambda s: 2 * s["widgets"],
                  label="Doubled widgets (two per batch slot)", unit="1")
INPUTS = (GPU, WIDGETS)


def plan_widgets(raw, catalog=None):
    """Two widgets per batch slot (a made-up family for the record tests)."""
    inputs = clean_inputs(INPUTS, raw, catalog_or_default(catalog))
    return Plan("widgets", inputs, [StepSpec(DOUBLED, label="Doubled widgets (two per batch slot)")],
                {"widgets": inputs["widgets"]}, [])


WIDGET_FAMILY = Family("widgets", "Widget doubler", "Doubles the widgets of a batch.", INPUTS, plan_widgets,
                       generate=lambda rng, catalog: {"widgets": rng.randint(1, 100)}, order=999,
                       headlines=("doubled_widgets",), chapter="02-forward-pass", difficulty=1, roles=("manager",),
                       rubric=("Doubles the widgets", "Says why a slot holds two", "Keeps the count whole"))


@pytest.fixture
def widgets(monkeypatch):
    """The made-up family, registered for one test."""
    monkeypatch.setitem(FAMILIES, "widgets", WIDGET_FAMILY)
    return WIDGET_FAMILY


def test_a_new_family_gets_a_form_and_report_headlines_from_its_record(widgets):
    form = CalculatorForm(widgets, {"widgets": "21"})
    assert form.is_valid(), form.errors
    assert form["widgets"].label == "Widgets per batch"
    assert form.fields["widgets"].help_text == "How many widgets one batch carries."
    assert form.fields["gpu"].help_text.startswith("Memory is the total the driver reports")
    report = form.report()
    assert [(h.key, h.title, h.number) for h in report.headlines] == [("doubled_widgets", "Doubled widgets", "42")]
    assert report.headlines[0].detail == "two per batch slot"


@pytest.mark.django_db
def test_a_new_family_gets_a_page_and_an_api_entry(client, widgets):
    page = client.get("/calculators/widgets/", {"widgets": "21"})
    assert page.status_code == 200
    assert "Widgets per batch" in page.content.decode() and "42" in page.content.decode()
    api = client.get("/api/v1/calc/widgets/", {"widgets": "21"})
    assert api.status_code == 200
    assert [(step["key"], step["value"]) for step in api.json()["steps"]] == [("doubled_widgets", 42)]


@pytest.mark.django_db
def test_a_new_family_gets_a_bank_template_from_its_record(widgets):
    from drills.bank.problem_templates import sync_problem_templates
    from drills.models import BankItem
    from runbook.models import Chapter

    chapter = Chapter.objects.filter(slug="02-forward-pass").first()
    sync_problem_templates()
    item = BankItem.objects.get(slug="widgets")
    assert (item.difficulty, item.roles, item.family) == (1, ["manager"], "widgets")
    assert item.rubric == ["Doubles the widgets", "Says why a slot holds two", "Keeps the count whole"]
    assert item.chapter_id == (chapter.pk if chapter else None)


def test_a_new_family_gets_an_offline_export_entry_from_its_plans(widgets):
    from runbook.export.calculators import FormulaTable, assemble, build_programs, page_data

    table = FormulaTable()
    program = build_programs(["widgets"], table)["widgets"]
    assert program.verified >= 20  # its tables agree with its plans on random inputs
    assert program.given["widgets"]["deps"] == [] and "expr" in program.given["widgets"]["cells"][""]  # as typed
    steps, given = assemble(program, {"gpu": "h100-sxm5-80gb", "widgets": 21}, table)
    assert [step["key"] for step in steps] == ["doubled_widgets"] and given == {"widgets": 21.0}
    assert page_data({"widgets": program}, table)["headlines"]["widgets"] == ["doubled_widgets"]


def test_a_plan_is_data_resolved_without_evaluating():
    ladder = FAMILIES["ladder"]
    plan = ladder.plan({"context": 4096}, None)
    assert isinstance(plan, Plan) and plan.notes == []  # every ladder note reads a step: written by finish
    assert [spec.key for spec in plan.specs] == [step.key for step in ladder.run({"context": 4096}).steps]
    assert plan.given["context"] == 4096 and plan.inputs["context"] == 4096
    # disagg runs slo on the way: its plan is disagg's, slo's values already in its given numbers.
    disagg = FAMILIES["disagg"].plan({}, None)
    stack = {key: disagg.inputs[key] for key in ("model", "gpu", "gpus", "weights_dtype", "kv_dtype", "tpot_target_ms")}
    slo = FAMILIES["slo"].run({**stack, "context": disagg.inputs["prompt_tokens"] + disagg.inputs["output_tokens"]})
    assert disagg.family == "disagg" and disagg.given["decode_tok_s"] == slo.values["tokens_per_s"]


def test_the_offline_driver_words_nothing_and_names_no_unit_by_hand(widgets):
    """Number display rules and input messages are Python's, shipped as data: the driver has no copy."""
    from django.conf import settings

    from calculators.engine.units import format_quantity, quantity_rule
    from runbook.export.calculators import FormulaTable, build_programs, unit_payload

    driver = (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text()
    for hand_copy in ("Must be", "Enter a", "INTEGER_SYMBOLS", "MONEY_DIMENSIONS", '"memory"', '"token_rate"', "1e15"):
        assert hand_copy not in driver, hand_copy
    program = build_programs(["widgets"], FormulaTable())["widgets"]
    widgets_input = next(spec for spec in program.inputs if spec["name"] == "widgets")
    assert widgets_input["messages"] == {"required": "Enter a value (the reference stack uses 4).",
                                         "invalid": "Enter a whole number.", "min": "Must be at least 1.",
                                         "max": "Must be at most 100."}
    form = CalculatorForm(widgets, {"widgets": "101"})
    assert not form.is_valid() and form.errors["widgets"] == ["Must be at most 100."]
    # The rule the driver formats a quantity by is the one format_quantity applies.
    assert unit_payload("requests")["quantity"] == quantity_rule("requests")
    assert quantity_rule("requests")["style"] == "fixed" and format_quantity(1234.0, "requests") == "1,234 requests"
    assert quantity_rule("USD/h") == {**quantity_rule("USD/h"), "style": "money", "decimals": 2, "suffix": "/h"}


def test_checks_on_typed_numbers_ship_the_engines_own_sentence():
    """The sentence a procedure raises is the template its Offline check carries; the driver only fills it."""
    from django.conf import settings

    from calculators.engine.errors import InputError

    driver = (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text()
    cases = [("decode", {"efficiency_low": 0.9, "efficiency_high": 0.6}, "message",
              {"low": "efficiency_low", "low_value": 0.9, "high": "efficiency_high", "high_value": 0.6},
              "efficiency_low (0.9) must not be above efficiency_high (0.6)."),
             ("fleet", {"gpus_per_replica": 3, "gpus_per_node": 8}, "message", {"replica": 3, "node": 8},
              "A replica of 3 GPUs does not pack into nodes of 8: use a size that divides the node or fills whole "
              "nodes."),
             ("tp", {"gpus_per_node": 6}, "message", {"name": "gpus_per_node", "value": 6},
              "gpus_per_node must be a power of two (1, 2, 4, 8, 16 …), not 6."),
             # Llama-3.1-8B: 32 query heads, 8 K/V heads.
             ("kv", {"gpus": 3}, "heads_message", {"degree": 3, "heads": 32},
              "gpus = 3: a tensor-parallel degree of 3 does not divide the 32 query heads (num_attention_heads); "
              "choose a divisor of 32.")]
    for slug, raw, key, values, sentence in cases:
        with pytest.raises(InputError) as raised:
            FAMILIES[slug].run(raw)
        assert str(raised.value) == sentence
        templates = [check[key] for check in FAMILIES[slug].offline.checks if key in check]
        assert [template.format(**values) for template in templates] == [sentence]
    for words in ("must not be above", "does not pack into", "must be a power of two", "num_attention_heads",
                  "num_key_value_heads", "No bandwidth is on record"):
        assert words not in driver, words


def test_the_driver_refuses_with_the_engines_sentence(tmp_path):
    """offline-calculator.js, run by node on the exported programs, refuses what the engine refuses, word for word."""
    needs.tool("node")
    from django.conf import settings

    from calculators.engine.errors import InputError
    from runbook.export.calculators import FormulaTable, build_programs, formulas_script, page_data

    table = FormulaTable()
    programs = build_programs(["kv", "tp", "decode", "fleet"], table)
    cases = [("kv", {"gpus": 3}), ("tp", {"gpus_per_node": 6}), ("fleet", {"gpus_per_replica": 3}),
             ("decode", {"efficiency_low": 0.9, "efficiency_high": 0.6}), ("kv", {"gpus": 4})]
    raws, expected = [], []
    for slug, raw in cases:
        try:
            FAMILIES[slug].run(raw)
            expected.append(None)
        except InputError as exc:
            expected.append(str(exc))
        raws.append((slug, {**FAMILIES[slug].run({}).inputs, **raw}))
    script = tmp_path / "refuse.js"
    script.write_text(
        "global.window = {}; global.document = {readyState: 'complete', getElementById: () => null};\n"
        + (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text() + "\n" + formulas_script(table)
        + "\nconst data = " + json.dumps(page_data(programs, table)) + ";\nconst cases = " + json.dumps(raws)
        + ";\nprocess.stdout.write(JSON.stringify(cases.map(([slug, raw]) => { try { "
          "window.OfflineCompute(data.programs[slug], raw, data); return null; } "
          "catch (e) { return e.message; } })));\n")
    shown = json.loads(subprocess.run(["node", str(script)], capture_output=True, text=True, check=True).stdout)
    assert shown == expected
    assert expected[0].startswith("gpus = 3: a tensor-parallel degree of 3") and expected[-1] is None


def test_each_step_is_evaluated_once_and_the_notes_read_that_evaluation(monkeypatch):
    """A family's notes read the one evaluation (issue 29): running a family never evaluates its own steps on its
    own given numbers before :func:`evaluate` does (these families did, for their notes, and slo and pareto for
    their refusals, which now run inside the one evaluation, after max_batch and batch_tpot_limit). Other stacks'
    evaluations stay: the ladder's degree search, spec's search over γ."""
    import importlib

    from calculators.engine.procedures import base

    families = ("ladder", "formats", "lora", "moe", "rope", "spec", "slo", "pareto")
    seen: list[dict] = []

    def recording(specs, given, overrides=None):
        seen.append(dict(given))
        return base.evaluate_steps(specs, given, overrides)

    for slug in families:
        monkeypatch.setattr(importlib.import_module(f"calculators.engine.procedures.{slug}"), "evaluate_steps",
                            recording, raising=False)  # a module that no longer imports it cannot call it
    for slug in families:
        seen.clear()
        result = FAMILIES[slug].run({})
        assert result.notes and result.steps, slug
        assert result.given not in seen, slug
    with pytest.raises(InputError) as refused:  # the refusal still comes before a later step divides by 0
        FAMILIES["slo"].run({"tpot_target_ms": 0.01})
    assert refused.value.field == "tpot_target_ms" and "Not even one sequence" in str(refused.value)

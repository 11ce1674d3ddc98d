"""The pareto calculator embedded in an exported chapter redraws its chart and table offline: the driver's
curve (static/js/offline-calculator.js) in a real Chromium, against the page the site renders."""

import json
import re

import pytest
from django.conf import settings

from calculators.embed import render_embed
from calculators.families import FAMILIES
from calculators.report import build_report
from runbook.export.calculators import FormulaTable, build_programs, formulas_script, page_data
from runbook.export.pages import offline_calculators

pytestmark = pytest.mark.browser


def page_html() -> str:
    table = FormulaTable()
    programs = build_programs(["pareto"], table)
    driver = (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text()
    data = json.dumps(page_data(programs, table)).replace("</", "<\\/")
    return ("<!doctype html><html><head><meta charset='utf-8'></head><body>"
            + offline_calculators(render_embed("pareto", {}, "calc-pareto-1"))[0]
            + f"<script type='application/json' id='offline-calculators'>{data}</script>"
            + f"<script>{driver}</script><script>{formulas_script(table)}</script></body></html>")


def test_a_changed_input_redraws_the_curve_offline(new_context):
    page = new_context(java_script_enabled=True).new_page()
    page.set_content(page_html())
    page.wait_for_selector("aside.calc-embed[data-offline-ready='true']", state="attached")
    page.select_option("#calc-pareto-1-model", "llama-3.1-70b")
    page.fill("#calc-pareto-1-gpus", "8")
    page.fill("#calc-pareto-1-tpot_target_ms", "30")
    page.dispatch_event("#calc-pareto-1-tpot_target_ms", "change")
    page.wait_for_function("document.querySelector('aside.calc-embed').getAttribute('data-computed') >= '1'")
    rows = page.eval_on_selector_all(
        ".calc-curve-table tbody tr", "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent.trim()))")
    label = page.get_attribute(".calc-curve svg", "aria-label")
    texts = page.eval_on_selector_all(".calc-curve svg text", "nodes => nodes.map(n => n.textContent)")

    result = FAMILIES["pareto"].run({"model": "llama-3.1-70b", "gpus": 8, "tpot_target_ms": 30})
    expected = build_report(result, {}).curve.rows
    assert rows == [[str(r.gpus), f"{r.batch:,}", r.step, r.per_user, r.per_card, "yes" if r.meets else "no", r.marks]
                    for r in expected]
    assert "2 GPUs, 4 GPUs, 8 GPUs of H100 SXM5 80GB" in label and "TPOT target of 30 ms" in label
    assert "target's point: batch 128, 8 GPUs" in texts
    refused = page.eval_on_selector_all(".calc-curve li", "items => items.map(i => i.textContent)")
    assert refused and re.match(r"No curve at 1 GPU: a replica of 1 × H100 SXM5 80GB holds no sequence", refused[0])

"""The exported runbook works from a USB stick (issue 12): ``file://`` pages with the network cut off.

Every calculator embedded in every exported chapter is driven over a grid of inputs — its preset, each
choice and number varied in turn (models with MoE, MLA and sliding-window attention, other cards,
precisions, contexts, TP degrees), seeded random combinations and the ladder's does-not-fit case — by
filling its fields, and every step value, worked substitution, headline and alert the page shows is
compared with the engine's own result for the same inputs (``CalculatorForm``, which runs
``family.run`` exactly as ``calc --json`` does, and formats as the site's pages do). A figure is
stepped. Not one request may leave ``file://`` and not one console error may occur.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from django.db import transaction

from calculators.families import FAMILIES
from calculators.forms import CalculatorForm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Choices worth trying wherever a select offers them: MoE, MLA, sliding window, a small card, no fp8.
PREFERRED = {"model": ("mixtral-8x7b-v0.1", "deepseek-v3", "mistral-7b-v0.1", "llama-3.1-70b", "falcon-7b"),
             "gpu": ("a100-sxm4-80gb", "l4", "mi300x", "b200"),
             "gpus": ("2", "4", "8")}
# Values for optional numbers left blank by the preset (by input name), else a multiple of the minimum.
TYPICAL = {"weights_bits": "4.5", "params_b": "405", "proposed_gpus": "4", "measured_tok_s": "80",
           "original_context": "8192", "scaling_factor": "4", "budget_gib": "2.5"}
RANDOM_POINTS = 6
MIN_COMPARED_PER_EMBED = 8


@pytest.fixture(scope="module")
def exported(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """The runbook exported once for the module; the content loaded for it is rolled back after."""
    from django.conf import settings

    from runbook.export.pages import export_runbook
    from runbook.loading import load_content

    out = tmp_path_factory.mktemp("offline")
    with django_db_blocker.unblock():
        with transaction.atomic():
            load_content(settings.BASE_DIR / "fixtures")
            export_runbook(out, "https://prep.example.com")
            transaction.set_rollback(True)
    return out


@pytest.fixture
def offline_page(new_context):
    """A page whose context is offline and aborts any request not to ``file://``; records what leaked."""
    context = new_context()
    context.set_offline(True)
    leaked, errors = [], []

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            leaked.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: None if request.url.startswith("file://") else leaked.append(request.url))
    return page, leaked, errors


FIELDS_JS = """aside => Array.from(aside.querySelector('form').elements)
  .filter(el => el.name && el.type !== 'hidden' && (el.tagName === 'SELECT' || el.tagName === 'INPUT'))
  .map(el => ({name: el.name, tag: el.tagName, value: el.value, min: el.min, max: el.max, step: el.step,
               options: el.tagName === 'SELECT' ? Array.from(el.options).map(o => o.value) : []}))"""

SET_JS = """([aside, values]) => {
  const form = aside.querySelector('form');
  for (const [name, value] of Object.entries(values)) form.elements.namedItem(name).value = value;
  form.dispatchEvent(new Event('change', {bubbles: true}));
}"""

READ_JS = """aside => {
  const results = aside.querySelector('.calc-embed-results');
  const alerts = Array.from(results.querySelectorAll('.alert-danger'));
  const misfit = alerts.find(a => a.textContent.trim().startsWith('Does not fit.'));
  return {
    errors: alerts.filter(a => a !== misfit).map(a => a.textContent.trim()),
    alert: misfit ? misfit.textContent.trim().replace(/^Does not fit\\.\\s*/, '') : '',
    steps: Array.from(results.querySelectorAll('li.calc-embed-step')).map(li => ({
      key: li.dataset.step, value: Number(li.dataset.value),
      display: li.querySelector('.calc-embed-step-value').firstChild.textContent,
      worked: li.querySelector('.calc-embed-step-worked').textContent})),
    headlines: Array.from(results.querySelectorAll('.calc-embed-headline')).map(h => ({
      key: h.dataset.headline, number: h.querySelector('.calc-embed-headline-number .tabular-nums').textContent,
      detail: (h.querySelector('.calc-embed-headline-detail') || {}).textContent || ''})),
  };
}"""


def _number(text: str, factor: float, is_int: bool, low: str, high: str) -> str | None:
    value = float(text) * factor
    if is_int:
        value = round(value)
    if (low and value < float(low)) or (high and value > float(high)) or value <= 0:
        return None
    return str(int(value)) if is_int else repr(round(value, 6))


def grid(family: str, fields: list[dict], seed: str) -> list[dict[str, str]]:
    """Input points for one embed: its preset, each field varied alone, random mixes, special cases."""
    preset = {field["name"]: field["value"] for field in fields}
    rng = random.Random(seed)
    points = [dict(preset)]
    for field in fields:
        name = field["name"]
        if field["tag"] == "SELECT":
            others = [o for o in field["options"] if o != field["value"]]
            liked = [o for o in PREFERRED.get(name, ()) if o in others]
            picks = liked[:3] + rng.sample(others, min(2, len(others)))
            points += [{**preset, name: pick} for pick in dict.fromkeys(picks)]
        else:
            is_int = field["step"] == "1"
            if field["value"] == "":
                typical = TYPICAL.get(name) or str(max(1, float(field["min"] or 1)) * 2)
                points.append({**preset, name: typical})
                continue
            for factor in (2, 0.5, 1.3):
                value = _number(field["value"], factor, is_int, field["min"], field["max"])
                if value is not None and value != field["value"]:
                    points.append({**preset, name: value})
            if name == "gpus":
                points += [{**preset, name: gpus} for gpus in PREFERRED["gpus"] if gpus != field["value"]]
    for _ in range(RANDOM_POINTS):
        point = dict(preset)
        for field in fields:
            if field["tag"] == "SELECT":
                point[field["name"]] = rng.choice(field["options"])
            elif field["value"] != "" and rng.random() < 0.6:
                value = _number(field["value"], rng.choice((0.25, 0.5, 0.8, 1.5, 2, 3)), field["step"] == "1",
                                field["min"], field["max"])
                if value is not None:
                    point[field["name"]] = value
        points.append(point)
    if family == "ladder":  # does not fit: 70B on one 24 GB card at 131k tokens
        points.append({**preset, "model": "llama-3.1-70b", "gpu": "l4", "context": "131072", "gpus": "1"})
        points.append({**preset, "model": "llama-3.1-8b", "gpu": "l4", "context": "131072", "gpus": "1"})
    return points


def expected(family: str, point: dict[str, str]):
    """The site's report for these typed inputs (``None`` and the messages when the engine rejects them)."""
    form = CalculatorForm(FAMILIES[family], point)
    form.is_valid()
    report = form.report()
    if report is None:
        messages = [str(e) for errors in form.errors.values() for e in errors]
        return None, messages
    return report, []


def compare(family: str, point: dict, shown: dict, report) -> None:
    where = f"{family} at {point}"
    assert not shown["errors"], f"{where}: the page refused what the engine computes: {shown['errors']}"
    assert [s["key"] for s in shown["steps"]] == [row.key for row in report.rows], where
    for step, row in zip(shown["steps"], report.rows):
        assert math.isclose(step["value"], row.step.value, rel_tol=1e-9, abs_tol=1e-12), \
            f"{where}: {row.key} = {step['value']} offline, {row.step.value} in the engine"
        assert step["display"] == row.display, f"{where}: {row.key} shows {step['display']!r}, not {row.display!r}"
        assert step["worked"] == row.step.substituted, f"{where}: {row.key} worked {step['worked']!r}"
    assert [(h["key"], h["number"]) for h in shown["headlines"]] == [(h.key, h.number) for h in report.headlines], where
    assert [h["detail"] for h in shown["headlines"]] == [h.detail for h in report.headlines], where
    assert shown["alert"] == report.alert, where


def test_every_calculator_agrees_with_the_engine_offline(exported, offline_page):
    page, leaked, errors = offline_page
    chapters = sorted(path for path in exported.glob("*.html") if path.name != "index.html")
    assert len(chapters) == 16
    embeds_seen, compared, rejected_both, python_only = 0, 0, 0, []
    families_seen = set()
    for path in chapters:
        page.goto(path.as_uri())
        asides = page.query_selector_all("aside.calc-embed[data-family]")
        for index, aside in enumerate(asides):
            family = aside.get_attribute("data-family")
            assert aside.get_attribute("data-offline-ready") == "true", f"{path.name}: {family} did not start"
            embeds_seen += 1
            families_seen.add(family)
            fields = aside.evaluate(FIELDS_JS)
            compared_here = 0
            for point in grid(family, fields, f"{path.name}-{index}"):
                page.evaluate(SET_JS, [aside, point])
                shown = aside.evaluate(READ_JS)
                report, messages = expected(family, point)
                if report is None:
                    if shown["errors"]:
                        rejected_both += 1
                        # The page gives the engine's own reason.
                        assert any(m in text for m in messages for text in shown["errors"]), \
                            (family, point, messages, shown["errors"])
                    else:
                        python_only.append((family, point, messages))
                    continue
                compare(family, point, shown, report)
                compared += 1
                compared_here += 1
            assert compared_here >= MIN_COMPARED_PER_EMBED, f"{path.name}: only {compared_here} points for {family}"
    # disagg sizes its decode pool by running the slo family's batch search per input: no chapter embeds it
    # offline (the page links to the site's calculator instead).
    online_only = {"disagg"}
    exportable = {slug for slug, family in FAMILIES.items() if family.offline is not None}
    assert families_seen == exportable - online_only, \
        f"families without an offline calculator: {exportable - online_only - families_seen}"
    # The simulated drills are left out on purpose, and the index says which and why.
    simulated = {"knee", "preemptrate", "ttftp99", "tpotbatch"}
    assert simulated <= set(FAMILIES) - exportable
    page.goto((exported / "index.html").as_uri())
    note = page.locator(".rb-export-left-out")
    assert set(note.get_attribute("data-left-out").split()) == set(FAMILIES) - exportable
    assert all(FAMILIES[slug].title in note.text_content() for slug in simulated)
    assert "simulation" in note.text_content() and "manage.py simulate" in note.text_content()
    from django.conf import settings

    sources = (settings.BASE_DIR / "fixtures" / "runbook").glob("*.md")
    assert embeds_seen == sum(source.read_text().count("{{calculator ") for source in sources)
    assert not python_only, python_only[:5]  # the page never computes what the engine refuses
    print(f"\noffline calculators: {embeds_seen} embeds, {compared} points agree, {rejected_both} refused by both, "
          f"{len(python_only)} refused only by the engine")
    assert not leaked, leaked
    assert not errors, errors


def test_refusals_read_as_on_the_site(exported, offline_page):
    """A choice the engine refuses (fp8 on an A100, which has no fp8 tensor cores) shows the engine's
    sentence; a number out of bounds shows the form's."""
    page, leaked, errors = offline_page
    page.goto((exported / "04-gpu-roofline.html").as_uri())
    aside = page.query_selector('aside.calc-embed[data-family="roofline"]')
    point = {"gpu": "a100-sxm4-80gb", "precision": "fp8"}
    page.evaluate(SET_JS, [aside, point])
    report, messages = expected("roofline", {**aside.evaluate(
        "a => Object.fromEntries(new FormData(a.querySelector('form')))"), **point})
    assert report is None and messages
    shown = aside.evaluate(READ_JS)
    assert shown["steps"] == [] and any(messages[0] in text for text in shown["errors"]), (messages, shown)
    page.evaluate(SET_JS, [aside, {"precision": "bf16", "batch": "0"}])
    assert "Batch" in aside.evaluate(READ_JS)["errors"][0] or "at least 1" in aside.evaluate(READ_JS)["errors"][0]
    assert not leaked and not errors, (leaked, errors)


def test_a_box_offline_refuses_what_it_cannot_read_and_says_what_it_read(exported, offline_page):
    """The engine's reader is not in an exported page: "8k" is refused with what was typed and what a box takes
    there, never half-read as 8; a fraction in a whole-number box gets the site's sentence."""
    page, leaked, errors = offline_page
    page.goto((exported / "04-gpu-roofline.html").as_uri())
    aside = page.query_selector('aside.calc-embed[data-family="roofline"]')
    page.evaluate(SET_JS, [aside, {"batch": "8k"}])
    shown = aside.evaluate(READ_JS)
    assert shown["steps"] == [] and "'8k' is not a number in digits; offline, a box reads digits only" in \
        shown["errors"][0], shown
    page.evaluate(SET_JS, [aside, {"batch": "1.5"}])
    assert "Enter a whole number." in aside.evaluate(READ_JS)["errors"][0]  # as the site says it
    assert not leaked and not errors, (leaked, errors)


def test_figure_steps_and_nothing_is_fetched(exported, offline_page):
    page, leaked, errors = offline_page
    page.goto((exported / "05-prefill-and-decode.html").as_uri())
    figure = page.locator("figure.rb-figure.is-enhanced").first
    counter = figure.locator(".rb-figure-counter")
    first = counter.text_content()
    assert first.startswith("Step 1 of ")
    figure.locator('[data-figure-action="next"]').click()
    assert counter.text_content() == "Step 2 of " + first.split(" of ")[1]
    assert figure.locator(".rb-figure-frame.is-current").count() == 1
    # Chapter links go to the sibling files, and the next one opens offline too.
    page.locator("a.rb-pager-next").click()
    assert page.url.endswith("06-kv-cache.html")
    assert page.locator("math").count() > 0
    assert not leaked, leaked
    assert not errors, errors

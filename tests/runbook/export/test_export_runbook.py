"""``manage.py export_runbook OUT_DIR`` (issue 12): self-contained chapter files, checked without a browser.

The browser half (the calculators driven offline) is ``tests/e2e/test_export_offline.py``.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from runbook.export import tables as export_tables
from runbook.export.calculators import ExportError, FormulaTable, build_programs
from runbook.loading import load_content
from tests import needs

SITE = "https://prep.example.com"
SIBLING = re.compile(r"^(?P<file>[-\w]+\.html)(#[-\w]*)?$")


class Collector(HTMLParser):
    """Every start tag with its attributes, and the text of each <style> and <script>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.styles: list[str] = []
        self.scripts: list[str] = []
        self._inside: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._inside = tag if tag in ("style", "script") else None

    def handle_endtag(self, tag):
        self._inside = None

    def handle_data(self, data):
        if self._inside == "style":
            self.styles.append(data)
        elif self._inside == "script":
            self.scripts.append(data)


@pytest.fixture(scope="module")
def exported(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """The runbook exported once through the command; the content loaded for it is rolled back."""
    from django.db import transaction

    out = tmp_path_factory.mktemp("export")
    with django_db_blocker.unblock():
        with transaction.atomic():
            load_content(settings.BASE_DIR / "fixtures")
            call_command("export_runbook", str(out), "--site-url", SITE, stdout=open("/dev/null", "w"))
            transaction.set_rollback(True)
    return out


def parsed(path: Path) -> Collector:
    collector = Collector()
    collector.feed(path.read_text(encoding="utf-8"))
    return collector


def test_writes_sixteen_chapters_and_an_index(exported):
    names = sorted(p.name for p in exported.iterdir())
    assert len(names) == 17 and "index.html" in names
    assert "06-kv-cache.html" in names and "15-production.html" in names
    index = parsed(exported / "index.html")
    linked = [attrs["href"] for tag, attrs in index.tags if tag == "a" and attrs.get("href", "").endswith(".html")]
    assert sorted(linked) == sorted(n for n in names if n != "index.html")


def test_the_simulated_drills_are_left_out_and_the_pages_say_why(exported):
    """The four simulated drills (offline=None on their records) get no calculator; the index names all four in
    one sentence, and each chapter that teaches one names its own."""
    def note(name: str) -> str:
        found = re.search(r'<p class="rb-export-left-out[^"]*" data-left-out="([^"]*)">(.*?)</p>',
                          (exported / name).read_text(encoding="utf-8"), re.S)
        return found and (found[1], re.sub(r"<[^>]+>", "", found[2]))

    slugs, sentence = note("index.html")
    assert sorted(slugs.split()) == ["knee", "preemptrate", "tpotbatch", "ttftp99"]
    assert sentence == ("Not in this offline copy: “Predict the knee”, “p99 TTFT at this rate”, “The batch where "
                        "TPOT crosses the target”, “Where preemption begins” — their numbers come from a simulation "
                        "of the serving fleet, which a page cannot run, so use the site or manage.py simulate.")
    assert note("14-capacity-planning.html")[0] == "knee tpotbatch"
    assert note("15-production.html")[0] == "ttftp99 preemptrate"
    assert note("06-kv-cache.html") is None
    with pytest.raises(ExportError, match="knee: its numbers come from the serving simulator"):
        build_programs(["knee"], FormulaTable())


@pytest.mark.parametrize("name", ["00-map.html", "04-gpu-roofline.html", "06-kv-cache.html", "11-multi-gpu.html",
                                  "14-capacity-planning.html", "index.html"])
def test_a_file_needs_nothing_outside_itself(exported, name):
    page = parsed(exported / name)
    files = {p.name for p in exported.iterdir()}
    anchors = {attrs["id"] for _, attrs in page.tags if "id" in attrs}
    for tag, attrs in page.tags:
        assert not (tag == "link" and "stylesheet" in attrs.get("rel", "")), "a linked stylesheet"
        assert not (tag == "script" and "src" in attrs), f"an external script {attrs['src']}"
        for attribute in ("src", "srcset", "poster", "data"):
            if attribute in attrs and tag != "object":
                assert attrs[attribute].startswith("data:"), f"<{tag} {attribute}={attrs[attribute]!r}>"
        assert not any(name.startswith("hx-") for name in attrs), f"htmx left on <{tag}>"
        if tag == "a" and "href" in attrs:
            href = attrs["href"]
            sibling = SIBLING.match(href)
            if href.startswith("#"):
                assert href[1:] in anchors, f"broken anchor {href}"
            elif sibling:
                assert sibling["file"] in files, f"a link to a file not exported: {href}"
            else:
                assert href.startswith(("https://", "http://", "mailto:")), f"a relative link {href!r}"
                assert attrs.get("data-online") == "true", f"an online link not marked: {href}"
        if tag == "form":
            assert attrs["action"].startswith(SITE), attrs["action"]
    css = "\n".join(page.styles)
    assert len(css) > 100_000  # Bootstrap and app.css, inline
    assert "@media print" in css
    assert "@import" not in css
    for url in re.findall(r"url\(\s*['\"]?([^'\")]*)", css):
        assert url.startswith("data:"), f"CSS fetches {url}"


def test_chapter_links_and_site_links(exported):
    text = (exported / "05-prefill-and-decode.html").read_text()
    assert 'href="06-kv-cache.html" rel="next"' in text
    assert 'href="04-gpu-roofline.html" rel="prev"' in text
    assert f'href="{SITE}/glossary/#' in text  # glossary terms are on the site


def test_mathematics_is_mathml_and_calculators_are_wired(exported):
    page = parsed(exported / "06-kv-cache.html")
    tags = [tag for tag, _ in page.tags]
    assert tags.count("math") >= 1
    assert sum(p.read_text().count("<math") for p in exported.glob("*.html")) >= 10
    text = (exported / "06-kv-cache.html").read_text()
    assert "\\frac" not in text and "$$" not in text  # no LaTeX left for a font-hungry renderer
    embeds = [attrs for tag, attrs in page.tags if tag == "aside" and "calc-embed" in attrs.get("class", "")]
    assert [attrs["data-family"] for attrs in embeds] == ["kv", "ladder"]
    data = next(attrs for tag, attrs in page.tags if attrs.get("id") == "offline-calculators")
    assert data["type"] == "application/json"
    payload = json.loads(re.search(r'id="offline-calculators" type="application/json">(.*?)</script>', text,
                                   re.S).group(1))
    assert set(payload["programs"]) == {"kv", "ladder"}
    assert payload["gpu_names"]["h100-sxm5-80gb"] == "H100 SXM5 80GB"
    # The formulas are the engine's own, printed to JavaScript: the KV formula, in written variables.
    assert "2*head_dim*kv_bytes*kv_heads*layers" in text
    assert "window.OfflineFormulas" in text and "R.wholeFloor" in text
    chapter_bytes = (exported / "06-kv-cache.html").stat().st_size
    assert 200_000 < chapter_bytes < 1_500_000


def test_the_command_needs_loaded_content(db, tmp_path):
    with pytest.raises(CommandError, match="load_content"):
        call_command("export_runbook", str(tmp_path / "out"))


def test_the_self_check_catches_a_missing_adapter(monkeypatch):
    """Without the ladder's min(avg_tokens, context) the tables would disagree with the engine for
    conversations longer than the limit: the export must refuse, not ship it."""
    ladder = FAMILIES["ladder"]
    adapters = {key: expr for key, expr in ladder.offline.adapters.items() if key != "avg_tokens"}
    monkeypatch.setitem(FAMILIES, "ladder", replace(ladder, offline=replace(ladder.offline, adapters=adapters)))
    with pytest.raises(ExportError, match="avg_tokens"):
        build_programs(["ladder"], FormulaTable())


def test_a_function_without_javascript_stops_the_export(monkeypatch):
    monkeypatch.setattr(export_tables, "JS_FUNCTIONS", {"ceiling": "R.wholeCeil", "floor": "R.wholeFloor"})
    with pytest.raises(ExportError, match="next_tp_degree"):
        build_programs(["tp"], FormulaTable())


def test_programs_resolve_every_family_like_the_engine():
    table = FormulaTable()
    programs = build_programs(["ladder", "slo", "tp", "lora", "rope"], table)
    ladder = programs["ladder"]
    assert ladder.given["card_mib"]["deps"] == ["gpu"]
    assert ladder.given["card_mib"]["cells"]["h100-sxm5-80gb"] == 81559
    # The widths follow the model and the precision together: gpt-oss at its native mxfp4 keeps its
    # non-expert weights at 16 bits and charges its experts' parameters (24,883,200 × 4.25 + 8,640 × 16) ÷
    # 24,891,840 bits on average (catalog.weight_widths), found by the export's pairwise probe.
    assert ladder.given["weight_bits"]["deps"] == ["model", "weights_dtype", "has:weights_bits"]
    assert ladder.given["weight_bits"]["cells"]["llama-3.1-8b|int4|-"] == 4.5
    assert "expr" in ladder.given["weight_bits"]["cells"]["llama-3.1-8b|int4|+"]  # a typed width is used as typed
    assert ladder.given["weight_bits"]["cells"]["gpt-oss-120b|mxfp4|-"] == 16
    assert ladder.given["expert_weight_bits"]["cells"]["gpt-oss-120b|mxfp4|-"] == pytest.approx(
        (24_883_200 * 4.25 + 8_640 * 16) / 24_891_840, rel=1e-15)
    assert ladder.given["expert_weight_bits"]["cells"]["gpt-oss-120b|fp8|-"] == 8
    assert ladder.steps["deps"] == ["model"]  # the paged formula follows the model's attention
    assert all(program.verified >= 20 for program in programs.values())
    # tp: a typed parameter count replaces the model's, in billions.
    tp_total = programs["tp"].given["total_params"]
    assert tp_total["deps"] == ["model", "has:params_b"]
    expression = table.sympy_expressions[tp_total["cells"]["llama-3.1-8b|+"]["expr"]]
    assert str(expression) == "1000000000*params_b"


def test_a_card_without_bf16_compute_is_tabulated_and_its_one_card_link_is_the_engines():
    """The MI455X is quoted at fp8/fp4 only: at the defaults (bf16 weights) the decode step refuses it, so its
    card-only numbers are read with one other choice changed (fp8 weights), not left as a refusal (the MI355X,
    quoted at bf16 since issue 36, computes at the defaults). A card with no link on record (none in the catalog
    since the MI355X's Infinity Fabric, issue 36: one built here) reads one rule in engine and export
    (step_model.LINK_GB_S_RULE): 1 GB/s on one card, refused on more."""
    from dataclasses import replace

    from calculators.engine.catalog import default_catalog
    from calculators.engine.step_model import LINK_GB_S_RULE, link_gb_s

    decode = build_programs(["decode"], FormulaTable())["decode"]
    assert decode.given["nvlink_domain_gpus"]["cells"]["mi455x"] == 72
    assert decode.given["peak_tflops"]["cells"]["mi455x|fp8"] == 20_000
    assert decode.given["nvlink_domain_gpus"]["cells"]["mi355x"] == 8
    assert decode.given["pcie_gb_s_per_direction"]["cells"]["mi355x"] == 64.0
    assert export_tables.DERIVED["link_gb_s"] is LINK_GB_S_RULE
    mi355x, h100 = default_catalog().gpu("mi355x"), default_catalog().gpu("h100-sxm5-80gb")
    unlinked = replace(mi355x, nvlink_domain_gpus=1, nvlink_gb_s_per_direction=None, pcie_gb_s_per_direction=None)
    assert link_gb_s(unlinked, 1) == 1.0 and link_gb_s(unlinked, 2) == 0.0  # no ring figure on record: refused
    assert link_gb_s(mi355x, 8) == 537.6
    assert link_gb_s(h100, 1) == 450.0 and link_gb_s(h100, 16) == 50.0  # its NVLink; two nodes: scale-out
    assert decode.verified >= 20




def test_the_driver_formats_numbers_exactly_like_the_engine(tmp_path):
    """The driver's format_number against the engine's on values of every size, ties included."""
    rng = random.Random(12)
    units = ["GiB", "GB", "B", "MiB", "tok", "tok/s", "FLOP/byte", "1", "users", "GPUs", "ms", "s", "USD/h",
             "USD/Mtok", "TB/s", "TFLOP/s", "FLOP", "bit", "nodes", "replicas", "GB/s", "USD", "requests", "req/s",
             "us", "tok/h", "GPU-h", "Mtok", "KiB", "h"]
    values = [0.0, 1.0, 0.125, 0.28125, 0.015625, 2.5, 1.0625, 1e15, 3.403e38, 999.995, 0.0078125, 53.0,
              -0.001, 1234567.891, 0.5, 1.5, 9.995, 0.0005, 123456789012.0, 2 ** -7, 6.02e-5]
    values += [rng.uniform(0, 2) * 10 ** rng.randint(-5, 16) for _ in range(300)]
    values += [rng.randint(0, 64) / 64 * 10 ** rng.randint(-1, 3) for _ in range(100)]
    from runbook.export.calculators import unit_payload

    spec_units = {u: unit_payload(u) for u in units}  # the table the export ships
    cases = [(v, u) for v in values for u in units]
    expected = [format_number(v, u) for v, u in cases]
    driver = (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text()
    script = tmp_path / "format.js"
    script.write_text(
        "global.window = {}; global.document = {readyState: 'complete', getElementById: () => null};\n"
        + driver + "\nconst cases = " + json.dumps(cases) + ";\nconst units = " + json.dumps(spec_units) + ";\n"
        + "process.stdout.write(JSON.stringify(cases.map(([v, u]) => "
          "window.OfflineFormat.formatNumber(v, u, units))));\n")
    shown = json.loads(subprocess.run([needs.tool("node"), str(script)], capture_output=True, text=True,
                                      check=True).stdout)
    mismatches = [(case, js, py) for case, js, py in zip(cases, shown, expected) if js != py]
    assert not mismatches, mismatches[:10]
    assert len(cases) > 9000


def test_a_database_never_migrated_gets_one_sentence_not_a_traceback(tmp_path):
    """A new user who runs the export before ``migrate``: exit 1 and what to run, on an empty SQLite file."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    done = subprocess.run([sys.executable, "manage.py", "export_runbook", str(tmp_path / "out")],
                          cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "The database has no runbook tables: run `manage.py migrate`, then `manage.py load_content`, first." \
        in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def test_the_driver_computes_the_serving_step_like_the_engine(tmp_path):
    """docs/architecture.md §12 in the offline driver: K/V replication and the ring's link (derived givens), tp's
    settled degree and slo's largest batch, run by node and compared with the procedures."""
    from calculators.families import FAMILIES as ALL
    from runbook.export.calculators import formulas_script, page_data

    table = FormulaTable()
    programs = build_programs(["decode", "ladder", "slo", "tp"], table)
    cases = [
        ("ladder", {"model": "llama-3.1-70b", "gpus": 16, "context": 131072}),
        ("decode", {"model": "mixtral-8x7b-v0.1", "gpus": 2, "batch": 16, "context": 2048}),
        ("decode", {"model": "llama-3.1-70b", "gpus": 16, "batch": 8, "context": 4096}),
        ("slo", {}),
        ("slo", {"model": "mixtral-8x7b-v0.1", "gpus": 4, "context": 4096}),
        ("tp", {"model": "llama-3.1-405b", "context": 131072}),
        ("tp", {"model": "llama-3.1-405b", "gpu": "a100-40gb"}),
    ]
    raws = []
    for slug, given in cases:
        inputs = ALL[slug].run(given).inputs  # the cleaned inputs, defaults applied, as the page sends them
        raws.append((slug, inputs))
    driver = (settings.BASE_DIR / "static" / "js" / "offline-calculator.js").read_text()
    script = tmp_path / "compute.js"
    script.write_text(
        "global.window = {}; global.document = {readyState: 'complete', getElementById: () => null};\n"
        + driver + "\n" + formulas_script(table) + "\nconst data = " + json.dumps(page_data(programs, table))
        + ";\nconst cases = " + json.dumps(raws) + ";\n"
        + "process.stdout.write(JSON.stringify(cases.map(([slug, raw]) => "
          "window.OfflineCompute(data.programs[slug], raw, data).values)));\n")
    shown = json.loads(subprocess.run([needs.tool("node"), str(script)], capture_output=True, text=True,
                                      check=True).stdout)
    for (slug, inputs), values in zip(raws, shown):
        expected = ALL[slug].run(inputs).values
        assert set(values) == set(expected), slug
        for key, value in expected.items():
            assert values[key] == pytest.approx(value, rel=1e-9), (slug, inputs, key)

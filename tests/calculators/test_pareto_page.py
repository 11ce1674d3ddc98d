"""The pareto calculator page: its chart (accessible SVG) and the table of every point, beside the steps."""

import html
import re
import xml.etree.ElementTree as ET

import pytest

from calculators.families import FAMILIES

pytestmark = pytest.mark.django_db
URL = "/calculators/pareto/"
SVG_NS = "{http://www.w3.org/2000/svg}"


def table_rows(page: str) -> list[list[str]]:
    body = page.split('class="table table-sm numbers mb-0 calc-curve-table"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>",
                                                                                         row, re.S)] for row in rows]


def chart(page: str) -> ET.Element:
    return ET.fromstring(re.search(r"<svg .*?</svg>", page, re.S).group(0))


def test_the_reference_stack_draws_four_degrees_and_rings_the_target_point(client):
    page = client.get(URL).content.decode()
    svg = chart(page)
    assert svg.get("role") == "img"
    label = svg.get("aria-label")
    assert "1 GPU, 2 GPUs, 4 GPUs, 8 GPUs" in label and "TPOT target of 50 ms" in label
    assert svg.find(f"{SVG_NS}title").text == label
    texts = [t.text for t in svg.iter(f"{SVG_NS}text")]
    assert "target's point: batch 32, 1 GPU" in texts and "best per card: batch 512, 8 GPUs" in texts
    rows = table_rows(page)
    curve = FAMILIES["pareto"].run({}).extra["curve"]
    assert len(rows) == sum(len(d["points"]) for d in curve["degrees"]) == 6 + 7 + 9 + 10
    marked = [row for row in rows if row[6]]
    # 8 cards at 512: 565,816,336,384 B ÷ 20.1 TB/s = 28.150 ms + 64 × (7,340,032 B ÷ 450 GB/s + 10 µs) = 1.684 ms.
    assert marked == [["1", "32", "20.07 ms", "49.8 tok/s", "1,594.6 tok/s", "yes", "the target's point"],
                      ["8", "512", "29.83 ms", "33.5 tok/s", "2,145.2 tok/s", "yes", "best per card"]]
    assert rows[0] == ["1", "1", "6.82 ms", "146.6 tok/s", "146.6 tok/s", "yes", ""]
    assert "<caption" in page and "Every point of the curve" in page
    assert page.count("<math") == 17  # the graded steps follow the chart


def test_the_htmx_partial_carries_the_chart_and_names_missing_degrees(htmx_client):
    page = htmx_client.get(URL, {"model": "llama-3.1-70b", "gpus": 8, "tpot_target_ms": 30}).content.decode()
    assert "<html" not in page and "calc-curve-table" in page
    assert {row[0] for row in table_rows(page)} == {"2", "4", "8"}
    assert "No curve at 1 GPU: a replica of 1 × H100 SXM5 80GB holds no sequence" in html.unescape(page)
    assert "target's point: batch 128, 8 GPUs" in page.replace("&#x27;", "'")


def test_a_refused_input_shows_beside_its_field_and_no_chart(client):
    page = client.get(URL, {"model": "llama-3.1-70b", "gpus": 1}).content.decode()
    assert "calc-curve-table" not in page
    error = re.search(r'<div id="error-gpus"[^>]*>(.*?)</div>', page, re.S).group(1)
    assert "holds no sequence" in html.unescape(error)


def test_a_card_without_a_driver_total_says_its_memory_is_the_marketed_figure(client):
    """MI355X: no rocm-smi capture is on record, so the KV limit uses 288 GB decimal and the page says so (the H100
    PCIe, once such a card, now has its nvidia-smi total: errata h100-pcie-driver-total)."""
    page = html.unescape(client.get(URL, {"gpu": "mi355x"}).content.decode())
    assert "Instinct MI355X: no driver-reported total is on record, so the marketed 288 GB HBM3E is read as " \
           "decimal GB." in page
    assert "the marketed figure in decimal GB" in page  # the GPU field's help
    v = FAMILIES["pareto"].run({"gpu": "mi355x"}).values
    # 288e9 ÷ 2^30 × 0.9 − 8,030,261,248 × 2 ÷ 2^30 − 3 = 241.3977 − 14.9575 − 3 = 223.4413 GiB.
    assert v["replica_kv_budget_gib"] == pytest.approx(288e9 / 2**30 * 0.9 - 8_030_261_248 * 2 / 2**30 - 3, rel=1e-12)


def test_calc_prints_the_curve_under_the_steps_and_json_keeps_the_contract():
    import json
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("calc", "pareto", "--model", "llama-3.1-70b", "--gpus", "8", "--tpot-target-ms", "30", stdout=out)
    lines = out.getvalue().splitlines()
    assert "curve (TPOT target 30 ms): gpus  batch  step  tok/s per user  tok/s per card" in lines
    marked = [line for line in lines if line.endswith("<- the target's point")]
    assert len(marked) == 1 and marked[0].split()[:2] == ["8", "128"] and "592.2 tok/s" in marked[0]
    out = StringIO()
    call_command("calc", "pareto", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert set(body) == {"family", "inputs", "steps", "notes"} and len(body["steps"]) == 17

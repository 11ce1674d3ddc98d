"""A sweep over closed-loop concurrencies (issue 31 leftover, item 2): ``concurrency_sweep`` in the simulator, the
command (``--concurrency-sweep``), the API and the /simulator/ page's second sweep axis.

By hand, at the stated convention (bandwidth efficiency 0.75, no step overhead) on the reference stack (Llama-3.1-8B
bf16 on one H100 SXM, 3.35 TB/s), 512-token prompts and 256-token outputs, a TPOT target of 8 ms: a decode step
reads the 16.06 GB of weights in 16.06 ÷ (3.35 × 0.75) = 6.39 ms plus each decoder's cache (131,072 B a token).
At 8 clients the caches add 8 × ~640 tokens × 131,072 B ÷ 2.51 TB/s ≈ 0.27 ms and the other clients' prefills
a little more: TPOT ≈ 7.1 ms, within 8 ms, so every request meets both targets. At 64 clients the caches alone add
≈ 2.1 ms: 8.5 ms > 8 ms before any prefill, so no request meets the TPOT target. The knee is 8 clients.
"""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command

from calculators.engine.errors import InputError
from calculators.sim.config import STATED_CONVENTION
from calculators.sim.run import simulate

REPO = Path(__file__).resolve().parents[2]
BASE = {**STATED_CONVENTION, "duration_s": 20, "tpot_slo_ms": 8}


def test_a_concurrency_sweep_runs_one_closed_loop_per_concurrency_and_finds_its_knee():
    result = simulate({**BASE, "concurrency_sweep": "64,1,8"})
    assert set(result) == {"inputs", "sweep", "knee_concurrency"}
    assert [s["concurrency"] for s in result["sweep"]] == [1, 8, 64]
    one, eight, many = result["sweep"]
    assert eight["tpot_ms"]["p99"] < 8 < 6.39 + 2.1 < many["tpot_ms"]["p50"]
    assert eight["goodput_req_s"] == pytest.approx(eight["arrived"] / 20) and many["goodput_req_s"] == 0
    assert result["knee_concurrency"] == 8
    # each point is the one closed loop of that many clients
    assert simulate({**BASE, "concurrency": 8})["summary"] == eight


@pytest.mark.parametrize("raw, words", [
    ({"concurrency_sweep": "0,4"}, "every concurrency must be a whole number from 1 to 16,384, not 0."),
    ({"concurrency_sweep": "2.5"}, "not 2.5."),
    ({"concurrency_sweep": "4", "sweep": "1,2"}, "give --concurrency-sweep alone."),
    ({"concurrency_sweep": "4", "concurrency": 2}, "give --concurrency-sweep alone."),
])
def test_bad_concurrency_sweeps_are_refused_naming_the_field(raw, words):
    with pytest.raises(InputError) as caught:
        simulate({**BASE, **raw})
    assert caught.value.field == "concurrency_sweep" and str(caught.value).endswith(words)


def test_the_command_takes_a_concurrency_sweep_and_exits_2_on_a_bad_one():
    out = io.StringIO()
    flags = [part for key, value in BASE.items() for part in ("--" + key.replace("_", "-"), f"{value:g}")]
    call_command("simulate", *flags, "--concurrency-sweep", "1,8,64", stdout=out)
    text = out.getvalue()
    assert "8 clients" in text and text.strip().endswith("knee: 8 clients")
    bad = subprocess.run([sys.executable, "manage.py", "simulate", "--concurrency-sweep", "0"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "concurrency_sweep: every concurrency must be a whole number from 1 to 16,384, not 0."


@pytest.mark.django_db
def test_the_api_sweeps_concurrencies_and_answers_bad_ones_with_a_400(client):
    cache.clear()
    body = client.get("/api/v1/simulate/", {**BASE, "concurrency_sweep": "1,8,64"}).json()
    assert [s["concurrency"] for s in body["sweep"]] == [1, 8, 64] and body["knee_concurrency"] == 8
    for query, field in (({"concurrency_sweep": "0"}, "concurrency_sweep"), ({"concurrency": "0"}, "concurrency"),
                         ({"concurrency_sweep": "4", "think_time_s": "-1"}, "think_time_s")):
        response = client.get("/api/v1/simulate/", {"duration_s": 5, **query})
        assert response.status_code == 400 and response.json()["field"] == field


def _walk(client, query: str) -> str:
    """The page requested until every point of its sweep is simulated (one per request, embedded)."""
    for _ in range(10):
        page = client.get(query).content.decode()
        if "simulator-data" in page or "alert-danger" in page:
            return page
    raise AssertionError("the sweep did not finish")


@pytest.mark.django_db
def test_the_page_sweeps_concurrent_clients(client):
    cache.clear()
    flags = "&".join(f"{key}={value:g}" for key, value in BASE.items())
    page = client.get(f"/simulator/?sweep_axis=concurrency&concurrency_sweep=1,8,64&{flags}").content.decode()
    assert "Simulated 1 of 3 concurrencies" in page and "Simulate the next concurrency" in page
    page = _walk(client, f"/simulator/?sweep_axis=concurrency&concurrency_sweep=1,8,64&{flags}")
    data = json.loads(page.split('id="simulator-data" type="application/json">', 1)[1].split("</script>")[0])
    assert data["rates"] == [1, 8, 64] and data["knee"] == 8 and data["x_label"] == "concurrent clients"
    assert data["offered"][1] == pytest.approx(data["goodput"][1])  # at 8 clients every request sent meets both
    assert "Latency percentiles against the concurrency" in page and "<th scope=\"col\">Clients</th>" in page
    assert "over time at 64 clients" in page


@pytest.mark.django_db
@pytest.mark.parametrize("query, field, words", [
    ("concurrency_sweep=0,4", "concurrency_sweep", "every concurrency must be a whole number from 1 to 16,384, not 0."),
    ("think_time_s=-1", "think_time_s", "at least 0"),
])
def test_the_page_shows_a_bad_closed_loop_input_beside_its_field(client, query, field, words):
    cache.clear()
    page = client.get(f"/simulator/?sweep_axis=concurrency&{query}")
    form = page.context["form"]
    assert form.errors[field] and words in form.errors[field][0]
    assert "simulator-data" not in page.content.decode()

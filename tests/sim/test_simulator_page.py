"""The /simulator/ page (one rate per request, embedded) and the /api/v1/simulate/ JSON API.

Values: the reference stack at 10 req/s of 512/256-token requests meets both default targets
(TTFT ≤ 500 ms, TPOT ≤ 50 ms), 60 req/s is far above its capacity (about 28 req/s), so a sweep
of 10 and 60 has its knee at 10.
"""

import html
import json
import re

import pytest
from django.core.cache import cache

from calculators import simulation
from calculators.sim.config import clean_sim_inputs

pytestmark = pytest.mark.django_db

QUERY = "/simulator/?sweep=10,60&duration_s=20"


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def test_the_form_alone_runs_nothing(client):
    page = client.get("/simulator/").content.decode()
    assert "Choose a workload" in page and 'name="sweep"' in page and "simulator-data" not in page


def test_each_request_simulates_one_rate_until_the_sweep_is_done(client):
    first = client.get(QUERY).content.decode()
    assert "Simulated 1 of 2 rates" in first and 'hx-trigger="load delay:20ms"' in first
    assert "Simulate the next rate" in first  # the link that walks the sweep without JavaScript
    second = client.get(QUERY, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in second and 'id="sweep"' in second
    assert "simulator-data" in second and "hx-trigger" not in second
    data = json.loads(second.split('id="simulator-data" type="application/json">', 1)[1].split("</script>")[0])
    assert data["rates"] == [10, 60] and data["knee"] == 10
    assert len(data["series"]["t_s"]) == 120 and data["targets"] == {"ttft_ms": 500, "tpot_ms": 50}
    for table in ("table-latency", "table-goodput", "table-time"):
        assert f'id="{table}"' in second
    assert "at 60 req/s" in second  # the highest rate's KV use and preemptions over time
    # The page states the window rule goodput is computed by (a new user read goodput above throughput as a
    # bug under the old sentence, which said an unfinished request does not count).
    assert "goodput can exceed throughput: by at most the requests in flight at the end" in second
    assert "does not count" not in second


def test_results_are_cached_by_the_inputs_hash(client):
    inputs = clean_sim_inputs({"sweep": "10,60", "duration_s": 20})
    client.get(QUERY)
    client.get(QUERY)
    assert simulation.sweep_status(inputs).complete
    again = clean_sim_inputs({"sweep": "60,10", "duration_s": 20.0})  # the same inputs, written otherwise
    assert simulation.point_key(inputs, 10) == simulation.point_key(again, 10)
    assert simulation.point_key(inputs, 10) != simulation.point_key({**inputs, "seed": 1}, 10)
    page = client.get(QUERY + "&show=10").content.decode()
    assert "at 10 req/s" in page


def test_bad_input_is_shown_beside_its_field(client):
    page = client.get("/simulator/?sweep=5,abc&duration_s=9999").content.decode()
    assert "Must be at most 3,600." in page
    page = client.get("/simulator/?sweep=5,abc").content.decode()
    assert "Arrival rates to sweep: &#x27;abc&#x27; is not a rate in req/s." in page


@pytest.mark.parametrize(("query", "field", "message"), [
    ("sweep=0", "sweep", "Arrival rates to sweep: every rate must be above 0 and at most 10,000 req/s, not 0."),
    ("sweep=5,5", "sweep", "Arrival rates to sweep lists 5 req/s more than once: give each rate once."),
    ("max_batched_tokens=16&max_num_seqs=64", "max_batched_tokens",
     "Token budget per step (16) must be at least “Most running sequences” (64): every running sequence needs a "
     "token each step."),
    ("sweep_axis=concurrency&concurrency_sweep=0", "concurrency_sweep",
     "Concurrent clients to sweep: every concurrency must be a whole number from 1 to 16,384, not 0."),
])
def test_errors_name_the_inputs_by_their_labels(client, query, field, message):
    """The command and the API name inputs as ``max_num_seqs``; the page uses the labels beside the boxes."""
    page = client.get(f"/simulator/?{query}").content.decode()
    error = re.search(rf'<div id="error-{field}"[^>]*>(.*?)</div>', page, re.S).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", error)).strip() == message


def test_a_run_over_the_web_budget_says_so(client, settings):
    settings.SIMULATOR_WEB_MAX_STEPS = 500
    page = client.get(QUERY).content.decode()
    assert "more than 500 engine steps" in page


def test_with_a_broker_each_missing_rate_is_queued_once(client, settings, monkeypatch):
    queued = []
    monkeypatch.setattr("outbox.services.enqueue",
                        lambda task, args=(): queued.append((getattr(task, "name", task), args[1])))
    settings.CELERY_TASK_ALWAYS_EAGER = False
    first = client.get(QUERY).content.decode()
    client.get(QUERY, HTTP_HX_REQUEST="true")
    assert queued == [("calculators.simulate_point", 10), ("calculators.simulate_point", 60)]
    assert 'hx-trigger="every 2s"' in first and "Simulated 0 of 2 rates (on a worker)" in first
    from calculators.simulation import simulate_point

    inputs = clean_sim_inputs({"sweep": "10,60", "duration_s": 20})
    for rate in (10, 60):
        simulate_point(inputs, rate)  # what the worker runs
    done = client.get(QUERY, HTTP_HX_REQUEST="true").content.decode()
    assert "simulator-data" in done


def test_the_api_returns_the_command_json(client):
    body = client.get("/api/v1/simulate/", {"rate": 5, "duration_s": 20, "seed": 2}).json()
    assert set(body) == {"inputs", "summary", "series"} and body["summary"]["arrived"] > 0
    sweep = client.get("/api/v1/simulate/", {"sweep": "10,60", "duration_s": 20}).json()
    assert [s["rate_req_s"] for s in sweep["sweep"]] == [10, 60] and sweep["knee_req_s"] == 10


def test_the_api_takes_a_trace_in_a_posted_body(client):
    trace = "arrival_s,prompt_tokens,output_tokens\n0,512,16\n1.5,256,4\n"
    response = client.post("/api/v1/simulate/", {"inputs": {"trace": trace}}, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["summary"]["output_tokens"] == 20 and response.json()["inputs"]["duration_s"] == 2


@pytest.mark.parametrize("query, field", [({"rate": "0"}, "rate"), ({"sweep": "1,x"}, "sweep"),
                                          ({"sweep": "5,5,5"}, "sweep"),
                                          ({"router": "random"}, "router"), ({"model": "gpt-9"}, "model")])
def test_the_api_answers_bad_input_with_a_400_naming_the_field(client, query, field):
    response = client.get("/api/v1/simulate/", query)
    assert response.status_code == 400 and response.json()["field"] == field


def _walk(client, query: str) -> str:
    """The page for ``query`` once every rate is simulated (embedded: one rate per request)."""
    for _ in range(13):
        page = client.get(query).content.decode()
        if "simulator-data" in page:
            return page
    raise AssertionError("the sweep did not finish")


def test_the_default_page_marks_the_growing_queue_and_does_not_call_25_the_knee(client):
    # The defaults with an empty rates field (the default sweep 5 … 40 over 60 s) and the calibration row the user
    # saw (prefill MFU 0.31, step overhead 1.8 ms). At 25 req/s the run ends with 261 requests in flight, more than
    # the 256 the replica runs at once (tests/sim/test_simulator.py).
    page = _walk(client, "/simulator/?sweep=&prefill_mfu=0.31&step_overhead_ms=1.8")
    assert ("Rates swept: 5, 10, 15, 20, 25, 30, 35, 40, 45, 50 req/s (the default sweep: the rates field was "
            "empty).") in page
    row = re.search(r"<tr[^>]*><th scope=\"row\" class=\"fw-normal\">25</th>.*?</tr>",
                    page.split('id="table-goodput"')[1], re.S).group(0)
    assert "queue growing: not sustained over this run" in row and "(knee)" not in row
    assert "20 (knee)" in page
    knee = re.search(r'id="knee-text">(.*?)</p>', page, re.S).group(1)
    assert re.sub(r"<[^>]+>|\s+", " ", knee).split() == ["20", "req/s"]


def test_a_knee_at_the_highest_rate_swept_reads_at_least_it(client):
    page = _walk(client, "/simulator/?sweep=5,10&duration_s=20")
    knee = re.search(r'id="knee-text">(.*?)</p>', page, re.S).group(1)
    assert " ".join(re.sub(r"<[^>]+>", " ", knee).split()) == "at least 10 req/s (the highest rate swept)"
    assert "Rates swept: 5, 10 req/s." in page
    sweep = client.get("/api/v1/simulate/", {"sweep": "5,10", "duration_s": 20}).json()
    assert sweep["knee_req_s"] == 10 and sweep["knee_text"] == "at least 10 req/s (the highest rate swept)"


def test_a_box_says_what_it_was_read_as(client):
    """The simulator's boxes are the calculators' fields: 2k tokens are 2,000, and the page says so; a bound's
    error says what was read too (2 h is 7,200 s, over the 3,600 s a run may last)."""
    page = client.get("/simulator/?prompt_tokens=2k&duration_s=2h&sweep=5,abc").content.decode()
    assert "Read &#x27;2k&#x27; as 2,000 tokens." in page
    assert "Must be at most 3,600. Read &#x27;2h&#x27; as 7,200 s." in page


def test_the_default_sweep_finds_the_default_stacks_knee(client):
    """With every field at its default (the calibration table's efficiencies), 40 req/s holds the targets and 45
    and 50 end with a growing queue (manage.py simulate --sweep 40,45,50: TTFT p99 228 ms, then 3,895 and 8,792
    ms): the page names the knee, 40 req/s, instead of 'at least 40' at the top of the sweep."""
    page = _walk(client, "/simulator/?sweep=")
    knee = re.search(r'id="knee-text">(.*?)</p>', page, re.S).group(1)
    assert re.sub(r"<[^>]+>|\s+", " ", knee).split() == ["40", "req/s"]
    assert "at least" not in knee

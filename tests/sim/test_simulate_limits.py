"""The simulator costs nobody seconds of a worker (issue 28 item 3), through ``calculators.simulation``.

- A call that must simulate counts against its caller: per address when anonymous, per account when logged
  in; over the limit, 429 with ``Retry-After`` (the seconds left in the window). A call the cache answers is
  free, whoever asks.
- A refusal (the step cap) is cached by its inputs: asked again, it is answered from the cache, so it neither
  runs the steps again nor counts against the caller.
- An anonymous call gets the lower step cap (``SIMULATOR_ANON_MAX_STEPS``), on the API and on the page.
- DESIGN §13's bounds: at most 3,600 simulated seconds, 50,000 requests and 12 sweep points.
- With a broker, a call that must simulate answers 202 with a result URL, and a real Celery worker on the
  real Redis puts the result there (integration); embedded (eager Celery), the call still answers 200.
"""

from __future__ import annotations

import time
import uuid

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client

from calculators import simulation
from calculators.sim.config import clean_sim_inputs
from config import celery_app
from config.settings import cache_from_url
from tests.celery_worker import new_queue, postgres_url, real_worker, require_redis, worker_environment

API = "/api/v1/simulate/"
SHORT = {"rate": 2, "duration_s": 10}


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def call(client: Client, address: str, **query):
    return client.get(API, {**SHORT, **query}, REMOTE_ADDR=address)


def test_an_address_over_its_limit_gets_429_with_retry_after_and_others_carry_on(client, settings):
    settings.SIMULATOR_ANON_CALLS = 2

    first, second, third = (call(client, "203.0.113.7", seed=seed) for seed in (1, 2, 3))

    assert (first.status_code, second.status_code, third.status_code) == (200, 200, 429)
    assert 1 <= int(third["Retry-After"]) <= settings.SIMULATOR_LIMIT_WINDOW_S
    assert third.json() == {"error": f"Too many simulations from this address: try again in {third['Retry-After']} "
                                     f"s (results already computed are answered at once; logged-in users may run "
                                     f"more).", "field": None}
    assert call(client, "203.0.113.7", seed=1).status_code == 200  # already computed: free
    assert call(client, "198.51.100.4", seed=3).status_code == 200  # another address has its own count


@pytest.mark.django_db
def test_a_logged_in_user_has_a_limit_of_their_own(client, settings, candidate):
    settings.SIMULATOR_ANON_CALLS, settings.SIMULATOR_USER_CALLS = 1, 3
    assert call(client, "203.0.113.7", seed=1).status_code == 200
    assert call(client, "203.0.113.7", seed=2).status_code == 429  # the address is spent

    client.force_login(candidate)  # from the same address: counted on the account
    statuses = [call(client, "203.0.113.7", seed=seed).status_code for seed in (2, 3, 4, 5)]

    assert statuses == [200, 200, 200, 429]
    assert "from your account" in call(client, "203.0.113.7", seed=6).json()["error"]


def test_retry_after_is_the_rest_of_the_window(settings):
    settings.SIMULATOR_ANON_CALLS, settings.SIMULATOR_LIMIT_WINDOW_S = 2, 60
    start = 1_000 * 60 + 45.2  # 45.2 s into a window

    waits = [simulation.charge("addr:192.0.2.1", True, now=start + offset) for offset in (0, 1, 2)]

    assert waits == [None, None, 13]  # the third call, at 47.2 s: 60 - 47.2 = 12.8, rounded up
    assert simulation.charge("addr:192.0.2.1", True, now=start + 15) is None  # 0.2 s into the next window


def test_a_refusal_is_cached_by_its_inputs(client, settings):
    settings.SIMULATOR_ANON_MAX_STEPS, settings.SIMULATOR_ANON_CALLS = 500, 1
    query = {"rate": 20, "duration_s": 60}

    first = call(client, "203.0.113.9", **query)
    again = call(client, "203.0.113.9", **query)  # over the limit if it had to simulate again

    refusal = {"error": "This run needs more than 500 engine steps, more than a web request may take: shorten the "
                        "duration or run manage.py simulate.", "field": "duration_s"}
    assert (first.status_code, first.json()) == (400, refusal)
    assert (again.status_code, again.json()) == (400, refusal)
    inputs = clean_sim_inputs({"rate": 20, "duration_s": 60})
    assert cache.get(simulation.point_key(inputs, 20) + ":refused") == {"budget": 500, **refusal}
    # The same point at the logged-in budget is not refused from the cache: it runs, within its own cap.
    assert simulation.run_point(inputs, 20)["summary"]["arrived"] > 1000


@pytest.mark.django_db
def test_an_anonymous_call_gets_the_lower_step_cap_on_the_api_and_the_page(client, settings, candidate):
    settings.SIMULATOR_WEB_MAX_STEPS, settings.SIMULATOR_ANON_MAX_STEPS = 400_000, 2_000
    query = {"rate": 20, "duration_s": 60, "seed": 4}

    anonymous = call(client, "203.0.113.10", **query)
    page = client.get("/simulator/", {"sweep": "20", "duration_s": 60, "seed": 5}).content.decode()
    client.force_login(candidate)
    logged_in = call(client, "203.0.113.10", **query)

    assert anonymous.status_code == 400 and "more than 2,000 engine steps" in anonymous.json()["error"]
    assert "more than 2,000 engine steps" in page
    assert logged_in.status_code == 200 and logged_in.json()["summary"]["steps"] > 2_000


@pytest.mark.parametrize("query, field, words", [
    ({"rate": 1, "duration_s": 3601}, "duration_s", "at most 3,600"),
    ({"sweep": ",".join(str(rate) for rate in range(1, 14)), "duration_s": 10}, "sweep", "at most 12 rates"),
    ({"rate": 100, "duration_s": 600}, "duration_s", "50,000"),
    ({"rate": 1, "duration_s": 0.5}, "duration_s", "duration_s must be at least 1, not '0.5'."),
    # A closed loop's first request arrives at 0 s: over a denormal duration its goodput was Infinity (not JSON).
    ({"concurrency": 1, "duration_s": 5e-324}, "duration_s", "duration_s must be at least 1, not '5e-324'."),
])
def test_design_13s_bounds_are_refused_before_anything_runs(client, query, field, words):
    response = client.get(API, query, REMOTE_ADDR="203.0.113.11")

    assert response.status_code == 400 and response.json()["field"] == field
    assert words in response.json()["error"]


def test_embedded_without_a_broker_the_call_still_answers_at_once(client, settings):
    assert settings.CELERY_TASK_ALWAYS_EAGER  # the embedded default

    response = call(client, "203.0.113.12", seed=9)

    assert response.status_code == 200 and response.json()["summary"]["arrived"] > 0


def test_with_a_broker_the_call_is_queued_once_and_answers_202(client, settings, monkeypatch):
    queued = []
    monkeypatch.setattr("outbox.services.enqueue", lambda task, args=(): queued.append((task.name, args)))
    settings.CELERY_TASK_ALWAYS_EAGER = False

    first = call(client, "203.0.113.13", seed=10)
    second = call(client, "203.0.113.13", seed=10)

    token = simulation.call_token(clean_sim_inputs({**SHORT, "seed": 10}), settings.SIMULATOR_ANON_MAX_STEPS)
    assert queued == [("calculators.simulate_call", (token,))]
    for response in (first, second):
        assert response.status_code == 202 and response["Location"] == f"{API}results/{token}/"
        assert response.json()["result_url"] == f"{API}results/{token}/" and response["Retry-After"] == "1"
    assert client.get(f"{API}results/{token}/").status_code == 202
    assert client.get(f"{API}results/{'0' * 64}/").status_code == 404


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_puts_the_result_at_the_result_url(client, settings, monkeypatch):
    """With the broker and the cache on the real Redis, a call answers 202, a real worker runs it, and the result
    URL then answers the JSON the embedded call gives."""
    require_redis()
    if connection.vendor != "postgresql":
        pytest.skip("the worker must share the test database: run with DATABASE_URL=postgres://… (as CI does)")
    broker, cache_url = "redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/14"
    queue = new_queue("sim")
    saved = {name: celery_app.conf[name] for name in ("broker_url", "task_always_eager", "task_default_queue")}
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = broker, False
    settings.CACHES = {"default": cache_from_url(cache_url)}
    celery_app._after_fork()
    celery_app.conf.update(broker_url=broker, task_always_eager=False, task_default_queue=queue)
    seed = uuid.uuid4().int % 2**32  # a call nobody has cached on the shared Redis
    environment = worker_environment("CELERY_", "DATABASE_", "CACHE_", "REDIS_", CACHE_URL=cache_url,
                                     DATABASE_URL=postgres_url())
    try:
        with real_worker(queue, environment, broker=broker) as worker:
            started = time.monotonic()
            response = client.get(API, {**SHORT, "seed": seed}, REMOTE_ADDR="203.0.113.14")
            assert time.monotonic() - started < 5  # the request does not wait for the run
            assert response.status_code == 202, response.content
            url = response.json()["result_url"]
            deadline = time.monotonic() + 90
            while (result := client.get(url)).status_code == 202:
                assert time.monotonic() < deadline, "the worker did not finish the run within 90 s"
                time.sleep(0.5)
    finally:
        celery_app._after_fork()
        celery_app.conf.update(saved)
    output = worker.output
    assert result.status_code == 200, result.content
    assert "calculators.simulate_call" in output and "succeeded" in output
    body = result.json()
    assert body["inputs"]["seed"] == seed and body["summary"]["arrived"] > 0
    # The run the simulator gives for these inputs when nothing is cached or queued.
    assert body["summary"] == simulation.simulate_for_chapter({**SHORT, "seed": seed})["summary"]

"""The capacity policy (issue 31, item 2; docs/architecture.md §13): ``preempt`` (vLLM's: recompute the newest
sequence when blocks run out) or ``no-evict`` (TensorRT-LLM's GUARANTEED_NO_EVICT: admit a request only when its
whole prompt and output fit beside what the running ones reserved).

By hand, on the reference stack (27,507 KV blocks of 16 tokens, tests/sim/test_simulator.py), 100 clients in a
closed loop with 1,000-token prompts and 7,000-token outputs: a request's life needs (1,000 + 7,000) ÷ 16 = 500
blocks, so no-evict runs at most ⌊27,507 ÷ 500⌋ = 55 at once and never preempts; preempt admits all 100 on their
prompts (100 × 63 blocks) and evicts as their outputs grow past the cache.
"""

import io
import json

import pytest
from django.core.cache import cache
from django.core.management import call_command

from calculators.engine.errors import InputError
from calculators.sim.run import simulate

LONG = {"concurrency": 100, "prompt_tokens": 1000, "output_tokens": 7000, "duration_s": 300}


def test_no_evict_admits_what_fits_to_the_end_and_never_preempts():
    preempt = simulate({**LONG, "capacity_policy": "preempt"})
    out = io.StringIO()
    call_command("simulate", "--concurrency", "100", "--prompt-tokens", "1000", "--output-tokens", "7000",
                 "--duration-s", "300", "--capacity-policy", "no-evict", "--json", stdout=out)
    no_evict = json.loads(out.getvalue())
    assert no_evict["inputs"]["capacity_policy"] == "no-evict"
    assert no_evict["summary"]["preemptions"] == 0
    assert max(no_evict["series"]["running"]) == 27_507 // 500 == 55
    assert preempt["summary"]["preemptions"] > 0 and max(preempt["series"]["running"]) == 100


def test_the_default_is_preempt_and_both_agree_while_the_cache_is_not_short():
    light = {"rate": 2, "duration_s": 60, "prompt_tokens": 512, "output_tokens": 256, "seed": 1}
    default = simulate(light)["summary"]
    assert simulate({**light, "capacity_policy": "no-evict"})["summary"] == default


def test_an_unknown_policy_is_refused_naming_the_field():
    with pytest.raises(InputError) as caught:
        simulate({"capacity_policy": "evict"})
    assert caught.value.field == "capacity_policy" and "preempt, no-evict" in str(caught.value)


@pytest.mark.django_db
def test_an_unknown_policy_is_a_400_in_the_api(client):
    cache.clear()
    response = client.get("/api/v1/simulate/", {"capacity_policy": "evict", "duration_s": 5})
    assert response.status_code == 400 and response.json()["field"] == "capacity_policy"

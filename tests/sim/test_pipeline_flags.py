"""``--pp`` and ``--microbatches`` on the command line, the API and the /simulator/ page (issue 31 leftover, item 3):
a run on pipeline stages, and a degree that does not divide the layers or no microbatch refused naming the field
(exit 2, 400, the form's error beside the field). The step's values are derived in
tests/engine/test_pipeline_parallel.py."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command

REPO = Path(__file__).resolve().parents[2]


def test_the_command_runs_on_pipeline_stages():
    """Llama-3.1-8B on 1 card × 2 stages, one microbatch: a lone request's decode step is one card's (the stages run
    in turn; tests/engine/test_pipeline_parallel.py), so its TPOT equals the one-card run's within the two hops."""
    runs = {}
    for pp in ("1", "2"):
        out = io.StringIO()
        call_command("simulate", "--pp", pp, "--rate", "0.2", "--duration-s", "30", "--bandwidth-efficiency",
                     "0.75", "--step-overhead-ms", "0", "--json", stdout=out)
        runs[pp] = json.loads(out.getvalue())
    assert (runs["2"]["inputs"]["pp"], runs["2"]["inputs"]["microbatches"]) == (2, 1)
    assert runs["2"]["summary"]["tpot_ms"]["p50"] == pytest.approx(runs["1"]["summary"]["tpot_ms"]["p50"], abs=0.01)
    assert runs["2"]["inputs"]["kv_tokens"] > 2 * runs["1"]["inputs"]["kv_tokens"]  # a second card, no more weights


BAD = [("--pp", "3", "pp", "pp (3) must divide the model's 32 layers into equal stages."),
       ("--microbatches", "0", "microbatches", "microbatches must be at least 1, not '0'.")]


def test_bad_pipeline_inputs_exit_2_naming_the_field():
    runs = [subprocess.Popen([sys.executable, "manage.py", "simulate", flag, value, "--duration-s", "5", "--json"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for flag, value, _, _ in BAD]
    outcomes = [(run.wait(timeout=120), run.stderr.read().strip()) for run in runs]
    assert outcomes == [(2, sentence) for _, _, _, sentence in BAD]


@pytest.mark.django_db
@pytest.mark.parametrize("flag, value, field, sentence", BAD)
def test_bad_pipeline_inputs_are_a_400_in_the_api_and_a_field_error_on_the_page(client, flag, value, field,
                                                                                 sentence):
    cache.clear()
    response = client.get("/api/v1/simulate/", {field: value, "duration_s": 5})
    assert response.status_code == 400 and response.json() == {"error": sentence, "field": field}
    page = client.get("/simulator/", {field: value, "sweep": "1", "duration_s": 5})
    # The page names the field by its label where the command line and the API name it by its flag.
    on_page = "Pipeline stages (3) must divide the model's 32 layers into equal stages."
    assert page.context["form"].errors[field] == [on_page if field == "pp" else "Must be at least 1."]

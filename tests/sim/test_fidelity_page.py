"""/simulator/fidelity/ (issue 31, item 3): the validation table, the MAPE per metric against the targets, and
the cases the model misses, with the faults they show.

The page reads fixtures/calibration/validation.json (tests/engine/test_calibration.py holds that file equal to
what the engine computes); here the page is checked against that file and, for its rules, against a report built
by hand.
"""

import re

import pytest

from calculators.engine.validation import load_report
from calculators.fidelity import fidelity_view

pytestmark = pytest.mark.django_db


def small_report(errors):
    """A report of one TTFT case per error (measured 100 ms), MAPE computed here by hand."""
    cases = [{"id": f"case-{i}", "source": "s", "metric": "ttft_ms", "kind": "ttft", "stack": "a stack",
              "measured": 100.0, "predicted": 100.0 * (1 + e), "before": e, "fitted": e, "loso": e,
              "biases": ["small_batch_decode"] if abs(e) > 0.4 else []} for i, e in enumerate(errors)]
    mape = 100 * sum(abs(e) for e in errors) / len(errors)
    row = {"cases": len(errors), "before": mape, "fitted": mape, "loso": mape}
    return {"targets": {"overall": 15.0, "ttft": 20.0, "case": 40.0}, "cases": cases,
            "mape": {"ttft": row, "overall": row}, "sources": {"s": {"title": "A source", "cases": len(errors),
                                                                     "loso": mape}}}


def test_a_case_beyond_the_per_case_target_is_a_miss_with_its_fault():
    # Errors +50 % and −10 %: MAPE 30 % > 15 % and > 20 %, one case beyond 40 %.
    view = fidelity_view(small_report([0.5, -0.1]))
    assert not view["met"]
    assert [case["id"] for case in view["misses"]] == ["case-0"]
    assert view["misses"][0]["predicted_shown"] == "150 ms"
    assert view["misses"][0]["why"][0].startswith("small-batch decode")
    assert [(m["kind"], m["met"]) for m in view["metrics"]] == [("ttft", False), ("overall", False)]
    # Errors within every target: met.
    close = fidelity_view(small_report([0.1, -0.05]))  # MAPE 7.5 %
    assert close["met"] and not close["misses"]


def test_the_page_shows_every_case_and_the_stored_mape_against_the_targets(client):
    report = load_report()
    page = client.get("/simulator/fidelity/").content.decode()
    for case in report["cases"]:
        assert case["id"] in page
    overall = report["mape"]["overall"]["loso"]
    assert f"{overall:.1f} %" in page
    misses = [c for c in report["cases"] if abs(c["loso"]) > report["targets"]["case"] / 100]
    if overall > report["targets"]["overall"] or misses:
        assert "The targets are not met yet." in page
        assert re.search(rf"{len(misses)} cases? (is|are) more than 40 % off", page)
    else:  # every target met (13.9 % overall, no case beyond 40 %: docs/performance.md)
        assert "Every target is met." in page and "Where it is off by more than" not in page
    # The 2023 vLLM's declared launch cost, as the calibration table states it, with its two sources.
    assert ("an engine the table declares without CUDA graphs (vllm-2023) pays for launching each layer's "
            "kernels from Python: 0.047 ms a layer a decode step on one card, 0.085 ms more per doubling") in page
    assert 'href="https://github.com/facebookresearch/metaseq/pull/270"' in page
    # The simulator page links here.
    assert "/simulator/fidelity/" in client.get("/simulator/").content.decode()

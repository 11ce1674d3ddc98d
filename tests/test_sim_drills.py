"""The simulated drills (calculators/sim/drills.py): graded against the sweep each problem stores.

The scenario: Llama-3.1-8B bf16 on one H100 SXM, 512-token prompts, 128-token outputs, TTFT 500 ms, TPOT 20 ms,
simulator seed 7; the sweep (from the step model) is 6.8, 14, 19, 23, 27, 31, 35, 41 req/s, 60 s each. What the
simulator printed for it (``manage.py simulate … --sweep 6.8,14,19,23,27,31,35,41 --duration-s 60 --seed 7
--prompt-tokens 512 --output-tokens 128 --tpot-slo-ms 20 --json``), and the answers derived from it by hand:

- goodput 26.867 req/s at 27 (≥ 0.9 × 27 = 24.3) and 23.767 at 31 (< 27.9), counting the requests still running
  at the 60 s window's end that can still meet both targets (docs/architecture.md §13): the knee is 27 req/s, its sweep
  step the larger gap to a neighbour, 31 − 27 = 27 − 23 = 4 req/s;
- at 27 req/s, mean end-to-end 1,884.817 ms, so Little's law gives 27 × 1.884817 = 50.890 requests; mean TTFT
  47.487 ms, p99 TTFT 141.573 ms;
- mean TPOT 18.446 ms at 31 req/s (73.3 running) and 26.766 ms at 35 (118.391667 running): the target of 20 ms
  is crossed at 73.3 + (20 − 18.446) ÷ (26.766 − 18.446) × (118.391667 − 73.3) = 81.722 running sequences.

One decode step of 64 sequences at the mean context 512 + 64 = 576 tokens: (16,060,522,496 + 64 × 576 × 131,072)
B ÷ (3,350 GB/s × 0.75) = 20,892,368,896 ÷ 2.5125e12 = 8.3154 ms; from the weights alone 16,060,522,496 ÷
2.5125e12 = 6.3922 ms.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

from calculators.sim import scenario
from drills.bank.problem_templates import sync_problem_templates
from drills.models import BankItem, ProblemInstance
from drills.problems.generation import create_problem
from drills.problems.grading import grade_problem
from drills.problems.models import _solve

SCENARIO = {"model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "weights_dtype": "bf16", "kv_dtype": "bf16",
            "prompt_tokens": 512, "output_tokens": 128, "ttft_slo_ms": 500.0, "tpot_slo_ms": 20.0, "sim_seed": 7}
SIM_FAMILIES = ("knee", "ttftp99", "tpotbatch", "preemptrate")

pytestmark = pytest.mark.django_db


def _refuse(*args, **kwargs):
    raise AssertionError("simulated again")


def _problem(family: str) -> ProblemInstance:
    return create_problem(family, seed=3, fixed_inputs=SCENARIO)


def _verdicts(problem, answers):
    return {step.key: (step.verdict, step.misconception) for step in grade_problem(problem, answers).steps}


def test_the_problem_stores_the_sweep_the_simulator_printed():
    problem = _problem("knee")

    points = problem.inputs["simulation"]["points"]
    assert [p["rate_req_s"] for p in points] == [6.8, 14.0, 19.0, 23.0, 27.0, 31.0, 35.0, 41.0]
    assert (points[4]["goodput_req_s"], points[5]["goodput_req_s"]) == (26.866667, 23.766667)
    assert problem.solve().values["knee_req_s"] == 27.0
    assert "27 → 26.9, 31 → 23.8" in problem.solve().notes[0]
    assert "kept up to 27 and lost at 31" in problem.solve().notes[0]
    assert problem.solve().values["decode_step_batch_ms"] == pytest.approx(8.3154, abs=1e-4)


def test_the_knee_is_right_within_one_sweep_step_and_the_weights_only_step_is_named():
    problem = _problem("knee")

    assert _verdicts(problem, {"decode_step_batch_ms": "8.32 ms", "knee_req_s": "31 rps"}) == {
        "decode_step_batch_ms": ("correct", None), "knee_req_s": ("correct", None)}
    assert _verdicts(problem, {"knee_req_s": "23 requests/s"})["knee_req_s"][0] == "correct"
    assert _verdicts(problem, {"knee_req_s": "35 req/s"})["knee_req_s"][0] != "correct"
    assert _verdicts(problem, {"decode_step_batch_ms": "6.392 ms"})["decode_step_batch_ms"] == (
        "misconception", "decode-weights-only")


def test_p99_ttft_with_the_mean_and_littles_law_on_ttft_named():
    problem = _problem("ttftp99")

    values = problem.solve().values
    assert values["requests_in_system"] == pytest.approx(50.890, abs=1e-3)
    assert values["ttft_p99_ms"] == 141.573
    graded = _verdicts(problem, {"requests_in_system": str(27 * 0.047487), "ttft_p99_ms": "47.5 ms"})
    assert graded["requests_in_system"] == ("misconception", "littles-law-wrong-latency")
    assert graded["ttft_p99_ms"] == ("misconception", "mean-for-p99")
    assert _verdicts(problem, {"ttft_p99_ms": "0.15 s"})["ttft_p99_ms"][0] == "correct"  # within 10 %


def test_the_batch_where_tpot_crosses_the_target_is_interpolated_from_the_sweep():
    problem = _problem("tpotbatch")

    assert problem.solve().values["tpot_crossing_batch"] == pytest.approx(81.722, abs=1e-3)
    assert _verdicts(problem, {"tpot_crossing_batch": "88 requests"})["tpot_crossing_batch"][0] == "correct"


def test_preemption_begins_at_the_first_swept_rate_that_preempts():
    problem = create_problem("preemptrate", seed=3, fixed_inputs={**SCENARIO, "prompt_tokens": 4096,
                                                                  "output_tokens": 512})
    points = problem.inputs["simulation"]["points"]
    first = next(p for p in points if p["preemptions"])
    before = points[points.index(first) - 1]

    values = problem.solve().values
    # 27,507 whole blocks of 16 tokens; 440,112 ÷ 4,608 = 95.5 → 95 requests whole.
    assert (values["kv_cache_tokens"], values["full_cache_requests"]) == (440_112, 95)
    assert values["preemption_rate_req_s"] == first["rate_req_s"] and before["preemptions"] == 0


def test_regrading_reads_the_stored_sweep_and_never_simulates(monkeypatch):
    stored = _problem("knee")
    # From here, any simulation fails the test: the in-process runner's run and the web's cached one alike.
    monkeypatch.setattr(scenario, "run_workload", _refuse)
    monkeypatch.setattr("calculators.simulation.run_workload", _refuse)
    monkeypatch.setattr(scenario, "_remembered", OrderedDict())  # nothing remembered from other tests either
    _solve.cache_clear()
    try:
        problem = ProblemInstance.objects.get(pk=stored.pk)
        assert _verdicts(problem, {"knee_req_s": "27"})["knee_req_s"][0] == "correct"
        # The stored sweep, not a new run, decides: edit it and the answer follows.
        problem.inputs["simulation"]["points"][5]["goodput_req_s"] = 30.0
        problem.save()
        assert ProblemInstance.objects.get(pk=problem.pk).solve().values["knee_req_s"] == 31.0
    finally:
        _solve.cache_clear()


def test_the_drills_are_templates_in_the_bank_that_rounds_and_coach_sets_can_pick(coach):
    from coaching.forms import AddTemplateForm
    from drills.rounds.drawing import _candidates

    sync_problem_templates()
    templates = BankItem.objects.filter(kind=BankItem.PROBLEM, slug__in=SIM_FAMILIES, published=True)
    assert sorted(t.slug for t in templates) == sorted(SIM_FAMILIES)
    assert {item.slug for item in _candidates({"families": list(SIM_FAMILIES)})} == set(SIM_FAMILIES)
    assert set(SIM_FAMILIES) <= {item.slug for item in AddTemplateForm(coach).fields["item"].queryset}
    assert all(t.chapter_id is None or t.chapter.slug for t in templates)


@pytest.mark.parametrize("family", SIM_FAMILIES)
def test_a_visitor_sees_the_problem_stated_with_its_sweep(client, family):
    page = client.get(f"/drills/{family}/new/?seed=5").content.decode()

    assert "Poisson arrivals" in page and "req/s" in page


@pytest.mark.parametrize("typed", ["27 req/s", "27 rps", "27 RPS", "27 requests/s", "27 QPS", "27"])
def test_a_rate_reads_in_the_spellings_load_tools_print(typed):
    from calculators.engine.answers import parse_answer

    assert parse_answer(typed, "req/s").value == 27.0


def test_a_round_with_a_simulated_drill_stores_the_sweep_with_its_problem(candidate):
    import random

    from drills.models import RoundTemplate
    from drills.rounds.services import start_round

    sync_problem_templates()
    template = RoundTemplate.objects.create(slug="under-load", kind="custom", title="Under load", duration_s=600,
                                            slots=[{"family": "knee", "box_s": 600}])
    item = start_round(candidate, template, rng=random.Random(4)).items.get()

    assert item.problem.family == "knee" and len(item.problem.inputs["simulation"]["points"]) == 8


def test_a_coach_may_fix_a_simulated_drills_workload_and_a_bad_one_is_refused():
    from coaching.services import CoachingError, parse_fixed_inputs

    assert parse_fixed_inputs('{"prompt_tokens": 1024, "gpu": "a100-sxm4-80gb"}', "knee") == {
        "prompt_tokens": 1024, "gpu": "a100-sxm4-80gb"}
    with pytest.raises(CoachingError, match="No preemptrate problem can be drawn for llama-3.1-70b on l40s"):
        parse_fixed_inputs('{"model": "llama-3.1-70b", "gpu": "l40s"}', "preemptrate")


def test_a_sweep_where_nothing_finishes_is_a_sentence_not_a_crash():
    from calculators.engine.errors import InputError
    from calculators.sim.drills import crossing_batch

    nothing = [{"rate_req_s": 1.0, "tpot_mean_ms": None, "mean_running": 3.0}]
    with pytest.raises(InputError, match="No request finished"):
        crossing_batch(nothing, 20.0)
    # 10 → 30 ms between 10 and 30 running: the 20 ms target is crossed at 20 running.
    assert crossing_batch([{"rate_req_s": 1.0, "tpot_mean_ms": 10.0, "mean_running": 10.0},
                           {"rate_req_s": 2.0, "tpot_mean_ms": 30.0, "mean_running": 30.0}] + nothing, 20.0) == 20.0

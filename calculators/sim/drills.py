"""Four drills graded against a stored run of the serving simulator (docs/architecture.md §13).

- ``knee`` — predict the knee: the rate where goodput (requests meeting both
  the TTFT and the TPOT target, per second, by the simulator's window rule)
  falls below 0.9 × the arrival rate, linear between the highest swept rate
  keeping that share and the next, after up to four refining runs between the
  two (the sweep stays within the simulator's 12 points); right within
  ±:data:`KNEE_TOLERANCE`. (The simulator's own knee, docs/architecture.md §13,
  stays the highest swept rate keeping the share.)
- ``ttftp99`` — p99 TTFT at the sweep's centre rate, after the TTFT at low load
  and the requests in the system by Little's law; right within 10 %.
- ``tpotbatch`` — the batch where TPOT crosses the target: the mean number of
  running sequences at which the mean TPOT reaches the target, interpolated
  linearly between the two swept rates either side of it; right within 10 %.
- ``preemptrate`` — where preemption begins: the lowest swept rate whose run
  preempts at least one sequence, after the tokens the KV cache holds and the
  requests it holds whole; right within ±:data:`PREEMPT_TOLERANCE`, less than the
  sweep's narrowest gap, so a neighbouring swept rate is not right (the old
  rule took any rate within one sweep step: a blind guess near the middle scored 100 %).

Every scenario is one card, fixed prompt and output lengths, Poisson arrivals,
60 simulated seconds per rate (120 s where preemption begins) and vLLM's scheduler defaults; :mod:`.scenario`
holds the scenario, its sweep and the stored simulation. They live beside the simulator, outside the engine;
:mod:`calculators.families` lists them with the engine's families. The first steps are
§12's step model, so they are exact; the simulated steps read the stored sweep.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from calculators.engine.catalog import NOMINAL_BITS, Catalog
from calculators.engine.errors import InputError
from calculators.engine.formulas import memory as F
from calculators.engine.formulas.serving import (
    CROSSING,
    DECODE_STEP_BATCH,
    FULL_CACHE,
    KNEE,
    KV_TOKENS,
    PREEMPT_RATE,
    REQUESTS_IN_SYSTEM,
    TTFT_LOW_LOAD,
    TTFT_P99,
)
from calculators.engine.procedures.base import Family, Plan, StepSpec
from calculators.engine.procedures.inputs import catalog_or_default
from calculators.engine.procedures.kv import kv_given, kv_per_token_spec
from calculators.engine.procedures.params import params_given

from .results import KNEE_SHARE, knee_bracket
from .results import knee as sweep_knee
from .scenario import (
    BLOCK_SIZE,
    CACHE_INPUTS,
    INPUTS,
    RESERVE_GIB,
    UTILIZATION,
    Scenario,
    SweepRunner,
    draw_scenario,
    knee_note,
    knee_points,
    knee_reason,
    latency_note,
    preemption_note,
    refine_knee,
    run_sweep,
    simulation_for,
    split_inputs,
    stored_constants,
    table_constants,
    tpot_note,
)


def rate_text(rate: float) -> str:
    """A swept rate as the statement prints it (two significant figures already: 7.5, 12, 0.31)."""
    return f"{rate:g}"


def _input_specs(center: str, specs: tuple | None) -> tuple:
    """The inputs a sweep centred on ``center`` reads: ``specs`` when a family declares its own (tpotbatch's),
    else the cache-centred or the plain scenario's."""
    return specs or (CACHE_INPUTS if center == "cache" else INPUTS)


def _prepared(raw: dict[str, Any], catalog: Catalog | None, center: str = "tpot", refine: bool = False,
              specs: tuple | None = None):
    catalog = catalog_or_default(catalog)
    inputs, stored = split_inputs(raw, catalog, _input_specs(center, specs))
    scenario = Scenario(inputs, catalog, center, stored_constants(stored))
    simulation = simulation_for(scenario, stored)
    if refine and stored is None:  # a stored sweep is read as it is: regrading never simulates
        simulation = refine_knee(simulation)
    return inputs, scenario, simulation


def _stack_given(scenario: Scenario) -> dict[str, float]:
    prefill = scenario.prefill_step()
    return {"weight_bytes": scenario.weight_bytes, "batch": STEP_BATCH, "mean_context": scenario.mean_context,
            "kv_bytes_per_token": scenario.kv_bytes_per_token, "bandwidth_gb_s": scenario.gpu.bandwidth_gb_s,
            "bandwidth_efficiency": scenario.replica.bandwidth_efficiency,
            "prefill_compute_ms": prefill.compute_ms, "weights_read_ms": prefill.memory_ms}


# The batch of the first step: large enough that the KV read shows (a weights-only answer is then wrong).
STEP_BATCH = 64


def _decode_spec() -> StepSpec:
    return StepSpec(DECODE_STEP_BATCH,
                    label="One decode step of 64 sequences at the mean context (weights + KV read)")


# An answer within this share of the interpolated knee is right (docs/architecture.md §13; shown beside the box).
KNEE_TOLERANCE = 0.05


def plan_knee(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """The knee of the scenario's sweep: where goodput ÷ rate crosses :data:`.results.KNEE_SHARE`, linear between
    the highest swept rate keeping it and the next (the refining points included, :func:`.scenario.refine_knee`);
    right within :data:`KNEE_TOLERANCE`. ``raw`` as :data:`.scenario.INPUTS`, plus an optional stored
    ``simulation`` (without one, the sweep and its refinement run in this process). The plan's ``extra`` holds the
    ``simulation``, the ``bracket``'s two rates and the ``reason`` the knee is there (a sentence). Raises
    :class:`InputError` when no swept rate meets the targets, the highest does (the knee lies beyond the
    sweep), or the rate above the knee keeps the share and is excluded only for its growing queue
    (:func:`.results.queue_growing`: the share does not cross between them)."""
    inputs, scenario, sim = _prepared(raw, catalog, refine=True)
    points = knee_points(sim)
    bracket = knee_bracket(points)
    if bracket is None:
        if sweep_knee(points) is None:
            raise InputError("No swept rate meets both targets: loosen the TPOT or TTFT target.", field="tpot_slo_ms")
        raise InputError(f"Every swept rate keeps {KNEE_SHARE:g} of its rate as goodput: the knee lies beyond the "
                         f"sweep; tighten the TPOT or TTFT target.", field="tpot_slo_ms")
    kept, lost = bracket
    if lost["goodput_req_s"] >= KNEE_SHARE * lost["rate_req_s"]:  # excluded only for its growing queue
        raise InputError(f"At {rate_text(lost['rate_req_s'])} req/s goodput keeps {KNEE_SHARE:g} of the rate only "
                         f"because the run ends with a growing queue, so no crossing lies between the swept rates: "
                         f"tighten the TPOT or TTFT target.", field="tpot_slo_ms")
    given = {**_stack_given(scenario), "kept_rate_req_s": kept["rate_req_s"], "knee_share": KNEE_SHARE,
             "kept_share": kept["goodput_req_s"] / kept["rate_req_s"],
             "lost_rate_req_s": lost["rate_req_s"], "lost_share": lost["goodput_req_s"] / lost["rate_req_s"]}
    specs = [_decode_spec(), StepSpec(KNEE, tolerance=KNEE_TOLERANCE,
                                      label=f"The knee: where goodput falls below {KNEE_SHARE:g} × the rate")]
    reason = knee_reason(kept, lost, inputs)
    notes = [knee_note(kept, lost, reason), _sweep_note(sim)]
    return Plan("knee", inputs, specs, given, notes,
                {"simulation": sim, "bracket": (kept["rate_req_s"], lost["rate_req_s"]), "reason": reason})


def plan_ttft_p99(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """p99 TTFT at the sweep's centre rate (the fifth), after the TTFT at low load and Little's law."""
    inputs, scenario, sim = _prepared(raw, catalog)
    point = asked_point(sim["points"])
    if point["ttft_p99_ms"] is None or point["e2e_mean_ms"] is None:
        raise InputError(f"No request completed at {rate_text(point['rate_req_s'])} req/s within the run: "
                         f"shorten the requests.", field="output_tokens")
    given = {**_stack_given(scenario), "rate_req_s": point["rate_req_s"], "e2e_s": point["e2e_mean_ms"] / 1000,
             "ttft_mean_ms": point["ttft_mean_ms"], "simulated_ttft_p99_ms": point["ttft_p99_ms"]}
    specs = [StepSpec(TTFT_LOW_LOAD, label="TTFT at low load: the step that prefills the prompt"),
             StepSpec(REQUESTS_IN_SYSTEM,
                      tolerance=0.10,
                      label="Requests in the system at this rate (Little's law)"),
             StepSpec(TTFT_P99, tolerance=0.10, label="p99 TTFT at this rate")]
    return Plan("ttftp99", inputs, specs, given, [latency_note(point), _sweep_note(sim)], {"simulation": sim})


def asked_point(points: list[dict]) -> dict:
    """The swept point a p99 problem asks about: the fifth, the sweep's centre (the last of a shorter sweep)."""
    return points[min(4, len(points) - 1)]


def crossing_batch(points: list[dict], target_ms: float) -> float:
    """Running sequences where the mean TPOT reaches ``target_ms``, linear between the swept rates either
    side. Raises :class:`InputError` when the sweep never crosses the target."""
    points = [p for p in points if p["tpot_mean_ms"] is not None]  # a rate where nothing finished has no TPOT
    for below, above in zip(points, points[1:]):
        if below["tpot_mean_ms"] <= target_ms < above["tpot_mean_ms"]:
            share = (target_ms - below["tpot_mean_ms"]) / (above["tpot_mean_ms"] - below["tpot_mean_ms"])
            return below["mean_running"] + share * (above["mean_running"] - below["mean_running"])
    if not points:
        raise InputError("No request finished at any swept rate: shorten the requests.", field="output_tokens")
    raise InputError("The sweep's mean TPOT never crosses the target: choose a target between "
                     f"{points[0]['tpot_mean_ms']:.1f} and {points[-1]['tpot_mean_ms']:.1f} ms.", field="tpot_slo_ms")


# The tpotbatch family's inputs: the scenario's, with a 20 ms TPOT target by default. Its default stack
# (Llama-3.1-8B bf16 on one H100) saturates vLLM's 256 sequences at about 35 ms a token under the calibrated step
# (issue 31's pooled refit), so the scenario's 40 ms default would never bind; 20 ms is crossed near 130 running
# sequences. Drawn problems set their own target (:func:`.scenario.draw_scenario`).
TPOT_BATCH_INPUTS = tuple(replace(spec, default=20.0) if spec.name == "tpot_slo_ms" else spec for spec in INPUTS)


def plan_tpot_batch(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """The running batch at which the mean TPOT crosses the target, from the stored sweep."""
    inputs, scenario, sim = _prepared(raw, catalog, specs=TPOT_BATCH_INPUTS)
    given = {**_stack_given(scenario),
             "simulated_crossing_batch": crossing_batch(sim["points"], inputs["tpot_slo_ms"])}
    specs = [_decode_spec(), StepSpec(CROSSING, tolerance=0.10,
                                      label="The running batch where mean TPOT reaches the target")]
    return Plan("tpotbatch", inputs, specs, given, [tpot_note(sim["points"]), _sweep_note(sim)], {"simulation": sim})


# A preemption-rate answer within this share of the lowest swept rate that preempts is right (shown beside the
# box and stated in the question). Neighbouring swept rates of CACHE_SWEEP_FACTORS are at least 7.7 % apart once
# rounded to two figures (1.2 and 1.3 req/s at worst), so the rates either side are never right.
PREEMPT_TOLERANCE = 0.05


def plan_preempt_rate(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """The lowest swept rate at which the simulator preempts a sequence, after the cache's size; right within
    ±:data:`PREEMPT_TOLERANCE`."""
    inputs, scenario, sim = _prepared(raw, catalog, center="cache")
    points = sim["points"]
    first = next((p for p in points if p["preemptions"] > 0), None)
    if first is None:
        raise InputError("No swept rate preempts a sequence: lengthen the prompts or outputs.", field="prompt_tokens")
    rate = first["rate_req_s"]
    # The ladder's budget steps on one card (the scenario's own budget: utilisation, weights, one reserve), so a
    # GB/GiB slip, a skipped utilisation or bits for bytes is named at the KV tokens they reach.
    cfg = scenario.replica.model
    given = {**_stack_given(scenario), **params_given(cfg), **kv_given(cfg, inputs["kv_dtype"], 1),
             "card_mib": scenario.gpu.memory_mib, "card_marketed_gb": scenario.gpu.marketed_gb,
             "utilization": UTILIZATION, **F.weights_given(cfg, inputs["weights_dtype"]),
             "weights_dtype_bits_nominal": NOMINAL_BITS[inputs["weights_dtype"]], "reserve_gib": RESERVE_GIB,
             "block_tokens": BLOCK_SIZE, "request_tokens": inputs["prompt_tokens"] + inputs["output_tokens"],
             "one_request": 1, "simulated_preemption_req_s": rate}
    specs = [StepSpec(F.CARD_GIB, tolerance=0.001),
             StepSpec(F.USABLE_GIB, {"card_gib": "card_gib"}, label="Usable memory (× utilisation)"),
             StepSpec(F.weights_form(cfg.is_moe, gib=True)),
             StepSpec(F.KV_BUDGET_GIB, {"usable_gib": "usable_gib", "weights_gib": "weights_gib"},
                      label="KV cache budget (after the activation reserve)"),
             kv_per_token_spec(cfg),
             StepSpec(KV_TOKENS, {"kv_budget_gib": "kv_budget_gib", "kv_bytes_per_token": "kv_bytes_per_token"},
                      rounding="floor", label="Tokens the KV cache holds (whole 16-token blocks)"),
             StepSpec(FULL_CACHE, {"kv_cache_tokens": "kv_cache_tokens"}, rounding="floor",
                      label="Requests the cache holds with their whole prompt and output"),
             StepSpec(PREEMPT_RATE, tolerance=PREEMPT_TOLERANCE, label="The lowest swept rate with a preemption")]
    return Plan("preemptrate", inputs, specs, given, [preemption_note(points), _sweep_note(sim)],
               {"simulation": sim})


def _sweep_note(sim: dict) -> str:
    rates = ", ".join(rate_text(p["rate_req_s"]) for p in sim["points"])
    return (f"Simulated ({sim['simulator_inputs']['duration_s']:g} s of Poisson arrivals per rate) at {rates} req/s; "
            f"the answers come from the run stored with the problem.")


def _stack(inputs: dict[str, Any], catalog: Catalog) -> str:
    gpu = catalog.gpu(inputs["gpu"])
    return (f"{inputs['model']} ({inputs.get('weights_dtype', 'bf16')} weights and KV cache) on one {gpu.name}, "
            f"vLLM's defaults (8,192 batched tokens, 256 sequences, utilisation 0.9, 16-token blocks), every request "
            f"{inputs['prompt_tokens']:,} prompt and {inputs['output_tokens']:,} output tokens, Poisson arrivals")


def _rates(inputs: dict[str, Any], catalog: Catalog, center: str = "tpot") -> str:
    stored = inputs.get("simulation")
    rates = ([p["rate_req_s"] for p in stored["points"]] if stored else
             Scenario({k: v for k, v in inputs.items() if k != "simulation"}, catalog, center).sweep())
    return ", ".join(rate_text(r) for r in rates) + " req/s"


def _step_phrase(inputs: dict[str, Any]) -> str:
    context = inputs["prompt_tokens"] + inputs["output_tokens"] / 2
    constants = stored_constants(inputs.get("simulation")) or table_constants(inputs)
    return (f"decode step of {STEP_BATCH} sequences, each holding {context:,g} tokens (its prompt and half its "
            f"output, the mean while it decodes), at {constants['bandwidth_efficiency']:.0%} of the card's "
            f"bandwidth")


def describe_knee(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The knee problem in an interviewer's words."""
    return (f"{_stack(inputs, catalog)}. Targets: TTFT {inputs['ttft_slo_ms']:g} ms and TPOT "
            f"{inputs['tpot_slo_ms']:g} ms. A load test sweeps {_rates(inputs, catalog)}, 60 s each. Work out one "
            f"{_step_phrase(inputs)}, then predict the knee: the arrival rate at which goodput (requests "
            f"arriving in the 60 s meeting both targets, per second; one still running at the end counts if it "
            f"still can) falls below {KNEE_SHARE:g} × the rate, read linearly between the last swept rate that "
            f"keeps it and the next. Within ±{KNEE_TOLERANCE:.0%} counts.")


def describe_ttft_p99(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The p99 TTFT problem, with the simulated mean end-to-end latency it gives."""
    point = asked_point(_points(inputs, catalog))
    return (f"{_stack(inputs, catalog)}, at {rate_text(point['rate_req_s'])} req/s for 60 s. What is TTFT when the "
            f"server is idle? The simulator measured a mean end-to-end latency of {point['e2e_mean_ms'] / 1000:.3f} s: "
            f"how many requests are in the system on average? Then estimate the p99 TTFT (within 10 %).")


def describe_tpot_batch(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The TPOT crossing problem in an interviewer's words."""
    return (f"{_stack(inputs, catalog)}, swept over {_rates(inputs, catalog)}. Work out one {_step_phrase(inputs)}, "
            f"then the running batch at which the mean TPOT reaches {inputs['tpot_slo_ms']:g} ms (the mean number of "
            f"running sequences, interpolated between the two swept rates either side; within 10 %).")


def describe_preempt_rate(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The preemption problem in an interviewer's words."""
    return (f"{_stack(inputs, catalog)}, swept over {_rates(inputs, catalog, 'cache')}, 120 s each. Size the KV "
            f"cache as the ladder does (the card's memory, the usable share, the weights, the budget after a "
            f"{RESERVE_GIB:g} GiB activation "
            f"reserve, the KV bytes per token): how many tokens does it hold in whole 16-token blocks, and how many "
            f"requests fit in it whole? Preemption begins at the lowest swept rate whose "
            f"run preempts at least one sequence: which rate is it (within ±{PREEMPT_TOLERANCE:.0%}: that swept rate, "
            f"not a neighbour)?")


def _points(inputs: dict[str, Any], catalog: Catalog) -> list[dict]:
    stored = inputs.get("simulation")
    if stored:
        return stored["points"]
    return simulation_for(Scenario(dict(inputs), catalog), None)["points"]


def _prepare(center: str, refine: bool = False, specs: tuple | None = None):
    def prepare(inputs: dict[str, Any], catalog: Catalog | None = None, runner: SweepRunner = run_sweep) -> dict:
        """The drawn inputs with the sweep simulated for them (through ``runner``: the web passes its
        cached one), and for the knee its refining points, to store with the problem."""
        catalog = catalog_or_default(catalog)
        # Always run afresh: fixed inputs may have changed the scenario, and a "simulation" typed into them
        # must not stand in for the simulator's.
        clean, _ = split_inputs(inputs, catalog, _input_specs(center, specs))
        simulation = simulation_for(Scenario(clean, catalog, center), None, runner)
        return {**inputs, "simulation": refine_knee(simulation, runner) if refine else simulation}
    return prepare


def _generate_tpot_batch(rng: random.Random, catalog: Catalog) -> dict:
    """A scenario (:func:`draw_scenario`) whose TPOT target binds before the sequence limit, drawn again (up to
    20 times) while it does not: at the sweep's centre the step model (:meth:`Scenario.load`) must expect the
    mean TPOT to reach the target (within 1 %), not the batch to reach vLLM's 256 sequences with the step still
    short of it (a small-active MoE on a fast card: Qwen3-30B-A3B on a GB300 steps 256 sequences in about 12 ms,
    so its simulated TPOT never reaches a 20 ms target). Before generator v28 it drew only stacks whose prompts'
    prefill is compute-bound, because :meth:`Scenario.load` charged each prefill a whole step and centred a
    memory-bound one far too low. Raises :class:`InputError` when no such stack is found (a coach's fixed model
    is refused with it)."""
    for _ in range(20):
        inputs = draw_scenario(rng, catalog)
        scenario = Scenario(dict(inputs), catalog, "tpot")
        _, tpot = scenario.load(scenario.center_rate())
        if tpot >= TARGET_BINDS * inputs["tpot_slo_ms"]:
            return inputs
    raise InputError("On these cards a decode step of 256 sequences stays under the TPOT target, so the sweep "
                     "reaches vLLM's sequence limit before the target binds: choose a slower card or a larger "
                     "model.", field="model")


# The share of the TPOT target the step model's TPOT reaches at a tpotbatch sweep's centre when the target binds.
TARGET_BINDS = 0.99


def _generate_preempt(rng: random.Random, catalog: Catalog) -> dict:
    """A scenario whose cache fills with whole requests well before vLLM's 256-sequence limit, at a rate
    whose prefills leave the card some time to decode (their share of its time, :meth:`Scenario.prefill_share`,
    at most 0.9)."""
    for _ in range(50):
        inputs = draw_scenario(rng, catalog, prompts=(2048, 4096, 8192), outputs=(256, 512))
        scenario = Scenario(dict(inputs), catalog, "cache")
        if scenario.full_cache_batch <= 200 and scenario.prefill_share(scenario.center_rate()) <= 0.9:
            return inputs
    raise InputError("No preemption scenario could be drawn from the catalog.", field="model")


# What a strong worked answer does at each stage (never a value: every review draws a fresh scenario).
KNEE_RUBRIC = (
    "Costs a decode step as the weights plus every running sequence's KV read, at the context it holds",
    "Finds the batch at which that step reaches the TPOT target, short of the cache and sequence limits",
    "Turns the batch into a rate with Little's law over the whole time a request stays, prefill included",
    "Leaves room for the prefills, which take the card's compute between decode steps",
    "Reads goodput as requests meeting both targets, and the knee as the last rate keeping 90 % of them",
)
TTFT_P99_RUBRIC = (
    "Takes TTFT at low load as the step that prefills the whole prompt, not a decode step",
    "Applies Little's law with the end-to-end latency, not the TTFT",
    "Expects queueing to stretch the tail well past the mean as the rate nears capacity",
    "Quotes the p99 as a p99, never the mean, and says what sets it: the wait behind other prefills",
)
TPOT_BATCH_RUBRIC = (
    "Costs a decode step as the weights plus the KV read of every sequence in the batch",
    "Finds the batch where the step time reaches the target from the slope the KV read adds per sequence",
    "Allows for prefill chunks that share the steps and lengthen TPOT at a given batch",
    "Says the batch is a mean over the run, read from the running sequences, not a configured limit",
)
PREEMPT_RATE_RUBRIC = (
    "Sizes the cache from the ladder's budget in whole blocks of KV per token",
    "Divides by the whole prompt and output of a request, since a sequence's cache grows to that",
    "Finds the rate at which that many requests are in flight, with Little's law on end-to-end latency",
    "Says preemption starts when running sequences cannot get a block, before the cache use reads 100 %",
)

# offline=None: their numbers come from a stored discrete-event simulation, which an exported page cannot run.
FAMILIES = (
    Family("knee", "Predict the knee",
           "From a stack, a workload and two targets, the rate where goodput falls below 0.9 × the rate, "
           "graded against a stored simulation.", INPUTS, plan_knee, generate=draw_scenario,
           order=90, offline=None, describe=describe_knee, prepare=_prepare("tpot", refine=True),
           chapter="14-capacity-planning", difficulty=3, rubric=KNEE_RUBRIC),
    Family("ttftp99", "p99 TTFT at this rate",
           "TTFT at low load, the requests in the system by Little's law, and the p99 TTFT at one rate, graded "
           "against a stored simulation.", INPUTS, plan_ttft_p99, generate=draw_scenario,
           order=91, offline=None, describe=describe_ttft_p99, prepare=_prepare("tpot"), chapter="15-production",
           difficulty=3, rubric=TTFT_P99_RUBRIC),
    Family("tpotbatch", "The batch where TPOT crosses the target",
           "One decode step, then the running batch at which the mean TPOT reaches the target, graded against a "
           "stored simulation.", TPOT_BATCH_INPUTS, plan_tpot_batch, generate=_generate_tpot_batch, order=92,
           offline=None, describe=describe_tpot_batch, prepare=_prepare("tpot", specs=TPOT_BATCH_INPUTS),
           chapter="14-capacity-planning",
           difficulty=3, rubric=TPOT_BATCH_RUBRIC),
    Family("preemptrate", "Where preemption begins",
           "The KV budget as the ladder sizes it, the tokens it holds, the requests it holds whole, and the lowest "
           "swept rate that preempts, "
           "graded against a stored simulation.", CACHE_INPUTS, plan_preempt_rate, generate=_generate_preempt,
           order=93, offline=None, describe=describe_preempt_rate, prepare=_prepare("cache"),
           chapter="15-production", difficulty=3, rubric=PREEMPT_RATE_RUBRIC),
)

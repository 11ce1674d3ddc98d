"""Running the simulator: replicas behind a router, one discrete-event loop, the results.

Events are arrivals (in time order) and the ends of replica steps (a heap);
at equal times arrivals come first, so a request that arrives as a step ends
can join the next one. A request goes to a replica chosen by the router:

- ``round-robin``: the next replica in turn;
- ``least-loaded``: the one with the fewest requests running or waiting (the
  lowest index on a tie);
- ``prefix``: the replica of the request's prefix group (group mod replicas),
  so a group's prefix is cached on one replica only.

The run stops at its duration: steps still going then are not counted, and
requests not finished are ``in_flight`` (goodput counts those that can still
meet their targets: results.py's window rule). The series samples the fleet at
:data:`SERIES_POINTS` even intervals: KV-cache use (the fullest replica's
peak in the interval), running and waiting sequences at its end, and the
preemptions in it.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import replace
from typing import Any

from calculators.engine.catalog import Catalog
from calculators.engine.errors import InputError
from calculators.engine.step_model import step_ms

from .config import band_setups, build_setup, clean_sim_inputs
from .engine import Records, ReplicaEngine, Sequence
from .results import knee, knee_concurrency, knee_text, queue_growing, summarize
from .workload import sent, workload_for

SERIES_POINTS = 120


class _Series:
    def __init__(self, duration_ms: float, engines: list[ReplicaEngine], blocks: int):
        self.duration_ms = duration_ms
        self.engines, self.blocks = engines, blocks
        self.next_ms = duration_ms / SERIES_POINTS
        self.last_preemptions = 0
        self.data: dict[str, list] = {"t_s": [], "kv_used_fraction": [], "running": [], "waiting": [],
                                      "preemptions": []}

    def advance(self, now_ms: float) -> None:
        while now_ms >= self.next_ms and len(self.data["t_s"]) < SERIES_POINTS:
            engines = self.engines
            peak = max(e.kv_peak_blocks for e in engines)
            preemptions = sum(e.preemptions for e in engines)
            data = self.data
            data["t_s"].append(round(self.next_ms / 1000, 6))
            data["kv_used_fraction"].append(round(peak / self.blocks, 6))
            data["running"].append(sum(len(e.running) for e in engines))
            data["waiting"].append(sum(len(e.waiting) for e in engines))
            data["preemptions"].append(preemptions - self.last_preemptions)
            self.last_preemptions = preemptions
            for e in engines:
                e.kv_peak_blocks = e.used + e.pinned
            points = len(data["t_s"])
            self.next_ms = self.duration_ms * min(points + 1, SERIES_POINTS) / SERIES_POINTS


#: Above this replica utilisation (mean running sequences ÷ the most the replicas can run) a result carries its
#: band (docs/architecture.md §13): near saturation a small change in efficiency moves the latencies most.
BAND_UTILISATION = 0.8
# What a band gives at each end of the calibration row.
BAND_KEYS = (("ttft_ms", "p50"), ("ttft_ms", "p99"), ("tpot_ms", "p50"), ("tpot_ms", "p99"), ("e2e_ms", "p50"))


def slots(inputs: dict, workload) -> float | None:
    """What the replicas can run at once: per replica the smaller of ``max_num_seqs`` and the KV cache's tokens
    (``inputs["_kv_tokens"]``) ÷ a request's mean prompt + output, times the replicas; None for an empty run."""
    count = len(workload)
    if not count:
        return None
    mean_tokens = (sum(workload.prompt) + sum(workload.output)) / count
    return inputs["replicas"] * min(inputs["max_num_seqs"], inputs["_kv_tokens"] / mean_tokens)


def utilisation(inputs: dict, workload, series: dict) -> float:
    """Mean running sequences over the run ÷ what the replicas can run at once (:func:`slots`; 0 for an empty
    run)."""
    capacity = slots(inputs, workload)
    if capacity is None or not series["running"]:
        return 0.0
    return sum(series["running"]) / len(series["running"]) / capacity


def closed_timing(inputs: dict, workload, setup) -> tuple[float, float]:
    """A closed loop's ``(cycle, decode step)``, estimated before the run (ms). The decode step is one replica's
    holding its share of the clients (⌈clients ÷ replicas⌉, at most ``max_num_seqs``) at the mean context (prompt
    + half the output); the cycle is one request's service time, the mean prompt prefilled alone in chunks of the
    step's token budget and its ``output − 1`` further tokens in such decode steps, plus the think time. The
    clients' first requests are staggered over the cycle (:func:`.workload.client_stagger`); a client's turnaround
    is drawn within the decode step (:data:`TURNAROUND`)."""
    replica = setup.replica
    prompt, output = inputs["prompt_tokens"], inputs["output_tokens"]
    budget = inputs["max_batched_tokens"]
    prefill = sum(step_ms(replica, decode_batch=0, decode_context_tokens=0,
                          prefill_chunks=[(min(budget, prompt - start), start)]).step_ms
                  for start in range(0, prompt, budget))
    batch = min(inputs["max_num_seqs"], -(-workload.concurrency // inputs["replicas"]))
    decode = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * (prompt + output // 2)).step_ms
    return prefill + (output - 1) * decode + workload.think_ms, decode


def run_workload(inputs: dict, workload, setup, max_steps: int | None = None, band: bool = True) -> dict:
    """Simulate ``workload`` on the replicas ``setup`` describes, with cleaned ``inputs``;
    returns ``{"summary", "series"}``. The summary's ``utilisation`` is :func:`utilisation`; above
    :data:`BAND_UTILISATION`, when the replica's efficiencies are the calibration table's
    (:func:`.config.band_setups`), the summary's ``band`` holds the run again at the row's optimistic and
    pessimistic ends (TTFT, TPOT and end-to-end percentiles and goodput; ``band=False`` skips it). Raises
    :class:`InputError` (field ``prompt_tokens``) when a request could never fit one replica's KV cache, and
    (field ``duration_s``) when the replicas' engine steps pass ``max_steps`` (a web request's budget; None: no
    limit)."""
    fresh = replace(workload, arrival_ms=list(workload.arrival_ms)) if band else workload  # a closed loop rewrites
    count = len(workload)
    longest = max((p + o for p, o in zip(workload.prompt, workload.output)), default=0)
    if longest > setup.kv_tokens:
        raise InputError(f"A request of {longest:,} tokens (prompt + output) cannot fit the replica's KV cache of "
                         f"{setup.kv_tokens:,} tokens.", field="prompt_tokens")
    records = Records(count)
    closed = workload.concurrency is not None
    released = workload.concurrency or 0
    pending: list[float] = []  # a closed loop's sends not yet arrived, a heap: first requests, then the next ones
    if closed:
        records.finished = []
        cycle, turnaround = closed_timing(inputs, workload, setup)
        pending = [share * cycle for share in workload.stagger]  # rising: already a heap
        draw = random.Random(f"{inputs['seed']}:turnaround").random
    engines = [ReplicaEngine(setup.replica, setup.blocks, setup.block_size, inputs["max_batched_tokens"],
                             inputs["max_num_seqs"], records, inputs["capacity_policy"])
               for _ in range(inputs["replicas"])]
    series = _Series(workload.duration_ms, engines, setup.blocks)
    router = inputs["router"]
    replicas = len(engines)
    arrivals, prompts, outputs = workload.arrival_ms, workload.prompt, workload.output
    shared, groups = workload.shared, workload.group
    end_ms = workload.duration_ms
    steps: list[tuple[float, int]] = []
    infinity = float("inf")
    index = 0
    waking: list[int] = []  # replicas given a request at this instant
    step_limit = infinity if max_steps is None else max_steps // replicas
    while True:
        if closed:
            next_arrival = pending[0] if pending else infinity
        else:
            next_arrival = arrivals[index] if index < count else infinity
        next_step = steps[0][0] if steps else infinity
        now = min(next_arrival, next_step)
        if now >= end_ms:
            break
        series.advance(now)
        if next_arrival <= next_step:
            if closed:
                arrivals[index] = heapq.heappop(pending)
            if replicas == 1 or router == "round-robin":
                target = index % replicas
            elif router == "least-loaded":
                target = min(range(replicas), key=lambda r: engines[r].load)
            else:
                target = groups[index] % replicas
            if target not in waking:
                waking.append(target)
            engines[target].enqueue(Sequence(index, prompts[index], outputs[index], shared[index], groups[index]))
            index += 1
            if (not pending or pending[0] > now) if closed else (index == count or arrivals[index] > now):
                # arrivals at one instant join one step
                for target in waking:
                    engine = engines[target]
                    if not engine.busy:
                        step = engine.plan()
                        if step:
                            engine.busy = True
                            heapq.heappush(steps, (now + step, target))
                waking.clear()
        else:
            _, target = heapq.heappop(steps)
            engine = engines[target]
            # Steps back to back while no other event comes first: no trip through the heap.
            horizon = min(next_arrival, steps[0][0] if steps else infinity, end_ms, series.next_ms)
            while True:
                if engine.resume:
                    engine.resume = False
                else:
                    engine.commit(now)
                if closed and records.finished:
                    # Each finished request's client sends its next one after its think time; the replica
                    # plans its next step only after arrivals at this instant, so they can join it.
                    for _ in records.finished:
                        if released < count:
                            heapq.heappush(pending, now + workload.think_ms + draw() * turnaround)
                            released += 1
                    records.finished.clear()
                    engine.resume = True
                    heapq.heappush(steps, (now, target))
                    break
                step = engine.plan()
                if not step:
                    engine.busy = False
                    break
                now += step
                if engine.steps > step_limit:
                    raise InputError(f"This run needs more than {step_limit:,} engine steps, more than a web "
                                     f"request may take: shorten the duration or run manage.py simulate.",
                                     field="duration_s")
                if now >= horizon:
                    heapq.heappush(steps, (now, target))
                    break
    series.advance(end_ms)
    in_flight = {seq.rid: (e.generated_so_far(seq), e.last_token_ms(seq)) for e in engines for seq in e.in_flight()}
    if closed:
        arrived = index
        workload, records = sent(workload, arrived), records.first(arrived)
        in_flight = {rid: value for rid, value in in_flight.items() if rid < arrived}
    summary = summarize(workload, records, in_flight=in_flight,
                        preemptions=sum(e.preemptions for e in engines),
                        kv_peak_fraction=max(max(series.data["kv_used_fraction"], default=0),
                                             max(e.kv_peak_blocks for e in engines) / setup.blocks),
                        ttft_slo_ms=inputs["ttft_slo_ms"], tpot_slo_ms=inputs["tpot_slo_ms"])
    summary["steps"] = sum(e.steps for e in engines)
    sized = {**inputs, "_kv_tokens": setup.kv_tokens}
    summary["utilisation"] = round(utilisation(sized, workload, series.data), 4)
    capacity = slots(sized, workload)
    summary["slots"] = None if capacity is None else round(capacity, 3)
    summary["queue_growing"] = queue_growing(summary)
    ends = band_setups(inputs, setup) if band and summary["utilisation"] > BAND_UTILISATION else None
    if ends:
        found = {}
        for name, end_setup in zip(("optimistic", "pessimistic"), ends):
            other = run_workload(inputs, replace(fresh, arrival_ms=list(fresh.arrival_ms)), end_setup, max_steps,
                                 band=False)["summary"]
            found[name] = {f"{metric}_{key}": other[metric][key] for metric, key in BAND_KEYS}
            found[name]["goodput_req_s"] = other["goodput_req_s"]
        # Each end's latency is at least as good as the central run's only in an open loop. In a closed loop a
        # slower decode spaces the clients' next requests, so fewer prefills queue together and the TTFT tail can
        # shorten: the band per value is the span of the central run and both ends, the optimistic end the lowest
        # latency and the highest goodput.
        central = {f"{metric}_{key}": summary[metric][key] for metric, key in BAND_KEYS}
        central["goodput_req_s"] = summary["goodput_req_s"]
        for key, value in central.items():
            values = (value, found["optimistic"][key], found["pessimistic"][key])
            best, worst = (max(values), min(values)) if key == "goodput_req_s" else (min(values), max(values))
            found["optimistic"][key], found["pessimistic"][key] = best, worst
        summary["band"] = found
    return {"summary": summary, "series": series.data}


def echo_inputs(inputs: dict, setup) -> dict:
    """The cleaned inputs as the JSON echoes them (a trace by its size, not its text), with the
    replica's KV cache figures."""
    shown = {key: value for key, value in inputs.items() if key not in ("trace", "config")}
    if "config" in inputs:
        shown["model"] = "(pasted config)"
    if "trace" in inputs:
        shown["trace_chars"] = len(inputs["trace"])
    shown.update(kv_budget_gib=round(setup.kv_budget_gib, 4), kv_blocks=setup.blocks, kv_tokens=setup.kv_tokens,
                 weights_gib=round(setup.weights_gib, 4))
    return shown


def at_point(inputs: dict, point: float | None) -> tuple[dict, float | None]:
    """The inputs and the rate of one sweep point: with a ``concurrency_sweep``, ``point`` is a concurrency, run as
    a closed loop of that many clients (the inputs less the sweep, with ``concurrency``; no rate); else ``point``
    is a rate (None for a trace) and the inputs are as given."""
    if "concurrency_sweep" not in inputs:
        return inputs, point
    closed = {key: value for key, value in inputs.items() if key != "concurrency_sweep"}
    closed["concurrency"] = int(point) if point is not None else None
    return closed, None


def sweep_json(inputs: dict, setup, summaries: list[dict]) -> dict:
    """A sweep's JSON: ``{"inputs", "sweep", "knee_req_s", "knee_text"}`` over rates (:func:`.results.knee_text`:
    "at least" the highest rate swept when it meets the target), ``{"inputs", "sweep",
    "knee_concurrency"}`` over a closed loop's concurrencies."""
    if "concurrency_sweep" in inputs:
        return {"inputs": echo_inputs(inputs, setup), "sweep": summaries,
                "knee_concurrency": knee_concurrency(summaries)}
    return {"inputs": echo_inputs(inputs, setup), "sweep": summaries, "knee_req_s": knee(summaries),
            "knee_text": knee_text(summaries)}


def simulate(raw: dict[str, Any], catalog: Catalog | None = None, max_steps: int | None = None) -> dict:
    """One run, or a sweep when ``raw`` has ``sweep`` or ``concurrency_sweep``: docs/architecture.md §13's JSON.

    ``raw`` uses the command's snake-case names; ``max_steps`` bounds each run's engine steps.
    Returns ``{"inputs", "summary", "series"}``, or with a sweep
    ``{"inputs", "sweep": [summary, …], "knee_req_s"}`` (``"knee_concurrency"`` for a concurrency sweep).
    Raises the engine's errors (:class:`InputError` …) for bad input, before any simulation.
    """
    inputs = clean_sim_inputs(raw, catalog)
    setup = build_setup(inputs, catalog)
    if "concurrency_sweep" in inputs:
        summaries = []
        for clients in inputs["concurrency_sweep"]:
            closed, _ = at_point(inputs, clients)
            summaries.append(run_workload(closed, workload_for(closed), setup, max_steps)["summary"])
        return sweep_json(inputs, setup, summaries)
    if "sweep" in inputs:
        summaries = [run_workload(inputs, workload_for(inputs, rate), setup, max_steps)["summary"]
                     for rate in inputs["sweep"]]
        return sweep_json(inputs, setup, summaries)
    workload = workload_for(inputs)
    inputs["duration_s"] = workload.duration_ms / 1000  # a trace's span when not given
    return {"inputs": echo_inputs(inputs, setup), **run_workload(inputs, workload, setup, max_steps)}


def simulate_rate(inputs: dict, rate: float | None, catalog: Catalog | None = None,
                  max_steps: int | None = None) -> dict:
    """One run of already-cleaned ``inputs`` at ``rate`` (a sweep's point): ``{"summary", "series"}``."""
    return run_workload(inputs, workload_for(inputs, rate), build_setup(inputs, catalog), max_steps)

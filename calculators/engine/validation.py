"""The serving model held against public measurements, and the calibration table fitted on them (§12).

``fixtures/calibration/measurements.yaml`` holds published measurements (source, exact quote, workload,
metric, value). :func:`predict` costs each with the one serving step (:func:`.step_model.step_ms`) under a
set of efficiencies; :func:`fit` finds the efficiencies per card × precision family (and the shared step
overhead, the all-reduce latency and its growth with the TP degree) that minimise the mean absolute log
error, by coordinate search over a grid (a few constants, pure Python); :func:`leave_one_source_out` fits
without each source in turn and predicts it. ``bench/validate_serving.py`` prints the tables;
``tests/engine/test_validation.py`` asserts the bounds reached.

How a workload becomes steps (each step = max(memory ÷ bandwidth efficiency, compute ÷ MFU) + communication
+ the step overhead):

- the decode step reads the KV cache once, or once per query head where the run's engine did so
  (:func:`kv_reads`), and adds the launch cost of an engine the table declares without CUDA graphs
  (:func:`launch_ms`);
- a **static batch** of ``B`` sequences (``batch``): one prefill of all ``B × input`` tokens (one step per
  :data:`PREFILL_CHUNK` tokens, each reading the weights), then ``output − 1`` decode steps of ``B``
  sequences at the mean context ``input + output ÷ 2``; TTFT is the prefill, end-to-end the sum, throughput
  ``B × output ÷ end-to-end``;
- a **saturated** offline run: the same with ``B`` the sequences the KV budget holds at full length
  (memory utilisation and reserve as the quantities' defaults), at most :data:`SATURATED_BATCH_CAP`;
- a **closed loop** of ``C`` requests in flight (``concurrency``): a request's prefill ``t_p`` alone, decode
  steps ``t_d`` of ``C`` sequences; TPOT = ``t_d + (C − 1) × t_p ÷ output`` (the other requests' prefills
  interleave), TTFT = ``t_p`` plus, when ``C > 1``, half a decode step and the chance of queueing behind
  another prefill, ``(C − 1) × t_p² ÷ cycle``; throughput = ``C × output ÷ (TTFT + (output − 1) × TPOT)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean

import yaml

from .calibration import COSTS, KEYS, allreduce_latency_at, bandwidth_efficiency_at, default_calibration, precision_of
from .catalog import GIB, Catalog, default_catalog
from .formulas.memory import weight_bytes
from .quantities import default
from .step_model import Replica, compute_precision, step_ms

MEASUREMENTS = Path(__file__).resolve().parents[2] / "fixtures" / "calibration" / "measurements.yaml"
#: The validation as bench/validate_serving.py --write last computed it (:func:`report`), which /simulator/fidelity/
#: shows; tests/engine/test_calibration.py holds it equal to what this module computes.
REPORT = MEASUREMENTS.with_name("validation.json")
#: Issue 31's acceptance: leave-one-source-out MAPE (%) overall and for TTFT, and no case further off than this.
TARGETS = {"overall": 15.0, "ttft": 20.0, "case": 40.0}
#: The metric families in the order the report lists them.
KINDS = ("throughput", "ttft", "tpot", "e2e")

#: Prompt tokens one prefill step takes (vLLM's and TensorRT-LLM's default token budget per step).
PREFILL_CHUNK = 8192
#: The most sequences a saturated offline run is taken to hold (an assumption; the runs do not say).
SATURATED_BATCH_CAP = 2048
#: Metric families: what each metric measures, for the per-metric error.
METRIC_KIND = {"throughput_tok_s": "throughput", "throughput_tok_s_per_gpu": "throughput", "ttft_ms": "ttft",
               "tpot_ms": "tpot", "itl_ms": "tpot", "per_user_tok_s": "tpot", "e2e_ms": "e2e"}
#: Keys fitted per card × precision family; the others are fitted once for all rows.
PER_ROW = ("bandwidth_efficiency", "bandwidth_efficiency_large_batch", "mfu", "prefill_mfu")
SHARED = ("step_overhead_ms", "allreduce_latency_us", "allreduce_latency_per_tp_doubling_us")
#: The grid each key is searched over.
GRID = {
    "bandwidth_efficiency": [x / 100 for x in range(30, 96, 2)],
    "bandwidth_efficiency_large_batch": [x / 100 for x in range(30, 96, 2)],
    "mfu": [x / 100 for x in range(5, 96, 3)],
    "prefill_mfu": [x / 100 for x in range(10, 96, 3)],
    "step_overhead_ms": [x / 10 for x in range(0, 101, 2)],
    "allreduce_latency_us": [float(x) for x in range(0, 101, 4)],
    "allreduce_latency_per_tp_doubling_us": [float(x) for x in range(0, 101, 4)],
}


@dataclass(frozen=True)
class Case:
    """One measurement: ``id``, ``source``, ``metric``, ``value`` and the ``workload`` as read."""

    id: str
    source: str
    metric: str
    value: float
    workload: dict = field(hash=False)
    quote: str = ""

    @property
    def group(self) -> tuple[str, str]:
        """(gpu, precision family): the calibration row the case reads."""
        return self.workload["gpu"], precision_of(self.workload["weights"])

    @property
    def engine(self) -> str:
        """The serving engine as the calibration keys it (NIM runs TensorRT-LLM underneath)."""
        engine = self.workload.get("engine", "")
        return "tensorrt-llm" if engine == "nim" else engine

    @property
    def kind(self) -> str:
        """throughput, ttft, tpot or e2e."""
        return METRIC_KIND[self.metric]


def load_cases(path: Path | str = MEASUREMENTS) -> tuple[dict, list[Case]]:
    """The sources (by key) and cases of the measurement file. Raises ``ValueError`` naming a case whose
    source, metric or model is unknown."""
    data = yaml.safe_load(Path(path).read_text())
    sources = data["sources"]
    cases = []
    for raw in data["cases"]:
        if raw["source"] not in sources or raw["metric"] not in METRIC_KIND:
            raise ValueError(f"Case {raw['id']}: unknown source {raw['source']!r} or metric {raw['metric']!r}.")
        cases.append(Case(raw["id"], raw["source"], raw["metric"], float(raw["value"]), raw["workload"],
                          raw.get("quote", "")))
    return sources, cases


@dataclass(frozen=True)
class _Step:
    """A step at unit efficiencies: memory ms at full bandwidth, compute ms at MFU 1 (decode, prefill), the
    communication bytes' ms, and the all-reduces it launches."""

    memory: float
    decode: float
    prefill: float
    comm: float
    allreduces: int
    batch: int

    def time(self, p: dict, tp: int) -> float:
        efficiency = bandwidth_efficiency_at(self.batch, p["bandwidth_efficiency"],
                                             p["bandwidth_efficiency_large_batch"])
        compute = self.decode / p["mfu"] + self.prefill / p["prefill_mfu"]
        return (max(self.memory / efficiency, compute) + self.comm
                + self.allreduces * allreduce_latency_at(tp, p["allreduce_latency_us"],
                                                         p["allreduce_latency_per_tp_doubling_us"]) / 1000
                + p["step_overhead_ms"])


@dataclass(frozen=True)
class _Plan:
    """A case's steps: ``prefill`` (run ``prefill_steps`` times) and ``decode``, the load and lengths, and
    ``launch_ms``, what each decode step adds for an engine declared without CUDA graphs (:func:`launch_ms`)."""

    prefill: _Step
    prefill_steps: int
    decode: _Step | None
    load: str  # batch, saturated or concurrency
    sequences: int
    output: int
    tp: int
    launch_ms: float = 0.0


def _unit_step(replica: Replica, layers: int, *, batch: int = 0, context: int = 0,
               chunks: tuple = ()) -> _Step:
    memory = step_ms(replica, decode_batch=batch, decode_context_tokens=context, prefill_chunks=chunks)
    decode = step_ms(replica, decode_batch=batch, decode_context_tokens=context) if batch else None
    prefill_only = step_ms(replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=chunks) if chunks \
        else None
    return _Step(memory.memory_ms, decode.compute_ms if decode else 0.0,
                 prefill_only.compute_ms if prefill_only else 0.0, memory.comm_ms,
                 2 * layers if replica.tp > 1 else 0, max(1, batch))


def _saturated_batch(replica: Replica, catalog: Catalog, workload: dict) -> int:
    # The weights held in memory (every expert of a mixture), not what one step reads (Replica.weight_bytes).
    gpu = replica.gpu
    budget = replica.tp * (gpu.memory_bytes * default("utilization") - default("reserve_gib") * GIB) \
        - weight_bytes(replica.model, replica.weights_dtype, replica.weights_bits)
    per_sequence = replica.kv_bytes_per_token * replica.kv_replication * (workload["input"] + workload["output"])
    return max(1, min(SATURATED_BATCH_CAP, int(budget // per_sequence)))


def kv_reads(case: Case, catalog: Catalog | None = None) -> float:
    """Times a decode step reads each cached K/V head: ``q_heads ÷ kv_heads`` for a run whose engine's decode
    attention reads a K/V head once per query head sharing it (workload ``decode_attention: per_query_head``:
    TensorRT-LLM before its XQA kernels, vLLM 0.2's paged attention; the measurement file's header cites it),
    else 1 (an engine that groups the query heads)."""
    if case.workload.get("decode_attention") != "per_query_head":
        return 1.0
    cfg = (catalog or default_catalog()).model(case.workload["catalog_model"]).config
    return cfg.heads / cfg.kv_heads if cfg.kv_heads else 1.0


_PLANS: dict = {}


def _plan(case: Case, catalog: Catalog) -> _Plan:
    key = (case.id, id(catalog))
    if key not in _PLANS:
        _PLANS[key] = _make_plan(case, catalog)
    return _PLANS[key]


def _make_plan(case: Case, catalog: Catalog) -> _Plan:
    w = case.workload
    cfg = catalog.model(w["catalog_model"]).config
    replica = Replica(cfg, catalog.gpu(w["gpu"]), int(w["tp"]), weights_dtype=w["weights"], kv_dtype=w["kv"],
                      bandwidth_efficiency=1.0, mfu=1.0, prefill_mfu=1.0, allreduce_latency_us=0.0)
    prompt, output = int(w["input"]), int(w["output"])
    if "concurrency" in w:
        load, sequences = "concurrency", int(w["concurrency"])
        prefill = _unit_step(replica, cfg.layers, chunks=((prompt, 0),))
        steps = 1
    else:
        load = "saturated" if w.get("saturated") else "batch"
        sequences = _saturated_batch(replica, catalog, w) if load == "saturated" else int(w["batch"])
        steps = max(1, math.ceil(sequences * prompt / PREFILL_CHUNK))
        per_step = max(1, sequences // steps)
        prefill = _unit_step(replica, cfg.layers, chunks=((prompt, 0),) * per_step)
        prefill = replace(prefill, decode=0.0, prefill=prefill.prefill * sequences / per_step / steps)
    decode = None
    if output > 1:
        decode = _unit_step(replica, cfg.layers, batch=sequences,
                            context=int(sequences * (prompt + output / 2)))
        reads = kv_reads(case)
        if reads != 1:  # the KV cache's share of the step's bytes, read once per query head
            weights = step_ms(replica, decode_batch=sequences, decode_context_tokens=0).memory_ms
            decode = replace(decode, memory=weights + reads * (decode.memory - weights))
    return _Plan(prefill, steps, decode, load, sequences, output, int(w["tp"]), launch_ms(case, catalog))


def launch_ms(case: Case, catalog: Catalog | None = None) -> float:
    """What each decode step of ``case`` pays, ms, for launching its kernels from Python: the calibration table's
    eager launch cost for an engine it declares without CUDA graphs (vLLM of 2023:
    :meth:`.calibration.Calibration.decode_launch_ms`), else 0. Declared from published eager-against-graph
    measurements, not fitted, so it holds when the engine's only source is left out of the fit."""
    layers = (catalog or default_catalog()).model(case.workload["catalog_model"]).config.layers
    return default_calibration().decode_launch_ms(case.engine, layers, int(case.workload["tp"]))


def predict(case: Case, p: dict, catalog: Catalog | None = None) -> float:
    """The model's value of ``case.metric`` for ``case`` under the efficiencies ``p`` (a value per
    :data:`.calibration.KEYS`)."""
    plan = _plan(case, catalog or default_catalog())
    t_p = plan.prefill.time(p, plan.tp) * plan.prefill_steps
    t_d = plan.decode.time(p, plan.tp) + plan.launch_ms if plan.decode else 0.0
    n, out = plan.sequences, plan.output
    if plan.load == "concurrency":
        tpot = t_d + (n - 1) * t_p / out
        cycle = t_p + out * t_d
        ttft = t_p + ((t_d / 2 + (n - 1) * t_p * t_p / cycle) if n > 1 else 0.0)
        e2e = ttft + (out - 1) * tpot
    else:
        tpot, ttft = t_d, t_p
        e2e = t_p + (out - 1) * t_d
    metric = case.metric
    if metric == "ttft_ms":
        return ttft
    if metric in ("tpot_ms", "itl_ms"):
        return tpot
    if metric == "per_user_tok_s":
        return 1000 / tpot
    if metric == "e2e_ms":
        return e2e
    rate = n * out / e2e * 1000
    return rate / plan.tp if metric == "throughput_tok_s_per_gpu" else rate


def defaults() -> dict:
    """Every calibrated key at its quantity's default (the model before calibration)."""
    return {key: default(key) for key in KEYS}


#: The fitted table's key for the cards' keys pooled over every card and precision: the bandwidth efficiencies as
#: they are, the MFUs as shares of the card's dense bf16 peak (an fp8 step that reaches 0.4 of an H100's fp8 peak
#: delivers 0.8 of its bf16 peak). A card × precision is drawn toward the pooled value, converted to its own
#: compute precision (:func:`prior`), so a card whose cases do not show a key reads what the other cards measured
#: rather than the stated convention.
POOLED = ("pooled",)
#: A weight format per precision family, to find the family's compute precision on a card.
_FORMAT = {"16-bit": "bf16", "fp8": "fp8", "fp4": "nvfp4", "int8": "int8", "int4": "int4"}
MFU_KEYS = ("mfu", "prefill_mfu")
#: The most of its own dense peak a card reads from the pool: 0.75, about the highest share any case measures on
#: its own card (the A100 at 16-bit prefilling 2,048 tokens for TensorRT-LLM's first-token table: 0.73). The pool
#: counts MFUs as shares of the bf16 peak, so an FP8 prefill at 0.46 of an H100's FP8 peak pools as 0.92 of its
#: bf16 peak; a 16-bit card read at that share would prefill faster than any 16-bit case was measured to.
MFU_CEILING = 0.75


def bf16_share(group: tuple[str, str], catalog: Catalog | None = None) -> float:
    """The card's dense bf16 peak ÷ its dense peak at the group's compute precision (1 at 16-bit, ½ for fp8 on
    an H100): an MFU times this is the share of the bf16 peak delivered."""
    gpu = (catalog or default_catalog()).gpu(group[0])
    precision = compute_precision(_FORMAT.get(group[1], "bf16"), gpu)
    return gpu.dense_tflops["bf16"] / gpu.dense_tflops[precision]


def prior(table: dict, group: tuple[str, str]) -> dict:
    """The pooled keys (:data:`POOLED`) as ``group`` reads them: bandwidth efficiencies as pooled, MFUs converted
    from shares of the bf16 peak to shares of the group's own compute peak (at most :data:`MFU_CEILING`, to 3
    decimals, so a row that reads the pool stores a readable value). ``{}`` without a pool."""
    pooled = table.get(POOLED)
    if not pooled or group[0] in ("shared", "pooled"):
        return {}
    ratio = bf16_share(group)
    return {key: round(min(MFU_CEILING, value * ratio), 3) if key in MFU_KEYS else value
            for key, value in pooled.items()}


def parameters(table: dict, group: tuple[str, str], engine: str = "") -> dict:
    """The efficiencies a case of ``group`` run by ``engine`` reads from a fitted ``table`` ({group: {key:
    value}}, the shared keys under ``("shared", engine)``, the pool under :data:`POOLED`), a key the table lacks
    at the pool's value for the group (:func:`prior`), else at its default. An engine the table has no shared
    keys for (none of its cases were fitted: leave-one-source-out of its only source) reads the any-engine ones
    (:data:`ANY_ENGINE`), as :meth:`.calibration.Calibration.row` falls back to the any-engine row: a step's
    fixed cost measured on every other engine, not the stated convention's zero."""
    shared = table.get(("shared", engine)) or table.get(ANY_ENGINE, {})
    return {**defaults(), **prior(table, group), **shared, **table.get(group, {})}


#: Weight of the pull of a shared cost toward its stated default (per ms, or per 10 µs of all-reduce latency),
#: and of the pool's keys toward theirs (per unit of |log(value ÷ default)|): small, so it only settles a key the
#: cases cannot see.
PULL = 0.02
#: Weight of the pull of a card × precision's key toward the pool (:func:`prior`), per unit of |log(value ÷
#: pooled)|, against the card's mean absolute log error: a hierarchical fit. A card's key leaves the pool only as
#: far as its own cases pay for: 0.1 lets a card stand 2× from the pool (|log 2| × 0.1 = 0.07) when that removes
#: more than 7 % of mean error on its cases, so one source's few cases of a card (NeMo's two batch-8 prefills on
#: the A100) do not carry its prefill MFU from the pool's 0.94 down to 0.43 and predict every other source's
#: A100 TTFT 69 % high, as the weight 0.02 (a tie-break) did.
ROW_PULL = 0.1


def _pull(key: str, value: float, start: float | None = None) -> float:
    if start is not None and key in PER_ROW:
        return ROW_PULL * abs(math.log(value / start))
    start = defaults()[key] if start is None else start
    if key in COSTS:
        return PULL * abs(value - start) / (10.0 if key.endswith("_us") else 1.0)
    return PULL * abs(math.log(value / start))


def _candidates(key: str, row: dict) -> list[float]:
    """:data:`GRID`'s values for ``key`` that keep a row physical: a larger batch never reads memory less
    efficiently than one sequence does (the batch-1 efficiency at most the large-batch one)."""
    if key == "bandwidth_efficiency_large_batch":
        return [v for v in GRID[key] if v >= row["bandwidth_efficiency"]] or [row["bandwidth_efficiency"]]
    if key == "bandwidth_efficiency":
        return [v for v in GRID[key] if v <= row["bandwidth_efficiency_large_batch"]] or GRID[key][:1]
    return GRID[key]


#: How far (a share) :func:`governs` moves a key, and how much (a share) a case's prediction must move for the key
#: to count as seen by that case.
PROBE, SEEN = 0.15, 0.01


def governs(cases: list[Case], key: str, table: dict, catalog: Catalog | None = None) -> bool:
    """Whether any of ``cases`` (one card × precision's) is bound by ``key`` under ``table``: its prediction moves by
    more than :data:`SEEN` when the key moves by :data:`PROBE` either way. A key none of a card's cases is bound by
    (a prefill MFU where every prefill is short enough to read weights, not FLOPs; a decode MFU where every decode
    step is memory-bound) is not fitted on that card: the card reads the pool's value (:func:`prior`), as a card
    without cases does, rather than bending a key its cases do not see to absorb another cost."""
    catalog = catalog or default_catalog()
    for case in cases:
        p = parameters(table, case.group, case.engine)
        base = predict(case, p, catalog)
        for factor in (1 - PROBE, 1 + PROBE):
            moved = {**p, key: p[key] * factor}
            if key == "bandwidth_efficiency":  # the batch-1 efficiency moves within the large-batch one
                moved["bandwidth_efficiency_large_batch"] = max(moved["bandwidth_efficiency_large_batch"], moved[key])
            if abs(predict(case, moved, catalog) / base - 1) > SEEN:
                return True
    return False


def _loss(cases: list[Case], table: dict, catalog: Catalog) -> float:
    if not cases:
        return 0.0
    return mean(abs(math.log(predict(c, parameters(table, c.group, c.engine), catalog) / c.value))
                for c in cases)


def fit(cases: list[Case], catalog: Catalog | None = None, sweeps: int = 3) -> dict:
    """The table ({(gpu, precision): {key: value}, ("shared", engine): {key: value}}) minimising the mean
    absolute log error over ``cases``: coordinate search over :data:`GRID`, ``sweeps`` passes, starting at the
    defaults. A group's own keys are scored on its cases only, each pulled toward the pool by :data:`ROW_PULL`
    and held at the pool where none of the group's cases is bound by it (:func:`governs`); an engine's shared keys
    on its cases; then :data:`ANY_ENGINE`'s shared keys on every case (the cards' keys held), which an engine with
    no tensor-parallel case reads for its all-reduce keys (:data:`ALLREDUCE_KEYS`)."""
    catalog = catalog or default_catalog()
    groups: dict = {}
    engines: dict = {}
    for case in cases:
        groups.setdefault(case.group, []).append(case)
        engines.setdefault(("shared", case.engine), []).append(case)
    table: dict = {POOLED: {key: defaults()[key] for key in PER_ROW}}
    for engine in engines:
        table[engine] = {key: defaults()[key] for key in SHARED}
    for group in groups:
        table[group] = {key: defaults()[key] for key in PER_ROW}
    for _ in range(sweeps):
        for engine, members in engines.items():
            for key in SHARED:
                table[engine][key] = min(GRID[key], key=lambda v: _loss(
                    members, {**table, engine: {**table[engine], key: v}}, catalog) + _pull(key, v))
        pool_only = {name: values for name, values in table.items() if name[0] == "shared"}
        for key in PER_ROW:  # every card at the pool: the pool scored on every case
            table[POOLED][key] = min(GRID[key], key=lambda v: _loss(
                cases, {**pool_only, POOLED: {**table[POOLED], key: v}}, catalog) + _pull(key, v))
        for group, members in groups.items():
            start = prior(table, group)
            for key in PER_ROW:
                if not governs(members, key, {**table, group: {**table[group], key: start[key]}}, catalog):
                    table[group][key] = start[key]
                    continue
                table[group][key] = min(_candidates(key, table[group]), key=lambda v: _loss(
                    members, {**table, group: {**table[group], key: v}}, catalog) + _pull(key, v, start[key]))
    table[ANY_ENGINE] = _fit_any_engine(cases, table, catalog, sweeps)
    for engine, members in engines.items():
        if all(int(c.workload["tp"]) == 1 for c in members):
            table[engine].update({key: table[ANY_ENGINE][key] for key in ALLREDUCE_KEYS})
    return table


#: The fitted table's key for the shared keys of a stack whose engine is not named (the families, the
#: simulator): one step overhead, all-reduce latency and its growth per TP doubling fitted on every case.
ANY_ENGINE = ("shared", "")
#: The shared keys only a tensor-parallel case sees. An engine none of whose cases runs on more than one card has
#: no all-reduce to fit them on, so it reads the any-engine ones (:func:`fit`), as an engine without cases reads
#: every shared key (:func:`parameters`), rather than the stated convention a pull toward the default leaves: with
#: vLLM's CI runs left out, vLLM is seen only through one single-card sweep, and its 70B run at TP 4 read 8 µs an
#: all-reduce, not growing with the degree (what the pull toward the default left), where the other engines' cases
#: fit 12 µs and 8 µs more per doubling (bench/validate_serving.py: vLLM CI 29.2 → 19.3 % leave-one-source-out).
ALLREDUCE_KEYS = ("allreduce_latency_us", "allreduce_latency_per_tp_doubling_us")


def _fit_any_engine(cases: list[Case], table: dict, catalog: Catalog, sweeps: int) -> dict:
    """The shared keys fitted on every case as if one engine ran them all, each card's own keys held at
    ``table``'s: what a stack without a named engine reads."""
    found = {key: defaults()[key] for key in SHARED}

    def loss(values: dict) -> float:
        return mean(abs(math.log(predict(c, {**parameters(table, c.group, c.engine), **values}, catalog)
                                 / c.value)) for c in cases) if cases else 0.0

    for _ in range(sweeps):
        for key in SHARED:
            found[key] = min(GRID[key], key=lambda v: loss({**found, key: v}) + _pull(key, v))
    return found


def error(case: Case, table: dict, catalog: Catalog | None = None) -> float:
    """Signed relative error of the prediction, (predicted − measured) ÷ measured."""
    return predict(case, parameters(table, case.group, case.engine), catalog) / case.value - 1


def mape(errors: list[float]) -> float:
    """Mean absolute percentage error of signed relative errors, in %."""
    return 100 * mean(abs(e) for e in errors) if errors else 0.0


def leave_one_source_out(cases: list[Case], catalog: Catalog | None = None, sweeps: int = 3) -> dict:
    """Each case's signed error when the table is fitted without its source: {case id: error}."""
    found = {}
    for source in sorted({c.source for c in cases}):
        table = fit([c for c in cases if c.source != source], catalog, sweeps)
        for case in cases:
            if case.source == source:
                found[case.id] = error(case, table, catalog)
    return found


def band(tables: list[dict], group: tuple[str, str], key: str, engine: str = "") -> tuple[float, float]:
    """(low, high) of ``key`` across fits (e.g. leave-one-source-out), the pessimistic end first for a
    cost."""
    values = [parameters(t, group, engine)[key] for t in tables]
    return (max(values), min(values)) if key in COSTS else (min(values), max(values))


def _stack(case: Case) -> str:
    """A case's workload in a line: model, cards, weights, lengths and load."""
    w = case.workload
    load = (f"{w['concurrency']} in flight" if "concurrency" in w else "saturated" if w.get("saturated")
            else f"batch {w['batch']}")
    return (f"{w['model']} on {w['tp']} × {w['gpu']}, {w['weights']}, {w['input']:,} → {w['output']:,} tokens, "
            f"{load}, {w.get('engine', '')}")


def report(sources: dict, cases: list[Case], before: dict, fitted: dict, loso: dict) -> dict:
    """The validation as data: every case (id, source, metric and kind, the stack, measured, the value predicted
    leave-one-source-out, and the signed errors before calibration, fitted on every case and leave-one-source-out,
    each a fraction rounded to 1e-4), the MAPE (%) per metric and overall for each, the sources with their LOSO
    MAPE, the biases each case shows, and :data:`TARGETS`. ``before``/``fitted``/``loso``: {case id: signed
    error}."""
    biases: dict = {}
    for bias, ids in yaml.safe_load(MEASUREMENTS.read_text()).get("biases", {}).items():
        for case_id in ids:
            biases.setdefault(case_id, []).append(bias)

    def rounded(value: float) -> float:
        return round(value, 4)

    rows = [{"id": c.id, "source": c.source, "metric": c.metric, "kind": c.kind, "stack": _stack(c),
             "measured": c.value, "predicted": round(c.value * (1 + loso[c.id]), 4),
             "before": rounded(before[c.id]), "fitted": rounded(fitted[c.id]), "loso": rounded(loso[c.id]),
             "biases": biases.get(c.id, [])} for c in cases]
    mapes = {}
    for kind in (*KINDS, "overall"):
        chosen = [c.id for c in cases if kind in (c.kind, "overall")]
        mapes[kind] = {"cases": len(chosen), **{name: round(mape([errors[i] for i in chosen]), 2) for name, errors
                                                in (("before", before), ("fitted", fitted), ("loso", loso))}}
    return {
        "about": "Written by bench/validate_serving.py --write (calculators/engine/validation.py): the serving model "
                 "held against fixtures/calibration/measurements.yaml. Errors are signed fractions, (predicted − "
                 "measured) ÷ measured; MAPE in %.",
        "targets": TARGETS, "mape": mapes, "cases": rows,
        "sources": {key: {"title": value["title"], "cases": sum(c.source == key for c in cases),
                          "loso": round(mape([loso[c.id] for c in cases if c.source == key]), 2)}
                    for key, value in sorted(sources.items())},
    }


def load_report(path: Path | str = REPORT) -> dict:
    """The validation :func:`report` as written to ``path``. Raises ``OSError`` or ``ValueError`` when it cannot
    be read."""
    return json.loads(Path(path).read_text())

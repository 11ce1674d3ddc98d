"""The serving model held against public measurements, and the calibration table fitted on them (§12).

``fixtures/calibration/measurements.yaml`` holds published measurements (source, exact quote, workload,
metric, value). :func:`predict` costs each with the one serving step (:func:`.step_model.step_ms`) under a
set of efficiencies; :func:`fit` finds the efficiencies per card × precision family (and the shared step
overhead, its growth with the TP degree and the all-reduce latency) that minimise the mean absolute log
error, by coordinate search over a grid (a few constants, pure Python); :func:`leave_one_source_out` fits
without each source in turn and predicts it. ``bench/validate_serving.py`` prints the tables;
``tests/engine/test_validation.py`` asserts the bounds reached.

How a workload becomes steps (each step = max(memory ÷ bandwidth efficiency, compute ÷ MFU) + communication
+ the step overhead):

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

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean

import yaml

from .calibration import COSTS, KEYS, bandwidth_efficiency_at, precision_of, step_overhead_ms
from .catalog import GIB, Catalog, default_catalog
from .quantities import default
from .step_model import Replica, step_ms

MEASUREMENTS = Path(__file__).resolve().parents[2] / "fixtures" / "calibration" / "measurements.yaml"

#: Prompt tokens one prefill step takes (vLLM's and TensorRT-LLM's default token budget per step).
PREFILL_CHUNK = 8192
#: The most sequences a saturated offline run is taken to hold (an assumption; the runs do not say).
SATURATED_BATCH_CAP = 2048
#: Metric families: what each metric measures, for the per-metric error.
METRIC_KIND = {"throughput_tok_s": "throughput", "throughput_tok_s_per_gpu": "throughput", "ttft_ms": "ttft",
               "tpot_ms": "tpot", "itl_ms": "tpot", "per_user_tok_s": "tpot", "e2e_ms": "e2e"}
#: Keys fitted per card × precision family; the others are fitted once for all rows.
PER_ROW = ("bandwidth_efficiency", "bandwidth_efficiency_large_batch", "mfu", "prefill_mfu")
SHARED = ("step_overhead_ms", "step_overhead_per_tp_ms", "allreduce_latency_us")
#: The grid each key is searched over.
GRID = {
    "bandwidth_efficiency": [x / 100 for x in range(30, 96, 2)],
    "bandwidth_efficiency_large_batch": [x / 100 for x in range(30, 96, 2)],
    "mfu": [x / 100 for x in range(5, 96, 3)],
    "prefill_mfu": [x / 100 for x in range(10, 96, 3)],
    "step_overhead_ms": [x / 10 for x in range(0, 101, 2)],
    "step_overhead_per_tp_ms": [x / 10 for x in range(0, 61, 1)],
    "allreduce_latency_us": [float(x) for x in range(0, 101, 4)],
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
                + self.allreduces * p["allreduce_latency_us"] / 1000
                + step_overhead_ms(tp, p["step_overhead_ms"], p["step_overhead_per_tp_ms"]))


@dataclass(frozen=True)
class _Plan:
    """A case's steps: ``prefill`` (run ``prefill_steps`` times) and ``decode``, the load and lengths."""

    prefill: _Step
    prefill_steps: int
    decode: _Step | None
    load: str  # batch, saturated or concurrency
    sequences: int
    output: int
    tp: int


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
    gpu = replica.gpu
    budget = replica.tp * (gpu.memory_bytes * default("utilization") - default("reserve_gib") * GIB) \
        - replica.weight_bytes(1)
    per_sequence = replica.kv_bytes_per_token * replica.kv_replication * (workload["input"] + workload["output"])
    return max(1, min(SATURATED_BATCH_CAP, int(budget // per_sequence)))


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
    return _Plan(prefill, steps, decode, load, sequences, output, int(w["tp"]))


def predict(case: Case, p: dict, catalog: Catalog | None = None) -> float:
    """The model's value of ``case.metric`` for ``case`` under the efficiencies ``p`` (a value per
    :data:`.calibration.KEYS`)."""
    plan = _plan(case, catalog or default_catalog())
    t_p = plan.prefill.time(p, plan.tp) * plan.prefill_steps
    t_d = plan.decode.time(p, plan.tp) if plan.decode else 0.0
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


def parameters(table: dict, group: tuple[str, str], engine: str = "") -> dict:
    """The efficiencies a case of ``group`` run by ``engine`` reads from a fitted ``table`` ({group: {key:
    value}}, the shared keys under ``("shared", engine)``), a key the table lacks at its default."""
    return {**defaults(), **table.get(("shared", engine), {}), **table.get(group, {})}


#: Weight of the pull toward a key's default (per unit of |log(value ÷ default)|, or per ms/10 µs for a cost):
#: small, so it only settles a key the cases cannot see (a decode MFU no case is compute-bound on keeps its default).
PULL = 0.02


def _pull(key: str, value: float) -> float:
    start = defaults()[key]
    if key in COSTS:
        return PULL * abs(value - start) / (10.0 if key == "allreduce_latency_us" else 1.0)
    return PULL * abs(math.log(value / start))


def _loss(cases: list[Case], table: dict, catalog: Catalog) -> float:
    if not cases:
        return 0.0
    return mean(abs(math.log(predict(c, parameters(table, c.group, c.engine), catalog) / c.value))
                for c in cases)


def fit(cases: list[Case], catalog: Catalog | None = None, sweeps: int = 3) -> dict:
    """The table ({(gpu, precision): {key: value}, ("shared", engine): {key: value}}) minimising the mean
    absolute log error over ``cases``: coordinate search over :data:`GRID`, ``sweeps`` passes, starting at the
    defaults. A group's own keys are scored on its cases only; an engine's shared keys on its cases; then
    :data:`ANY_ENGINE`'s shared keys on every case (the cards' keys held)."""
    catalog = catalog or default_catalog()
    groups: dict = {}
    engines: dict = {}
    for case in cases:
        groups.setdefault(case.group, []).append(case)
        engines.setdefault(("shared", case.engine), []).append(case)
    table: dict = {}
    for engine in engines:
        table[engine] = {key: defaults()[key] for key in SHARED}
    for group in groups:
        table[group] = {key: defaults()[key] for key in PER_ROW}
    for _ in range(sweeps):
        for engine, members in engines.items():
            for key in SHARED:
                table[engine][key] = min(GRID[key], key=lambda v: _loss(
                    members, {**table, engine: {**table[engine], key: v}}, catalog) + _pull(key, v))
        for group, members in groups.items():
            for key in PER_ROW:
                table[group][key] = min(GRID[key], key=lambda v: _loss(
                    members, {**table, group: {**table[group], key: v}}, catalog) + _pull(key, v))
    table[ANY_ENGINE] = _fit_any_engine(cases, table, catalog, sweeps)
    return table


#: The fitted table's key for the shared keys of a stack whose engine is not named (the families, the
#: simulator): one step overhead, growth per TP card and all-reduce latency fitted on every case.
ANY_ENGINE = ("shared", "")


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

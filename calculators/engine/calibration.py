"""The serving model's calibration table (docs/architecture.md §12): measured efficiencies per card and precision.

A quantity's default (:data:`.quantities.INPUTS`) is the stated convention every card starts from; the
table in ``fixtures/catalog/calibration.json`` overrides it per card × precision (× engine where it
matters) with values fitted on public measurements (``fixtures/calibration/measurements.yaml``, checked by
``bench/validate_serving.py``). Each value is a :class:`Band`: the central value and a low ≤ value ≤ high
(the range of the leave-one-source-out fits); the pessimistic end is the low one for an efficiency and
the high one for a cost (:data:`COSTS`), which the simulator's bands read. Every row names the
measurements it was fitted on and how.

Callers read a calibrated value through its quantity: :func:`.quantities.default` with ``gpu`` and
``precision`` (a card without a row gets the quantity's default). The keys are:

- ``bandwidth_efficiency`` — share of peak HBM bandwidth a decode step reaches at batch 1;
- ``bandwidth_efficiency_large_batch`` — the same at :data:`LARGE_BATCH` sequences and above (between the
  two, :func:`bandwidth_efficiency_at` interpolates in log2 of the batch);
- ``mfu`` and ``prefill_mfu`` — decode's and prefill's share of the dense peak at the compute precision;
- ``step_overhead_ms`` — the fixed cost of one engine step (kernel launches, scheduling, sampling);
- ``allreduce_latency_us`` and ``allreduce_latency_per_tp_doubling_us`` — the fixed cost of one all-reduce, and
  what each doubling of the tensor-parallel degree adds to it (:func:`allreduce_latency_at`).

Beside the fitted rows the table declares, per engine key, whether the engine replays its decode steps as CUDA
graphs (``engines``; an engine not listed does), and what a decode step of an engine that does not pays for
launching its kernels from Python (``eager_launch``, ms a layer, read from published eager-against-graph
measurements, not fitted: :func:`eager_launch_ms`).

Pure Python, no Django. Raises :class:`~.errors.CatalogError` for an unreadable table, an unknown key,
a band whose low/high do not bracket its value, or two rows for one card × precision × engine.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import CatalogError

DEFAULT_TABLE = Path(__file__).resolve().parents[2] / "fixtures" / "catalog" / "calibration.json"

#: The calibrated keys, each an input quantity of :data:`.quantities.INPUTS`.
KEYS = ("bandwidth_efficiency", "bandwidth_efficiency_large_batch", "mfu", "prefill_mfu", "step_overhead_ms",
        "allreduce_latency_us", "allreduce_latency_per_tp_doubling_us")
#: Keys whose pessimistic end is the high one (a cost, not an efficiency).
COSTS = ("step_overhead_ms", "allreduce_latency_us", "allreduce_latency_per_tp_doubling_us")
#: The batch at and above which a step reads memory at ``bandwidth_efficiency_large_batch``.
LARGE_BATCH = 64

#: Weight formats by the precision family a row is keyed on.
PRECISIONS = {"bf16": "16-bit", "fp16": "16-bit", "fp32": "16-bit", "fp8": "fp8", "int8": "int8", "int4": "int4",
              "nvfp4": "fp4", "mxfp4": "fp4"}


def precision_of(weights_dtype: str) -> str:
    """The precision family a row is keyed on for a weight format ("bf16" → "16-bit", "nvfp4" → "fp4")."""
    return PRECISIONS.get(weights_dtype, weights_dtype)


@dataclass(frozen=True)
class Band:
    """A calibrated value with its range: ``value`` (central), ``low`` ≤ value ≤ ``high``."""

    value: float
    low: float
    high: float

    def pick(self, end: str) -> float:
        """``"value"``, ``"low"`` or ``"high"``."""
        return {"value": self.value, "low": self.low, "high": self.high}[end]


@dataclass(frozen=True)
class CalibrationRow:
    """One card × precision (× engine, ``""`` for any) and its fitted :class:`Band` s by key."""

    gpu: str
    precision: str
    engine: str
    values: dict = field(hash=False)
    fitted_on: tuple = ()
    how: str = ""


@dataclass(frozen=True)
class EagerLaunch:
    """What a decode step launched kernel by kernel from Python (no CUDA graph) costs beyond the same step replayed
    as a graph, ms a layer: ``ms_per_layer`` on one card and ``ms_per_layer_per_tp_doubling`` more per doubling of
    the tensor-parallel degree, with the ``sources`` (each a dict of address, quote and what was read) they come
    from and ``how`` they were derived."""

    ms_per_layer: float
    ms_per_layer_per_tp_doubling: float
    sources: tuple = ()
    how: str = ""


@dataclass(frozen=True)
class Calibration:
    """The table: rows by (gpu, precision, engine), the engines declared without CUDA graphs and the eager launch
    cost they pay (:class:`EagerLaunch`). Read it through :func:`.quantities.default` and
    :meth:`decode_launch_ms`."""

    rows: dict = field(hash=False)
    eager_engines: frozenset = frozenset()
    eager: EagerLaunch | None = None

    def row(self, gpu: str, precision: str, engine: str = "") -> CalibrationRow | None:
        """The row for this card and precision family (an engine's own row first, then the any-engine one)."""
        precision = precision_of(precision)
        return self.rows.get((gpu, precision, engine)) or self.rows.get((gpu, precision, ""))

    def band(self, key: str, gpu: str, precision: str, engine: str = "") -> Band | None:
        """The row's band for ``key``, or ``None`` when no row (or the row has no value for it)."""
        if key not in KEYS:
            raise KeyError(key)
        found = self.row(gpu, precision, engine)
        return found.values.get(key) if found else None

    def decode_launch_ms(self, engine: str, layers: int, tp: int) -> float:
        """What one decode step of ``engine`` pays beyond its graphed step for launching ``layers`` layers' kernels
        from Python on ``tp`` cards, ms: :func:`eager_launch_ms` for an engine the table declares without CUDA
        graphs, 0 for any other (an engine not listed replays its decode steps as graphs)."""
        if engine not in self.eager_engines or self.eager is None:
            return 0.0
        return eager_launch_ms(layers, tp, self.eager.ms_per_layer, self.eager.ms_per_layer_per_tp_doubling)


def bandwidth_efficiency_at(batch: float, small: float, large: float) -> float:
    """The bandwidth efficiency of a step of ``batch`` sequences: ``small`` at batch 1, ``large`` at
    :data:`LARGE_BATCH` and above, linear in log2(batch) between."""
    if batch <= 1:
        return small
    share = min(1.0, math.log2(batch) / math.log2(LARGE_BATCH))
    return small + (large - small) * share


def allreduce_latency_at(tp: int, latency_us: float, per_doubling_us: float) -> float:
    """The fixed cost of one all-reduce on ``tp`` cards, µs: ``latency_us + per_doubling_us × log2(tp)`` (TP 1:
    ``latency_us``, though one card runs no all-reduce; TP 8: three doublings).

    What tensor parallelism adds to a step grows with the degree per collective, not per step: every layer's two
    all-reduces pay the ranks' synchronisation, which NCCL's tree and an NVSwitch all-reduce pay in log2(t)
    rounds, not t − 1 (every rank launches its kernels at the same time), so a model of 80 layers pays it 2.5
    times as often a step as one of 32. NeMo's Llama-2-7B batch-1 sweep (fixtures/calibration/measurements.yaml,
    source ``nemo``) shows the log2 growth: a step's cost beyond its weights grows by about 1.7, 0.9 and 0.85 ms
    (A100 80GB) from TP 1 to 2, 2 to 4 and 4 to 8, where a cost per card would grow 1 : 2 : 4. TensorRT-LLM's
    2023 first-token table shows the per-layer scaling: Llama-70B at TP 4 prefills 128 tokens in 26 ms (H100 FP8)
    and 47 ms (A100 FP16), about 11 and 13 ms more than a TP cost charged once a step predicted on either card
    (the same on cards of different speed: a fixed cost of its 160 all-reduces). Charged per all-reduce, the
    growth fitted without NeMo predicts NeMo's three TP 8 runs within 32 % (46–58 % off charged per step;
    bench/validate_serving.py, docs/performance.md).
    """
    return latency_us + per_doubling_us * math.log2(max(1, tp))


def eager_launch_ms(layers: int, tp: int, ms_per_layer: float, ms_per_layer_per_tp_doubling: float) -> float:
    """The launch cost a decode step run without CUDA graphs adds, ms: ``layers × (ms_per_layer +
    ms_per_layer_per_tp_doubling × log2(tp))``.

    Without a graph the CPU launches every kernel of every layer each step (PyTorch dispatch, the engine's Python
    around it, NCCL's launch of each all-reduce); where a layer's GPU work is shorter than its launches the GPU
    waits for them. Per layer, because every layer launches the same kernels; growing with the TP degree, because
    each card's share of a layer's work shrinks while its launches do not, so less of them hides behind the work.
    The table's two points (``fixtures/catalog/calibration.json``, ``eager_launch``): vLLM's own first CUDA-graph
    patch for Llama 2 7B on one card (about 1.2 s eager, 1.05 s graphed, for 100 output tokens: 0.15 s over 99
    decode steps of 32 layers, 0.047 ms a layer) and metaseq's for OPT-175B on 8 A100s at 8-way model
    parallelism (about 95 ms eager, 66 ms graphed a token: 29 ms over 96 layers, 0.302 ms a layer), so 0.085 ms
    a layer more per TP doubling. Llama 2 70B's 80 layers at TP 8: 80 × 0.302 = 24.2 ms a step.
    """
    return layers * (ms_per_layer + ms_per_layer_per_tp_doubling * math.log2(max(1, tp)))


def _band(raw, where: str) -> Band:
    if isinstance(raw, (int, float)):
        return Band(float(raw), float(raw), float(raw))
    try:
        band = Band(float(raw["value"]), float(raw["low"]), float(raw["high"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{where}: expected a number or {{value, low, high}}, read {raw!r}.") from exc
    if not band.low <= band.value <= band.high:
        raise CatalogError(f"{where}: low {band.low:g} ≤ value {band.value:g} ≤ high {band.high:g} does not hold.")
    return band


def _eager(engines: dict, eager: dict | None) -> tuple[frozenset, EagerLaunch | None]:
    off = []
    for name, declared in engines.items():
        graphs = declared.get("cuda_graphs") if isinstance(declared, dict) else None
        if not isinstance(graphs, bool):
            raise CatalogError(f"calibration engine {name}: cuda_graphs must be true or false, read {graphs!r}.")
        if not graphs:
            off.append(name)
    if eager is None:
        if off:
            raise CatalogError(f"calibration engine(s) {', '.join(sorted(off))} run without CUDA graphs, but the "
                               "table declares no eager_launch cost.")
        return frozenset(), None
    try:
        found = EagerLaunch(float(eager["ms_per_layer"]), float(eager["ms_per_layer_per_tp_doubling"]),
                            tuple(eager.get("sources", ())), eager.get("how", ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError("calibration eager_launch: expected ms_per_layer and ms_per_layer_per_tp_doubling "
                           f"(numbers), read {eager!r}.") from exc
    if found.ms_per_layer < 0 or found.ms_per_layer_per_tp_doubling < 0:
        raise CatalogError("calibration eager_launch: a launch cost cannot be negative.")
    return frozenset(off), found


def calibration_from_entries(entries: list[dict], engines: dict | None = None,
                             eager: dict | None = None) -> Calibration:
    """Build a :class:`Calibration` from the table's ``rows`` (a list of objects), its ``engines`` ({engine key:
    {"cuda_graphs": bool}}) and ``eager_launch`` ({ms_per_layer, ms_per_layer_per_tp_doubling, sources, how}).
    Raises :class:`CatalogError` naming the row on an unknown key, a bad band or a duplicate, and for an engine
    whose ``cuda_graphs`` is not a boolean, a launch cost that is missing (an engine declared without graphs),
    not a number or negative."""
    rows: dict = {}
    for entry in entries:
        key = (entry.get("gpu", ""), precision_of(entry.get("precision", "")), entry.get("engine") or "")
        where = f"calibration row {key[0]} × {key[1]}" + (f" × {key[2]}" if key[2] else "")
        unknown = sorted(set(entry.get("values", {})) - set(KEYS))
        if unknown:
            raise CatalogError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}.")
        if key in rows:
            raise CatalogError(f"{where} is given twice.")
        values = {name: _band(raw, f"{where}, {name}") for name, raw in entry.get("values", {}).items()}
        rows[key] = CalibrationRow(key[0], key[1], key[2], values, tuple(entry.get("fitted_on", ())),
                                   entry.get("how", ""))
    return Calibration(rows, *_eager(engines or {}, eager))


def load_calibration(path: Path | str = DEFAULT_TABLE) -> Calibration:
    """Read the table at ``path`` (JSON with a ``rows`` list, and optionally ``engines`` and ``eager_launch``).
    Raises :class:`CatalogError` when unreadable."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogError(f"Cannot read the calibration table {path}: {exc}") from exc
    return calibration_from_entries(data.get("rows", []), data.get("engines"), data.get("eager_launch"))


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The repository's table (``fixtures/catalog/calibration.json``), read once per process."""
    return load_calibration(DEFAULT_TABLE)


#: A workload beyond a user's fitted range by more than this share of it is flagged (:func:`outside_fitted_range`).
RANGE_SLACK = 0.10


def outside_fitted_range(ranges: dict, fitted_tp: int, *, prompt_tokens: float, output_tokens: float,
                         batch: float | None = None, tp: int | None = None) -> list[str]:
    """One sentence per way a workload lies outside what a user's fit covered (empty when inside).

    ``ranges``: ``{"prompt tokens": (low, high), "output tokens": …, "sequences in a step": …}`` as the lab's fit
    records them; ``fitted_tp`` the TP degree the points were measured at. A value more than :data:`RANGE_SLACK`
    beyond either end is outside; so is another TP degree (the fitted step overhead holds that degree's
    collectives).
    """
    found = []
    asked = {"prompt tokens": prompt_tokens, "output tokens": output_tokens}
    if batch is not None:
        asked["sequences in a step"] = batch
    for name, value in asked.items():
        if name not in ranges:
            continue
        low, high = ranges[name]
        if value < low * (1 - RANGE_SLACK) or value > high * (1 + RANGE_SLACK):
            fitted = f"the {low:,.0f}" if low == high else f"the {low:,.0f}–{high:,.0f}"
            found.append(f"{value:,.0f} {name} is outside {fitted} the calibration was fitted on; its constants "
                         "are extrapolated there.")
    if tp is not None and tp != fitted_tp:
        found.append(f"The calibration was fitted at TP {fitted_tp}, not {tp}: its step overhead includes that "
                     "degree's collectives.")
    return found

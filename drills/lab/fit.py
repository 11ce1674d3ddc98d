"""The few constants that explain a user's benchmark: least squares over the measured points (issue 32, item 3).

Each point (mean prompt ``I`` and output ``O`` tokens, a mean decode batch ``B``) is costed with the one serving
step (:func:`calculators.engine.step_model.step_ms`, docs/architecture.md §12) at unit efficiencies, which
gives per step the memory time at full bandwidth, the prefill compute time at MFU 1, the decode compute time (at
the stack's decode MFU) and the communication time. With ``u = 1 ÷ bandwidth efficiency``, ``v = 1 ÷ prefill
MFU`` and ``o`` the per-step overhead (ms):

- a decode step of ``B`` sequences at the mean context ``I + O ÷ 2``: ``t_d = max(memory × u, decode compute)
  + communication + o``;
- a request's prefill step: ``t_p = max(memory × u, prefill compute × v) + communication + o``;
- TPOT = ``t_d + (B − 1) ÷ O × t_p`` (each of the other ``B − 1`` requests' prefills interleaves once per
  ``O`` of ours, as chunked prefill does); TTFT = ``t_p`` alone (``B`` < :data:`ALONE_BATCH`), else ``t_p``
  plus half a decode step plus the wait behind the others' prefills (validation.py's closed-loop rule), shown
  beside the measurement but not fitted: under load a TTFT holds queueing the one-step model does not.

Taking the branch of each ``max`` that the current constants select, both are linear in ``(u, v, o)``; the
rows are weighted by ``1 ÷ measured`` (relative error), solved by least squares (normal equations, pure Python),
and the branches re-read from the solution until they stop changing. ``B`` comes from Little's law over the
measurement (request throughput × mean end-to-end latency), capped by the concurrency of a closed loop.

:func:`fit` raises :class:`FitRefused` with one sentence when there are fewer points than constants to fit, the
points cannot tell two constants apart, or the fit puts an efficiency above 1 (faster than the card).
Pure Python, no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calculators.engine.calibration import outside_fitted_range
from calculators.engine.catalog import Catalog, default_catalog
from calculators.engine.quantities import INPUTS, default
from calculators.engine.step_model import Replica, step_ms
from drills.lab.bench_output import Point

#: The fitted constants, each a quantity of the engine (calculators/engine/quantities.py).
CONSTANTS = ("step_overhead_ms", "bandwidth_efficiency", "prefill_mfu")
#: The constants as a sentence names them.
LABELS = {"step_overhead_ms": "step overhead", "bandwidth_efficiency": "bandwidth efficiency",
          "prefill_mfu": "prefill MFU"}
MAX_ITERATIONS = 8
#: Two columns whose normalised cross-product leaves less than this share of a pivot cannot be told apart.
RANK_TOLERANCE = 1e-6
#: A point whose mean batch is below this has one request in flight: its TTFT is its prefill step alone, and only
#: such TTFTs are fitted (under load a TTFT also waits behind other requests' prefills, batched together in a
#: closed loop, which the one-step model does not hold; those are shown beside the fit, not fitted).
ALONE_BATCH = 1.5


class FitRefused(ValueError):
    """A fit that cannot be made: the message is the sentence the page shows."""


@dataclass(frozen=True)
class Stack:
    """What the points were measured on: catalog ids, the TP degree and the precisions."""

    model: str
    gpu: str
    tp: int = 1
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    engine: str = ""

    def table_value(self, key: str) -> float:
        """The calibration table's value of ``key`` for this card and precision (the quantity's default when
        the card has no row)."""
        return default(key, gpu=self.gpu, precision=self.weights_dtype, engine=self.engine)


@dataclass(frozen=True)
class _Terms:
    """One point's step terms at unit efficiencies (ms)."""

    decode_memory: float
    decode_compute: float
    decode_comm: float
    prefill_memory: float
    prefill_compute: float
    prefill_comm: float
    batch: float
    output: float
    cycle: float  # the measured end-to-end latency, ms (a request's turn in a closed loop)


@dataclass
class Residual:
    """One measured metric beside the fitted model's value: ``error`` = predicted ÷ measured − 1."""

    point: str
    metric: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def error_text(self) -> str:
        """:attr:`error` as shown: signed, per cent (``−16.9 %``)."""
        return f"{'+' if self.error >= 0 else '−'}{abs(100 * self.error):.1f}\u00a0%"


@dataclass
class Fit:
    """The fitted constants (``values``: every key of :data:`CONSTANTS`; ``fitted`` the ones the points fixed,
    the others the table's), their standard errors, the residuals, and the range of the points."""

    stack: Stack
    values: dict
    fitted: tuple
    stderr: dict
    residuals: list[Residual]
    ranges: dict
    points: int
    notes: list[str] = field(default_factory=list)

    @property
    def rms_error(self) -> float:
        """Root mean square of the relative residuals."""
        errors = [r.error for r in self.residuals]
        return math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else 0.0

    @property
    def rms_pct(self) -> float:
        """:attr:`rms_error` in per cent."""
        return 100 * self.rms_error

    def rows(self) -> list[dict]:
        """Per constant: its label, the table's value, the fitted value and its band, formatted for display."""
        found = []
        for key in CONSTANTS:
            unit = "\u00a0ms" if key == "step_overhead_ms" else ""
            low, high = self.band(key) if key in self.fitted else (None, None)
            found.append({"key": key, "label": LABELS[key][0].upper() + LABELS[key][1:],
                          "table": f"{self.stack.table_value(key):.3g}{unit}",
                          "value": f"{self.values[key]:.3g}{unit}" + ("" if key in self.fitted else " (kept)"),
                          "band": f"{low:.3g}–\u200b{high:.3g}{unit}" if low is not None else "—"})
        return found

    def range_texts(self) -> list[tuple[str, str]]:
        """(name, "low–high") of each range the points covered."""
        return [(name, f"{low:,.0f}–{high:,.0f}" if round(low) != round(high) else f"{low:,.0f}")
                for name, (low, high) in self.ranges.items()]

    def band(self, key: str) -> tuple[float, float]:
        """(low, high) of a fitted constant: two standard errors either side, kept within its bounds."""
        value, spread = self.values[key], 2 * self.stderr.get(key, 0.0)
        quantity = INPUTS[key]
        low = max(value - spread, 0.0 if key == "step_overhead_ms" else 0.01)
        high = value + spread
        if quantity.maximum is not None:
            high = min(high, float(quantity.maximum))
        return low, max(high, value)

    def outside(self, *, prompt_tokens: float, output_tokens: float, batch: float | None = None,
                tp: int | None = None) -> list[str]:
        """One sentence per way a workload lies outside what the fit covered (empty when inside;
        :func:`calculators.engine.calibration.outside_fitted_range`)."""
        return outside_fitted_range(self.ranges, self.stack.tp, prompt_tokens=prompt_tokens,
                                    output_tokens=output_tokens, batch=batch, tp=tp)

    def as_dict(self) -> dict:
        """JSON-ready: values, fitted keys, bands, residuals, ranges, the RMS error and notes."""
        return {
            "values": self.values, "fitted": list(self.fitted),
            "bands": {key: list(self.band(key)) for key in self.fitted},
            "residuals": [{"point": r.point, "metric": r.metric, "measured": r.measured, "predicted": r.predicted}
                          for r in self.residuals],
            "ranges": {name: list(span) for name, span in self.ranges.items()}, "points": self.points,
            "rms_error": self.rms_error, "notes": self.notes,
        }


def _e2e(point: Point) -> float | None:
    """The measured mean end-to-end latency, ms (TTFT + (output − 1) × TPOT when not printed)."""
    tpot = point.tpot_mean_ms if point.tpot_mean_ms is not None else point.itl_mean_ms
    if point.e2e_mean_ms is not None:
        return point.e2e_mean_ms
    if point.ttft_mean_ms is not None and tpot is not None and point.output_tokens:
        return point.ttft_mean_ms + (point.output_tokens - 1) * tpot
    return None


def mean_batch(point: Point) -> float:
    """Sequences in the system on average (Little's law: completed req/s × mean end-to-end latency), capped by a
    closed loop's concurrency; the concurrency itself, or the rate × latency, when the throughput is missing."""
    e2e = _e2e(point)
    throughput = point.request_throughput or point.rate
    batch = None
    if throughput and e2e:
        batch = throughput * e2e / 1000
    if point.concurrency:
        batch = min(batch, point.concurrency) if batch else point.concurrency
    return max(1.0, batch or 1.0)


def _terms(replica: Replica, point: Point) -> _Terms:
    prompt, output = int(round(point.input_tokens or 0)), float(point.output_tokens or 1)
    batch = mean_batch(point)
    sequences = max(1, int(round(batch)))
    context = int(sequences * (prompt + output / 2))
    decode = step_ms(replica, decode_batch=sequences, decode_context_tokens=context)
    prefill = step_ms(replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=((prompt, 0),))
    return _Terms(decode.memory_ms, decode.compute_ms, decode.comm_ms, prefill.memory_ms, prefill.compute_ms,
                  prefill.comm_ms, batch, output, _e2e(point) or 0.0)


def _tpot(terms: _Terms, u: float, v: float, o: float) -> float:
    t_d = max(terms.decode_memory * u, terms.decode_compute) + terms.decode_comm + o
    return t_d + (terms.batch - 1) / terms.output * _ttft_step(terms, u, v, o)


def _ttft_step(terms: _Terms, u: float, v: float, o: float) -> float:
    return max(terms.prefill_memory * u, terms.prefill_compute * v) + terms.prefill_comm + o


def _queue(terms: _Terms, t_p: float) -> float:
    """The share of a prefill a request waits behind the others' (validation.py's closed-loop rule): each of the
    other ``B − 1`` requests prefills once per measured cycle, for ``t_p``."""
    return (terms.batch - 1) * t_p / terms.cycle if terms.cycle and terms.batch > 1 else 0.0


def _ttft(terms: _Terms, u: float, v: float, o: float) -> float:
    half = 0.5 * (max(terms.decode_memory * u, terms.decode_compute) + terms.decode_comm + o) if terms.batch > 1 \
        else 0.0
    t_p = _ttft_step(terms, u, v, o)
    return t_p * (1 + _queue(terms, t_p)) + half


def _rows(terms: _Terms, u: float, v: float, o: float) -> tuple[list[float], float, list[float], float]:
    """(coefficients of (u, v, o), constant) for TPOT and for TTFT under the branches (u, v) select, the
    queueing share held at its value under (u, v, o)."""
    decode_memory_bound = terms.decode_memory * u >= terms.decode_compute
    prefill_memory_bound = terms.prefill_memory * u >= terms.prefill_compute * v
    d = [terms.decode_memory if decode_memory_bound else 0.0, 0.0, 1.0]
    d_k = (0.0 if decode_memory_bound else terms.decode_compute) + terms.decode_comm
    p = [terms.prefill_memory if prefill_memory_bound else 0.0,
         0.0 if prefill_memory_bound else terms.prefill_compute, 1.0]
    p_k = terms.prefill_comm
    share = (terms.batch - 1) / terms.output
    tpot = [d[i] + share * p[i] for i in range(3)]
    tpot_k = d_k + share * p_k
    half = 0.5 if terms.batch > 1 else 0.0
    queue = 1 + _queue(terms, _ttft_step(terms, u, v, o))
    ttft = [queue * p[i] + half * d[i] for i in range(3)]
    ttft_k = queue * p_k + half * d_k
    return tpot, tpot_k, ttft, ttft_k


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular (a pivot below :data:`RANK_TOLERANCE` of
    the column's scale)."""
    n = len(rhs)
    a = [row[:] + [rhs[i]] for i, row in enumerate(matrix)]
    scale = [max(abs(a[i][i]), 1e-300) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < RANK_TOLERANCE * scale[col]:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def _least_squares(rows: list[list[float]], targets: list[float]) -> tuple[list[float], list[float]] | None:
    """The x minimising |rows·x − targets|², and its standard errors; None when the columns are dependent."""
    n = len(rows[0])
    norm = [math.sqrt(sum(row[j] ** 2 for row in rows)) or 1.0 for j in range(n)]
    scaled = [[row[j] / norm[j] for j in range(n)] for row in rows]
    normal = [[sum(r[i] * r[j] for r in scaled) for j in range(n)] for i in range(n)]
    rhs = [sum(r[i] * t for r, t in zip(scaled, targets)) for i in range(n)]
    solution = _solve(normal, rhs)
    if solution is None:
        return None
    residual = sum((sum(r[j] * solution[j] for j in range(n)) - t) ** 2 for r, t in zip(scaled, targets))
    dof = max(1, len(rows) - n)
    variance = residual / dof
    errors = []
    for j in range(n):
        unit = [1.0 if i == j else 0.0 for i in range(n)]
        column = _solve(normal, unit)
        errors.append(math.sqrt(max(0.0, variance * (column[j] if column else 0.0))) / norm[j])
    return [solution[j] / norm[j] for j in range(n)], errors


def _usable(points: list[Point]) -> list[Point]:
    missing = [p.label for p in points if not p.input_tokens or not p.output_tokens]
    if missing:
        raise FitRefused(f"{', '.join(missing)} {'gives' if len(missing) == 1 else 'give'} no prompt and output "
                         "lengths, which the fit needs: paste the totals (Total input tokens, Total generated "
                         "tokens) with the requests, or type input= and output=.")
    empty = [p.label for p in points if p.tpot_mean_ms is None and p.itl_mean_ms is None and p.ttft_mean_ms is None]
    if empty:
        raise FitRefused(f"{', '.join(empty)} measured neither TTFT nor TPOT (or ITL), so it says nothing about a "
                         "step: paste a streaming run's output.")
    return points


def fit(stack: Stack, points: list[Point], catalog: Catalog | None = None) -> Fit:
    """Fit the step overhead, bandwidth efficiency and prefill MFU of ``stack`` to ``points``.

    A constant no point informs (no TTFT measured: prefill MFU; every step compute-bound: bandwidth efficiency)
    keeps the table's value. Raises :class:`FitRefused` (one sentence) for fewer points than constants to fit,
    points that cannot tell two constants apart, a fitted efficiency above 1 or a point without lengths or
    latencies; the engine's errors for a stack that cannot be built.
    """
    catalog = catalog or default_catalog()
    points = _usable(list(points))
    replica = Replica.from_catalog(
        stack.model, stack.gpu, stack.tp, catalog=catalog, weights_dtype=stack.weights_dtype,
        kv_dtype=stack.kv_dtype, bandwidth_efficiency=1.0, prefill_mfu=1.0, mfu=stack.table_value("mfu"),
        allreduce_latency_us=stack.table_value("allreduce_latency_us"))
    terms = [_terms(replica, point) for point in points]
    table = {key: stack.table_value(key) for key in CONSTANTS}
    u, v, o = 1 / table["bandwidth_efficiency"], 1 / table["prefill_mfu"], table["step_overhead_ms"]
    notes: list[str] = []
    free = [0, 1, 2]
    solution: list[float] = [u, v, o]
    errors = [0.0, 0.0, 0.0]
    for _ in range(MAX_ITERATIONS):
        rows, targets = [], []
        for point, t in zip(points, terms):
            tpot_row, tpot_k, ttft_row, ttft_k = _rows(t, u, v, o)
            measured_tpot = point.tpot_mean_ms if point.tpot_mean_ms is not None else point.itl_mean_ms
            ttft = point.ttft_mean_ms if t.batch < ALONE_BATCH else None
            for row, k, measured in ((tpot_row, tpot_k, measured_tpot), (ttft_row, ttft_k, ttft)):
                if measured:
                    rows.append([c / measured for c in row])
                    targets.append((measured - k) / measured)
        informed = [j for j in (0, 1, 2) if any(abs(row[j]) > 0 for row in rows)]
        free = [j for j in free if j in informed]
        if len(points) < len(free):
            names = " and ".join(LABELS[CONSTANTS[_index(j)]] for j in free)
            raise FitRefused(f"{len(points)} measured point{'s' if len(points) != 1 else ''} cannot fix "
                             f"{len(free)} constants ({names}): give at least {len(free)}, e.g. a sweep over "
                             "concurrency.")
        fixed = {0: u, 1: v, 2: o}
        sub_rows = [[row[j] for j in free] for row in rows]
        sub_targets = [target - sum(row[j] * fixed[j] for j in (0, 1, 2) if j not in free)
                       for row, target in zip(rows, targets)]
        solved = _least_squares(sub_rows, sub_targets)
        if solved is None:
            names = " from the ".join(LABELS[CONSTANTS[_index(j)]] for j in free[:2])
            raise FitRefused(f"The points cannot tell the {names}: they were measured at one load and one length; "
                             "add a point at another concurrency or prompt length.")
        values, errs = solved
        solution = [fixed[j] for j in (0, 1, 2)]
        errors = [0.0, 0.0, 0.0]
        for j, value, err in zip(free, values, errs):
            solution[j], errors[j] = value, err
        if 2 in free and solution[2] < 0:
            notes.append("The points leave no room for a per-step overhead (the fit wanted a negative one), so "
                         "it is held at 0 ms.")
            free = [j for j in free if j != 2]
            o = 0.0
            continue
        _check_positive(solution, free)
        change = max(abs(new - old) / max(abs(old), 1e-9) for new, old in zip(solution, (u, v, o)))
        u, v, o = solution
        if change < 1e-9:
            break
    for j, key in ((0, "bandwidth_efficiency"), (1, "prefill_mfu")):
        if j in free:
            value = solution[j]
            if 1 / value > 1:
                raise FitRefused(f"The fit puts the {LABELS[key]} at {1 / value:.2f}, above 1: the points "
                                 "are faster than this card can go. Check the model, card, TP degree and precision "
                                 "(a quantised checkpoint, or more cards than the form says?).")
    values = {"bandwidth_efficiency": 1 / u, "prefill_mfu": 1 / v, "step_overhead_ms": o}
    stderr = {"bandwidth_efficiency": errors[0] / u ** 2, "prefill_mfu": errors[1] / v ** 2,
              "step_overhead_ms": errors[2]}
    for j, key in ((0, "bandwidth_efficiency"), (1, "prefill_mfu"), (2, "step_overhead_ms")):
        if j not in free:
            stderr.pop(key)
            if key != "step_overhead_ms" or not notes:
                notes.append(f"No point informs the {LABELS[key]}, so it keeps the table's "
                             f"{values[key]:g}.")
    residuals = []
    for point, t in zip(points, terms):
        measured_tpot = point.tpot_mean_ms if point.tpot_mean_ms is not None else point.itl_mean_ms
        if measured_tpot:
            residuals.append(Residual(point.label, "TPOT mean", measured_tpot, _tpot(t, u, v, o)))
        if point.ttft_mean_ms:
            residuals.append(Residual(point.label, "TTFT mean", point.ttft_mean_ms, _ttft(t, u, v, o)))
    ranges = {"prompt tokens": _span(p.input_tokens for p in points),
              "output tokens": _span(p.output_tokens for p in points),
              "sequences in a step": _span(t.batch for t in terms)}
    fitted = tuple(CONSTANTS[_index(j)] for j in free)
    return Fit(stack, values, fitted, stderr, residuals, ranges, len(points), notes)


def _check_positive(solution: list[float], free: list[int]) -> None:
    for j, key in ((0, "bandwidth_efficiency"), (1, "prefill_mfu")):
        if j in free and solution[j] <= 0:
            raise FitRefused(f"The fit gives no positive {LABELS[key]}: the points get slower as the step gets "
                             "lighter, which no setting of the model explains; check the pasted lengths and loads.")


def _index(column: int) -> int:
    """The :data:`CONSTANTS` index of a column (u, v, o)."""
    return {0: 1, 1: 2, 2: 0}[column]


def _span(values) -> tuple[float, float]:
    found = [float(v) for v in values if v is not None]
    return (min(found), max(found)) if found else (0.0, 0.0)

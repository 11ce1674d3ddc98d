"""What /simulator/fidelity/ shows: the serving model held against public measurements (docs/architecture.md §12).

The numbers are :func:`calculators.engine.validation.report`'s, as ``bench/validate_serving.py --write`` stored
them in ``fixtures/calibration/validation.json`` (a test holds that file equal to what the engine computes, so
the page cannot show a stale validation). :func:`fidelity_view` turns it into the page's rows: the MAPE per
metric against issue 31's targets, every case with its measured and predicted value and error (leave one source
out: the table fitted without the case's source, then the source predicted), and the cases further off than the
target with the fault each is known to show.
"""

from __future__ import annotations

from typing import Any

from calculators.engine.calibration import default_calibration
from calculators.engine.procedures.base import format_number
from calculators.engine.quantities import default
from calculators.engine.validation import load_report

# The unit each metric is measured in.
METRIC_UNITS = {"throughput_tok_s": "tok/s", "throughput_tok_s_per_gpu": "tok/s", "ttft_ms": "ms", "tpot_ms": "ms",
                "itl_ms": "ms", "per_user_tok_s": "tok/s", "e2e_ms": "ms"}
METRIC_LABELS = {"throughput_tok_s": "throughput", "throughput_tok_s_per_gpu": "throughput per GPU",
                 "ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "per_user_tok_s": "tok/s per user",
                 "e2e_ms": "end-to-end"}
KIND_LABELS = {"throughput": "Throughput", "ttft": "TTFT", "tpot": "TPOT / ITL", "e2e": "End-to-end latency",
               "overall": "Overall"}
# What each bias the measurement file names is (issue 31's list), in the page's words.
BIASES = {
    "small_batch_decode": "small-batch decode: a fixed cost per step (launches, scheduling, sampling) the bytes "
                          "alone do not show",
    "prefill_efficiency_per_card": "prefill efficiency differs by card and precision; a card measured by one "
                                   "source only is predicted from the other cards when that source is left out",
    "short_prompt_ttft_under_tp": "a short prompt under tensor parallelism: all-reduce latency and launch cost "
                                  "dominate its first token",
    "closed_loop_clients": "clients keeping a fixed number of requests in flight: prefills interleave with decode",
    "per_card_and_precision": "efficiencies per card and precision (FP4 on B200, the H200 against the H100)",
    "near_saturation": "near saturation a small change in efficiency moves the latency most",
}


def fidelity_view(report: dict[str, Any] | None = None) -> dict[str, Any]:
    """The page's context from a validation report (default: the stored one): ``metrics`` (label, cases, MAPE
    before / fitted / leave-one-source-out, the target and whether it is met), ``cases`` (sorted by the size of
    the leave-one-source-out error, largest first), ``misses`` (the cases beyond the per-case target, with the
    faults they show), ``sources``, the headline ``met`` (every target met), ``stated``, the convention the
    "before" column costs every card at, and ``eager``, the engines the calibration table declares without CUDA
    graphs with the launch cost they pay in every column (ms a layer a decode step, its growth per TP doubling and
    the sources it was read from), or ``None``."""
    report = report or load_report()
    targets = report["targets"]
    metrics = []
    for kind, values in report["mape"].items():
        target = targets.get(kind)
        metrics.append({"kind": kind, "label": KIND_LABELS.get(kind, kind), **values, "target": target,
                        "met": None if target is None else values["loso"] <= target})
    cases = []
    for case in sorted(report["cases"], key=lambda c: -abs(c["loso"])):
        unit = METRIC_UNITS[case["metric"]]
        cases.append({**case, "metric_label": METRIC_LABELS[case["metric"]],
                      "measured_shown": format_number(case["measured"], unit),
                      "predicted_shown": format_number(case["predicted"], unit),
                      "loso_shown": f"{100 * case['loso']:+.1f} %", "before_shown": f"{100 * case['before']:+.1f} %",
                      "off": abs(case["loso"]) * 100 > targets["case"],
                      "why": [BIASES.get(bias, bias) for bias in case["biases"]]})
    misses = [case for case in cases if case["off"]]
    met = all(m["met"] for m in metrics if m["met"] is not None) and not misses
    stated = (f"{default('bandwidth_efficiency'):.0%} of peak bandwidth, an MFU of {default('mfu'):g} for decode and "
              f"{default('prefill_mfu'):g} for prefill, {default('allreduce_latency_us'):g} µs an all-reduce, "
              f"{default('step_overhead_ms'):g} ms of fixed cost a step")
    table = default_calibration()
    eager = None
    if table.eager is not None and table.eager_engines:
        eager = {"engines": sorted(table.eager_engines), "ms_per_layer": table.eager.ms_per_layer,
                 "ms_per_layer_per_tp_doubling": table.eager.ms_per_layer_per_tp_doubling,
                 "sources": [source["address"] for source in table.eager.sources]}
    return {"metrics": metrics, "cases": cases, "misses": misses, "met": met, "targets": targets, "stated": stated,
            "eager": eager,
            "overall": report["mape"]["overall"], "ttft": report["mape"]["ttft"],
            "sources": [{"key": key, **value} for key, value in report["sources"].items()]}

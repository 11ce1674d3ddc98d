"""Hold the serving model against public measurements and fit the calibration table (docs/architecture.md §12).

Run from the repository root::

    python bench/validate_serving.py [--write] [--sweeps N]

Reads ``fixtures/calibration/measurements.yaml`` and prints, per case, the signed error of the model before
calibration (every card at the quantities' defaults), fitted on every case (in-sample) and leave-one-source-out
(the table fitted without the case's source, then the source predicted); then the MAPE per metric (throughput,
TTFT, TPOT/ITL, end-to-end) and per source for each, and the cases more than 40 % off. ``--write`` writes the
table fitted on every case to ``fixtures/catalog/calibration.json``: one row per card × precision family and
engine (and one for any engine, which the families and the simulator read), each value's low/high the range of
the leave-one-source-out fits, each row naming the cases it was fitted on; and the validation itself (every
case's measured and predicted value and errors, the MAPE per metric against issue 31's targets) to
``fixtures/calibration/validation.json``, which /simulator/fidelity/ shows. The fit and its rules:
:mod:`calculators.engine.validation`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from calculators.engine import validation as V  # noqa: E402
from calculators.engine.calibration import DEFAULT_TABLE, KEYS  # noqa: E402

KINDS = V.KINDS


def _table_rows(full: dict, folds: list[dict], cases: list) -> list[dict]:
    rows = []
    engines = [""] + sorted({c.engine for c in cases})
    for group in sorted(k for k in full if k[0] != "shared"):
        members = [c for c in cases if c.group == group]
        for engine in engines:
            used = [c for c in members if c.engine == engine or not engine]
            if not used:
                continue
            values = {}
            for key in KEYS:
                central = V.parameters(full, group, engine)[key]
                low, high = V.band(folds + [full], group, key, engine)
                low, high = sorted((low, high))
                values[key] = {"value": central, "low": min(low, central), "high": max(high, central)}
            rows.append({
                "gpu": group[0], "precision": group[1], "engine": engine, "values": values,
                "fitted_on": [c.id for c in used],
                "how": (f"coordinate search minimising the mean absolute log error over {len(members)} measured "
                        f"case(s) of this card and precision (bench/validate_serving.py); the step overhead and "
                        + (f"all-reduce latency are {engine}'s, fitted on all its cases" if engine else
                           "all-reduce latency are any engine's (the row a stack without a named engine reads: "
                           "the families and the simulator), fitted on every case")
                        + "; low/high span the leave-one-source-out fits"),
            })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the fitted table to " + str(DEFAULT_TABLE))
    parser.add_argument("--sweeps", type=int, default=3, help="coordinate-search passes (default 3)")
    args = parser.parse_args(argv)

    sources, cases = V.load_cases()
    before = {c.id: V.error(c, {}) for c in cases}
    full = V.fit(cases, sweeps=args.sweeps)
    fitted = {c.id: V.error(c, full) for c in cases}
    folds = {s: V.fit([c for c in cases if c.source != s], sweeps=args.sweeps) for s in sorted(sources)}
    loso = {c.id: V.error(c, folds[c.source]) for c in cases}

    print(f"{len(cases)} cases from {len(sources)} sources, "
          f"{len({c.workload['gpu'] for c in cases})} cards, TP {sorted({int(c.workload['tp']) for c in cases})}")
    print(f"{'case':42} {'metric':24} {'measured':>10} {'before':>8} {'fitted':>8} {'LOSO':>8}")
    for c in cases:
        print(f"{c.id:42} {c.metric:24} {c.value:10.4g} {before[c.id]:+8.1%} {fitted[c.id]:+8.1%} "
              f"{loso[c.id]:+8.1%}")
    print(f"\nMAPE (%)          {'cases':>5} {'before':>8} {'fitted':>8} {'LOSO':>8}")
    for label, keep in [(k, lambda c, k=k: c.kind == k) for k in KINDS] + [("overall", lambda c: True)]:
        chosen = [c.id for c in cases if keep(c)]
        print(f"{label:17} {len(chosen):5} {V.mape([before[i] for i in chosen]):8.1f} "
              f"{V.mape([fitted[i] for i in chosen]):8.1f} {V.mape([loso[i] for i in chosen]):8.1f}")
    print("\nper source (LOSO: the source left out of the fit)")
    for source in sorted(sources):
        chosen = [c.id for c in cases if c.source == source]
        print(f"{source:17} {len(chosen):5} {V.mape([before[i] for i in chosen]):8.1f} "
              f"{V.mape([fitted[i] for i in chosen]):8.1f} {V.mape([loso[i] for i in chosen]):8.1f}")
    worst = [c.id for c in cases if abs(loso[c.id]) > 0.40]
    print(f"\ncases more than 40 % off: before {sum(abs(e) > 0.4 for e in before.values())}, "
          f"fitted {sum(abs(e) > 0.4 for e in fitted.values())}, LOSO {len(worst)}: {', '.join(worst) or 'none'}")
    if args.write:
        data = json.loads(DEFAULT_TABLE.read_text())
        data["rows"] = _table_rows(full, list(folds.values()), cases)
        DEFAULT_TABLE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {len(data['rows'])} rows to {DEFAULT_TABLE.relative_to(REPO)}")
        report = V.report(sources, cases, before, fitted, loso)
        V.REPORT.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote the validation of {len(report['cases'])} cases to {V.REPORT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark the grader: cached evaluators against naive sympy substitution.

Run from the repository root::

    python bench/bench_grader.py [--submissions N]

It draws N ladder problems with the problem generator (seeds 0 … N−1) (real catalog models and
cards), makes one plausible submission for each (right values, slips, named
misconceptions, unit conversions, expressions), and grades them all twice,
interleaved in batches so both see the same machine noise:

* with the cached evaluators the product uses (``sympy.lambdify`` once per
  formula), and
* with every formula evaluated by naive exact sympy substitution
  (``expr.subs`` on rationals), as a grader without the cache would.

It prints both totals and their ratio (the target is at least 50×), checks
that both gradings gave the same verdicts, and reports the parser's worst case
on hostile input from ``bench_parser``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calculators.engine import grader as grader_module
from calculators.engine.catalog import default_catalog
from calculators.engine.formula import Formula
from calculators.engine.grader import grade
from calculators.engine.procedures import FAMILIES

TARGET_RATIO = 50
MAX_OVERHEAD = 4  # issue 16: the perturbations may cost at most 4× the grading without them


def _submission(rng: random.Random, result) -> dict:
    """Typed answers: mostly right, with slips, GB for GiB, and plain wrong numbers."""
    answers = {}
    for step in result.steps:
        value = step.value
        roll = rng.random()
        if roll < 0.6:
            answers[step.key] = f"{value:.6g}"
        elif roll < 0.7 and step.unit == "GiB":
            answers[step.key] = f"{value * 1.073741824:.4f} GB"
        elif roll < 0.8:
            answers[step.key] = f"{value * 2:.6g}"
        elif roll < 0.9:
            answers[step.key] = f"({value:.6g}) * 1"
        else:
            answers[step.key] = str(rng.randint(1, 500))
    return answers


@contextmanager
def without_perturbations():
    """Grade with no misconception perturbations (correct, carried forward, bounds, close only)."""
    real = grader_module.chains
    grader_module.chains = lambda *args: []
    try:
        yield
    finally:
        grader_module.chains = real


@contextmanager
def naive_sympy_evaluation():
    """Make every Formula evaluate by exact sympy substitution instead of its cached evaluator."""
    cached_call = Formula.__call__

    def naive_call(self, values):
        return float(self.exact(values))

    Formula.__call__ = naive_call
    try:
        yield
    finally:
        Formula.__call__ = cached_call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--naive-every", type=int, default=10,
                        help="grade every Nth submission naively too (naive sympy is slow)")
    args = parser.parse_args()

    catalog = default_catalog()
    rng = random.Random(2026)
    ladder = FAMILIES["ladder"]
    cases = []
    while len(cases) < args.submissions:
        # The problem generator's own draws: real models and cards, mostly fitting.
        inputs = ladder.generate(random.Random(f"ladder:{len(cases)}"), catalog)
        result = ladder.run(inputs, catalog)
        cases.append((result, _submission(rng, result)))

    # Warm both paths (lambdify compiles once per formula; sympy caches too).
    grade(*cases[0])
    with naive_sympy_evaluation():
        grade(*cases[0])

    # Three gradings side by side, batch by batch so all see the same machine noise: cached with the
    # perturbations (the product), cached without them (the grader before misconceptions became
    # perturbations did less than this: only per-step variants), and naive sympy with the perturbations
    # on every --naive-every'th submission (it is slow), compared per submission.
    cached_s = plain_s = naive_s = 0.0
    naive_count = mismatches = 0
    for start in range(0, len(cases), args.batch):
        batch = cases[start:start + args.batch]
        sampled = batch[::args.naive_every]
        t0 = time.perf_counter()
        fast = [grade(result, answers) for result, answers in batch]
        t1 = time.perf_counter()
        with without_perturbations():
            [grade(result, answers) for result, answers in batch]
        t2 = time.perf_counter()
        with naive_sympy_evaluation():
            slow = [grade(result, answers) for result, answers in sampled]
        t3 = time.perf_counter()
        cached_s += t1 - t0
        plain_s += t2 - t1
        naive_s += t3 - t2
        naive_count += len(sampled)
        for a, b in zip(fast[::args.naive_every], slow):
            mismatches += [s.verdict for s in a.steps] != [s.verdict for s in b.steps]

    per_cached = cached_s / len(cases)
    per_plain = plain_s / len(cases)
    per_naive = naive_s / naive_count
    ratio = per_naive / per_cached
    overhead = per_cached / per_plain
    print(f"ladder submissions graded: {len(cases)} (8 steps each); naive on {naive_count}")
    print(f"cached, with perturbations   : {per_cached * 1e6:9.1f} µs per submission")
    print(f"cached, without perturbations: {per_plain * 1e6:9.1f} µs per submission")
    print(f"naive sympy, with perturbations: {per_naive * 1e6:9.1f} µs per submission")
    print(f"ratio naive/cached: {ratio:9.1f}×  (target ≥ {TARGET_RATIO}×) {'OK' if ratio >= TARGET_RATIO else 'MISSED'}")
    print(f"perturbations cost: {overhead:9.2f}× the grading without them  (target ≤ {MAX_OVERHEAD}×) "
          f"{'OK' if overhead <= MAX_OVERHEAD else 'MISSED'}")
    print(f"verdicts differing between cached and naive: {mismatches}")

    import bench_parser

    print("\nparser on hostile input:")
    sys.argv = ["bench_parser.py", "--repeat", "10"]  # bench_parser reads its own flags
    parser_status = bench_parser.main()
    return 0 if ratio >= TARGET_RATIO and overhead <= MAX_OVERHEAD and not mismatches and not parser_status else 1


if __name__ == "__main__":
    sys.exit(main())

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
from calculators.engine.grader import PROBLEMS, grade
from calculators.families import FAMILIES

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


class _NoPerturbations:
    """A problem with no misconceptions to try."""

    def candidates(self, *args, **kwargs):
        return iter(())


@contextmanager
def without_perturbations():
    """Grade with no misconception perturbations (correct, carried forward, bounds, close only): the grader as
    it was before misconceptions became perturbations, or less (it had per-step variants)."""
    real = grader_module.perturbed
    grader_module.perturbed = lambda result, family=None: _NoPerturbations()
    try:
        yield
    finally:
        grader_module.perturbed = real


@contextmanager
def naive_sympy_evaluation():
    """Make every Formula evaluate by exact sympy substitution instead of its cached evaluator."""
    cached_call, cached_args = Formula.__call__, Formula.call_args

    def naive_call(self, values):
        return float(self.exact(values))

    def naive_args(self, args):
        return float(self.exact({var.name: value for var, value in zip(self.variables, args)}))

    Formula.__call__, Formula.call_args = naive_call, naive_args
    PROBLEMS.enabled = False  # a grader without caches builds every problem's perturbations afresh
    try:
        yield
    finally:
        Formula.__call__, Formula.call_args = cached_call, cached_args
        PROBLEMS.enabled = True


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
    cases, again = [], []
    while len(cases) < args.submissions:
        # The problem generator's own draws: real models and cards, mostly fitting.
        inputs = ladder.generate(random.Random(f"ladder:{len(cases)}"), catalog)
        result = ladder.run(inputs, catalog)
        cases.append((result, _submission(rng, result)))
        again.append((result, _submission(rng, result)))  # a second candidate on the same problem

    # Warm both paths (lambdify compiles once per formula; sympy caches too).
    grade(*cases[0])
    with naive_sympy_evaluation():
        grade(*cases[0])
    PROBLEMS.clear()

    # Four gradings side by side, batch by batch so all see the same machine noise: cached without the
    # perturbations (the baseline: the grader before misconceptions became perturbations did no more), cached
    # with them on problems never graded before (the product's first submission on a drawn problem), cached
    # with them on a second submission to the same problems, and naive sympy with the perturbations on every
    # --naive-every'th submission (it is slow). All per submission, in this process's CPU time (so other work on a
    # shared machine does not count).
    totals = {"plain": 0.0, "first": 0.0, "again": 0.0, "naive": 0.0}
    naive_count = mismatches = 0
    for start in range(0, len(cases), args.batch):
        batch, second = cases[start:start + args.batch], again[start:start + args.batch]
        sampled = batch[::args.naive_every]
        t0 = time.process_time()
        with without_perturbations():
            [grade(result, answers) for result, answers in batch]
        t1 = time.process_time()
        fast = [grade(result, answers) for result, answers in batch]
        t2 = time.process_time()
        [grade(result, answers) for result, answers in second]
        t3 = time.process_time()
        with naive_sympy_evaluation():
            slow = [grade(result, answers) for result, answers in sampled]
        t4 = time.process_time()
        for name, seconds in zip(totals, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            totals[name] += seconds
        naive_count += len(sampled)
        for a, b in zip(fast[::args.naive_every], slow):
            mismatches += [(s.verdict, s.misconception) for s in a.steps] != [
                (s.verdict, s.misconception) for s in b.steps]

    per = {name: seconds / len(cases) for name, seconds in totals.items()}
    per["naive"] = totals["naive"] / naive_count
    ratio = per["naive"] / per["first"]
    overhead = max(per["first"], per["again"]) / per["plain"]
    print(f"ladder submissions graded: {len(cases)} problems × 2 submissions (8 steps each); naive on {naive_count}")
    print(f"{'grading, per submission':44} {'µs':>10} {'× baseline':>11} {'naive ÷ this':>13}")
    rows = (("cached, perturbations off (baseline)", "plain"),
            ("cached, perturbations on, new problem", "first"),
            ("cached, perturbations on, problem seen", "again"),
            ("naive sympy, perturbations on", "naive"))
    for label, name in rows:
        print(f"{label:44} {per[name] * 1e6:10.1f} {per[name] / per['plain']:10.2f}× "
              f"{per['naive'] / per[name]:12.1f}×")
    print(f"naive ÷ cached (new problem): {ratio:.1f}×  (target ≥ {TARGET_RATIO}×) "
          f"{'OK' if ratio >= TARGET_RATIO else 'MISSED'}")
    print(f"perturbations cost, worst row: {overhead:.2f}× the baseline  (target ≤ {MAX_OVERHEAD}×) "
          f"{'OK' if overhead <= MAX_OVERHEAD else 'MISSED'}")
    print(f"verdicts or misconceptions differing between cached and naive: {mismatches}")

    import bench_parser

    print("\nparser on hostile input:")
    sys.argv = ["bench_parser.py", "--repeat", "10"]  # bench_parser reads its own flags
    parser_status = bench_parser.main()
    return 0 if ratio >= TARGET_RATIO and overhead <= MAX_OVERHEAD and not mismatches and not parser_status else 1


if __name__ == "__main__":
    sys.exit(main())

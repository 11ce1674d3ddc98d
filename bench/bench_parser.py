"""Benchmark the answer parser on hostile input.

Run from the repository root::

    python bench/bench_parser.py [--repeat N]

Each hostile input is parsed ``N`` times, interleaved call by call with a
normal answer (``2*32*8*128*2`` in B) so both see the same machine noise.  The
report gives, per class of attack, the slowest input's median and worst single
call, the ratio of that median to the normal input's median, and whether the
worst call stays under the 50 ms target.  Exit status 1 if any call missed the
target or raised anything but AnswerError.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calculators.engine.answers import parse_answer
from calculators.engine.errors import AnswerError

TARGET_SECONDS = 0.050
NORMAL = ("2*32*8*128*2", "B")

HOSTILE: dict[str, list[tuple[str, str]]] = {
    "huge powers": [
        ("9^9^9^9", "1"), ("10**999999", "1"), ("2^2^2^2^2^2", "1"), ("(10^300)^(10^300)", "1"),
        ("9**9**9**9**9**9**9**9**9**9", "1"), ("10^300*10^300", "1"), ("(-1)^(10^300)", "1"),
        ("1e308*1e308*1e308", "1"), ("10^-999", "1"), ("2^1000", "1"), ("0.5^-1000", "1"),
    ],
    "deep nesting": [
        ("(" * 5000 + "1" + ")" * 5000, "1"), ("(" * 99 + "1" + ")" * 99, "1"),
        ("(" * 20 + "1" + ")" * 20, "1"), ("-(" * 60 + "1" + ")" * 60, "1"),
        ("2^(" * 49 + "1" + ")" * 49, "1"), ("(" * 100, "1"), (")" * 200, "1"),
    ],
    "100k-character strings": [
        ("1" * 100_000, "1"), ("1+" * 50_000 + "1", "1"), ("a" * 100_000, "GiB"),
        ("−" * 100_000, "1"), ("(" * 100_000, "1"), (" " * 100_000 + "5", "B"),
        ("9" * 99_998 + "e9", "1"), ("5 " + "GiB" * 33_000, "GiB"), ("\u200b" * 100_000, "1"),
    ],
    "long operator chains": [
        ("1+" * 59 + "1", "1"), ("1+" * 99 + "1", "1"), ("-" * 199 + "1", "1"),
        ("2^" * 99 + "2", "1"), ("1^" * 99 + "1", "1"), ("1/" * 59 + "1", "1"),
        ("1*" * 59 + "1", "1"), ("(1+" * 39 + "1" + ")" * 39, "1"), ("+-" * 100, "1"),
    ],
    "many units": [
        ("1 GB + " * 28 + "1 GB", "GB"), ("1 GB*" * 39 + "1 GB", "GB"),
        ("1 GiB/" * 33 + "1 B", "1"), ("$0.12/M tok + " * 13 + "$1/M tok", "USD/Mtok"),
        ("5 " + "a" * 195, "GiB"), ("5 " + "GiB " * 48, "GiB"), ("1 µs+" * 39 + "1 µs", "ms"),
        ("5 tok/s/user/GPU", "tok/s"), ("5" + " $/1M tokens" * 16, "USD/Mtok"),
        ("1 " + "/" * 190 + "s", "1"), ("1 " + "$" * 195, "USD"),
    ],
    "long numbers": [
        ("9" * 200, "1"), ("1," + "000," * 48 + "000", "1"), ("0." + "0" * 197 + "1", "1"),
        ("1e" + "9" * 198, "1"), ("1" + "_1" * 99, "1"), ("." * 200, "1"),
        ("1" + ",1" * 99, "1"), ("1e-" + "9" * 197, "1"),
    ],
    "unicode soup": [
        ("×·÷−µμ⋅–" * 25, "1"), ("٣" * 200, "1"), ("²" * 200, "1"), ("𝟗" * 100, "1"),
        ("1 " + "μs" * 99, "ms"), ("\x00" * 200, "1"), ("5 " + "é" * 198, "GiB"),
    ],
}


def time_call(text: str, unit: str) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        parse_answer(text, unit)
        outcome = "accepted"
    except AnswerError as error:
        outcome = "rejected: " + str(error)[:70]
    return time.perf_counter() - started, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="calls per input (default 50)")
    repeat = parser.parse_args().repeat

    for _ in range(200):  # warm caches (unit lookups are memoised) and the allocator
        time_call(*NORMAL)

    failures = 0
    normal_all: list[float] = []
    overall_worst = (0.0, "", "")
    print(f"target: every call under {TARGET_SECONDS * 1000:.0f} ms; {repeat} calls per input, "
          f"interleaved with the normal input {NORMAL[0]!r} ({NORMAL[1]})\n")
    header = f"{'class':<24}{'inputs':>7}{'worst median':>14}{'worst call':>12}{'x normal':>10}  slowest input"
    print(header)
    print("-" * len(header))
    for name, cases in HOSTILE.items():
        class_worst_median, class_worst_call, slowest, ratio = 0.0, 0.0, "", 0.0
        for text, unit in cases:
            hostile_times, normal_times = [], []
            for _ in range(repeat):
                try:
                    elapsed, outcome = time_call(text, unit)
                except Exception as error:  # anything but AnswerError is a bug
                    print(f"  BUG: {text[:40]!r} raised {type(error).__name__}: {error}")
                    failures += 1
                    break
                hostile_times.append(elapsed)
                normal_times.append(time_call(*NORMAL)[0])
            if not hostile_times:
                continue
            normal_all.extend(normal_times)
            median, worst = statistics.median(hostile_times), max(hostile_times)
            if worst > TARGET_SECONDS:
                failures += 1
                print(f"  OVER TARGET: {text[:40]!r} worst {worst * 1000:.2f} ms ({outcome})")
            if median > class_worst_median:
                class_worst_median, slowest = median, text
                ratio = median / statistics.median(normal_times)
            class_worst_call = max(class_worst_call, worst)
            if worst > overall_worst[0]:
                overall_worst = (worst, name, text)
        shown = slowest if len(slowest) <= 28 else slowest[:25] + f"…({len(slowest):,} ch)"
        print(f"{name:<24}{len(cases):>7}{class_worst_median * 1e6:>11.1f} µs{class_worst_call * 1e6:>9.1f} µs"
              f"{ratio:>9.1f}x  {shown!r}")

    normal_median = statistics.median(normal_all)
    print(f"\nnormal input {NORMAL[0]!r}: median {normal_median * 1e6:.1f} µs, "
          f"worst {max(normal_all) * 1e6:.1f} µs over {len(normal_all):,} calls")
    worst, name, text = overall_worst
    print(f"overall worst hostile call: {worst * 1e6:.1f} µs ({name}: {text[:30]!r}), "
          f"{worst / normal_median:.1f}x the normal median, "
          f"{worst / TARGET_SECONDS * 100:.2f}% of the {TARGET_SECONDS * 1000:.0f} ms target")
    print("RESULT:", "PASS" if not failures else f"FAIL ({failures} problem(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

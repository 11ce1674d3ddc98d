"""A run's numbers: latency percentiles, throughput, goodput, the knee (docs/architecture.md §13's definitions).

- TTFT = first token − arrival; end-to-end (e2e) = last token − arrival;
  TPOT of a request = (e2e − TTFT) ÷ (output tokens − 1), for requests of at
  least two output tokens; inter-token latency (ITL) = the gap before each
  token after the first, over every token produced.
- Latencies are over the requests completed within the run; percentiles
  interpolate linearly between order statistics (as numpy's default does);
  the ITL's, over weighted samples, take the nearest rank.
- Throughput = completed requests ÷ duration; goodput = requests that arrived
  in the run's window and met both the TTFT and the TPOT target ÷ duration (a
  one-token request has no TPOT and meets that target). The window rule
  (docs/architecture.md §13): a request still unfinished at the window's end
  counts as meeting its targets if it still can: with its first token, when
  that came within the TTFT target and its TPOT so far (last token − first
  token) ÷ (tokens so far − 1) is within the TPOT target (one token so far:
  within it); without one, when the time since its arrival is still within
  the TTFT target. So a short run does not read low for the requests it cut
  off.
- ``mean_in_system`` = the time-average, over the run, of the requests arrived
  and not finished.
- The knee of a sweep = the highest swept rate whose goodput is at least
  :data:`KNEE_SHARE` × its arrival rate and whose run does not end with a
  growing queue (:func:`queue_growing`: more requests in flight at the end
  than the replicas can run at once). The window rule counts the requests
  still running at the end; a run that ends with requests queued behind a
  full batch counts as good the very requests a longer run shows missing
  (Llama-3.1-8B on one H100 at 25 req/s: 96 % of the rate over 60 s, 81 %
  over 300 s), so such a rate is not sustained over the run and cannot be the
  knee. The knee is capped at the highest rate swept: when that rate meets the
  target, the knee is "at least" it (:func:`knee_text`). The knee drill reads the same share as
  a crossing (:func:`knee_bracket`): between that rate and the next swept one.
  A sweep of closed-loop concurrencies has its own (:func:`knee_concurrency`):
  the highest swept concurrency whose goodput is at least that share of the
  requests its clients sent per second (arrived ÷ duration).
"""

from __future__ import annotations

import math

KNEE_SHARE = 0.9
PERCENTILES = (50, 90, 95, 99)


def percentile(ordered: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100) of ascending ``ordered`` values, linearly interpolated;
    None for no values."""
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def weighted_percentiles(values: list[float], weights: list[int], qs) -> list[float | None]:
    """For each ``q`` of ascending ``qs`` (0–100), the smallest value whose cumulative weight reaches
    ``q`` % of the total (nearest rank); None for no weight. One sort for every ``q``."""
    total = sum(weights)
    if not total:
        return [None for _ in qs]
    pairs = sorted(zip(values, weights))
    found, seen, position = [], 0, 0
    for q in qs:
        target = max(1, math.ceil(total * q / 100))
        while seen < target:
            value, weight = pairs[position]
            seen += weight
            position += 1
        found.append(pairs[position - 1][0])
    return found


def weighted_percentile(values: list[float], weights: list[int], q: float) -> float | None:
    """The smallest value whose cumulative weight reaches ``q`` % of the total (nearest rank)."""
    return weighted_percentiles(values, weights, [q])[0]


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def distribution(values: list[float]) -> dict:
    """``{"mean", "p50", "p90", "p95", "p99"}`` of ``values`` (ms), rounded to µs; None when empty."""
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered) if ordered else None
    return {"mean": _r(mean), **{f"p{q}": _r(percentile(ordered, q)) for q in PERCENTILES}}


def weighted_distribution(values: list[float], weights: list[int]) -> dict:
    """As :func:`distribution`, for ``values[i]`` seen ``weights[i]`` times."""
    total = sum(weights)
    mean = sum(v * w for v, w in zip(values, weights)) / total if total else None
    found = weighted_percentiles(values, weights, PERCENTILES)
    return {"mean": _r(mean), **{f"p{q}": _r(value) for q, value in zip(PERCENTILES, found)}}


def misses(arrival_ms: float, first_ms: float | None, tokens: int, last_token_ms: float, end_ms: float,
           ttft_slo_ms: float, tpot_slo_ms: float) -> tuple[bool, bool]:
    """(TTFT missed, TPOT missed) for a request unfinished at ``end_ms`` (the window rule): ``tokens``
    produced so far, the first at ``first_ms`` (None: none yet), the last at ``last_token_ms``; all times in
    ms from the run's start. A target is missed when the request can no longer meet it."""
    if first_ms is None:
        return end_ms - arrival_ms > ttft_slo_ms, False
    late = first_ms - arrival_ms > ttft_slo_ms
    return late, tokens >= 2 and (last_token_ms - first_ms) / (tokens - 1) > tpot_slo_ms


def still_meets(arrival_ms: float, first_ms: float | None, tokens: int, last_token_ms: float, end_ms: float,
                ttft_slo_ms: float, tpot_slo_ms: float) -> bool:
    """Whether a request unfinished at ``end_ms`` can still meet both targets (the window rule; arguments
    as :func:`misses`)."""
    return not any(misses(arrival_ms, first_ms, tokens, last_token_ms, end_ms, ttft_slo_ms, tpot_slo_ms))


def summarize(workload, records, *, in_flight: dict[int, tuple[int, float]], preemptions: int,
              kv_peak_fraction: float, ttft_slo_ms: float, tpot_slo_ms: float) -> dict:
    """The summary of one run of ``workload`` whose outcomes are ``records``.

    ``in_flight``: for each request unfinished at the end (by id), the tokens it had produced and
    the time (ms) of its last one. Keys are those of the ``simulate`` command's JSON ``summary``
    (docs/architecture.md §13), latencies in ms; ``goodput_req_s`` follows the window rule above.
    """
    duration_ms = workload.duration_ms
    duration_s = duration_ms / 1000
    arrival, output = workload.arrival_ms, workload.output
    ttft, tpot, e2e = [], [], []
    good = completed = ttft_missed = tpot_missed = 0
    in_system_ms = 0.0
    first_ms = records.first_ms
    for rid, finish in enumerate(records.finish_ms):
        if finish is None:
            in_system_ms += duration_ms - arrival[rid]
            tokens, last_ms = in_flight.get(rid, (0, 0.0))
            late, slow = misses(arrival[rid], first_ms[rid], tokens, last_ms, duration_ms, ttft_slo_ms, tpot_slo_ms)
            good += not (late or slow)
            ttft_missed += late
            tpot_missed += slow
            continue
        completed += 1
        in_system_ms += finish - arrival[rid]
        first = records.first_ms[rid] - arrival[rid]
        total = finish - arrival[rid]
        ttft.append(first)
        e2e.append(total)
        per_token = None
        if output[rid] > 1:
            per_token = (total - first) / (output[rid] - 1)
            tpot.append(per_token)
        late, slow = first > ttft_slo_ms, per_token is not None and per_token > tpot_slo_ms
        good += not (late or slow)
        ttft_missed += late
        tpot_missed += slow
    completed_tokens = sum(output[rid] for rid, finish in enumerate(records.finish_ms) if finish is not None)
    output_tokens = completed_tokens + sum(tokens for tokens, _ in in_flight.values())
    return {
        "rate_req_s": workload.rate_req_s if workload.rate_req_s is None else round(workload.rate_req_s, 6),
        "concurrency": workload.concurrency,
        "duration_s": round(duration_s, 6),
        "arrived": len(workload),
        "completed": completed,
        "in_flight": len(workload) - completed,
        "output_tokens": output_tokens,
        "ttft_ms": distribution(ttft),
        "tpot_ms": distribution(tpot),
        "itl_ms": weighted_distribution(records.itl_ms, records.itl_count),
        "e2e_ms": distribution(e2e),
        "throughput_req_s": round(completed / duration_s, 6),
        "output_tok_s": round(output_tokens / duration_s, 3),
        "goodput_req_s": round(good / duration_s, 6),
        "ttft_missed": ttft_missed,
        "tpot_missed": tpot_missed,
        "preemptions": preemptions,
        "kv_peak_fraction": round(kv_peak_fraction, 6),
        "mean_in_system": round(in_system_ms / duration_ms, 6),
    }


def queue_growing(summary: dict) -> bool:
    """Whether an open-loop run ended with a growing queue: more requests in flight at its end (``in_flight``)
    than the replicas can run at once (``slots``: per replica the smaller of ``max_num_seqs`` and the KV cache's
    tokens ÷ a request's mean prompt + output, :func:`.run.slots`).

    A service that sustains its arrival rate admits each request on arrival, so by Little's law it holds
    rate × mean time in system requests, all running; a run ending with more than it can run holds a queue
    behind a full batch, which grew during the run and drains only when arrivals slow (those queued requests
    and the full batch's are what the window rule counts as still meeting their targets). A closed loop (no
    rate) never grows its queue past its clients; a summary or stored point without ``slots`` (one kept before
    this rule) reads as not growing, so a stored problem's answer does not move."""
    slots = summary.get("slots")
    if slots is None or summary.get("rate_req_s") is None or summary.get("in_flight") is None:
        return False
    return summary["in_flight"] > slots


def meets_knee(summary: dict) -> bool:
    """Whether a swept rate can be the knee: goodput ≥ :data:`KNEE_SHARE` × its rate, and no growing queue at
    the run's end (:func:`queue_growing`)."""
    return summary["goodput_req_s"] >= KNEE_SHARE * summary["rate_req_s"] and not queue_growing(summary)


def knee(summaries: list[dict]) -> float | None:
    """The highest swept rate that :func:`meets_knee`; None if none does."""
    meeting = [s["rate_req_s"] for s in summaries if meets_knee(s)]
    return max(meeting) if meeting else None


def knee_text(summaries: list[dict]) -> str:
    """The sweep's knee in words, as the page, the API (``knee_text``) and the command print it: ``"20 req/s"``;
    ``"at least 40 req/s (the highest rate swept)"`` when the highest swept rate meets the target (the knee lies
    at or beyond it); or why there is none."""
    rate = knee(summaries)
    if rate is None:
        return "none: no swept rate meets both targets without a growing queue"
    if rate == max(s["rate_req_s"] for s in summaries):
        return f"at least {rate:g} req/s (the highest rate swept)"
    return f"{rate:g} req/s"


def knee_concurrency(summaries: list[dict]) -> int | None:
    """The highest swept concurrency whose goodput is ≥ :data:`KNEE_SHARE` × the requests its clients sent per
    second (``arrived ÷ duration_s``; a closed loop's offered rate); None if none is."""
    meeting = [s["concurrency"] for s in summaries
               if s["goodput_req_s"] >= KNEE_SHARE * s["arrived"] / s["duration_s"]]
    return max(meeting) if meeting else None


def knee_bracket(points: list[dict]) -> tuple[dict, dict] | None:
    """The two swept points goodput ÷ rate crosses :data:`KNEE_SHARE` between: the highest swept rate whose
    goodput is at least that share of its rate (the :func:`knee`), and the next swept rate above it. ``points``
    are summaries or the drills' compact points (``rate_req_s``, ``goodput_req_s``), in any order. None when
    no rate keeps the share, or the highest swept rate does (the crossing lies beyond the sweep)."""
    ordered = sorted(points, key=lambda p: p["rate_req_s"])
    rate = knee(ordered)
    if rate is None or rate == ordered[-1]["rate_req_s"]:
        return None
    index = next(i for i, p in enumerate(ordered) if p["rate_req_s"] == rate)
    return ordered[index], ordered[index + 1]

"""The knee drill's worked sweep: goodput and the p99 latencies at every swept rate, as SVG and as table rows.

:func:`knee_view` turns a solved knee problem (``result.extra``: the stored
``simulation`` and the ``bracket``, see :mod:`calculators.sim.drills`) into what
the worked solution shows: an inline SVG (``role="img"``, a title saying what it
plots and that the table holds the numbers) of two panels over the arrival rate
— the p99 TTFT and p99 TPOT each as a share of its target (the target is 1), and
the goodput against the lines "goodput = rate" and "goodput = 0.9 × rate", where
the knee is marked — and one row per swept rate for the template's table. A
refining run (the four between the two rates either side of the knee) is drawn
hollow and named in its row, so no mark is told by colour alone. The drawing
helpers are the ones the pareto chart and the runbook's load-sweep figure use
(:mod:`core.svg`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from calculators.engine.procedures import Result
from calculators.engine.procedures.base import format_number
from calculators.simulation import KNEE_SHARE
from core.svg import BLUE, DARK, GRID, INK, MUTED, PAPER, RULE, VERMILLION, circle, group, line, path, rect, svg, text

WIDTH, HEIGHT = 620, 540
LEFT, RIGHT = 74, 600
TOP_A, BOTTOM_A = 56, 216     # p99 ÷ target
TOP_B, BOTTOM_B = 266, 456    # goodput
# The latency panel stops at this many times the target: an overloaded rate's p99 runs off the top (the table
# has its number), drawn on the edge with an arrow.
LATENCY_CAP = 3.0


@dataclass
class SweepRow:
    """One swept rate in the table: the rate, goodput and its share of the rate, the p99s and the shares of
    requests missing each target (displayed), whether the share is kept, and its marks in words."""

    rate: str
    goodput: str
    share: str
    ttft_p99: str
    tpot_p99: str
    ttft_missed: str
    tpot_missed: str
    keeps: bool
    marks: str


@dataclass
class KneeView:
    """What the template shows: the SVG, the knee (displayed), the sentence saying why it is there, the
    table's caption and rows, and the targets."""

    svg: SafeString
    knee: str
    reason: str
    caption: str
    rows: list[SweepRow]
    ttft_slo_ms: float
    tpot_slo_ms: float
    share: float


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 1.2, 1.6, 2, 2.4, 3, 4, 6, 8 × a power of ten at or above ``value`` (an axis top whose
    quarters read in round numbers)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 1.2, 1.6, 2, 2.4, 3, 4, 6, 8, 10) if step * power >= value)


def _bare(value: float | None, unit: str) -> str:
    """``value`` as the unit's display rule shows it, without the unit (the table's header names it)."""
    return "—" if value is None else format_number(value, unit).removesuffix(f" {unit}")


def _missed(point: dict, key: str) -> str:
    if point.get(key) is None or not point.get("arrived"):
        return "—"  # a sweep stored before the misses were kept
    return f"{point[key] / point['arrived']:.0%}"


def _marker(kind: str, x: float, y: float, colour: str, hollow: bool) -> str:
    fill = PAPER if hollow else colour
    if kind == "square":
        return rect(x - 5, y - 5, 10, 10, fill=fill, stroke=colour, stroke_width=1.5)
    return circle(x, y, 5, fill=fill, stroke=colour, stroke_width=1.5)


def _points(simulation: dict) -> list[tuple[dict, bool]]:
    """Every swept point with whether it is a refining run, by rate."""
    tagged = [(p, False) for p in simulation["points"]] + [(p, True) for p in simulation.get("refine", [])]
    return sorted(tagged, key=lambda pair: pair[0]["rate_req_s"])


def _chart(result: Result, tagged: list[tuple[dict, bool]], knee: float, subject: str) -> str:
    inputs = result.inputs
    targets = {"ttft_p99_ms": inputs["ttft_slo_ms"], "tpot_p99_ms": inputs["tpot_slo_ms"]}
    rates = [p["rate_req_s"] for p, _ in tagged]
    x_high = max(rates) * 1.06
    ratios = [p[key] / target for p, _ in tagged for key, target in targets.items() if p.get(key) is not None]
    lat_high = min(LATENCY_CAP, max([1.2] + ratios) * 1.1)
    good_high = _nice_ceiling(max([knee] + [p["goodput_req_s"] for p, _ in tagged]) * 1.25)

    def x(rate: float) -> float:
        return LEFT + rate / x_high * (RIGHT - LEFT)

    def y_lat(share: float) -> float:
        return BOTTOM_A - min(share, lat_high) / lat_high * (BOTTOM_A - TOP_A)

    def y_good(req_s: float) -> float:
        return BOTTOM_B - req_s / good_high * (BOTTOM_B - TOP_B)

    body = [text(LEFT - 60, 18, subject, size=14, weight="600")]
    for top, bottom, high, label in ((TOP_A, BOTTOM_A, lat_high, "p99 ÷ its target"),
                                     (TOP_B, BOTTOM_B, good_high, "goodput, req/s")):
        for k in range(5):
            value, y = high * k / 4, bottom - k / 4 * (bottom - top)
            body += [line(LEFT, y, RIGHT, y, stroke=GRID, stroke_width=1.0),
                     text(LEFT - 6, y + 4.5, f"{value:,.3g}", size=12, anchor="end", fill=MUTED)]
        body += [rect(LEFT, top, RIGHT - LEFT, bottom - top, stroke=RULE, stroke_width=1.0),
                 text(LEFT - 60, top - 10, label, size=13, fill=MUTED)]
    body += [line(LEFT, y_lat(1.0), RIGHT, y_lat(1.0), stroke=INK, stroke_width=1.5, stroke_dasharray="6 4"),
             text(LEFT + 8, y_lat(1.0) - 6, "target", size=13, halo=True)]
    for rate in (p["rate_req_s"] for p, refining in tagged if not refining):
        body.append(text(x(rate), BOTTOM_B + 18, f"{rate:,.4g}", size=12, anchor="middle", fill=MUTED))
    body.append(text((LEFT + RIGHT) / 2, BOTTOM_B + 38, "arrival rate, req/s", size=13, anchor="middle", fill=MUTED))
    # The offered rate, and the share of it a rate must keep: goodput above the dashed line keeps it.
    # Each line ends where it leaves the panel, at its right or top edge.
    offered, kept_share = min(x_high, good_high), min(x_high, good_high / KNEE_SHARE)
    body += [line(x(0), y_good(0), x(offered), y_good(offered), stroke=MUTED, stroke_width=1.0,
                  stroke_dasharray="2 4"),
             line(x(0), y_good(0), x(kept_share), y_good(KNEE_SHARE * kept_share), stroke=INK, stroke_width=1.5,
                  stroke_dasharray="6 4"),
             text(LEFT + 8, TOP_B + 16, f"dotted: goodput = rate · dashed: {KNEE_SHARE:g} × rate", size=12,
                  fill=MUTED, halo=True)]

    for key, colour, kind in (("ttft_p99_ms", BLUE, "circle"), ("tpot_p99_ms", VERMILLION, "square")):
        trail = [(x(p["rate_req_s"]), y_lat(p[key] / targets[key]), p[key] / targets[key] > lat_high, refining)
                 for p, refining in tagged if p.get(key) is not None]
        if len(trail) > 1:
            body.append(path("M" + " L".join(f"{px:.2f} {py:.2f}" for px, py, _, _ in trail), stroke=colour,
                             stroke_width=2.0))
        for px, py, off_top, refining in trail:
            body.append(_marker(kind, px, py, colour, refining))
            if off_top:
                body.append(text(px, py - 9, "↑", size=13, anchor="middle", fill=DARK[colour], weight="700"))
    good = [(x(p["rate_req_s"]), y_good(p["goodput_req_s"]), refining) for p, refining in tagged]
    body.append(path("M" + " L".join(f"{px:.2f} {py:.2f}" for px, py, _ in good), stroke=INK, stroke_width=2.0))
    body += [_marker("circle", px, py, INK, refining) for px, py, refining in good]

    kx = x(knee)
    body += [line(kx, TOP_A, kx, BOTTOM_B, stroke=DARK[VERMILLION], stroke_width=1.5, stroke_dasharray="3 3"),
             text(kx + (6 if kx < RIGHT - 170 else -6), TOP_B + 36, f"knee {format_number(knee, 'req/s')}",
                  size=14, weight="700", fill=DARK[VERMILLION], halo=True,
                  anchor="start" if kx < RIGHT - 170 else "end")]
    legend_y = HEIGHT - 14
    body += [circle(LEFT - 50, legend_y - 5, 5, fill=BLUE), text(LEFT - 40, legend_y, "p99 TTFT", size=13),
             rect(LEFT + 30, legend_y - 10, 10, 10, fill=VERMILLION), text(LEFT + 45, legend_y, "p99 TPOT", size=13),
             circle(LEFT + 125, legend_y - 5, 5, fill=INK), text(LEFT + 135, legend_y, "goodput", size=13),
             circle(LEFT + 210, legend_y - 5, 5, fill=PAPER, stroke=INK, stroke_width=1.5),
             text(LEFT + 220, legend_y, "hollow: a refining run near the knee", size=13)]
    return group(body)


def knee_view(result: Result, subject: str) -> KneeView:
    """The chart and table of a solved knee problem ``result`` (its ``extra`` holds ``simulation`` and
    ``bracket``) for ``subject`` (the stack in words, the chart's heading)."""
    simulation: dict[str, Any] = result.extra["simulation"]
    kept, lost = result.extra["bracket"]
    knee = result.values["knee_req_s"]
    tagged = _points(simulation)
    rate = lambda value: format_number(value, "req/s")  # noqa: E731 - a local shorthand
    rows = []
    for point, refining in tagged:
        share = point["goodput_req_s"] / point["rate_req_s"]
        marks = ["refined"] if refining else []
        if point["rate_req_s"] == kept:
            marks.append(f"last keeping {KNEE_SHARE:g}")
        if point["rate_req_s"] == lost:
            marks.append(f"first below {KNEE_SHARE:g}")
        rows.append(SweepRow(_bare(point["rate_req_s"], "req/s"), _bare(point["goodput_req_s"], "req/s"),
                             f"{share:.3f}", _bare(point.get("ttft_p99_ms"), "ms"),
                             _bare(point.get("tpot_p99_ms"), "ms"),
                             _missed(point, "ttft_missed"), _missed(point, "tpot_missed"), share >= KNEE_SHARE,
                             ", ".join(marks)))
    inputs = result.inputs
    label = (f"Two panels over the arrival rate for {subject}: the p99 TTFT and p99 TPOT as a share of their targets "
             f"({inputs['ttft_slo_ms']:g} ms and {inputs['tpot_slo_ms']:g} ms), and the goodput against "
             f"{KNEE_SHARE:g} × the rate; the knee, {rate(knee)}, is the dashed vertical line. The table below gives "
             f"every point.")
    caption = (f"Every swept rate, {simulation['simulator_inputs']['duration_s']:g} simulated seconds each: goodput "
               f"counts the requests meeting both targets (TTFT {inputs['ttft_slo_ms']:g} ms, TPOT "
               f"{inputs['tpot_slo_ms']:g} ms).")
    chart = svg(WIDTH, HEIGHT, label, _chart(result, tagged, knee, subject))
    return KneeView(mark_safe(chart), rate(knee), result.extra["reason"], caption, rows, inputs["ttft_slo_ms"],
                    inputs["tpot_slo_ms"], KNEE_SHARE)

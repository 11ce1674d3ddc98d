"""The pareto calculator's chart and table: the throughput–interactivity curve as SVG, and every point as rows.

:func:`curve_view` turns the engine's curve (``result.extra["curve"]``, see
:mod:`calculators.engine.procedures.pareto_curve`) into what the page shows: an
inline SVG (``role="img"``, a title saying what it plots and that the table
holds the numbers) with one line per tensor-parallel degree — each with its own
colour, marker shape and dash so no series is told by colour alone — the TPOT
target as a dashed vertical line with the too-slow side hatched, the target's
point ringed and the best point per card labelled; and the table of every point
with the same marks in words. The drawing helpers are those the runbook's figures
use too (:mod:`core.svg`: escaping, the Okabe–Ito palette).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from calculators.engine.procedures.base import format_number
from core.svg import (
    BLUE,
    GREEN,
    GRID,
    INK,
    MUTED,
    ORANGE,
    PAPER,
    PURPLE,
    RULE,
    SKY,
    VERMILLION,
    circle,
    group,
    hatch,
    line,
    path,
    polygon,
    rect,
    svg,
    text,
)

WIDTH, HEIGHT = 620, 420
LEFT, RIGHT, TOP, BOTTOM = 74, 600, 30, 330

# (colour, marker, dash) per series, in degree order.
STYLES = ((BLUE, "circle", None), (VERMILLION, "square", "7 4"), (GREEN, "triangle", "2 4"),
          (PURPLE, "diamond", "10 4 2 4"), (ORANGE, "circle", "4 3"), (SKY, "square", "1 3"))


@dataclass
class CurveRow:
    """One point in the table: degree, batch, the step and the two rates (displayed), and its marks."""

    gpus: int
    batch: int
    step: str
    per_user: str
    per_card: str
    meets: bool
    marks: str


@dataclass
class CurveView:
    """What the template shows: the SVG, its caption, the table rows and the refused degrees."""

    svg: SafeString
    caption: str
    rows: list[CurveRow]
    refused: list[str]
    target_ms: float


def _nice_step(span: float) -> float:
    """A tick step of 1, 2 or 5 × 10^k giving at most six ticks over ``span``."""
    raw = span / 6
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def _marker(kind: str, x: float, y: float, colour: str, size: float = 5.0, filled: bool = True) -> str:
    fill = colour if filled else PAPER
    if kind == "square":
        return rect(x - size, y - size, 2 * size, 2 * size, fill=fill, stroke=colour, stroke_width=1.5)
    if kind == "triangle":
        return polygon([(x, y - size * 1.2), (x + size * 1.1, y + size * 0.8), (x - size * 1.1, y + size * 0.8)],
                       fill=fill, stroke=colour, stroke_width=1.5)
    if kind == "diamond":
        return polygon([(x, y - size * 1.3), (x + size * 1.3, y), (x, y + size * 1.3), (x - size * 1.3, y)],
                       fill=fill, stroke=colour, stroke_width=1.5)
    return circle(x, y, size, fill=fill, stroke=colour, stroke_width=1.5)


def _cards(gpus: int) -> str:
    return "1 GPU" if gpus == 1 else f"{gpus} GPUs"


def curve_view(curve: dict[str, Any], gpu_name: str, subject: str) -> CurveView:
    """The chart and table of ``curve`` for ``subject`` (the model's name) on ``gpu_name`` cards."""
    series = [d for d in curve["degrees"] if d["points"]]
    points = [p for d in series for p in d["points"]]
    tok_s = lambda v: format_number(v, "tok/s")  # noqa: E731 - a local shorthand
    x_max = max([p["tok_s_per_user"] for p in points] + [curve["target_tok_s_per_user"]]) * 1.08
    y_max = max(p["tok_s_per_card"] for p in points) * 1.1
    x_step, y_step = _nice_step(x_max), _nice_step(y_max)
    x_max, y_max = math.ceil(x_max / x_step) * x_step, math.ceil(y_max / y_step) * y_step

    def sx(value: float) -> float:
        return LEFT + value / x_max * (RIGHT - LEFT)

    def sy(value: float) -> float:
        return BOTTOM - value / y_max * (BOTTOM - TOP)

    body = []
    tx = sx(curve["target_tok_s_per_user"])
    body.append(hatch(LEFT, TOP, tx - LEFT, BOTTOM - TOP, colour=MUTED, gap=9))
    tick = 0.0
    while tick <= x_max + 1e-9:
        body += [line(sx(tick), TOP, sx(tick), BOTTOM, stroke=GRID, stroke_width=1.0),
                 text(sx(tick), BOTTOM + 18, f"{tick:,.0f}", size=13, anchor="middle", fill=MUTED)]
        tick += x_step
    tick = 0.0
    while tick <= y_max + 1e-9:
        body += [line(LEFT, sy(tick), RIGHT, sy(tick), stroke=GRID, stroke_width=1.0),
                 text(LEFT - 6, sy(tick) + 4.5, f"{tick:,.0f}", size=13, anchor="end", fill=MUTED)]
        tick += y_step
    body += [
        rect(LEFT, TOP, RIGHT - LEFT, BOTTOM - TOP, stroke=RULE, stroke_width=1.0),
        text(LEFT - 66, TOP - 12, "tok/s per card", size=13, fill=MUTED),
        text((LEFT + RIGHT) / 2, BOTTOM + 38, "tok/s per user (interactivity)", size=13, anchor="middle",
             fill=MUTED),
        line(tx, TOP, tx, BOTTOM, stroke=INK, stroke_width=1.5, stroke_dasharray="6 4"),
        text(tx + 6, BOTTOM - 8, f"TPOT {curve['target_ms']:g} ms", size=13, weight="600", halo=True),
    ]

    legend_x = LEFT - 60
    for index, degree in enumerate(series):
        colour, marker, dash = STYLES[index % len(STYLES)]
        coords = [(sx(p["tok_s_per_user"]), sy(p["tok_s_per_card"])) for p in degree["points"]]
        if len(coords) > 1:
            body.append(path("M" + "L".join(f"{x:.2f} {y:.2f}" for x, y in coords), stroke=colour,
                             stroke_width=2.0, stroke_dasharray=dash))
        for (x, y), p in zip(coords, degree["points"]):
            body.append(_marker(marker, x, y, colour, filled=p["meets_target"]))
        ly = HEIGHT - 20
        body += [line(legend_x, ly - 5, legend_x + 26, ly - 5, stroke=colour, stroke_width=2.0, stroke_dasharray=dash),
                 _marker(marker, legend_x + 13, ly - 5, colour), text(legend_x + 32, ly, _cards(degree["gpus"]),
                                                                       size=13)]
        legend_x += 100
    body.append(text(RIGHT, TOP - 12, "hollow marker, hatched side: slower than the target", size=13, anchor="end",
                     fill=MUTED))

    marked, best = curve["marked"], curve["best"]
    best_is_marked = bool(marked and best and (best["gpus"], best["batch"]) == (marked["gpus"], marked["batch"]))
    for degree in series:
        for p in degree["points"]:
            x, y = sx(p["tok_s_per_user"]), sy(p["tok_s_per_card"])
            if marked and (degree["gpus"], p["batch"]) == (marked["gpus"], marked["batch"]):
                body += [circle(x, y, 11, fill="none", stroke=INK, stroke_width=2.5),
                         text(x + 14 if x < RIGHT - 240 else x - 14, y + 20,
                              f"target's point: batch {p['batch']:,}, {_cards(degree['gpus'])}", size=13, weight="700",
                              anchor="start" if x < RIGHT - 240 else "end", halo=True)]
            if best and (degree["gpus"], p["batch"]) == (best["gpus"], best["batch"]) and not best_is_marked:
                anchor = "start" if x < LEFT + 120 else "end" if x > RIGHT - 120 else "middle"
                body.append(text(x + (8 if anchor == "start" else 0), y - 14,
                                 f"best per card: batch {p['batch']:,}, {_cards(degree['gpus'])}", size=13,
                                 weight="700", anchor=anchor, halo=True))
    label = (f"Line chart of tok/s per card against tok/s per user for {subject} on "
             f"{', '.join(_cards(d['gpus']) for d in series)} of {gpu_name}, batches doubling up to the KV limit; "
             f"the TPOT target of {curve['target_ms']:g} ms is the dashed line at "
             f"{tok_s(curve['target_tok_s_per_user'])} per user. The table below gives every point.")
    rows = []
    for degree in series:
        for p in degree["points"]:
            marks = []
            if marked and (degree["gpus"], p["batch"]) == (marked["gpus"], marked["batch"]):
                marks.append("the target's point")
            if best and (degree["gpus"], p["batch"]) == (best["gpus"], best["batch"]):
                marks.append("best per card")
            rows.append(CurveRow(degree["gpus"], p["batch"], format_number(p["step_ms"], "ms"),
                                 tok_s(p["tok_s_per_user"]), tok_s(p["tok_s_per_card"]), p["meets_target"],
                                 ", ".join(marks)))
    refused = [f"{_cards(d['gpus'])}: {d['refused']}" for d in curve["degrees"] if d["refused"]]
    caption = (f"Every point of the curve: {subject} on {gpu_name}, TPOT target {curve['target_ms']:g} ms "
               f"({tok_s(curve['target_tok_s_per_user'])} per user).")
    return CurveView(mark_safe(svg(WIDTH, HEIGHT, label, group(body))),
                     caption, rows, refused, curve["target_ms"])

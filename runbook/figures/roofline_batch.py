"""``{{figure roofline-batch}}``: decode's point climbing the roofline as the batch grows.

The card's roofline on log-log axes (attainable FLOP/s against arithmetic
intensity): the bandwidth slope, the dense compute roof and the ridge point
between them, at the value the ``roofline`` family computes. One frame per
batch size: decode's intensity (the family's ``decode_flop_per_byte``) moves
right as the batch grows, up the slope, through the engine's ``batch_at_ridge``
(the last memory-bound batch) and onto the flat roof. The last frame keeps every
point and adds prefill's intensity for comparison.

Options: ``model``, ``gpu``, ``precision``, ``weights_dtype`` (the roofline
family's inputs; reference stack by default), ``batches`` (comma-separated,
default ``1,8,32,128,512``; the ridge batch is always added) and
``prompt_tokens`` (the prefill point, default 2,048).
"""

from __future__ import annotations

import math

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import (
    BLUE,
    DARK,
    GRID,
    INK,
    MUTED,
    PAPER,
    RULE,
    TINT,
    VERMILLION,
    circle,
    group,
    line,
    num,
    polygon,
    rect,
    text,
)

from . import register
from .frames import Frame, gpu_name, model_name, render_figure, take_options

NAME = "roofline-batch"
DEFAULTS = {"model": None, "gpu": None, "precision": None, "weights_dtype": None, "batches": "1,8,32,128,512",
            "prompt_tokens": None}
ENGINE_KEYS = ("model", "gpu", "precision", "weights_dtype", "prompt_tokens")
MAX_BATCHES = 8

WIDTH, HEIGHT = 560, 390
LEFT, RIGHT, TOP, BOTTOM = 62, 540, 54, 300  # the plot area


def _batches(raw: str, ridge_batch: int) -> list[int]:
    values = set()
    for part in raw.split(","):
        part = part.strip().replace("_", "")
        if not part.isdigit() or not 1 <= int(part) <= 1_000_000:
            raise ValueError(f"The {NAME} figure's batches must be whole numbers from 1 to 1,000,000 separated "
                             f"by commas, not '{raw}'.")
        values.add(int(part))
    if len(values) > MAX_BATCHES - 2:
        raise ValueError(f"The {NAME} figure takes at most {MAX_BATCHES - 2} batch sizes, not {len(values)}.")
    values.add(ridge_batch)
    if max(values) <= ridge_batch:
        # Always cross the ridge: add the first power of two past the engine's batch at the ridge.
        values.add(1 << ridge_batch.bit_length())
    return sorted(values)


class _Axes:
    """Log-log mapping of (FLOP/byte, TFLOP/s) to the plot area."""

    def __init__(self, x_low: float, x_high: float, y_low: float, y_high: float):
        self.lx, self.hx = math.log10(x_low), math.log10(x_high)
        self.ly, self.hy = math.log10(y_low), math.log10(y_high)

    def x(self, intensity: float) -> float:
        return LEFT + (math.log10(intensity) - self.lx) / (self.hx - self.lx) * (RIGHT - LEFT)

    def y(self, tflops: float) -> float:
        return BOTTOM - (math.log10(tflops) - self.ly) / (self.hy - self.ly) * (BOTTOM - TOP)


def _tick(value: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _marker(x: float, y: float, compute: bool, size: float, filled: bool = True) -> str:
    """A circle for memory-bound, a square for compute-bound (shape as well as colour)."""
    colour = VERMILLION if compute else BLUE
    fill = colour if filled else PAPER
    if compute:
        return rect(x - size, y - size, 2 * size, 2 * size, fill=fill, stroke=colour, stroke_width=2.0)
    return circle(x, y, size, fill=fill, stroke=colour, stroke_width=2.0)


@register(NAME)
def roofline_batch(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    engine = {key: opts[key] for key in ENGINE_KEYS if key in opts}
    roofline = FAMILIES["roofline"]
    base = roofline.run(dict(engine))
    ridge = base.values["ridge_flop_per_byte"]
    ridge_batch = int(base.values["batch_at_ridge"])
    peak, bandwidth = base.given["peak_tflops"], base.given["bandwidth"]  # TFLOP/s, GB/s
    prefill = base.values["prefill_flop_per_byte"]
    prefill_compute = base.values["prefill_bound"] >= 1
    inputs = base.inputs

    points = []  # (batch, intensity, compute-bound?)
    for batch in _batches(opts["batches"], ridge_batch):
        result = roofline.run({**engine, "batch": batch})
        points.append((batch, result.values["decode_flop_per_byte"], result.values["decode_bound"] >= 1))

    def attainable(intensity: float) -> float:  # TFLOP/s under the roof
        return min(peak, intensity * bandwidth / 1000)

    intensities = [p[1] for p in points] + [ridge, prefill]
    x_low = 10 ** math.floor(math.log10(min(intensities)) - 0.3)
    x_high = 10 ** math.ceil(math.log10(max(intensities)) + 0.3)
    y_low = 10 ** math.floor(math.log10(attainable(x_low)))
    axes = _Axes(x_low, x_high, y_low, peak * 10)

    fmt_i = lambda value: format_number(value, "FLOP/byte")  # noqa: E731
    fmt_t = lambda value: format_number(value, "TFLOP/s")  # noqa: E731
    card, model = gpu_name(inputs["gpu"]), model_name(inputs["model"])
    precision, weights = inputs["precision"], inputs["weights_dtype"]

    # The parts every frame shares: regions, grid, axes, the roofline and the ridge.
    rx, ry = axes.x(ridge), axes.y(peak)
    static = [
        text(LEFT - 50, 22, f"{card} · {model}, {weights} weights, {precision} compute", size=15, weight="600"),
        rect(LEFT, TOP, rx - LEFT, BOTTOM - TOP, fill=TINT[BLUE], opacity=0.45),
        rect(rx, TOP, RIGHT - rx, BOTTOM - TOP, fill=TINT[VERMILLION], opacity=0.45),
    ]
    decade = math.ceil(math.log10(x_low))
    while 10 ** decade <= x_high * 1.0001:
        x = axes.x(10 ** decade)
        static += [line(x, TOP, x, BOTTOM, stroke=GRID, stroke_width=1.0),
                   text(x, BOTTOM + 18, _tick(10 ** decade), size=13, anchor="middle", fill=MUTED)]
        decade += 1
    decade = math.ceil(math.log10(y_low))
    while 10 ** decade <= peak * 10:
        y = axes.y(10 ** decade)
        static += [line(LEFT, y, RIGHT, y, stroke=GRID, stroke_width=1.0),
                   text(LEFT - 6, y + 4.5, _tick(10 ** decade), size=13, anchor="end", fill=MUTED)]
        decade += 1
    static += [
        rect(LEFT, TOP, RIGHT - LEFT, BOTTOM - TOP, stroke=RULE, stroke_width=1.0),
        text(LEFT - 50, 44, "attainable TFLOP/s", size=13, fill=MUTED),
        text((LEFT + RIGHT) / 2, BOTTOM + 38, "arithmetic intensity, FLOP/byte (both axes logarithmic)", size=13,
             anchor="middle", fill=MUTED),
        text(LEFT + 8, BOTTOM - 10, "← memory-bound", size=13, fill=BLUE, weight="600", halo=True),
        text(RIGHT - 8, BOTTOM - 10, "compute-bound →", size=13, anchor="end", fill=DARK[VERMILLION], weight="600",
             halo=True),
        # The dense peak as a dotted guide across, the roofline solid.
        line(LEFT, ry, rx, ry, stroke=MUTED, stroke_width=1.0, stroke_dasharray="2 4"),
        text(LEFT + 8, ry - 7, f"dense peak {fmt_t(peak)}", size=13, fill=INK, halo=True),
        line(LEFT, axes.y(attainable(x_low)), rx, ry, stroke=INK, stroke_width=3.0, stroke_linecap="round"),
        line(rx, ry, RIGHT, ry, stroke=INK, stroke_width=3.0, stroke_linecap="round"),
        line(rx, ry, rx, BOTTOM, stroke=INK, stroke_width=1.5, stroke_dasharray="5 4"),
        polygon([(rx, ry - 7), (rx + 7, ry), (rx, ry + 7), (rx - 7, ry)], fill=PAPER, stroke=INK, stroke_width=2.0),
        # The ridge's label on whichever side of the dashed line has room for it.
        text(rx + 8 if rx + 150 < RIGHT else rx - 8, (ry + BOTTOM) / 2 - 8, "ridge", size=14, weight="700",
             anchor="start" if rx + 150 < RIGHT else "end", halo=True),
        text(rx + 8 if rx + 150 < RIGHT else rx - 8, (ry + BOTTOM) / 2 + 10, fmt_i(ridge), size=14, weight="700",
             anchor="start" if rx + 150 < RIGHT else "end", halo=True),
    ]
    # The slope's label, turned to lie along it.
    sx0, sy0 = axes.x(x_low), axes.y(attainable(x_low))
    angle = math.degrees(math.atan2(ry - sy0, rx - sx0))
    mx, my = sx0 + (rx - sx0) * 0.5, sy0 + (ry - sy0) * 0.5
    static.append(text(mx, my + 19, f"slope: {format_number(bandwidth, 'GB/s')} of bandwidth", size=13,
                       anchor="middle", halo=True, transform=f"rotate({num(angle)} {num(mx)} {num(my)})"))
    # Legend.
    ly = HEIGHT - 18
    static += [
        _marker(LEFT - 40, ly - 5, False, 6), text(LEFT - 28, ly, "decode, memory-bound", size=13),
        _marker(LEFT + 152, ly - 5, True, 5.5), text(LEFT + 164, ly, "decode, compute-bound", size=13),
        polygon([(LEFT + 348, ly - 12), (LEFT + 355, ly - 5), (LEFT + 348, ly + 2), (LEFT + 341, ly - 5)],
                fill=MUTED),
        text(LEFT + 360, ly, "prefill", size=13),
    ]
    static_svg = group(static)

    frames = []
    for index, (batch, intensity, compute) in enumerate(points):
        last = index == len(points) - 1
        body = [static_svg]
        # Earlier points stay as hollow markers: the trail of the batch growing.
        for k, (b, i, c) in enumerate(points[:index]):
            x, y = axes.x(i), axes.y(attainable(i))
            body.append(_marker(x, y, c, 4.5, filled=False))
            if last:
                if c:
                    body.append(text(x, y + 19, f"{b:,}", size=13, anchor="middle", fill=INK, halo=True))
                else:
                    body.append(text(x - 7, y - 8, f"{b:,}", size=13, anchor="end", fill=INK, halo=True))
        x, y = axes.x(intensity), axes.y(attainable(intensity))
        if last:
            px, py = axes.x(prefill), axes.y(attainable(prefill))
            body.append(polygon([(px, py - 8), (px + 8, py), (px, py + 8), (px - 8, py)], fill=MUTED, stroke=PAPER,
                                stroke_width=1.5))
            body.append(text(px, py + 22, f"prefill, {inputs['prompt_tokens']:,} tok", size=13, anchor="middle",
                             halo=True))
        body.append(_marker(x, y, compute, 8))
        label_y = y - 16 if compute else y - 14
        anchor = "middle" if compute else "end"
        label_x = x if compute else x - 10
        body.append(text(label_x, label_y, f"batch {batch:,}", size=15, anchor=anchor, weight="700",
                         fill=DARK[VERMILLION] if compute else BLUE, halo=True))

        bound = "compute-bound" if compute else "memory-bound"
        side = "past" if compute else "below"
        caption = (f"Batch {batch:,}: decode's arithmetic intensity is {fmt_i(intensity)}, {side} the ridge at "
                   f"{fmt_i(ridge)}, so the step is {bound}; ")
        caption += (f"the dense peak, {fmt_t(peak)}, is the limit here." if compute else
                    f"bandwidth caps it at {fmt_t(attainable(intensity))} of the card's {fmt_t(peak)}.")
        if batch == ridge_batch:
            caption += (f" {batch:,} is the engine's batch at the ridge: the largest batch still memory-bound, "
                        f"one more sequence tips it over.")
        elif batch == 1:
            caption += " One sequence: every weight read from memory is used for a single token."
        elif compute and points[index - 1][2] is False:
            caption += (" Past the ridge the roof is flat: more sequences add FLOPs, not throughput, so each "
                        "step takes longer.")
        if last:
            caption += (f" Prefill of a {inputs['prompt_tokens']:,}-token prompt sits at {fmt_i(prefill)}, "
                        + ("on the compute-bound side." if prefill_compute else
                           "still memory-bound by this count (every stored weight read, only the used ones "
                           "multiplied)."))
        label = (f"Roofline of the {card}: decode at batch {batch:,} has an arithmetic intensity of "
                 f"{fmt_i(intensity)}, {'right' if compute else 'left'} of the ridge at {fmt_i(ridge)}: {bound}.")
        frames.append(Frame("".join(body), caption, label))

    title = f"Decode climbs the roofline as the batch grows ({card}, {model})"
    intro = (f"Log-log roofline: the bandwidth slope meets the dense {precision} roof at the ridge point, "
             f"{fmt_i(ridge)}. Each step adds sequences to the decode batch.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

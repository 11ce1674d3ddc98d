"""``{{figure load-sweep …}}``: what a replica delivers as the arrival rate climbs, from the simulator.

The serving simulator (``calculators/sim``, docs/architecture.md §13, reached through
:func:`calculators.simulation.simulate_for_chapter`) runs one
workload per swept rate on one replica; the figure draws, rate by rate, the
median and p99 TPOT against the TPOT target (top panel) and the goodput against
the offered rate (bottom panel: the diagonal is "every request met both
targets"). One frame per rate; the last frame marks the knee, the highest swept
rate whose goodput is at least the simulator's ``KNEE_SHARE`` of its rate and whose run ends without a
growing queue (:func:`calculators.sim.results.queue_growing`).
Every number on it comes from the simulation, none is typed.

Options: the simulator's own inputs ``model``, ``gpu``, ``gpus``,
``weights_dtype``, ``kv_dtype``, ``prompt_tokens``, ``output_tokens``,
``ttft_slo_ms``, ``tpot_slo_ms``, ``duration_s`` (default 60), ``seed``,
``max_num_seqs``, and ``rates`` (comma-separated req/s, at most 8; default
``1,2,4,8``). A simulation is deterministic per seed, so the figure is too.
"""

from __future__ import annotations

import math
from functools import lru_cache

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.simulation import KNEE_SHARE, simulate_for_chapter
from core.svg import BLUE, DARK, GRID, INK, MUTED, RULE, VERMILLION, circle, group, line, path, rect, text

from . import register
from .frames import Frame, gpu_name, model_name, render_figure, take_options

NAME = "load-sweep"
SIM_KEYS = ("model", "gpu", "gpus", "weights_dtype", "kv_dtype", "prompt_tokens", "output_tokens", "ttft_slo_ms",
            "tpot_slo_ms", "duration_s", "seed", "max_num_seqs")
DEFAULTS = {**{key: None for key in SIM_KEYS}, "duration_s": "60", "rates": "1,2,4,8"}
MAX_RATES = 8

WIDTH, HEIGHT = 560, 500
LEFT, RIGHT = 70, 540
TOP_A, BOTTOM_A = 70, 240     # TPOT panel
TOP_B, BOTTOM_B = 290, 430    # goodput panel


@lru_cache(maxsize=32)
def _sweep(items: tuple[tuple[str, str], ...]) -> dict:
    """The simulator's sweep for these inputs (memoised: a chapter renders it once per process)."""
    return simulate_for_chapter(dict(items))


def _rates(raw: str) -> str:
    parts = [part.strip() for part in raw.split(",") if part.strip()]
    if not 2 <= len(parts) <= MAX_RATES:
        raise ValueError(f"The {NAME} figure takes from 2 to {MAX_RATES} rates separated by commas, not '{raw}'.")
    return ",".join(parts)


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × a power of ten at or above ``value`` (an axis top)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


def _ms(value: float | None) -> str:
    return "—" if value is None else format_number(value, "ms")


@register(NAME)
def load_sweep(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring). Raises ``ValueError`` for an option the
    simulator refuses, with the simulator's own sentence."""
    opts = take_options(NAME, options, DEFAULTS)
    raw = {key: opts[key] for key in SIM_KEYS if key in opts}
    raw["sweep"] = _rates(opts["rates"])
    try:
        result = _sweep(tuple(sorted(raw.items())))
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    inputs, points, knee = result["inputs"], result["sweep"], result["knee_req_s"]
    target, ttft_target = inputs["tpot_slo_ms"], inputs["ttft_slo_ms"]
    rates = [p["rate_req_s"] for p in points]

    x_high = max(rates) * 1.08
    tpot_high = _nice_ceiling(max([target] + [p["tpot_ms"]["p99"] or 0 for p in points]) * 1.1)
    good_high = _nice_ceiling(max(rates) * 1.05)

    def x(rate: float) -> float:
        return LEFT + rate / x_high * (RIGHT - LEFT)

    def y_tpot(ms: float) -> float:
        return BOTTOM_A - ms / tpot_high * (BOTTOM_A - TOP_A)

    def y_good(req_s: float) -> float:
        return BOTTOM_B - req_s / good_high * (BOTTOM_B - TOP_B)

    card, model = gpu_name(inputs["gpu"]), model_name(inputs["model"]) if inputs["model"] != "(pasted config)" \
        else "a pasted config"
    fmt_rate = lambda value: format_number(value, "req/s")  # noqa: E731
    static = [text(LEFT - 60, 18, f"{inputs['gpus']} × {card} · {model}", size=14, weight="600"),
              text(LEFT - 60, 36, f"{inputs['prompt_tokens']:,}-token prompts, {inputs['output_tokens']:,}-token "
                                  f"outputs, max {inputs['max_num_seqs']:,} sequences", size=13, fill=MUTED)]
    for top, bottom, high, fmt, label in ((TOP_A, BOTTOM_A, tpot_high, _ms, "TPOT, ms"),
                                          (TOP_B, BOTTOM_B, good_high, fmt_rate, "goodput, req/s")):
        for k in range(5):
            value = high * k / 4
            y = bottom - k / 4 * (bottom - top)
            static += [line(LEFT, y, RIGHT, y, stroke=GRID, stroke_width=1.0),
                       text(LEFT - 6, y + 4.5, f"{value:,.4g}", size=12, anchor="end", fill=MUTED)]
        static += [rect(LEFT, top, RIGHT - LEFT, bottom - top, stroke=RULE, stroke_width=1.0),
                   text(LEFT - 60, top - 10, label, size=13, fill=MUTED)]
    for rate in rates:
        static.append(text(x(rate), BOTTOM_B + 18, f"{rate:,.4g}", size=12, anchor="middle", fill=MUTED))
    static += [
        text((LEFT + RIGHT) / 2, BOTTOM_B + 38, "arrival rate, req/s", size=13, anchor="middle", fill=MUTED),
        line(LEFT, y_tpot(target), RIGHT, y_tpot(target), stroke=INK, stroke_width=1.5, stroke_dasharray="6 4"),
        text(RIGHT - 6, y_tpot(target) - 6, f"TPOT target {_ms(target)}", size=13, anchor="end", halo=True),
        # The offered rate: goodput on this diagonal means every request met both targets.
        line(x(0), y_good(0), x(min(x_high, good_high)), y_good(min(x_high, good_high)), stroke=MUTED,
             stroke_width=1.0, stroke_dasharray="2 4"),
        text(LEFT + 8, TOP_B + 16, "dotted: goodput = offered rate", size=12, fill=MUTED, halo=True),
        circle(LEFT - 40, HEIGHT - 14, 5, fill=BLUE), text(LEFT - 30, HEIGHT - 9, "p50", size=13),
        rect(LEFT + 2, HEIGHT - 19, 10, 10, fill=VERMILLION), text(LEFT + 17, HEIGHT - 9, "p99", size=13),
        rect(LEFT + 62, HEIGHT - 19, 10, 10, fill=INK), text(LEFT + 77, HEIGHT - 9, "goodput", size=13),
    ]
    static_svg = group(static)

    frames = []
    for index, point in enumerate(points):
        shown = points[:index + 1]
        body = [static_svg]
        for key, colour in (("p50", BLUE), ("p99", VERMILLION)):
            trail = [(x(p["rate_req_s"]), y_tpot(p["tpot_ms"][key])) for p in shown if p["tpot_ms"][key] is not None]
            if len(trail) > 1:
                body.append(path("M" + " L".join(f"{px:.2f} {py:.2f}" for px, py in trail), stroke=colour,
                                 stroke_width=2.0))
            for px, py in trail:
                body.append(circle(px, py, 5, fill=colour) if key == "p50" else
                            rect(px - 5, py - 5, 10, 10, fill=colour))
        for p in shown:
            px, py = x(p["rate_req_s"]), y_good(p["goodput_req_s"])
            body.append(rect(px - 7, py, 14, BOTTOM_B - py, fill=INK, opacity=0.8))
        last = index == len(points) - 1
        if last and knee is not None:
            kx = x(knee)
            body += [line(kx, TOP_A, kx, BOTTOM_B, stroke=DARK[VERMILLION], stroke_width=1.5, stroke_dasharray="3 3"),
                     text(kx + 6, TOP_A + 14, f"knee {fmt_rate(knee)}", size=14, weight="700",
                          fill=DARK[VERMILLION], halo=True)]
        tpot, ttft = point["tpot_ms"], point["ttft_ms"]
        caption = (f"At {fmt_rate(point['rate_req_s'])}: TPOT p50 {_ms(tpot['p50'])}, p99 {_ms(tpot['p99'])} "
                   f"against a {_ms(target)} target; TTFT p99 {_ms(ttft['p99'])} against {_ms(ttft_target)}; "
                   f"goodput {fmt_rate(point['goodput_req_s'])}; KV cache peak "
                   f"{point['kv_peak_fraction']:.0%}; {point['preemptions']:,} preemptions.")
        if last:
            top = knee is not None and knee == max(p["rate_req_s"] for p in points)
            caption += (f" The knee, the highest swept rate whose goodput is at least {KNEE_SHARE:.0%} of the rate "
                        f"and whose run ends without a growing queue, is "
                        f"{'at least ' if top else ''}{fmt_rate(knee)}{' (the highest rate swept)' if top else ''}."
                        if knee is not None else
                        f" No swept rate keeps {KNEE_SHARE:.0%} of its requests within both targets.")
        frames.append(Frame("".join(body), caption, f"Simulated load sweep up to {fmt_rate(point['rate_req_s'])}. "
                            + caption))
    title = f"Latency and goodput as the load climbs ({inputs['gpus']} × {card}, {model})"
    intro = (f"The serving simulator, {inputs['duration_s']:,.0f} simulated seconds per rate with Poisson arrivals: "
             f"each step adds one arrival rate.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

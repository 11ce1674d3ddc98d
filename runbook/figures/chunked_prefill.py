"""``{{figure chunked-prefill}}``: a long prefill in chunks, interleaved with the other streams' decode steps.

Two timelines of one GPU serving a few decoding streams when a long prompt
arrives. Above, the prompt's prefill runs as one pass and every stream waits for
it; below, the prefill is split into chunks with a decode step between them, so
the streams keep getting tokens and the new request's first token comes a few
decode steps later. Times come from the engine: the ``prefill`` family's
prefill time (a chunk costs the difference between the prefill times at the
prompt lengths where it ends and starts, so later chunks, attending over more
cached keys, cost more and the chunks add up to the whole prefill) and the
``decode`` family's step for the running streams (the serving model at the
default bandwidth efficiency, as every chapter quotes a step), reading the
weights and every stream's cache.

Options: ``model``, ``gpu``, ``prompt_tokens`` (default 8,192), ``chunk_tokens``
(default 2,048; at most 8 chunks), ``streams`` (decoding already, 1 to 6,
default 3) and ``context`` (tokens in each stream's cache, default 2,300).
"""

from __future__ import annotations

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import (
    BLUE,
    DARK,
    GRID,
    INK,
    MUTED,
    ORANGE,
    PAPER,
    RULE,
    TINT,
    VERMILLION,
    group,
    line,
    path,
    polygon,
    rect,
    text,
)

from . import register
from .frames import Frame, gpu_name, int_option, model_name, render_figure, take_options

NAME = "chunked-prefill"
DEFAULTS = {"model": None, "gpu": None, "prompt_tokens": "8192", "chunk_tokens": "2048", "streams": "3",
            "context": "2300"}
MAX_CHUNKS = 8
LEAD_STEPS = 2  # decode steps before the prompt arrives
TAIL_STEPS = 2  # decode steps after the slower timeline's first token

WIDTH, HEIGHT = 560, 410
X0, X1 = 104, 546
PANELS = (50, 186)  # top of each timeline
AXIS_Y = 316


def _ms(value: float) -> str:
    return format_number(value, "ms")


class _Timeline:
    """One GPU's schedule: (start, end, kind, label) bars, token times of the running streams, and the
    new request's first token."""

    def __init__(self):
        self.bars: list[tuple[float, float, str, str]] = []
        self.ticks: list[float] = []
        self.first_token: float | None = None

    def decode(self, start: float, step: float) -> float:
        self.bars.append((start, start + step, "decode", ""))
        self.ticks.append(start + step)
        return start + step

    def prefill(self, start: float, duration: float, label: str) -> float:
        self.bars.append((start, start + duration, "prefill", label))
        return start + duration

    def largest_gap(self) -> tuple[float, float]:
        pairs = list(zip(self.ticks, self.ticks[1:]))
        return max(pairs, key=lambda pair: pair[1] - pair[0])


@register(NAME)
def chunked_prefill(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    prompt = int_option(NAME, opts, "prompt_tokens", 2, 1_000_000)
    chunk = int_option(NAME, opts, "chunk_tokens", 1, 1_000_000)
    streams = int_option(NAME, opts, "streams", 1, 6)
    context = int_option(NAME, opts, "context", 0, 10_000_000)
    chunks = -(-prompt // chunk)
    if chunks < 2 or chunks > MAX_CHUNKS:
        raise ValueError(f"The {NAME} figure needs 2 to {MAX_CHUNKS} chunks, but {prompt:,} tokens in chunks of "
                         f"{chunk:,} make {chunks}.")
    model_opts = {k: opts[k] for k in ("model", "gpu") if k in opts}

    prefill_family, decode_family = FAMILIES["prefill"], FAMILIES["decode"]
    prefill_at = {}

    def prefill_ms(tokens: int) -> float:
        if tokens not in prefill_at:
            prefill_at[tokens] = prefill_family.run({**model_opts, "prompt_tokens": tokens}).values["prefill_ms"]
        return prefill_at[tokens]

    whole = prefill_family.run({**model_opts, "prompt_tokens": prompt})
    full_ms, mfu = whole.values["prefill_ms"], whole.inputs["prefill_mfu"]
    bounds = [min(i * chunk, prompt) for i in range(chunks + 1)]
    chunk_ms = [prefill_ms(bounds[i + 1]) - (prefill_ms(bounds[i]) if bounds[i] else 0.0) for i in range(chunks)]
    # The serving model's step (at the default bandwidth efficiency, as every other figure and chapter quotes it):
    # the running streams, then the same streams with the new request's cache beside them.
    decode_run = decode_family.run({**model_opts, "batch": streams, "cached_tokens": context})
    step = decode_run.values["step_ms"]
    after = decode_family.run({**model_opts, "batch": streams + 1,
                               "cached_tokens": (streams * context + prompt) // (streams + 1)}).values["step_ms"]
    model, card = model_name(decode_run.inputs["model"]), gpu_name(decode_run.inputs["gpu"])

    arrival = LEAD_STEPS * step
    one, split = _Timeline(), _Timeline()
    for timeline in (one, split):
        t = 0.0
        for _ in range(LEAD_STEPS):
            t = timeline.decode(t, step)
    t = one.prefill(arrival, full_ms, f"prefill {prompt:,} tok · {_ms(full_ms)}")
    one.first_token = t
    t_split = arrival
    for index, duration in enumerate(chunk_ms):
        t_split = split.prefill(t_split, duration, f"{index + 1}")
        if index < chunks - 1:
            t_split = split.decode(t_split, step)
    split.first_token = t_split
    end = max(one.first_token, split.first_token) + TAIL_STEPS * after
    for timeline, t in ((one, one.first_token), (split, split.first_token)):
        while t + after <= end + 1e-9:
            t = timeline.decode(t, after)

    span = end
    scale = lambda ms: X0 + ms / span * (X1 - X0)  # noqa: E731

    def axis() -> str:
        parts = [line(X0, AXIS_Y, X1, AXIS_Y, stroke=RULE, stroke_width=1.0)]
        tick = 50 if span < 600 else 100 if span < 1500 else 500 if span < 6000 else 2000
        value = 0
        while value <= span:
            x = scale(value)
            parts += [line(x, AXIS_Y, x, AXIS_Y + 5, stroke=MUTED, stroke_width=1.0),
                      line(x, PANELS[0] + 8, x, AXIS_Y, stroke=GRID, stroke_width=1.0)]
            if value % (tick * 2) == 0:
                parts.append(text(x, AXIS_Y + 19, f"{value:,}", size=13, anchor="middle", fill=MUTED))
            value += tick
        parts.append(text(X1, AXIS_Y + 36, "time, ms", size=13, anchor="end", fill=MUTED))
        return group(parts)

    def panel(timeline: _Timeline, top: float, title: str, now: float, active: bool, gap: bool) -> str:
        gpu_y, tok_y, new_y = top + 12, top + 64, top + 96
        parts = [text(14, top + 4, title, size=14, weight="700", fill=INK if active else MUTED),
                 text(14, gpu_y + 18, "GPU", size=13, fill=MUTED),
                 text(14, tok_y + 13, f"{streams} streams", size=13, fill=MUTED),
                 text(14, new_y + 12, "new prompt", size=13, fill=MUTED),
                 line(X0, tok_y + 18, X1, tok_y + 18, stroke=RULE, stroke_width=1.0)]
        for start, stop, kind, label in timeline.bars:
            if start >= now - 1e-9:
                continue
            stop = min(stop, now)
            x, w = scale(start), max(scale(stop) - scale(start), 1.2)
            if kind == "decode":
                parts.append(rect(x, gpu_y, w, 26, fill=BLUE, stroke=PAPER, stroke_width=0.6))
            else:
                parts.append(rect(x, gpu_y, w, 26, fill=TINT[ORANGE], stroke=ORANGE, stroke_width=1.5))
                if w > 9 * len(label):
                    parts.append(text(x + w / 2, gpu_y + 18, label, size=13, anchor="middle", weight="700"))
        for tick in timeline.ticks:
            if tick <= now + 1e-9:
                parts.append(line(scale(tick), tok_y, scale(tick), tok_y + 18, stroke=BLUE, stroke_width=2.0))
        ax = scale(arrival)
        done = timeline.first_token is not None and timeline.first_token <= now + 1e-9
        if now >= arrival:
            parts.append(polygon([(ax - 6, new_y), (ax + 6, new_y), (ax, new_y + 10)], fill=INK))
            if not done:
                parts.append(text(ax + 8, new_y + 10, "arrives", size=13, fill=MUTED))
        if done:
            fx = scale(timeline.first_token)
            ttft = timeline.first_token - arrival
            label = f"first token {_ms(ttft)}"
            stop_x = max(ax + 8, fx - 12 - 6.8 * len(label) - 6)
            parts.append(path(f"M {ax + 7} {new_y + 5} H {stop_x}", stroke=INK, stroke_width=1.2,
                              stroke_dasharray="3 3"))
            parts.append(text(fx, new_y + 12, "★", size=15, anchor="middle", fill=DARK[ORANGE]))
            parts.append(text(fx - 12, new_y + 11, label, size=13, anchor="end", fill=INK, halo=True))
        if gap:
            a, b = timeline.largest_gap()
            if b <= now + 1e-9:
                xa, xb = scale(a), scale(b)
                parts.append(path(f"M {xa} {tok_y - 1} V {tok_y - 6} H {xb} V {tok_y - 1}", stroke=VERMILLION,
                                  stroke_width=2.0))
                parts.append(text((xa + xb) / 2, tok_y - 10, f"no token for {_ms(b - a)}", size=13,
                                  anchor="middle", weight="700", fill=DARK[VERMILLION], halo=True))
        if active and now < span:
            nx = scale(now)
            parts.append(line(nx, top + 10, nx, new_y + 16, stroke=INK, stroke_width=1.5, stroke_dasharray="2 3"))
        return group(parts)

    def summary(lines: list[str]) -> str:
        y = HEIGHT - 48
        parts = [rect(14, y, WIDTH - 28, 42, fill="#f4f7fb", stroke=RULE, stroke_width=1.0, rx=6)]
        for index, content in enumerate(lines):
            parts.append(text(26, y + 17 + index * 17, content, size=13 if index else 14,
                              weight="700" if index == 0 else None))
        return group(parts)

    header = text(14, 24, f"{model} on one {card}", size=15, weight="600")
    titles = ("One prefill pass", f"Chunked: {chunks} chunks of up to {chunk:,} tokens, decode steps between")
    one_gap = one.largest_gap()
    split_gap = split.largest_gap()
    frames = []

    def add(now_one: float, now_split: float, active: int, caption: str, label: str, lines: list[str]) -> None:
        body = [header, axis(),
                panel(one, PANELS[0], titles[0], now_one, active == 0, now_one >= one_gap[1]),
                panel(split, PANELS[1], titles[1], now_split, active == 1, now_split >= split_gap[1]),
                summary(lines)]
        frames.append(Frame("".join(body), caption, label))

    add(arrival, arrival, 0,
        f"{streams} streams are decoding: each step reads the weights and their caches ({streams} × {context:,} "
        f"tokens) and gives every stream one token, {_ms(step)} a step. A {prompt:,}-token prompt arrives.",
        f"Both timelines: {LEAD_STEPS} decode steps, then a {prompt:,}-token prompt arrives.",
        [f"decode step: {_ms(step)}", f"{streams} streams × {context:,} tokens of cache, the weights read once"])
    add(end, arrival, 0,
        f"Without chunking the whole prefill runs as one pass, {_ms(full_ms)} at {mfu * 100:g} % MFU. The "
        f"new request gets its first token when it ends, but no running stream gets a token for "
        f"{_ms(one_gap[1] - one_gap[0])}: a stall every user of the GPU sees as a frozen stream.",
        f"One prefill pass of {_ms(full_ms)}: the streams get no token for {_ms(one_gap[1] - one_gap[0])}.",
        [f"one pass: {_ms(full_ms)}", f"streams stall {_ms(one_gap[1] - one_gap[0])}; "
                                      f"first token {_ms(one.first_token - arrival)} after arrival"])
    t = arrival
    for index, duration in enumerate(chunk_ms):
        t += duration
        last = index == chunks - 1
        low, high = bounds[index] + 1, bounds[index + 1]
        if not last:
            t += step
            caption = (f"Chunked: chunk {index + 1} (tokens {low:,}–{high:,}) takes {_ms(duration)}, then a decode "
                       f"step gives every stream its token. Later chunks cost more: their tokens also attend to "
                       f"the keys cached by the chunks before them.")
            lines = [f"chunk {index + 1}: {_ms(duration)} + a {_ms(step)} decode step",
                     f"tokens {low:,}–{high:,} of {prompt:,}"]
        else:
            caption = (f"The last chunk (tokens {low:,}–{high:,}, {_ms(duration)}) completes the prompt and its "
                       f"first token follows. The streams never wait more than {_ms(split_gap[1] - split_gap[0])} "
                       f"instead of {_ms(one_gap[1] - one_gap[0])}; the new request pays "
                       f"{chunks - 1} decode steps, a first token after {_ms(split.first_token - arrival)} "
                       f"instead of {_ms(one.first_token - arrival)}. The chunks add up to the one pass: "
                       f"{_ms(full_ms)}.")
            lines = [f"longest stall {_ms(split_gap[1] - split_gap[0])} (was {_ms(one_gap[1] - one_gap[0])})",
                     f"first token {_ms(split.first_token - arrival)} (was {_ms(one.first_token - arrival)})"]
        add(end, end if last else t, 1, caption,
            f"Chunk {index + 1} of {chunks} done; the streams keep receiving tokens between chunks.", lines)

    title = f"Chunked prefill keeps the streams flowing ({model}, {prompt:,}-token prompt)"
    intro = ("One GPU's timeline: blue bars are decode steps (each gives every running stream a token, the ticks), "
             "orange bars prefill work, ★ the new request's first token.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

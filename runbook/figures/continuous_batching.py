"""``{{figure continuous-batching}}``: static batching waits for the longest sequence; continuous refills slots.

Four batch slots and a queue of eight requests that want different numbers of
output tokens. Static batching admits four, runs until the longest of them is
done (finished slots sit idle) and only then admits the next four. Continuous
batching (iteration-level scheduling) gives a slot freed at the end of one step
to the next request in the queue at the following step. Each grid cell is one
decode step of one slot; the step's duration is the ``decode`` family's step
(``step_ms``, at its bandwidth efficiency, as every other step in the chapters)
for a batch of four whose caches hold the given number of tokens each.

Options: ``model``, ``gpu`` (reference stack by default) and ``context``
(tokens in each sequence's cache, default 2,300).
"""

from __future__ import annotations

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import (
    BLUE,
    GREEN,
    INK,
    MUTED,
    ORANGE,
    PAPER,
    PURPLE,
    RULE,
    SKY,
    TINT,
    VERMILLION,
    YELLOW,
    group,
    hatch,
    line,
    rect,
    text,
)

from . import register
from .frames import Frame, gpu_name, int_option, model_name, render_figure, take_options

NAME = "continuous-batching"
DEFAULTS = {"model": None, "gpu": None, "context": "2300"}

SLOTS = 4
# Output tokens each queued request wants, in arrival order.
REQUESTS = (("A", 3), ("B", 8), ("C", 5), ("D", 2), ("E", 6), ("F", 3), ("G", 7), ("H", 4))
COLOURS = {"A": BLUE, "B": ORANGE, "C": GREEN, "D": PURPLE, "E": SKY, "F": VERMILLION, "G": YELLOW, "H": MUTED}

WIDTH, HEIGHT = 560, 420
GRID_X, GRID_RIGHT = 74, 548
ROW_H = 24
PANELS = (50, 214)


def _static() -> dict[tuple[int, int], str]:
    """(slot, step) → request: batches of four, each held until its longest member finishes."""
    cells, start = {}, 0
    for batch in range(0, len(REQUESTS), SLOTS):
        members = REQUESTS[batch:batch + SLOTS]
        for slot, (name, length) in enumerate(members):
            for step in range(start, start + length):
                cells[(slot, step)] = name
        start += max(length for _, length in members)
    return cells


def _continuous() -> dict[tuple[int, int], str]:
    """(slot, step) → request: a slot freed after a step takes the next queued request at the next step."""
    cells, queue = {}, list(REQUESTS)
    free_at = [0] * SLOTS
    while queue:
        slot = min(range(SLOTS), key=lambda s: (free_at[s], s))
        name, length = queue.pop(0)
        for step in range(free_at[slot], free_at[slot] + length):
            cells[(slot, step)] = name
        free_at[slot] += length
    return cells


def _steps(cells: dict[tuple[int, int], str]) -> int:
    return max(step for _, step in cells) + 1


def _finish(cells: dict[tuple[int, int], str]) -> dict[str, tuple[int, int]]:
    """Each request's last cell."""
    last = {}
    for (slot, step), name in cells.items():
        if name not in last or step > last[name][1]:
            last[name] = (slot, step)
    return last


@register(NAME)
def continuous_batching(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    context = int_option(NAME, opts, "context", 0, 10_000_000)
    decode = FAMILIES["decode"].run({**{k: opts[k] for k in ("model", "gpu") if k in opts},
                                     "batch": SLOTS, "cached_tokens": context})
    step_ms = decode.values["step_ms"]
    model, card = model_name(decode.inputs["model"]), gpu_name(decode.inputs["gpu"])

    static, continuous = _static(), _continuous()
    static_steps, continuous_steps = _steps(static), _steps(continuous)
    columns = max(static_steps, continuous_steps)
    col_w = (GRID_RIGHT - GRID_X) / columns
    tokens = sum(length for _, length in REQUESTS)

    def panel(cells, top: float, title: str, now: int, active: bool) -> str:
        steps = _steps(cells)
        finish = _finish(cells)
        grid_top = top + 12
        parts = [text(14, top, title, size=14, weight="700", fill=INK if active else MUTED)]
        # The queue at this moment: requests not yet admitted.
        started = {name for (slot, step), name in cells.items() if step < now}
        waiting = [name for name, _ in REQUESTS if name not in started]
        if now < steps:
            parts.append(text(GRID_RIGHT, top, f"queue: {' '.join(waiting) if waiting else 'empty'}", size=13,
                              anchor="end", fill=MUTED))
        for slot in range(SLOTS):
            y = grid_top + slot * ROW_H
            parts.append(text(14, y + 16, f"slot {slot + 1}", size=13, fill=MUTED))
            for step in range(columns):
                x = GRID_X + step * col_w
                w, h = col_w - 2, ROW_H - 3
                name = cells.get((slot, step))
                if step >= now or step >= steps:
                    parts.append(rect(x, y, w, h, fill=PAPER, stroke="#e3e7ee", stroke_width=0.8, rx=2))
                elif name is None:
                    parts.append(rect(x, y, w, h, fill="#f1f3f6", stroke=RULE, stroke_width=0.8, rx=2))
                    parts.append(hatch(x, y, w, h, colour=MUTED, gap=7))
                else:
                    colour = COLOURS[name]
                    done = finish[name] == (slot, step)
                    parts.append(rect(x, y, w, h, fill=TINT[colour], stroke=colour, stroke_width=1.0, rx=2))
                    parts.append(text(x + w / 2, y + 15, f"{name}✓" if done else name, size=13, anchor="middle",
                                      weight="700" if done else None))
        axis_y = grid_top + SLOTS * ROW_H + 13
        for step in range(columns):
            if step % 2 == 0 or columns <= 12:
                parts.append(text(GRID_X + step * col_w + (col_w - 2) / 2, axis_y, f"{step + 1}", size=12,
                                  anchor="middle", fill=MUTED))
        parts.append(text(14, axis_y, "step", size=12, fill=MUTED))
        if now >= steps:
            end_x = GRID_X + steps * col_w - 1
            parts.append(line(end_x, grid_top - 4, end_x, grid_top + SLOTS * ROW_H + 1, stroke=INK, stroke_width=2.0))
        return group(parts)

    def idle(cells, now: int) -> int:
        return sum(1 for slot in range(SLOTS) for step in range(min(now, _steps(cells)))
                   if (slot, step) not in cells)

    def summary(lines: list[str]) -> str:
        y = HEIGHT - 50
        parts = [rect(14, y, WIDTH - 28, 44, fill="#f4f7fb", stroke=RULE, stroke_width=1.0, rx=6)]
        for index, content in enumerate(lines):
            parts.append(text(26, y + 18 + index * 18, content, size=13 if index else 14,
                              weight="700" if index == 0 else None))
        return group(parts)

    # The stack goes to the right in smaller type: one line of 15 px carrying both ran past the figure's width.
    header = group([text(14, 24, f"{SLOTS} batch slots, {len(REQUESTS)} queued requests", size=15, weight="600"),
                    text(WIDTH - 14, 24, f"{model}, {card}", size=12, anchor="end", fill=MUTED)])
    titles = ("Static batching", "Continuous batching")
    ms = lambda steps: format_number(steps * step_ms, "ms")  # noqa: E731
    step_text = format_number(step_ms, "ms")
    lengths = ", ".join(f"{name} {length}" for name, length in REQUESTS[:SLOTS])
    first_batch = max(length for _, length in REQUESTS[:SLOTS])
    static_idle, continuous_idle = idle(static, columns), idle(continuous, columns)
    use = lambda steps: f"{tokens / (steps * SLOTS) * 100:.0f} %"  # noqa: E731
    frames = []

    def add(now_static: int, now_continuous: int, active: int, caption: str, label: str, lines: list[str]):
        body = [header, panel(static, PANELS[0], titles[0], now_static, active == 0),
                panel(continuous, PANELS[1], titles[1], now_continuous, active == 1), summary(lines)]
        frames.append(Frame("".join(body), caption, label))

    add(3, 0, 0,
        f"Static batching admits four requests at once; they want {lengths} tokens. After 3 steps D and A are "
        f"done, but their slots stay idle (hatched): the batch runs as one until its longest member finishes.",
        "Static batching after 3 steps: two slots finished and idle.",
        [f"step {step_text}: weights + {SLOTS} caches of {context:,} tokens",
         f"idle slot-steps so far: {idle(static, 3)}"])
    add(first_batch, 0, 0,
        f"The first batch lasts {first_batch} steps, as long as B. {idle(static, first_batch)} of its "
        f"{first_batch * SLOTS} slot-steps produced nothing while E, F, G and H waited in the queue.",
        f"Static batching: the first batch held for {first_batch} steps.",
        [f"first batch: {first_batch} steps = {ms(first_batch)}",
         f"idle slot-steps: {idle(static, first_batch)}; the queue waits"])
    add(columns, 0, 0,
        f"Only then does the second batch start, and the pattern repeats: {len(REQUESTS)} requests take "
        f"{static_steps} steps ({ms(static_steps)} at {step_text} a step), with {static_idle} idle slot-steps.",
        f"Static batching complete: {static_steps} steps.",
        [f"static: {static_steps} steps = {ms(static_steps)}", f"{static_idle} idle slot-steps, slots busy "
                                                               f"{use(static_steps)} of the time"])
    add(columns, 3, 1,
        "Continuous batching schedules every step: D finishes after step 2, so E takes its slot at step 3; "
        "A finishes after step 3 and F starts at step 4. No slot waits while the queue holds a request.",
        "Continuous batching after 3 steps: finished slots refilled from the queue.",
        ["continuous: a freed slot is refilled at the next step", f"idle slot-steps so far: {idle(continuous, 3)}"])
    add(columns, columns, 1,
        f"Continuous batching serves the same {len(REQUESTS)} requests in {continuous_steps} steps "
        f"({ms(continuous_steps)}) instead of {static_steps} ({ms(static_steps)}); its {continuous_idle} idle "
        f"slot-steps come only at the end, when the queue is empty. Same GPU, same step time, "
        f"{tokens} tokens either way: the difference is slots left idle.",
        f"Both schedules complete: static {static_steps} steps, continuous {continuous_steps} steps.",
        [f"continuous {continuous_steps} steps = {ms(continuous_steps)}; static {static_steps} = {ms(static_steps)}",
         f"slots busy {use(continuous_steps)} of the time instead of {use(static_steps)}"])

    title = "Static versus continuous batching"
    intro = ("Each cell is one decode step of one batch slot, lettered by the request in it (✓ its last token); "
             "hatched cells are idle slots.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

"""``{{figure request-journey}}``: one streamed request through the twelve stages, with the clock running.

Left, the twelve stages of a request (DESIGN §9), the current ones marked;
right, what each group costs; below, the request's timeline drawn to scale.
The front end and queue (stages 1–5) are the chapter's assumed allowance (the
``prefill`` family's ``queue_ms`` input, marked as assumed); prefill and the
time to first token are the ``prefill`` family's; a decode step is the
``decode`` family's step model at batch 1 (an idle server) at the prompt's
length and at the answer's end; the blocks allocated are the prompt in blocks
of 16 token slots and its cache the ``kv`` family's ``per_user_gib``.

Options: ``model``, ``gpu`` (reference stack by default), ``prompt_tokens``
(default 2,048), ``output_tokens`` (default 252) and ``front_end_ms`` (the
assumed allowance, default 20).
"""

from __future__ import annotations

import math

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, INK, MUTED, ORANGE, TINT, hatch, line, rect, text

from . import register
from .frames import Frame, gpu_name, int_option, model_name, render_figure, take_options

NAME = "request-journey"
DEFAULTS: dict[str, str | None] = {"model": None, "gpu": None, "prompt_tokens": "2048", "output_tokens": "252",
                                   "front_end_ms": "20"}
BLOCK = 16  # token slots per KV block (the ladder's default block size)

STAGES = ("client and API edge", "router", "tokenisation, chat template", "admission and queue",
          "KV blocks, prefix lookup", "prefill", "first token sampled", "decode loop (batch)",
          "sampling, constraints", "incremental detokenisation", "streaming back (SSE)", "completion")
# (first stage, last stage) of each frame, 1-based.
GROUPS = ((1, 5), (6, 6), (7, 7), (8, 11), (12, 12))

WIDTH, HEIGHT = 560, 470
ROW_TOP, ROW_H = 58, 24
TIME_X = 300
LINE_TOP, LINE_LEFT, LINE_RIGHT = 392, 20, 540


def _ms(value: float) -> str:
    return format_number(value, "ms")


@register(NAME)
def request_journey(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    prompt = int_option(NAME, opts, "prompt_tokens", 1, 1_000_000)
    output = int_option(NAME, opts, "output_tokens", 1, 100_000)
    front = int_option(NAME, opts, "front_end_ms", 0, 60_000)
    stack = {key: opts[key] for key in ("model", "gpu") if key in opts}
    try:
        prefill = FAMILIES["prefill"].run({**stack, "prompt_tokens": prompt, "queue_ms": front})
        first_step = FAMILIES["decode"].run({**stack, "cached_tokens": prompt}).values["step_ms"]
        last_step = FAMILIES["decode"].run({**stack, "cached_tokens": prompt + output}).values["step_ms"]
        cache = FAMILIES["kv"].run({key: stack[key] for key in ("model",) if key in stack} | {"context": prompt})
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    prefill_ms, ttft = prefill.values["prefill_ms"], prefill.values["ttft_ms"]
    low_total, high_total = ttft + output * first_step, ttft + output * last_step
    blocks = math.ceil(prompt / BLOCK)
    cache_gib = format_number(cache.values["per_user_gib"], "GiB")
    model, card = model_name(prefill.inputs["model"]), gpu_name(prefill.inputs["gpu"])
    scale = (LINE_RIGHT - LINE_LEFT) / high_total

    costs = {
        1: (f"{_ms(front)} (assumed)", MUTED),
        6: (f"{_ms(prefill_ms)}", BLUE),
        7: (f"TTFT {_ms(ttft)}", BLUE),
        8: (f"{_ms(first_step)} → {_ms(last_step)} a token", ORANGE),
        12: (f"{blocks:,} blocks freed", GREEN),
    }

    def stages(current: int) -> list[str]:
        first, last = GROUPS[current]
        parts = []
        for number, name in enumerate(STAGES, start=1):
            y = ROW_TOP + (number - 1) * ROW_H
            on = first <= number <= last
            done = number < first
            if on:
                parts.append(rect(14, y - 16, 270, ROW_H - 2, fill=TINT[ORANGE if 8 <= number < 12 else BLUE],
                                  rx=4))
            parts.append(text(22, y, f"{number:>2}. {name}", size=13, weight="700" if on else None,
                              fill=INK if on or done else MUTED))
            if number in costs and (on or done):
                words, colour = costs[number]
                parts.append(text(TIME_X, y, words, size=13, fill=DARK.get(colour, colour),
                                  weight="700" if on else None))
        return parts

    def timeline(current: int) -> list[str]:
        parts = [text(LINE_LEFT, LINE_TOP - 10, f"the request's clock, 0 to {_ms(high_total)}", size=13, fill=MUTED)]
        x = LINE_LEFT
        parts += [rect(x, LINE_TOP, front * scale, 26, fill=TINT[MUTED], stroke=MUTED),
                  hatch(x, LINE_TOP, front * scale, 26)]
        x += front * scale
        if current >= 1:
            parts.append(rect(x, LINE_TOP, prefill_ms * scale, 26, fill=TINT[BLUE], stroke=BLUE))
        x += prefill_ms * scale
        if current >= 2:
            parts += [line(x, LINE_TOP - 4, x, LINE_TOP + 34, stroke=INK, stroke_width=2.0),
                      text(x + 4, LINE_TOP + 48, f"first token {_ms(ttft)}", size=12)]
        if current >= 3:
            width = output * (first_step + last_step) / 2 * scale
            parts.append(rect(x, LINE_TOP, width, 26, fill=TINT[ORANGE], stroke=ORANGE))
            every = max(1, output // 20)
            t = x
            for k in range(output):
                step = first_step + (last_step - first_step) * k / max(output - 1, 1)
                t += step * scale
                if (k + 1) % every == 0:
                    parts.append(line(t, LINE_TOP + 4, t, LINE_TOP + 22, stroke=DARK[ORANGE], stroke_width=0.8))
        if current >= 4:
            parts.append(text(LINE_RIGHT, LINE_TOP + 48, f"last token ≈ {_ms(low_total)}–{_ms(high_total)}",
                              size=12, anchor="end", weight="700"))
        return parts

    captions = [
        (f"Stages 1–5 happen before the GPU does any work: the edge, the router, the chat template and tokenisation, "
         f"admission, and the allocation of {blocks:,} KV blocks of {BLOCK} slots for the {prompt:,}-token prompt "
         f"({cache_gib} of cache). The chapter folds them into an assumed {_ms(front)}; measure yours."),
        (f"Stage 6, prefill: one forward pass over all {prompt:,} prompt tokens on the {card} takes "
         f"{_ms(prefill_ms)} at the prefill calculator's MFU, and writes every prompt token's K and V."),
        (f"Stage 7: the first token is sampled from the last position. The time to first token is the allowance plus "
         f"prefill, {_ms(ttft)}."),
        (f"Stages 8–11 run once per token: a decode step ({_ms(first_step)} at {prompt:,} tokens of context on an idle "
         f"card, {_ms(last_step)} by the end), sampling, detokenisation and a server-sent event. Ticks mark every "
         f"{max(1, output // 20)} tokens."),
        (f"Stage 12: after {output:,} tokens the request completes, its blocks go back to the free list "
         f"and it is metered. The answer took about {_ms(low_total)} to {_ms(high_total)}: the decode loop, not "
         f"the first token, is most of the clock."),
    ]
    header = text(14, 26, f"{model} on one {card}: {prompt:,} tokens in, {output:,} out",
                  size=15, weight="600")
    frames = []
    for index, caption in enumerate(captions):
        first, last = GROUPS[index]
        span = f"stage {first}" if first == last else f"stages {first} to {last}"
        frames.append(Frame("".join([header, *stages(index), *timeline(index)]), caption,
                            f"The twelve stages with {span} marked, and the request's timeline filled to there."))
    title = f"A request's journey through the twelve stages ({model})"
    intro = ("Left: the stages, the current ones marked, with what they cost. Below: the request's clock to scale — "
             "the hatched allowance, prefill (blue), the decode loop (orange).")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)


"""``{{figure prefill-decode-cache}}``: prefill writes every prompt row at once, decode appends one per step.

The KV cache of one request drawn as a table with one row per token (its K and
its V, through every layer). Prefill runs the whole prompt through the model in
one forward pass and writes all of the prompt's rows together; each decode step
feeds back the last sampled token and appends exactly one row, while reading
every row before it. Numbers: the ``kv`` family (bytes per token, the cache in
GiB at each length), the ``prefill`` family (TTFT of the prompt) and the
``decode`` family (the bandwidth ceiling at each context, hence the shortest
possible TPOT).

Options: ``model``, ``gpu``, ``kv_dtype`` (reference stack by default),
``prompt_tokens`` (default 2,048) and ``steps`` (decode steps shown, 1 to 6,
default 4).
"""

from __future__ import annotations

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, INK, MUTED, ORANGE, PAPER, RULE, TINT, group, path, rect, text

from . import register
from .frames import Frame, gpu_name, int_option, model_name, render_figure, take_options

NAME = "prefill-decode-cache"
DEFAULTS = {"model": None, "gpu": None, "kv_dtype": None, "prompt_tokens": "2048", "steps": "4"}

WIDTH = 560
ROW_H, ROW_GAP = 19, 3
TABLE_TOP = 78
POS_X, K_X, V_X, CELL_W = 14, 86, 186, 96  # position column, K and V cells
BRACKET_X = 292


def _visible_prompt_rows(prompt: int) -> list[int | None]:
    """Positions drawn for the prompt (``None`` marks the elided middle)."""
    if prompt <= 8:
        return list(range(1, prompt + 1))
    return [1, 2, 3, 4, None, prompt - 2, prompt - 1, prompt]


def _bracket(top: float, bottom: float, colour: str, dashed: bool = False) -> str:
    x = BRACKET_X
    return path(f"M {x} {top} h 8 V {bottom} h -8", stroke=colour, stroke_width=2.5 if not dashed else 1.8,
                stroke_dasharray="5 4" if dashed else None, stroke_linejoin="round")


def _label(x: float, y: float, lines: list[str], colour: str = INK, first_bold: bool = True) -> str:
    parts = []
    for index, content in enumerate(lines):
        parts.append(text(x, y + index * 18, content, size=14 if index == 0 else 13,
                          weight="700" if index == 0 and first_bold else None,
                          fill=DARK.get(colour, colour) if index == 0 else INK))
    return group(parts)


@register(NAME)
def prefill_decode_cache(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    prompt = int_option(NAME, opts, "prompt_tokens", 1, 1_000_000)
    steps = int_option(NAME, opts, "steps", 1, 6)
    model_opts = {key: opts[key] for key in ("model",) if key in opts}
    kv_opts = {**model_opts, **({"kv_dtype": opts["kv_dtype"]} if "kv_dtype" in opts else {})}
    gpu_opts = {"gpu": opts["gpu"]} if "gpu" in opts else {}

    kv = FAMILIES["kv"]
    per_token_result = kv.run({**kv_opts, "context": prompt})
    per_token = per_token_result.values["kv_bytes_per_token"]
    prefill = FAMILIES["prefill"].run({**model_opts, **gpu_opts, "prompt_tokens": prompt})
    ttft = prefill.values["ttft_ms"]
    mfu = prefill.inputs["prefill_mfu"]
    decode = FAMILIES["decode"]
    model = model_name(per_token_result.inputs["model"])
    card = gpu_name(prefill.inputs["gpu"])
    kv_dtype = per_token_result.inputs["kv_dtype"]

    def cache_gib(tokens: int) -> str:
        return format_number(kv.run({**kv_opts, "context": tokens}).values["per_user_gib"], "GiB")

    b_token = format_number(per_token, "B")
    prompt_rows = _visible_prompt_rows(prompt)
    rows: list[tuple[int | None, str]] = [(p, "prompt") for p in prompt_rows]
    rows += [(prompt + k, "decode") for k in range(1, steps + 1)]

    def row_y(index: int) -> float:
        return TABLE_TOP + index * (ROW_H + ROW_GAP)

    height = int(row_y(len(rows))) + 88

    def table(written_prompt: bool, written_steps: int, new: str | None) -> str:
        parts = [text(POS_X, TABLE_TOP - 10, "position", size=13, fill=MUTED),
                 text(K_X + CELL_W / 2, TABLE_TOP - 10, "K", size=14, anchor="middle", weight="700"),
                 text(V_X + CELL_W / 2, TABLE_TOP - 10, "V", size=14, anchor="middle", weight="700")]
        for index, (position, kind) in enumerate(rows):
            y = row_y(index)
            if position is None:
                parts.append(text(K_X + CELL_W, y + 14, f"⋮ {prompt - 7:,} more rows", size=13, anchor="middle",
                                  fill=MUTED))
                continue
            step = position - prompt
            written = written_prompt if kind == "prompt" else step <= written_steps
            is_new = (new == "prompt" and kind == "prompt") or (new == "decode" and step == written_steps)
            colour = BLUE if kind == "prompt" else ORANGE
            parts.append(text(POS_X + 58, y + 14, f"{position:,}", size=13, anchor="end",
                              fill=INK if written else MUTED))
            for x in (K_X, V_X):
                if written:
                    parts.append(rect(x, y, CELL_W, ROW_H, fill=TINT[colour], stroke=colour,
                                      stroke_width=2.5 if is_new else 1.0, rx=3))
                    if kind == "decode":
                        parts.append(text(x + CELL_W / 2, y + 14, f"step {step}", size=13, anchor="middle"))
                else:
                    parts.append(rect(x, y, CELL_W, ROW_H, fill=PAPER, stroke=RULE, stroke_width=1.0,
                                      stroke_dasharray="4 3", rx=3))
        return group(parts)

    def stats(tokens: int, timing_title: str, timing: str) -> str:
        y = height - 62
        cards = [("in the cache", f"{tokens:,} tok" if tokens else "empty",
                  cache_gib(tokens) if tokens else "0 B"),
                 ("per token (K + V)", b_token, f"{kv_dtype}, every layer"),
                 (timing_title, timing[0], timing[1])]
        parts = []
        for index, (title, value, detail) in enumerate(cards):
            x = 14 + index * 182
            parts += [rect(x, y, 170, 54, fill="#f4f7fb", stroke=RULE, stroke_width=1.0, rx=6),
                      text(x + 10, y + 17, title, size=13, fill=MUTED),
                      text(x + 10, y + 35, value, size=15, weight="700"),
                      text(x + 10, y + 50, detail, size=13, fill=MUTED)]
        return group(parts)

    header = text(14, 24, f"{model} · the KV cache of one request ({kv_dtype})", size=15, weight="600")
    prompt_top, prompt_bottom = row_y(0), row_y(len(prompt_rows) - 1) + ROW_H
    frames = []

    # 1. The prompt has arrived; nothing is cached yet.
    body = [header, table(False, 0, None),
            _label(BRACKET_X + 16, (prompt_top + prompt_bottom) / 2 - 8,
                   [f"{prompt:,} prompt tokens", "waiting: no K or V", "computed yet"], MUTED),
            stats(0, "time", ("—", "nothing has run"))]
    frames.append(Frame("".join(body),
                        f"A {prompt:,}-token prompt arrives. Its KV cache is empty: one row per token, each row "
                        f"{b_token} (K and V through every layer), will be filled.",
                        f"An empty KV cache table with a dashed row for each of the {prompt:,} prompt positions."))

    # 2. Prefill: one forward pass writes every prompt row together.
    ttft_text = format_number(ttft, "ms")
    body = [header, table(True, 0, "prompt"), _bracket(prompt_top, prompt_bottom, BLUE),
            _label(BRACKET_X + 16, (prompt_top + prompt_bottom) / 2 - 17,
                   ["prefill: one pass", f"all {prompt:,} rows written", "at once, then the first", "token is sampled"],
                   BLUE),
            stats(prompt, "time to first token", (ttft_text, f"prefill at {mfu * 100:g} % MFU"))]
    frames.append(Frame("".join(body),
                        f"Prefill: one forward pass takes all {prompt:,} prompt positions together and writes every "
                        f"one of their rows at once, {cache_gib(prompt)} of cache; the first output token is sampled "
                        f"from the last position. On the {card} at {mfu * 100:g} % MFU that pass is the time to "
                        f"first token, {ttft_text}.",
                        f"Every prompt row of the cache filled in one pass: {cache_gib(prompt)}."))

    # 3… Decode: one row per step.
    for step in range(1, steps + 1):
        context = prompt + step - 1  # rows already there, read by this step
        ceiling = decode.run({**model_opts, **gpu_opts, **({"kv_dtype": opts["kv_dtype"]} if "kv_dtype" in opts
                                                           else {}), "context": context}).values["ceiling_tok_s"]
        tpot = format_number(1000 / ceiling, "ms")
        new_index = len(prompt_rows) + step - 1
        new_top = row_y(new_index)
        last = step == steps
        body = [header, table(True, step, "decode"),
                _bracket(prompt_top, new_top - ROW_GAP - 1, MUTED, dashed=True),
                _label(BRACKET_X + 16, prompt_top + 10,
                       [f"read: {context:,} rows", "(and every weight)"], MUTED, first_bold=True),
                path(f"M {BRACKET_X} {new_top + ROW_H / 2} h 14", stroke=ORANGE, stroke_width=2.5),
                _label(BRACKET_X + 20, new_top + 14, [f"step {step}: one row", f"position {prompt + step:,}"],
                       ORANGE),
                stats(prompt + step, "time per output token",
                      (f"≥ {tpot}", f"ceiling {format_number(ceiling, 'tok/s')}"))]
        caption = (f"Decode step {step}: the last sampled token goes back in, and one forward pass for that one "
                   f"position appends one row, {b_token}, at position {prompt + step:,}. To do it the step reads "
                   f"every weight and all {context:,} rows before it, so the {card} manages at most "
                   f"{format_number(ceiling, 'tok/s')}: a TPOT of at least {tpot}. The cache now holds "
                   f"{prompt + step:,} tokens, {cache_gib(prompt + step)}.")
        if last:
            caption += (f" Prefill wrote {prompt:,} rows in one pass; decode adds one per pass, so the cache grows by "
                        f"{b_token} a token until the request ends.")
        frames.append(Frame("".join(body), caption,
                            f"Decode step {step} appends one row at position {prompt + step:,} and reads the "
                            f"{context:,} rows above it."))

    title = f"Prefill fills the cache in one pass; decode appends a row per step ({model})"
    intro = (f"One request's KV cache, one row per token. Prompt rows in blue, generated rows in orange; "
             f"each row is {b_token}.")
    return render_figure(NAME, title, intro, frames, WIDTH, height)

"""``{{figure kv-growth}}``: one user's KV cache grows linearly with the context; the users a card holds fall.

A bar per context limit, drawn to scale against the card's KV budget (the
``ladder`` family's ``kv_budget_gib``, the dashed line): the bar is one user's
cache at that limit (``kv`` family, ``per_user_gib``) and its label the
worst-case users the budget holds (``ladder`` family, ``users_worst_case``).
One frame per limit; the bytes per token stay the same in every frame, only
the token count grows. Every number is the engine's.

Options: ``model``, ``gpu``, ``weights_dtype``, ``kv_dtype`` (reference stack by
default) and ``contexts`` (2 to 6 limits in tokens, comma-separated, rising;
default ``1024,8192,32768,131072``).
"""

from __future__ import annotations

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, INK, MUTED, ORANGE, TINT, VERMILLION, group, line, rect, text

from . import register
from .frames import Frame, gpu_name, model_name, render_figure, take_options

NAME = "kv-growth"
KEYS = ("model", "gpu", "weights_dtype", "kv_dtype")
DEFAULTS: dict[str, str | None] = {**{key: None for key in KEYS}, "contexts": "1024,8192,32768,131072"}

WIDTH, HEIGHT = 560, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 540, 70, 350


def _contexts(raw: str) -> list[int]:
    try:
        values = [int(part.strip().replace("_", "")) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"The {NAME} figure's contexts must be whole numbers of tokens, not '{raw}'.") from None
    if not 2 <= len(values) <= 6 or values != sorted(set(values)) or values[0] < 1:
        raise ValueError(f"The {NAME} figure takes from 2 to 6 rising context limits separated by commas, "
                         f"not '{raw}'.")
    return values


@register(NAME)
def kv_growth(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring). Raises ``ValueError`` for an option the engine refuses."""
    opts = take_options(NAME, options, DEFAULTS)
    contexts = _contexts(opts["contexts"])
    common = {key: opts[key] for key in KEYS if key in opts}
    kv_common = {key: common[key] for key in ("model", "kv_dtype") if key in common}
    try:
        rows = []
        for context in contexts:
            ladder = FAMILIES["ladder"].run({**common, "context": context})
            per_user = FAMILIES["kv"].run({**kv_common, "context": context}).values["per_user_gib"]
            rows.append((context, per_user, int(ladder.values["users_worst_case"])))
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    budget = ladder.values["kv_budget_gib"]
    per_token = format_number(ladder.values["kv_bytes_per_token"], "B")
    model, card = model_name(ladder.inputs["model"]), gpu_name(ladder.inputs["gpu"])
    top = max(budget, max(per_user for _, per_user, _ in rows))
    scale = (BOTTOM - TOP) / top
    slot = (RIGHT - LEFT) / len(rows)
    bar_w = min(70.0, slot * 0.55)

    def axes() -> str:
        y_budget = BOTTOM - budget * scale
        return group([
            text(14, 26, f"{model} on one {card}: one user's KV cache", size=15, weight="600"),
            text(14, 46, f"{per_token} per token at every length; GiB drawn to scale", size=13, fill=MUTED),
            line(LEFT, BOTTOM, RIGHT, BOTTOM, stroke=INK, stroke_width=1.2),
            line(LEFT, y_budget, RIGHT, y_budget, stroke=BLUE, stroke_width=1.6, stroke_dasharray="6 4"),
            text(RIGHT, y_budget - 6, f"KV budget {format_number(budget, 'GiB')}", size=13, anchor="end",
                 fill=DARK[BLUE], halo=True),
            text(LEFT - 8, BOTTOM + 4, "0", size=12, anchor="end", fill=MUTED),
        ])

    def bar(index: int, current: bool) -> str:
        context, per_user, users = rows[index]
        x = LEFT + slot * index + (slot - bar_w) / 2
        height = per_user * scale
        over = per_user > budget
        colour = VERMILLION if over else ORANGE
        centre = x + bar_w / 2
        parts = [rect(x, BOTTOM - height, bar_w, max(height, 1.5), fill=TINT[colour], stroke=colour,
                      stroke_width=2.5 if current else 1.0),
                 text(centre, BOTTOM + 20, f"{context:,} tok", size=13, anchor="middle"),
                 text(centre, BOTTOM - height - 26, format_number(per_user, "GiB"), size=13, anchor="middle",
                      weight="700", halo=True),
                 text(centre, BOTTOM - height - 9, "does not fit" if over or users == 0 else f"{users:,} users",
                      size=13, anchor="middle", fill=DARK[colour], halo=True)]
        return group(parts)

    frames = []
    for index, (context, per_user, users) in enumerate(rows):
        body = [axes(), *[bar(k, k == index) for k in range(index + 1)]]
        held = (f"the {format_number(budget, 'GiB')} budget holds {users:,} such users" if users
                else f"not one such user fits in the {format_number(budget, 'GiB')} budget")
        caption = (f"With a limit of {context:,} tokens one user's cache is {format_number(per_user, 'GiB')}; "
                   f"{held}.")
        if index:
            ratio, grown = context / rows[index - 1][0], per_user / rows[index - 1][1]
            caption += (f" {ratio:g} times the tokens, {grown:.3g} times the bytes"
                        + (": the cache grows linearly with the context, and the user count falls with it."
                           if abs(grown - ratio) < 1e-9 * ratio else
                           ": this model's cache grows more slowly than its context (a window caps some layers)."))
        frames.append(Frame("".join(body), caption,
                            f"Bars of one user's KV cache for {index + 1} context limits, the last "
                            f"{format_number(per_user, 'GiB')} at {context:,} tokens against a budget line of "
                            f"{format_number(budget, 'GiB')}."))
    title = f"The KV cache grows with every token ({model})"
    intro = ("One bar per context limit: the cache of one user at that limit, against the card's KV budget (dashed). "
             "The label under each number is the worst-case users the budget holds.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

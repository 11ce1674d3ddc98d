"""``{{figure tensor-split}}``: one model's weights split across 1, 2, 4, 8 cards, and the cache room each split leaves.

A frame per tensor-parallel degree. Each card is a column drawn to scale in
GiB: its share of the weights (the ``ladder`` family's ``weights_gib`` ÷ the
degree), the activation reserve, its share of the KV budget and the unclaimed
top (utilisation). A degree whose cards cannot hold their share shows the
overflow above the card. The captions give the replica's worst-case and paged
users (``ladder`` with ``gpus`` = the degree) and the query and K/V heads each
card computes (the ``kv`` family's heads; past the K/V head count, K/V heads
are replicated, ``kv_replication``).

Options: ``model`` (default Llama-3.1-70B), ``gpu``, ``weights_dtype``,
``kv_dtype``, ``context`` and ``degrees`` (2 to 5 degrees, comma-separated,
rising; default ``1,2,4,8``).
"""

from __future__ import annotations

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, INK, MUTED, ORANGE, PAPER, TINT, VERMILLION, hatch, line, rect, text

from . import register
from .frames import Frame, gpu_name, model_name, render_figure, take_options

NAME = "tensor-split"
KEYS = ("model", "gpu", "weights_dtype", "kv_dtype", "context")
DEFAULTS: dict[str, str | None] = {**{key: None for key in KEYS}, "model": "llama-3.1-70b", "degrees": "1,2,4,8"}

WIDTH, HEIGHT = 560, 450
LEFT, RIGHT, TOP, BOTTOM = 20, 540, 72, 340


def _degrees(raw: str) -> list[int]:
    try:
        values = [int(part.strip()) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"The {NAME} figure's degrees must be whole numbers of cards, not '{raw}'.") from None
    if not 2 <= len(values) <= 5 or values != sorted(set(values)) or values[0] < 1 or values[-1] > 16:
        raise ValueError(f"The {NAME} figure takes from 2 to 5 rising degrees from 1 to 16, not '{raw}'.")
    return values


def _gib(value: float) -> str:
    return format_number(value, "GiB")


@register(NAME)
def tensor_split(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring). Raises ``ValueError`` with the engine's sentence for an
    input it refuses."""
    opts = take_options(NAME, options, DEFAULTS)
    degrees = _degrees(opts["degrees"])
    common = {key: opts[key] for key in KEYS if key in opts}
    try:
        ladders = [FAMILIES["ladder"].run({**common, "gpus": n}) for n in degrees]
        kvs = [FAMILIES["kv"].run({key: common[key] for key in ("model", "kv_dtype", "context") if key in common}
                                  | {"gpus": n}) for n in degrees]
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    first = ladders[0]
    per_card = first.values["card_gib"]
    reserve = first.inputs["reserve_gib"]
    share = first.inputs["utilization"]
    weights = first.values["weights_gib"]
    model, card = model_name(first.inputs["model"]), gpu_name(first.inputs["gpu"])
    heads, kv_heads = int(kvs[0].given["heads"]), int(kvs[0].given["kv_heads"])
    top_gib = max(per_card, weights / degrees[0] + reserve)
    scale = (BOTTOM - TOP) / top_gib

    def y_of(gib: float) -> float:
        return BOTTOM - gib * scale

    def cards(index: int) -> list[str]:
        n, ladder = degrees[index], ladders[index]
        gap = 8
        width = min(56.0, (RIGHT - LEFT - gap * (n - 1)) / n)
        w_each, budget_each = weights / n, ladder.values["kv_budget_gib"] / n
        usable_each = per_card * share
        parts = []
        for k in range(n):
            x = LEFT + k * (width + gap)
            parts += [rect(x, y_of(per_card), width, per_card * scale, fill=PAPER, stroke=INK, stroke_width=1.4),
                      rect(x, y_of(per_card), width, (per_card - usable_each) * scale, fill=TINT[MUTED]),
                      hatch(x, y_of(per_card), width, (per_card - usable_each) * scale)]
            fits = w_each + reserve <= usable_each
            parts.append(rect(x, y_of(w_each), width, w_each * scale, fill=TINT[BLUE] if fits else TINT[VERMILLION],
                              stroke=BLUE if fits else VERMILLION, stroke_width=1.5))
            if not fits:
                parts += [hatch(x, y_of(w_each), width, (w_each - usable_each) * scale, colour=VERMILLION, gap=5),
                          line(x - 4, y_of(usable_each), x + width + 4, y_of(usable_each), stroke=VERMILLION,
                               stroke_width=2.0),
                          rect(x, y_of(per_card), width, per_card * scale, stroke=INK, stroke_width=1.4),
                          text(x + width + 8, y_of(usable_each) + 4, "usable", size=12, fill=DARK[VERMILLION])]
                continue
            parts += [rect(x, y_of(w_each + reserve), width, reserve * scale, fill=TINT[MUTED], stroke=MUTED),
                      rect(x, y_of(usable_each), width, budget_each * scale, fill=TINT[ORANGE], stroke=ORANGE,
                           stroke_width=1.5)]
        return parts

    def legend(index: int) -> list[str]:
        n, ladder, kv = degrees[index], ladders[index], kvs[index]
        x = LEFT + 300 if n <= 4 else LEFT
        y = 110 if n <= 4 else BOTTOM + 26
        fits = bool(ladder.extra["fits"])
        rows = [(BLUE, f"weights per card: {_gib(weights / n)}")]
        if fits:
            rows += [(MUTED, f"reserve per card: {_gib(reserve)}"),
                     (ORANGE, f"KV per card: {_gib(ladder.values['kv_budget_gib'] / n)}"),
                     (GREEN, f"replica: {int(ladder.values['users_worst_case']):,} users worst case, "
                             f"{int(ladder.values['users_paged']):,} paged")]
        else:
            rows += [(VERMILLION, f"short by {_gib(ladder.extra['shortfall_gib'])}: does not load")]
        per_q = heads / n
        per_kv = max(kv_heads / n, 1)
        rows.append((INK, f"heads per card: {per_q:g} query, {per_kv:g} K/V"
                          + (f" (K/V copied ×{kv.values['kv_replication']:g})" if kv.values["kv_replication"] > 1
                             else "")))
        parts = []
        for k, (colour, words) in enumerate(rows):
            parts.append(text(x, y + k * 20, words, size=13, fill=DARK.get(colour, colour),
                              weight="700" if colour == GREEN else None))
        return parts

    frames = []
    for index, n in enumerate(degrees):
        ladder = ladders[index]
        header = [text(14, 26, f"{model} on {n} × {card}, tensor parallel {n}", size=15, weight="600"),
                  text(14, 46, f"each card drawn to scale: {_gib(per_card)}; {ladder.inputs['weights_dtype']} "
                               f"weights, {ladder.inputs['context']:,}-token limit", size=13, fill=MUTED)]
        body = header + cards(index) + legend(index)
        if ladder.extra["fits"]:
            caption = (f"Tensor parallel {n}: every weight matrix is cut {n} ways, so each card holds "
                       f"{_gib(weights / n)} of weights and the replica's KV budget is "
                       f"{_gib(ladder.values['kv_budget_gib'])}: {int(ladder.values['users_worst_case']):,} users "
                       f"worst case, {int(ladder.values['users_paged']):,} paged.")
            if index and ladders[index - 1].extra["fits"]:
                before = int(ladders[index - 1].values["users_worst_case"])
                ratio = n / degrees[index - 1]
                times = "Twice" if ratio == 2 else f"{ratio:g} times"
                copies = kvs[index].values["kv_replication"]
                caption += (f" {times} the cards of the split before, {before:,} → "
                            f"{int(ladder.values['users_worst_case']):,} users"
                            + (": the weights are paid once, so every card added is nearly all cache." if copies <= 1
                               else f": past {kv_heads} cards each K/V head is copied ×{copies:g}, so every "
                                    f"user's cache costs {copies:g} times as much."))
        else:
            caption = (f"On {n} card{'s' if n > 1 else ''} each would need {_gib(weights / n)} of weights against "
                       f"{_gib(per_card * share)} usable: short by {_gib(ladder.extra['shortfall_gib'])}, it does "
                       f"not load. Fit first, then split.")
        frames.append(Frame("".join(body), caption,
                            f"{n} card columns, each with {_gib(weights / n)} of weights"
                            + ("" if ladder.extra["fits"] else " overflowing the card") + "."))
    title = f"Splitting {model} across cards: weights once, cache on every card"
    intro = ("Each column is one card to scale: weights (blue), reserve (grey), KV cache (orange), unclaimed "
             "(hatched). One frame per tensor-parallel degree.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

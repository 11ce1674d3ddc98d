"""``{{figure capacity-ladder}}``: one card's memory, taken apart step by step until it is a user count.

The card is one column drawn to scale in GiB. Each step of the ``ladder`` family
takes its share: the utilisation fraction leaves the top unclaimed, the weights
and the activation reserve come off the bottom, and what is left is the KV
budget, cut first into worst-case slots (every user at the context limit) and
then into the paged slots of an average conversation. Every number is the
``ladder`` family's; none is typed.

Options: the ladder's inputs ``model``, ``gpu``, ``weights_dtype``, ``kv_dtype``,
``context``, ``utilization``, ``reserve_gib``, ``avg_tokens`` (reference stack by
default).
"""

from __future__ import annotations

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, INK, MUTED, ORANGE, PAPER, TINT, group, hatch, line, rect, text

from . import register
from .frames import Frame, gpu_name, model_name, render_figure, take_options

NAME = "capacity-ladder"
KEYS = ("model", "gpu", "weights_dtype", "kv_dtype", "context", "utilization", "reserve_gib", "avg_tokens")
DEFAULTS: dict[str, str | None] = {key: None for key in KEYS}

WIDTH, HEIGHT = 560, 440
TOP, BOTTOM = 56, 392       # the card's column, drawn to scale
COL_X, COL_W = 40, 120      # worst-case column
PAGED_X = 176               # the paged column beside it (last step)
LABEL_X = 318
MAX_SLOT_LINES = 120        # beyond this many users the slots read as a fine texture, not lines


def _gib(value: float) -> str:
    return format_number(value, "GiB")


@register(NAME)
def capacity_ladder(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring). Raises ``ValueError`` with the engine's sentence
    for an input the ladder refuses."""
    opts = take_options(NAME, options, DEFAULTS)
    try:
        result = FAMILIES["ladder"].run(opts)
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    v, inputs = result.values, result.inputs
    card, usable, weights = v["card_gib"], v["usable_gib"], v["weights_gib"]
    reserve, budget, per_user = inputs["reserve_gib"], v["kv_budget_gib"], v["per_user_gib"]
    worst, paged = int(v["users_worst_case"]), int(v["users_paged"])
    paged_user = result.extra["paged_user_gib"]
    model, card_name = model_name(inputs["model"]), gpu_name(inputs["gpu"])
    context, average = inputs["context"], inputs["avg_tokens"]
    share = inputs["utilization"]

    scale = (BOTTOM - TOP) / card

    def y_of(gib: float) -> float:
        """The height ``gib`` above the column's floor, as an SVG y."""
        return BOTTOM - gib * scale

    def slots(x: float, users: int, size: float, colour: str) -> list[str]:
        parts = []
        if users and users <= MAX_SLOT_LINES:
            for k in range(1, users + 1):
                y = y_of(weights + reserve + k * size)
                parts.append(line(x, y, x + COL_W, y, stroke=DARK[colour], stroke_width=0.8))
        return parts

    def column(stage: int) -> str:
        """The column after ``stage`` steps (0 = the card only)."""
        parts = [rect(COL_X, TOP, COL_W, BOTTOM - TOP, fill=PAPER, stroke=INK, stroke_width=1.5)]
        if stage >= 1:
            parts += [rect(COL_X, TOP, COL_W, y_of(usable) - TOP, fill=TINT[MUTED]),
                      hatch(COL_X, TOP, COL_W, y_of(usable) - TOP)]
        if stage >= 2:
            parts.append(rect(COL_X, y_of(weights), COL_W, BOTTOM - y_of(weights), fill=TINT[BLUE], stroke=BLUE))
        if stage >= 3:
            parts += [rect(COL_X, y_of(weights + reserve), COL_W, reserve * scale, fill=TINT[MUTED], stroke=MUTED),
                      hatch(COL_X, y_of(weights + reserve), COL_W, reserve * scale, gap=4)]
        if stage >= 4:
            parts.append(rect(COL_X, y_of(usable), COL_W, budget * scale, fill=TINT[ORANGE], stroke=ORANGE,
                              stroke_width=2.0 if stage == 4 else 1.0))
        if stage >= 5:
            parts += slots(COL_X, worst, per_user, ORANGE)
        if stage >= 6:
            parts += [rect(PAGED_X, TOP, COL_W, BOTTOM - TOP, fill=PAPER, stroke=INK, stroke_width=1.5),
                      rect(PAGED_X, TOP, COL_W, y_of(usable) - TOP, fill=TINT[MUTED]),
                      hatch(PAGED_X, TOP, COL_W, y_of(usable) - TOP),
                      rect(PAGED_X, y_of(weights), COL_W, BOTTOM - y_of(weights), fill=TINT[BLUE], stroke=BLUE),
                      rect(PAGED_X, y_of(weights + reserve), COL_W, reserve * scale, fill=TINT[MUTED], stroke=MUTED),
                      rect(PAGED_X, y_of(usable), COL_W, budget * scale, fill=TINT[GREEN], stroke=GREEN,
                           stroke_width=2.0)]
            parts += slots(PAGED_X, paged, paged_user, GREEN)
            parts.append(text(PAGED_X + COL_W / 2, BOTTOM + 20, "paged", size=13, anchor="middle", fill=MUTED))
            parts.append(text(COL_X + COL_W / 2, BOTTOM + 20, "worst case", size=13, anchor="middle", fill=MUTED))
        else:
            parts.append(text(COL_X + COL_W / 2, BOTTOM + 20, card_name, size=13, anchor="middle", fill=MUTED))
        return group(parts)

    def labels(rows: list[tuple[float, str, str, str]]) -> str:
        """Right-hand labels: (y, colour, bold line, plain line)."""
        parts = []
        for y, colour, head, detail in rows:
            parts.append(text(LABEL_X, y, head, size=14, weight="700", fill=DARK.get(colour, colour)))
            if detail:
                parts.append(text(LABEL_X, y + 17, detail, size=13))
        return group(parts)

    header = text(14, 26, f"{model} on one {card_name}, in GiB", size=15, weight="600")
    unclaimed = (f"{(1 - share) * 100:g} % unclaimed", f"usable {_gib(usable)}")
    rows = {
        "card": (TOP + 14, INK, f"card: {_gib(card)}", "as the driver reports it"),
        "usable": (TOP + 14, MUTED, *unclaimed),
        "weights": ((y_of(weights) + BOTTOM) / 2, BLUE, f"weights: {_gib(weights)}", f"{inputs['weights_dtype']}"),
        "reserve": (y_of(weights + reserve) - 14, MUTED, f"reserve: {_gib(reserve)}", "activations, graphs"),
        "budget": ((y_of(usable) + y_of(weights + reserve)) / 2 - 8, ORANGE, f"KV budget: {_gib(budget)}",
                   f"{_gib(per_user)} per user at {context:,} tok"),
        "worst": ((y_of(usable) + y_of(weights + reserve)) / 2 - 8, ORANGE, f"worst case: {worst:,} users",
                  f"{_gib(budget)} ÷ {_gib(per_user)}"),
        "paged": ((y_of(usable) + y_of(weights + reserve)) / 2 + 40, GREEN, f"paged: {paged:,} users",
                  f"{_gib(paged_user)} per {average:,}-tok talk"),
    }
    steps: list[tuple[int, list[str], str, str]] = [
        (0, ["card"], f"Start from the card's memory as the driver reports it: {_gib(card)} on the {card_name}, "
                      f"not the marketed figure.", f"One column, {_gib(card)}, the whole card."),
        (1, ["usable"], f"The engine claims {share * 100:g} % of it, {_gib(usable)}; the hatched rest is left to the "
                        f"CUDA context and the allocator.", f"The top {(1 - share) * 100:g} % hatched: unclaimed."),
        (2, ["usable", "weights"], f"The weights take {_gib(weights)} off the bottom ({inputs['weights_dtype']}, "
                                   f"parameters × bits ÷ 8).", f"Weights, {_gib(weights)}, at the bottom."),
        (3, ["usable", "weights", "reserve"], f"The activation reserve takes {_gib(reserve)} more: workspace the "
                                              f"engine needs before the first token of cache.",
         f"An activation reserve of {_gib(reserve)} above the weights."),
        (4, ["usable", "weights", "reserve", "budget"],
         f"What is left is the KV budget, {_gib(budget)}. One user at the {context:,}-token limit needs "
         f"{_gib(per_user)} of it.", f"The KV budget, {_gib(budget)}, between the reserve and the hatched top."),
        (5, ["usable", "weights", "reserve", "worst"],
         f"Worst case, every user at the limit: ⌊{_gib(budget)} ÷ {_gib(per_user)}⌋ = {worst:,} users, one slot "
         f"each.", f"The budget cut into {worst:,} slots of {_gib(per_user)}."),
        (6, ["usable", "weights", "reserve", "worst", "paged"],
         f"Paged, each user holds only its average conversation of {average:,} tokens in whole blocks, "
         f"{_gib(paged_user)}: {paged:,} users from the same budget. Both counts are the ladder's; the truth at "
         f"peak lies between them.",
         f"Two columns: {worst:,} worst-case slots beside {paged:,} paged slots of the same budget."),
    ]
    frames = []
    for stage, shown, caption, label in steps:
        body = [header, column(stage), labels([rows[key] for key in shown])]
        frames.append(Frame("".join(body), caption, label))
    title = f"From a card to a user count ({model}, {card_name})"
    intro = ("The card's memory drawn to scale; each step of the capacity ladder takes its share, and the KV budget "
             "left over is divided by what one user holds.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

"""``{{figure rope-bands}}``: RoPE's frequency bands as wavelengths, the ones training never saw turn, and scaling.

One dot per band of one attention head, its wavelength (tokens per full turn)
on a logarithmic axis. The ``rope`` family gives the band count, the shortest
wavelength (band 0, 2π tokens) and the longest (the last band); the bands'
wavelengths grow geometrically between them (θᵢ = rope_theta^(−2i/d)), so on a
log axis they lie on the straight line joining those two engine values. The
family's ``bands_longer_than_context`` is the count of bands whose wavelength
exceeds the original training context (hollow dots above the dashed line), and
``scaled_longest_wavelength_tok`` the longest band after position interpolation
by the scaling factor. A last frame sets a second model beside the first.

Options: ``model`` (default the reference model), ``compare`` (a second model,
default Llama-2-7B; ``none`` for no comparison frame).
"""

from __future__ import annotations

import math

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GRID, INK, MUTED, ORANGE, PAPER, VERMILLION, circle, line, text

from . import register
from .frames import Frame, model_name, render_figure, take_options

NAME = "rope-bands"
DEFAULTS: dict[str, str | None] = {"model": None, "compare": "llama-2-7b"}

WIDTH, HEIGHT = 560, 420
LEFT, RIGHT, TOP, BOTTOM = 78, 540, 62, 360
DECADES = 8  # the axis runs from 1 to 10^8 tokens


def _y(tokens: float) -> float:
    return BOTTOM - math.log10(tokens) / DECADES * (BOTTOM - TOP)


def _decade(power: int) -> str:
    return ("1", "10", "100", "1k", "10k", "100k", "1M", "10M", "100M")[power]


def _bands(result) -> tuple[int, list[float]]:
    """The band count and each band's wavelength in tokens: geometric between the engine's shortest and longest."""
    bands = int(result.values["bands"])
    short, long = result.values["shortest_wavelength_tok"], result.values["longest_wavelength_tok"]
    if bands == 1:
        return 1, [short]
    return bands, [short * (long / short) ** (i / (bands - 1)) for i in range(bands)]


@register(NAME)
def rope_bands(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    rope = FAMILIES["rope"]
    try:
        main = rope.run({"model": opts["model"]} if "model" in opts else {})
        other = None if opts["compare"] == "none" else rope.run({"model": opts["compare"]})
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    count, waves = _bands(main)
    context = int(main.inputs["original_context"])
    unseen = int(main.values["bands_longer_than_context"])
    factor = main.inputs["scaling_factor"]
    model = model_name(main.inputs["model"])
    longest = main.values["longest_wavelength_tok"]
    scaled = main.values["scaled_longest_wavelength_tok"]

    def x_of(index: int, bands: int) -> float:
        return LEFT + (index / max(bands - 1, 1)) * (RIGHT - LEFT)

    def axes() -> list[str]:
        parts = [text(14, 26, f"{model}: wavelength of each RoPE band (tokens per turn)", size=15, weight="600")]
        for power in range(DECADES + 1):
            y = _y(10 ** power)
            parts += [line(LEFT, y, RIGHT, y, stroke=GRID, stroke_width=1.0),
                      text(LEFT - 8, y + 4, _decade(power), size=12, anchor="end", fill=MUTED)]
        parts += [line(LEFT, BOTTOM, RIGHT, BOTTOM, stroke=INK, stroke_width=1.2),
                  text(LEFT, BOTTOM + 20, "band 0", size=13, fill=MUTED),
                  text(RIGHT, BOTTOM + 20, f"band {count - 1}", size=13, anchor="end", fill=MUTED),
                  text((LEFT + RIGHT) / 2, BOTTOM + 20, f"{count} bands per head", size=13, anchor="middle")]
        return parts

    def dots(values: list[float], colour: str, hollow_above: float | None = None, upto: int | None = None,
             radius: float = 3.5) -> list[str]:
        parts = []
        for index, wave in enumerate(values[:upto]):
            hollow = hollow_above is not None and wave > hollow_above
            parts.append(circle(x_of(index, len(values)), _y(wave), radius, fill=PAPER if hollow else colour,
                                stroke=colour, stroke_width=1.5))
        return parts

    def context_line(tokens: int, colour: str, label: str, below: bool = False) -> list[str]:
        y = _y(tokens)
        return [line(LEFT, y, RIGHT, y, stroke=colour, stroke_width=1.6, stroke_dasharray="6 4"),
                text(LEFT + 6, y + 17 if below else y - 6, label, size=13, fill=DARK.get(colour, colour), halo=True)]

    short = format_number(main.values["shortest_wavelength_tok"], "tok")
    frames = [
        Frame("".join(axes() + dots(waves, BLUE, upto=1)
                      + [text(x_of(0, count) + 10, _y(waves[0]) + 4, f"band 0: {short} per turn", size=13,
                              halo=True)]),
              f"Band 0 turns one radian per token: a full turn every {short}. It tells neighbouring positions apart "
              f"and repeats itself constantly.",
              f"One dot, band 0, at a wavelength of {short}."),
        Frame("".join(axes() + dots(waves, BLUE)
                      + [text(RIGHT - 4, _y(longest) - 10, f"{format_number(longest, 'tok')}", size=13, anchor="end",
                              halo=True)]),
              f"All {count} bands: each turns more slowly than the last by the same ratio, so on this log axis they "
              f"lie on a straight line up to the last band, {format_number(longest, 'tok')} per turn.",
              f"{count} dots rising in a straight line on the log axis from {short} to "
              f"{format_number(longest, 'tok')}."),
        Frame("".join(axes() + context_line(context, VERMILLION, f"trained on {context:,} tokens")
                      + dots(waves, BLUE, hollow_above=context)),
              f"Training ran to {context:,} tokens. {unseen} of the {count} bands (hollow) never complete a turn "
              f"inside it: the model saw only part of their cycle, and those are the bands a longer context "
              f"pushes into angles it never saw.",
              f"The dots with a dashed line at {context:,} tokens; the {unseen} dots above it hollow."),
        Frame("".join(axes() + context_line(context, VERMILLION, f"trained on {context:,} tokens")
                      + dots(waves, MUTED, radius=2.5)
                      + dots([w * factor for w in waves], ORANGE)
                      + [text(RIGHT - 4, _y(scaled) - 10, format_number(scaled, "tok"), size=13, anchor="end",
                              halo=True)]),
              f"Position interpolation by s = {factor:g} divides every position by {factor:g}, so every wavelength "
              f"grows {factor:g}-fold (orange; grey is before): the longest becomes {format_number(scaled, 'tok')}. "
              f"The fast bands lose resolution too, which is why newer schemes stretch only the slow ones.",
              f"The dots shifted up by a factor of {factor:g}, the old ones in grey beneath."),
    ]
    if other is not None:
        o_count, o_waves = _bands(other)
        o_context = int(other.inputs["original_context"])
        o_unseen = int(other.values["bands_longer_than_context"])
        o_model = model_name(other.inputs["model"])
        o_longest = other.values["longest_wavelength_tok"]
        body = (axes() + context_line(context, VERMILLION, f"{model}: {context:,}")
                + context_line(o_context, ORANGE, f"{o_model}: {o_context:,}", below=True)
                + dots(waves, BLUE, hollow_above=context) + dots(o_waves, ORANGE, hollow_above=o_context, radius=3)
                + [text(RIGHT - 4, _y(o_longest) + 36, f"{o_model}: {format_number(o_longest, 'tok')}", size=13,
                        anchor="end", fill=DARK[ORANGE], halo=True)])
        frames.append(Frame(
            "".join(body),
            f"{o_model} beside it: {o_count} bands, the slowest {format_number(o_longest, 'tok')} per turn, "
            f"trained on {o_context:,} tokens, {o_unseen} bands unseen; {model}'s far larger rope_theta makes its "
            f"slowest bands turn far more slowly, room for long documents before any scaling.",
            f"Two lines of dots: {model} in blue and {o_model} in orange, each with its training context dashed."))
    title = f"RoPE's frequency bands and the training context ({model})"
    intro = ("One dot per band of an attention head, its wavelength on a log axis; hollow dots never complete a turn "
             "within the training context.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

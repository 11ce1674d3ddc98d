"""``{{figure number-formats}}``: the bit layouts of the formats serving uses, and what each layout buys.

One row per format, added a frame at a time: the sign bit, the exponent bits
and the stored mantissa bits as boxes (marked S, E and M as well as coloured),
with the largest normal value and machine epsilon beside them. Every count and
value is the ``formats`` family's (``exponent_bits``, ``mantissa_bits``,
``max_normal``, ``epsilon``; for a block-scaled format ``block_size``,
``scale_bits`` and ``effective_bits``). More exponent bits buy range, more
mantissa bits buy precision; a byte saved gives up one or the other.

Options: ``formats`` (2 to 7 of the ``formats`` family's float formats, comma
separated; default ``fp32,bf16,fp16,fp8_e4m3,fp8_e5m2,nvfp4``).
"""

from __future__ import annotations

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, INK, MUTED, ORANGE, TINT, VERMILLION, rect, text

from . import register
from .frames import Frame, render_figure, take_options

NAME = "number-formats"
DEFAULTS: dict[str, str | None] = {"formats": "fp32,bf16,fp16,fp8_e4m3,fp8_e5m2,nvfp4"}

WIDTH = 560
LEFT, BITS_X, BIT_W, BIT_H = 14, 104, 13, 20
TOP, ROW_H = 66, 58
FIELDS = (("S", "sign", VERMILLION), ("E", "exponent", BLUE), ("M", "mantissa", ORANGE))


def _value(value: float) -> str:
    """A format's largest value or epsilon as the chapter quotes it (3.39e38, 65,504, 0.0078125)."""
    if value >= 1e6 or 0 < value < 1e-4:
        return f"{value:.3g}".replace("e+", "e")
    return format_number(value, "1")


@register(NAME)
def number_formats(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    names = [part.strip() for part in opts["formats"].split(",") if part.strip()]
    if not 2 <= len(names) <= 7:
        raise ValueError(f"The {NAME} figure takes from 2 to 7 formats separated by commas, not '{opts['formats']}'.")
    try:
        runs = [FAMILIES["formats"].run({"format": name}) for name in names]
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    for name, run in zip(names, runs):
        if not run.values["exponent_bits"]:
            raise ValueError(f"The {NAME} figure draws floating-point formats; '{name}' is an integer format.")
    height = TOP + ROW_H * len(runs) + 30

    def row(index: int, current: bool) -> list[str]:
        run = runs[index]
        v = run.values
        y = TOP + index * ROW_H
        counts = (1, int(v["exponent_bits"]), int(v["mantissa_bits"]))
        label = run.extra["format_name"].split(" (")[0]
        parts = [text(LEFT, y + 15, label, size=14, weight="700" if current else "600"),
                 text(LEFT, y + 32, f"{int(v['total_bits'])} bits", size=12, fill=MUTED)]
        x = BITS_X
        for (letter, _, colour), count in zip(FIELDS, counts):
            for _ in range(count):
                parts += [rect(x, y + 2, BIT_W - 1, BIT_H, fill=TINT[colour], stroke=colour,
                               stroke_width=1.6 if current else 1.0),
                          text(x + (BIT_W - 1) / 2, y + 17, letter, size=11, anchor="middle",
                               fill=DARK.get(colour, colour))]
                x += BIT_W
        detail = f"max {_value(v['max_normal'])} · ε {_value(v['epsilon'])}"
        if "block_size" in v:
            detail += (f" · one {int(v['scale_bits'])}-bit scale per {int(v['block_size'])}: "
                       f"{v['effective_bits']:g} bits a value")
        parts.append(text(BITS_X, y + 40, detail, size=13, fill=INK if current else MUTED))
        return parts

    legend = [text(LEFT, 26, "Bit layouts: sign, exponent (range), mantissa (precision)", size=15, weight="600")]
    x = LEFT
    for letter, word, colour in FIELDS:
        legend += [rect(x, 38, BIT_W - 1, BIT_H - 4, fill=TINT[colour], stroke=colour),
                   text(x + (BIT_W - 1) / 2, 51, letter, size=11, anchor="middle", fill=DARK.get(colour, colour)),
                   text(x + BIT_W + 4, 51, word, size=13)]
        x += 110
    frames = []
    for index, run in enumerate(runs):
        v = run.values
        name = run.extra["format_name"].split(" (")[0]
        mantissa = int(v["mantissa_bits"])
        caption = (f"{run.extra['format_name']}: {int(v['exponent_bits'])} exponent bits and "
                   f"{mantissa} stored mantissa bit{'s' if mantissa != 1 else ''}; largest value "
                   f"{_value(v['max_normal'])}, "
                   f"machine epsilon {_value(v['epsilon'])}.")
        if index:
            prev = runs[index - 1].values
            if v["exponent_bits"] == prev["exponent_bits"] and v["mantissa_bits"] < prev["mantissa_bits"]:
                caption += " Same exponent as the row above, so the same range: the bits came out of precision."
            elif v["exponent_bits"] < prev["exponent_bits"] and v["total_bits"] == prev["total_bits"]:
                caption += (" Same width as the row above, bits moved from exponent to mantissa: finer steps, "
                            "a much smaller range.")
            elif v["exponent_bits"] > prev["exponent_bits"] and v["total_bits"] == prev["total_bits"]:
                caption += " Same width as the row above, a bit moved to the exponent: range bought with precision."
        if "block_size" in v:
            caption += (f" Four bits alone span too little, so each block of {int(v['block_size'])} values shares "
                        f"one {int(v['scale_bits'])}-bit scale: {v['effective_bits']:g} bits a value in memory.")
        body = legend + [part for k in range(index + 1) for part in row(k, k == index)]
        frames.append(Frame("".join(body), caption,
                            f"{index + 1} bit layouts, the newest {name}: 1 sign, {int(v['exponent_bits'])} exponent "
                            f"and {int(v['mantissa_bits'])} mantissa bits."))
    title = "Number formats, bit by bit"
    intro = ("Each row is one format's bits: S sign, E exponent, M mantissa. Exponent bits set the range, "
             "mantissa bits the precision; the values beside each row are the formats calculator's.")
    return render_figure(NAME, title, intro, frames, WIDTH, height)


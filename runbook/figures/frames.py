"""What every step-through figure shares: option checking, SVG drawing helpers, the frame/stepper markup.

A figure is a list of :class:`Frame` s (one inline SVG and one caption each)
rendered by :func:`render_figure` into::

    <figure class="rb-figure" data-figure="NAME">
      <figcaption>title · what the figure shows</figcaption>
      <div class="rb-figure-frames">            every frame, stacked without JavaScript
        <div class="rb-figure-frame">…<svg role="img" aria-label="…">…</svg><p class="rb-figure-caption">…</p></div>
        …
      </div>
      <div class="rb-figure-controls" hidden>   previous · play/pause · next · step counter
      <ol class="rb-figure-steps">…</ol>         every caption, numbered (the print view)
    </figure>

``static/js/figures.js`` turns it into a stepper (one frame at a time, the
buttons wired, the counter live); ``@media print`` in ``static/css/app.css``
prints the last frame (each figure's last frame is its full final picture)
above the numbered list of steps. The markup is well-formed XML (every SVG can
be parsed on its own) and carries no ``id``, so one page can hold the same
figure twice.

Colours are the Okabe–Ito palette (distinguishable with every common colour
vision deficiency), and no state is told by colour alone: a mark, a letter or a
pattern goes with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Iterable, Mapping

from calculators.engine.catalog import default_catalog

# --- the palette (Okabe & Ito, "Color Universal Design") -------------------------------------

INK = "#1d2330"
MUTED = "#5c6675"
RULE = "#c9d2de"
GRID = "#e3e7ee"
PAPER = "#ffffff"
BLUE = "#0072B2"
SKY = "#56B4E9"
GREEN = "#009E73"
ORANGE = "#E69F00"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
YELLOW = "#F0E442"

# Light fills of the same hues, dark enough to see on white, light enough for ink text.
TINT = {BLUE: "#cfe4f3", SKY: "#dcf0fb", GREEN: "#cdebe1", ORANGE: "#fbe7bf", VERMILLION: "#f7d6c2",
        PURPLE: "#f3dcea", YELLOW: "#fbf7c7", MUTED: "#e9ecf1"}

# The same hues darkened for text on white (4.5:1 contrast or better); the light ones are not for text.
DARK = {BLUE: BLUE, SKY: "#1f6f9c", GREEN: "#00704f", ORANGE: "#9c5d00", VERMILLION: "#b14a00",
        PURPLE: "#9e3f73", YELLOW: "#6b6400", MUTED: MUTED, INK: INK}

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

REFERENCE_MODEL = "llama-3.1-8b"
REFERENCE_GPU = "h100-sxm5-80gb"


# --- options ----------------------------------------------------------------------------------


def take_options(figure: str, options: Mapping[str, str], defaults: Mapping[str, str | None]) -> dict[str, str]:
    """``options`` over ``defaults``; a key ``defaults`` lacks is a ``ValueError`` of one sentence."""
    unknown = [key for key in options if key not in defaults]
    if unknown:
        raise ValueError(f"The {figure} figure has no option '{unknown[0]}'; it takes "
                         f"{', '.join(defaults)}.")
    merged = {key: value for key, value in defaults.items() if value is not None}
    merged.update({key: str(value) for key, value in options.items()})
    return merged


def int_option(figure: str, options: Mapping[str, str], key: str, low: int, high: int) -> int:
    """``options[key]`` as a whole number from ``low`` to ``high``, or a one-sentence ``ValueError``."""
    raw = options[key]
    try:
        value = int(str(raw).replace("_", "").replace(",", ""))
    except ValueError:
        raise ValueError(f"The {figure} figure's {key} must be a whole number, not '{raw}'.") from None
    if not low <= value <= high:
        raise ValueError(f"The {figure} figure's {key} must be from {low:,} to {high:,}, not {value:,}.")
    return value


def model_name(model_id: str) -> str:
    """A catalog model's short display name (``Llama-3.1-8B``, not its Hugging Face path and aliases)."""
    name = default_catalog().model(model_id).name
    return name.split(" (", 1)[0].rsplit("/", 1)[-1]


def gpu_name(gpu_id: str) -> str:
    """A catalog card's short display name (``H100 SXM5 80GB``, without a parenthesised remark)."""
    return default_catalog().gpu(gpu_id).name.split(" (", 1)[0]


# --- SVG drawing ------------------------------------------------------------------------------


def num(value: float) -> str:
    """A coordinate for an SVG attribute: at most two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _attrs(attrs: Mapping[str, object]) -> str:
    parts = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        text = num(value) if isinstance(value, float) else str(value)
        parts.append(f' {name}="{escape(text, quote=True)}"')
    return "".join(parts)


def rect(x: float, y: float, w: float, h: float, fill: str = "none", stroke: str | None = None,
         **attrs) -> str:
    """``<rect>``; extra keyword attributes use ``_`` for ``-`` (``stroke_width``)."""
    box = {"x": float(x), "y": float(y), "width": float(max(w, 0)), "height": float(max(h, 0))}
    return f"<rect{_attrs({**box, 'fill': fill, 'stroke': stroke, **attrs})}/>"


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = INK, **attrs) -> str:
    """``<line>``."""
    ends = {"x1": float(x1), "y1": float(y1), "x2": float(x2), "y2": float(y2)}
    return f"<line{_attrs({**ends, 'stroke': stroke, **attrs})}/>"


def circle(cx: float, cy: float, r: float, fill: str = INK, stroke: str | None = None, **attrs) -> str:
    """``<circle>``."""
    centre = {"cx": float(cx), "cy": float(cy), "r": float(r)}
    return f"<circle{_attrs({**centre, 'fill': fill, 'stroke': stroke, **attrs})}/>"


def path(d: str, fill: str = "none", stroke: str | None = INK, **attrs) -> str:
    """``<path>``."""
    return f"<path{_attrs({'d': d, 'fill': fill, 'stroke': stroke, **attrs})}/>"


def polygon(points: Iterable[tuple[float, float]], fill: str = INK, stroke: str | None = None, **attrs) -> str:
    """``<polygon>``."""
    text = " ".join(f"{num(x)},{num(y)}" for x, y in points)
    return f"<polygon{_attrs({'points': text, 'fill': fill, 'stroke': stroke, **attrs})}/>"


def text(x: float, y: float, content: str, size: float = 15, anchor: str = "start", fill: str = INK,
         weight: str | None = None, halo: bool = False, **attrs) -> str:
    """``<text>`` (``content`` escaped). ``halo`` paints a white outline under the glyphs so the
    text stays readable over lines and fills."""
    extra = ({"stroke": PAPER, "stroke_width": 4.0, "stroke_linejoin": "round", "paint_order": "stroke"}
             if halo else {})
    place = {"x": float(x), "y": float(y), "font_size": size, "text_anchor": anchor, "fill": fill,
             "font_weight": weight}
    return f"<text{_attrs({**place, **extra, **attrs})}>{escape(content, quote=False)}</text>"


def group(children: Iterable[str], **attrs) -> str:
    """``<g>`` around ``children``."""
    return f"<g{_attrs(attrs)}>{''.join(children)}</g>"


def hatch(x: float, y: float, w: float, h: float, colour: str = MUTED, gap: float = 6) -> str:
    """Diagonal hatching clipped by hand to the box (idle or wasted space; no ``<pattern>`` id needed)."""
    segments = []
    start = -h
    while start < w:
        # A line from (start, h) to (start + h, 0), clipped to 0 ≤ u ≤ w.
        u1, v1, u2, v2 = start, h, start + h, 0.0
        if u1 < 0:
            v1, u1 = h + u1, 0.0
        if u2 > w:
            v2, u2 = u2 - w, w
        if u2 > u1:
            segments.append(f"M{num(x + u1)} {num(y + v1)}L{num(x + u2)} {num(y + v2)}")
        start += gap
    return path("".join(segments), stroke=colour, stroke_width=1.0, opacity=0.55)


def svg(width: int, height: int, label: str, body: str) -> str:
    """A standalone, accessible SVG: ``role="img"``, the label as ``aria-label`` and ``<title>``,
    sized by its ``viewBox`` so it scales to any width."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="rb-figure-svg" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(label, quote=True)}" font-family="{escape(FONT, quote=True)}" '
            f'font-size="15"><title>{escape(label, quote=False)}</title>{body}</svg>')


# --- frames and the figure --------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One step: the SVG's inner markup (trusted, built with the helpers above), its caption
    (plain text, escaped on output) and its accessible label (what the picture shows)."""

    body: str
    caption: str
    label: str = ""


def render_figure(name: str, title: str, intro: str, frames: list[Frame], width: int, height: int) -> str:
    """The figure's HTML: every frame as inline SVG with its caption, the stepper's controls
    (hidden until the script enables them) and the numbered list of steps (for print)."""
    if not frames:
        raise ValueError(f"The {name} figure has no steps to show.")
    count = len(frames)
    parts = [f'<figure class="rb-figure" data-figure="{escape(name, quote=True)}" data-steps="{count}">',
             '<figcaption class="rb-figure-head">',
             '<span class="rb-figure-kicker">Step-through figure</span> ',
             f'<span class="rb-figure-title">{escape(title, quote=False)}</span> ',
             f'<span class="rb-figure-intro">{escape(intro, quote=False)}</span>',
             '</figcaption>',
             '<div class="rb-figure-frames">']
    for index, frame in enumerate(frames, start=1):
        current = " is-current" if index == 1 else ""
        label = f"Step {index} of {count}. {frame.label or frame.caption}"
        parts.append(f'<div class="rb-figure-frame{current}" data-step="{index}">')
        parts.append(svg(width, height, label, frame.body))
        parts.append(f'<p class="rb-figure-caption"><span class="rb-figure-stepno">Step {index} of {count}</span> '
                     f'{escape(frame.caption, quote=False)}</p>')
        parts.append('</div>')
    parts.append('</div>')
    parts.append(
        '<div class="rb-figure-controls" hidden="hidden">'
        '<button type="button" class="rb-figure-button" data-figure-action="prev" aria-label="Previous step">'
        '<span aria-hidden="true">‹</span> Previous</button>'
        '<button type="button" class="rb-figure-button rb-figure-play" data-figure-action="play" '
        'aria-label="Play the steps"><span class="rb-figure-play-icon" aria-hidden="true">▶</span> '
        '<span class="rb-figure-play-text">Play</span></button>'
        '<button type="button" class="rb-figure-button" data-figure-action="next" aria-label="Next step">'
        'Next <span aria-hidden="true">›</span></button>'
        f'<span class="rb-figure-counter">Step 1 of {count}</span>'
        '<span class="rb-figure-live visually-hidden" aria-live="polite"></span>'
        '</div>')
    parts.append('<ol class="rb-figure-steps">')
    parts += [f'<li>{escape(frame.caption, quote=False)}</li>' for frame in frames]
    parts.append('</ol>')
    parts.append('</figure>')
    return "".join(parts)

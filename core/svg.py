"""SVG building blocks shared by the runbook's figures and the calculators' charts: the palette and the elements.

Each helper returns the markup of one SVG element as a string (attribute values
escaped, coordinates rounded to two decimals), so a figure or a chart is built
by joining them; :func:`svg` wraps a body into a standalone, accessible SVG.

Colours are the Okabe–Ito palette (distinguishable with every common colour
vision deficiency); whoever draws with them tells no state by colour alone.
"""

from __future__ import annotations

from html import escape
from typing import Iterable, Mapping

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

"""What every step-through figure shares: option checking, the frame/stepper markup (the SVG helpers: core.svg).

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

Colours are the Okabe–Ito palette of :mod:`core.svg`, and no state is told by
colour alone: a mark, a letter or a pattern goes with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Mapping

from calculators.engine.catalog import default_catalog
from core.svg import svg

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

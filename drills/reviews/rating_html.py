"""The review card's rating buttons and rubric checkboxes, built in Python rather than by the template engine.

Revealing an open question's answer renders the rubric (a checkbox per point) and the four rating buttons with
their intervals; through the template engine those two loops resolved a few dozen variables and filters each,
the largest part of rendering the fragment. These build the same markup (byte for byte what the loops in
``templates/reviews/review.html#ratings`` and ``templates/reviews/_card_open.html`` gave,
``tests/reviews/test_rating_html.py`` compares them) with every value escaped as ``{{ }}`` would escape it.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from runbook.templatetags.runbook_tags import markdown_inline


def rating_style(rating) -> str:
    """Bootstrap colour of a rating (1 Again … 4 Easy); "secondary" for anything else."""
    return {1: "danger", 2: "warning", 3: "success", 4: "primary"}.get(rating, "secondary")


def rating_buttons_html(buttons: Iterable[tuple[int, str, str]] | None, suggested: int | None) -> SafeString:
    """The ``<button>`` of every rating, for the ``role="group"`` of the ratings partial.

    ``buttons`` are :func:`drills.reviews.views.rating_buttons`'s (rating 1-4, label, next interval as text);
    ``suggested`` is the rating the rubric suggests, or ``None`` (or ``""``, a name missing from the template
    context) when there is none. Returns safe HTML, empty for no buttons; every value is escaped.
    """
    esc = conditional_escape
    parts = []
    for value, label, interval in buttons or ():
        is_suggested = suggested == value
        outline = "" if is_suggested else "outline-"
        suggested_class, suggested_note = (
            (" is-suggested", ' <span class="visually-hidden">(suggested)</span>') if is_suggested else ("", ""))
        parts.append(
            f'\n      <button type="submit" name="rating" value="{esc(value)}"\n'
            f'              class="btn btn-{outline}{esc(rating_style(value))} rating-button'
            f' rating-{esc(str(label).lower())}{suggested_class}">{esc(label)}<span class="rating-interval">'
            f'<span class="visually-hidden">, next review in </span>{esc(interval)}</span>{suggested_note}</button>\n'
            f'    ')
    return mark_safe("".join(parts))


def rubric_checkboxes_html(points: Iterable[tuple[str, str, bool]] | None) -> SafeString:
    """The checkbox of every rubric point, for the revealed open card's ``<fieldset class="review-rubric">``.

    ``points`` are :func:`drills.reviews.views.rubric_points`'s (index as text, the point's Markdown, whether
    ticked). Returns safe HTML, empty for no points; the point goes through ``markdown_inline`` as in the
    template, the index is escaped.
    """
    esc = conditional_escape
    parts = []
    for index, point, ticked in points or ():
        i = esc(index)
        checked = " checked" if ticked else ""
        parts.append(
            f'\n                <div class="form-check">\n'
            f'                  <input class="form-check-input" type="checkbox" name="ticked" value="{i}"'
            f' id="point-{i}"{checked}>\n'
            f'                  <label class="form-check-label" for="point-{i}">{esc(markdown_inline(point))}</label>\n'
            f'                </div>\n'
            f'                ')
    return mark_safe("".join(parts))

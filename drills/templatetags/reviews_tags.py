"""Template filters for the review pages."""

from django import template

from drills.reviews import rating_html

register = template.Library()


@register.filter
def duration_label(seconds):
    """150 → "2 min 30 s"; 45 → "45 s"; None → "—"."""
    if seconds is None or seconds == "":
        return "—"
    seconds = int(round(float(seconds)))
    minutes, rest = divmod(seconds, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


register.filter("rating_style", rating_html.rating_style)  # Bootstrap colour of a rating (drills.reviews.rating_html)


@register.filter
def get_item(mapping, key):
    """``mapping|get_item:key`` → ``mapping.get(key)``."""
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def misconception_info(ident):
    """The :class:`~calculators.engine.misconceptions.MisconceptionInfo` of an id, or ``None``."""
    from calculators.engine.misconceptions import MISCONCEPTIONS

    return MISCONCEPTIONS.get(ident)


@register.filter
def year_unless(day, today):
    """The year, as " 2027", when ``day`` is not in ``today``'s year, else "": "1 Jan" reads as this year's.

    ``{{ day|date:"j M" }}{{ day|year_unless:today }}`` → "19 Dec" this year, "1 Jan 2027" next year.
    """
    if not day or not today or day.year == today.year:
        return ""
    return f" {day.year}"


@register.filter
def rating_buttons_html(buttons, suggested):
    """``rating_buttons|rating_buttons_html:suggested`` → the ratings partial's buttons, built in Python.

    See :func:`drills.reviews.rating_html.rating_buttons_html` (the same markup the template loop gave).
    """
    return rating_html.rating_buttons_html(buttons, suggested)


@register.filter
def rubric_checkboxes_html(points):
    """``rubric_points|rubric_checkboxes_html`` → the revealed card's rubric checkboxes, built in Python.

    See :func:`drills.reviews.rating_html.rubric_checkboxes_html` (the same markup the template loop gave).
    """
    return rating_html.rubric_checkboxes_html(points)

"""Template filters for the review pages."""

from django import template

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


@register.filter
def rating_style(rating) -> str:
    """Bootstrap colour of a rating (1 Again … 4 Easy); "secondary" for anything else."""
    return {1: "danger", 2: "warning", 3: "success", 4: "primary"}.get(rating, "secondary")


@register.filter
def get_item(mapping, key):
    """``mapping|get_item:key`` → ``mapping.get(key)``."""
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def misconception_info(ident):
    """The :class:`~calculators.engine.mistakes.MisconceptionInfo` of an id, or ``None``."""
    from calculators.engine.mistakes import MISCONCEPTIONS

    return MISCONCEPTIONS.get(ident)


@register.filter
def year_unless(day, today):
    """The year, as " 2027", when ``day`` is not in ``today``'s year, else "": "1 Jan" reads as this year's.

    ``{{ day|date:"j M" }}{{ day|year_unless:today }}`` → "19 Dec" this year, "1 Jan 2027" next year.
    """
    if not day or not today or day.year == today.year:
        return ""
    return f" {day.year}"


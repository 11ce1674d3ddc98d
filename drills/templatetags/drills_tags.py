"""Template filters for drill pages: display rounding and verdict styling."""

from django import template

from calculators.engine.procedures.base import format_number

register = template.Library()

VERDICT_STYLES = {
    "correct": ("success", "Correct"),
    "carried_forward": ("success", "Carried forward"),
    "close": ("warning", "Close"),
    "misconception": ("danger", "Misconception"),
    "impossible": ("danger", "Impossible"),
    "wrong": ("danger", "Wrong"),
    "unreadable": ("secondary", "Unreadable"),
}


@register.filter
def quantity(value, unit):
    """``value|quantity:unit`` → the display rounding of DESIGN.md §10 ("14.96 GiB")."""
    if value is None or value == "":
        return "—"
    return format_number(float(value), unit)


@register.filter
def verdict_style(verdict):
    """Bootstrap contextual colour for a verdict."""
    return VERDICT_STYLES.get(verdict, ("secondary", verdict))[0]


@register.filter
def verdict_label(verdict):
    """Human label for a verdict."""
    return VERDICT_STYLES.get(verdict, ("secondary", verdict))[1]


@register.filter
def percent(fraction):
    """0.625 → "63 %"."""
    return f"{float(fraction) * 100:.0f} %"

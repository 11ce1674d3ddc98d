"""Filters of the timed mock rounds."""

from django import template

register = template.Library()


@register.filter
def clock(seconds):
    """754 → "12:34"; 3725 → "1:02:05"; None → "—"."""
    if seconds is None or seconds == "":
        return "—"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def signed_points(delta):
    """0.125 → "+13 points"; -0.05 → "−5 points" (a difference of two scores)."""
    if delta is None:
        return ""
    points = round(float(delta) * 100)
    return f"+{points} points" if points > 0 else f"−{-points} points" if points < 0 else "no change"


@register.filter
def minus(value, other):
    """``value - other`` (``None`` when either is missing)."""
    if value is None or other is None:
        return None
    return float(value) - float(other)

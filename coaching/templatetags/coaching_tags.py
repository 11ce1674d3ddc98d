"""``{% load coaching_tags %}``: ``user|is_coach`` for the navigation."""

from django import template

from coaching.access import is_coach as _is_coach

register = template.Library()


@register.filter
def is_coach(user) -> bool:
    """``user|is_coach``: whether the user may use the coach pages (the coach group, or a superuser)."""
    return _is_coach(user)

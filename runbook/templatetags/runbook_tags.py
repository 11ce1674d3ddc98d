"""Template filters for the runbook's Markdown fields (rendered through :mod:`runbook.content`'s cache)."""

from django import template
from django.utils.safestring import SafeString, mark_safe

from runbook.content import render_cached, strip_paragraph

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    """A Markdown field (shortcodes resolved, sanitised) as HTML blocks."""
    if not text:
        return mark_safe("")
    return mark_safe(render_cached(str(text)).html)


@register.filter
def markdown_inline(text: str) -> SafeString:
    """A one-paragraph Markdown field as inline HTML (no ``<p>`` around it)."""
    if not text:
        return mark_safe("")
    return mark_safe(strip_paragraph(render_cached(str(text)).html))

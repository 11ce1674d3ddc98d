"""Template helpers of the design-interview pages: the drill list on /drills/, and a mapping lookup."""

from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    """``mapping|get_item:key`` → ``mapping.get(key)`` (``""`` when absent)."""
    try:
        return mapping.get(key, "")
    except AttributeError:
        return ""


@register.inclusion_tag("drills/_design_list.html", takes_context=True)
def design_and_critique_drills(context):
    """The design prompts and critique drills, with the candidate's latest score on each critique."""
    from drills.models import BankItem, CritiqueAttempt

    items = BankItem.objects.published().filter(kind__in=[BankItem.DESIGN, BankItem.CRITIQUE]).order_by(
        "position", "slug")
    designs = [item for item in items if item.kind == BankItem.DESIGN]
    critiques = [item for item in items if item.kind == BankItem.CRITIQUE]
    request = context.get("request")
    user = getattr(request, "user", None)
    latest = {}
    if user is not None and user.is_authenticated:
        for attempt in CritiqueAttempt.objects.of(user).filter(item__in=critiques).order_by("submitted_at"):
            latest[attempt.item_id] = attempt
    rows = [{"item": item, "title": (item.details or {}).get("title") or item.slug,
             "lines": len((item.details or {}).get("lines", [])),
             "planted": len((item.details or {}).get("planted", [])), "latest": latest.get(item.pk)}
            for item in critiques]
    return {"designs": designs, "critiques": rows, "request": request}

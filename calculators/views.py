"""Calculator pages: the index of families and one page per family.

The views only bind the form to the query string, let it run the engine, and
render; an htmx request gets the results partial (with the field errors out of
band) instead of the whole page.
"""

import re

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_safe

from calculators.calibration_in_use import in_use
from calculators.families import FAMILIES
from calculators.forms import CalculatorForm

# An embed's id as calculators/embed.py makes it (the chapter's shortcode counter); anything else names no element.
EMBED_ID = re.compile(r"[A-Za-z][\w-]{0,63}")


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """List the calculator families with their summaries."""
    return render(request, "calculators/index.html", {"families": list(FAMILIES.values())})


# POST carries a pasted config.json too long for a query string (a 414 past ~4 KB): static/js/calculator.js
# sends the form by POST (with the page's CSRF token, as every htmx request) while the config box holds text.
@require_http_methods(["GET", "HEAD", "POST"])
def calculator(request: HttpRequest, family: str) -> HttpResponse:
    """Show one family's form and its worked result for the inputs in the query string or the POST body."""
    try:
        chosen = FAMILIES[family]
    except KeyError:
        raise Http404(f"No calculator family {family!r}.") from None
    data = request.POST if request.method == "POST" else request.GET
    form = CalculatorForm(chosen, data, calibration=in_use(request))
    form.is_valid()
    context = {"family": chosen, "families": list(FAMILIES.values()), "form": form, "report": form.report()}
    state_url = f"{request.path}?{form.state_query()}"
    if not request.htmx:
        return render(request, "calculators/calculator.html", context)
    embed = str(data.get("embed") or "")
    if embed:
        # A calculator embedded in a chapter (calculators/embed.py) swaps its own, smaller results, and its
        # "open the full calculator" link (out of band, by the embed's id) follows the inputs.
        context.update({"embed_id": embed if EMBED_ID.fullmatch(embed) else "", "full_url": state_url})
        return render(request, "calculators/_embed.html#results", context)
    response = render(request, "calculators/calculator.html#results", context)
    # The address follows the inputs (replaced, not pushed: one history entry per visit), so a reload or a
    # shared link shows this calculation; the results were computed from exactly these values.
    response["HX-Replace-Url"] = state_url
    return response

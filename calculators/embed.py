"""A calculator embedded in a chapter: the family's form and results for a preset, rendered server-side.

A chapter's ``{{calculator FAMILY key=value …}}`` shortcode becomes
:func:`render_embed`'s HTML: a real ``<form>`` that submits to the family's page
(so it works without JavaScript) and, through htmx, fetches the results partial
of ``calculators/_embed.html`` into the embed's own container
(``?embed=<the embed id>``; see :func:`calculators.views.calculator`). The results are in the
page from the start, so the chapter prints with the preset's values.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlencode

from django.template.loader import render_to_string
from django.urls import reverse

from calculators.families import FAMILIES
from calculators.forms import CalculatorForm


def render_embed(family: str, inputs: Mapping[str, str], embed_id: str) -> str:
    """The embedded calculator of ``family`` preset to ``inputs`` (snake-case input names).

    ``embed_id`` must be unique on the page: it prefixes the ids of the fields
    and names the results container htmx swaps.
    """
    chosen = FAMILIES[family]
    form = CalculatorForm(chosen, dict(inputs), auto_id=f"{embed_id}-%s")
    form.is_valid()
    for name, field in form.fields.items():
        field.widget.attrs["aria-describedby"] = f"{embed_id}-help-{name}"
    url = reverse("calculators:calculator", args=[family])
    context = {
        "family": chosen,
        "form": form,
        "report": form.report(),
        "embed_id": embed_id,
        "action": url,
        "full_url": f"{url}?{urlencode(dict(inputs))}" if inputs else url,
    }
    return render_to_string("calculators/_embed.html", context)

"""The open card's version, started and answer inputs (``reviews/_card_open.html``) are written in the template, and
are byte for byte what Django's widgets render for the review forms' bound fields (``str(form[name])``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string

from drills.reviews.forms import OpenAnswerForm, RateForm

ITEM = SimpleNamespace(prompt="Why?", kind="open", model_answer="Because.", rubric=[], details={})
CARD = SimpleNamespace(pk=7)
FORMS = [
    OpenAnswerForm(initial={"version": 3, "started": "token:1"}),  # the card as first shown
    OpenAnswerForm({"version": "-1", "started": "", "answer": ""}),  # sent blank: the card again, an error
    OpenAnswerForm({"version": "4", "started": "x\"<&", "answer": "a <b> & \"c\"\n" + "d" * 20_000}),  # too long
]


@pytest.mark.parametrize("form", FORMS)
def test_the_answer_forms_inputs_are_djangos(form):
    form.is_valid()
    html = render_to_string("reviews/_card_open.html", {"form": form, "stage": "answer", "card": CARD,
                                                         "item": ITEM})
    assert str(form["version"]) + str(form["started"]) in html
    assert str(form["answer"]) in html


def test_the_inputs_read_as_django_writes_them():
    form = FORMS[2]
    form.is_valid()
    assert str(form["version"]) == '<input type="hidden" name="version" value="4" id="id_version">'
    assert str(form["started"]) == '<input type="hidden" name="started" value="x&quot;&lt;&amp;" id="id_started">'
    assert str(form["answer"]).startswith(
        '<textarea name="answer" cols="40" rows="7" class="form-control" placeholder="Write it as you would say it: '
        'the numbers, the trade-off, the failure mode." maxlength="20000" aria-invalid="true" '
        'aria-describedby="id_answer_error" id="id_answer">\n'
        'a &lt;b&gt; &amp; &quot;c&quot;\n')
    assert str(FORMS[1]["started"]) == '<input type="hidden" name="started" id="id_started">'


@pytest.mark.parametrize("data", [{"version": "3", "started": "token:2", "answer": "Fewer KV heads."},
                                  {"version": "x", "started": "", "rating": "auto"}])
def test_the_rate_forms_inputs_are_djangos(data):
    form = RateForm(0, data)
    form.is_valid()
    html = render_to_string("reviews/_card_open.html", {"form": form, "stage": "revealed", "card": CARD,
                                                         "item": ITEM, "model_grading": None})
    assert str(form["version"]) + str(form["started"]) in html

"""The coach's question form ties each error and help text to its field for screen readers."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _tag(html: str, tag: str, field_id: str) -> str:
    """The opening tag of the ``tag`` element whose id is ``field_id``."""
    match = re.search(rf'<{tag}\b[^>]*\bid="{field_id}"[^>]*>', html)
    assert match, f"no <{tag} id={field_id}>"
    return match.group(0)


def test_errors_and_help_are_described_by_their_fields(coach_client):
    response = coach_client.post(reverse("coaching:question_new"), {
        "prompt": "", "model_answer": "Fewer KV heads.", "rubric": "   ", "tags": "kv-cache",
        "misconceptions": "no-such-misconception", "difficulty": "2"})
    html = response.content.decode()
    assert response.status_code == 200

    # A hand-written textarea with an error: described by its help and its errors, marked invalid.
    prompt = _tag(html, "textarea", "id_prompt")
    assert 'aria-describedby="id_prompt_helptext id_prompt_errors"' in prompt and 'aria-invalid="true"' in prompt
    assert '<div id="id_prompt_errors"><div class="text-danger small">This field is required.</div></div>' in html
    # A textarea without an error is not marked invalid.
    assert 'aria-invalid' not in _tag(html, "textarea", "id_model_answer")
    # A widget Django renders: the same ids, and the error text is where they point.
    misconceptions = _tag(html, "input", "id_misconceptions")
    assert 'aria-describedby="id_misconceptions_helptext id_misconceptions_errors"' in misconceptions
    assert 'aria-invalid="true"' in misconceptions
    assert re.search(r'<div id="id_misconceptions_errors">.*Unknown misconception id: no-such-misconception\.', html)
    assert '<div class="form-text" id="id_tags_helptext">Comma-separated' in html
    # What was typed is kept.
    assert 'value="no-such-misconception"' in misconceptions and ">Fewer KV heads.</textarea>" in html

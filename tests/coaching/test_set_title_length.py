"""A set title over 160 characters is reported with what was typed kept, never cut silently (issue 20)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from coaching.models import QuestionSet

pytestmark = pytest.mark.django_db


def test_a_long_title_is_reported_not_cut(coach_client):
    title = "KV cache warm-up " + "x" * 190  # 207 characters
    page = coach_client.get(reverse("coaching:sets")).content.decode()
    box = re.search(r'<input[^>]*name="title"[^>]*>', page).group(0)
    assert "maxlength" not in box  # a browser would cut a paste at 160 without a word
    assert "At most 160 characters." in page  # the limit, from QuestionSet.title's max_length
    response = coach_client.post(reverse("coaching:set_new"), {"title": title, "instructions": ""})
    page = response.content.decode()
    assert response.status_code == 200 and not QuestionSet.objects.exists()
    assert "Ensure this value has at most 160 characters (it has 207)." in page
    assert f'value="{title}"' in page

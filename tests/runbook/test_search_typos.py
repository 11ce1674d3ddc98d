"""Search tolerates a typo (issue 20, item 8): "quantisaton" finds quantisation, on SQLite as on PostgreSQL."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache

from runbook.search import KINDS
from runbook.spelling import respelled

pytestmark = pytest.mark.django_db


@pytest.fixture
def content(settings):
    from runbook.loading import load_content

    cache.clear()
    load_content(settings.BASE_DIR / "fixtures")


def test_a_typo_is_searched_as_the_closest_word_and_the_page_says_so(client, content):
    page = client.get("/search/?q=quantisaton").content.decode()
    said = " ".join(re.sub(r"<[^>]+>", " ", page.split('id="respelled">', 1)[1].split("</p>", 1)[0]).split())
    count = int(re.search(r": (\d+) results? for quantisation \.$", said).group(1))
    assert said.startswith("Nothing in the runbook is spelled quantisaton :") and count > 3
    assert "<mark>quantisation</mark>" in page.lower()


def test_words_the_runbook_uses_are_left_alone(content):
    assert respelled(["quantisation", "preempt", "kv", "ridge"], KINDS) == {}  # whole words and prefixes
    assert respelled(["prefil", "speculatve"], KINDS) == {"speculatve": "speculative"}  # "prefil" starts "prefill"
    assert respelled(["zzzzqqq"], KINDS) == {}  # nothing close: searched as typed, found nothing


def test_a_correct_query_reads_as_before(client, content):
    page = client.get("/search/?q=preemption").content.decode()
    assert 'id="respelled"' not in page and "for <strong>preemption</strong>" in page

"""The coach dashboard's cache (coaching.dashboard_cache) shows what the overview would, never a stale one.

These tests commit (``transaction=True``): the cache is used only outside a transaction, as in a request, and
its fingerprint reads the ``xmin`` of committed rows. PostgreSQL only (elsewhere nothing is cached).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from coaching import dashboard
from coaching.dashboard_cache import cached_overview
from coaching.models import Assignment, QuestionSet
from drills.models import Card
from drills.reviews.services import record_open_review

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql", reason="the fingerprint reads PostgreSQL's xmin")]


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def _demo_cell(html: str) -> str:
    """The text of demo's cell in the Spring cohort's completion table."""
    table = html.split('id="table-cohort-', 1)[1].split("</table>", 1)[0]
    row = next(r for r in table.split("<tr>") if ">demo<" in r)
    return re.sub(r"<[^>]+>|\s+", " ", row.split("</td>", 1)[1]).strip()


def _tables(client) -> tuple[str, int]:
    """The polled tables partial's HTML and the number of queries it took."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("coaching:dashboard_tables"), headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.content.decode(), len(captured.captured_queries)


def test_a_review_submitted_after_the_dashboard_was_rendered_shows_on_the_next_render(client, world):
    Assignment.objects.filter(pk=world.assignment.pk).update(due_at=timezone.now() + timedelta(days=7))
    client.force_login(world.coach)
    first, built = _tables(client)
    again, answered = _tables(client)
    assert _demo_cell(first) == _demo_cell(again) == "Not started 0/2"
    # The session, its user (with its coach flag) and the fingerprint: the overview's own queries are skipped.
    assert answered == 3 < built

    card = Card.objects.get(user=world.demo, item=world.question)
    record_open_review(world.demo, card.pk, card.version, None, answer="Fewer KV heads.", ticked=[0, 1])

    after, _ = _tables(client)
    assert _demo_cell(after) == "In progress 1/2 · 100%"


def test_a_change_in_place_shows_though_no_row_was_added_or_removed(client, world):
    client.force_login(world.coach)
    assert "Week 1 (due" in _tables(client)[0]
    QuestionSet.objects.filter(pk=world.set.pk).update(title="Week one")  # an UPDATE: counts and ids unchanged
    html, _ = _tables(client)
    assert "Week one (due" in html and "Week 1 (due" not in html


def test_the_cached_overview_is_the_overview_and_follows_the_clock(world):
    due = world.assignment.due_at
    before_due, after_due = due - timedelta(hours=1), due + timedelta(minutes=1)
    fresh = dashboard.overview(world.coach, before_due)
    stored = cached_overview(world.coach, before_due)
    hit = cached_overview(world.coach, before_due + timedelta(seconds=1))
    assert stored.tables == hit.tables == fresh.tables
    assert [t.body_html() for t in hit.tables] == [t.body_html() for t in fresh.tables]
    assert [t.csv() for t in hit.tables] == [t.csv() for t in fresh.tables]
    # Past the due time the same cached rows would say "Not started": the entry has expired with the clock.
    late = cached_overview(world.coach, after_due)
    assert late.tables == dashboard.overview(world.coach, after_due).tables
    assert any("Late 0/2" in cell.text for row in late.tables[1].rows for cell in row)
    # An earlier moment than the entry was built at is not served from it either.
    assert cached_overview(world.coach, before_due).tables == fresh.tables


def test_each_coach_and_time_zone_has_its_own_entry(world):
    now = world.assignment.due_at - timedelta(days=1)
    assert cached_overview(world.coach, now).candidate_count == 2
    assert cached_overview(world.dave, now).candidate_count == 0
    assert cached_overview(world.sam, now).candidate_count == 2
    with timezone.override("Pacific/Honolulu"):  # due 08:00 UTC: the evening before there
        local = cached_overview(world.coach, now)
        assert local.tables[1].headers == dashboard.overview(world.coach, now).tables[1].headers
    assert cached_overview(world.coach, now).tables[1].headers != local.tables[1].headers

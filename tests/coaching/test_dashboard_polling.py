"""The open dashboard polls its tables partial (htmx): a candidate's progress shows without a reload."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from coaching.models import Assignment
from drills.models import Card
from drills.reviews.services import record_open_review

pytestmark = pytest.mark.django_db

POLLER = re.compile(r'<div id="dashboard-tables"[^>]*>', re.S)


def _demo_cell(html: str) -> str:
    """The text of demo's cell in the Spring cohort's completion table."""
    table = html.split('id="table-cohort-', 1)[1].split("</table>", 1)[0]
    row = next(r for r in table.split("<tr>") if ">demo<" in r)
    return re.sub(r"<[^>]+>|\s+", " ", row.split("</td>", 1)[1]).strip()


def test_the_page_polls_the_tables_partial_at_the_configured_interval(client, world, settings):
    settings.COACH_DASHBOARD_POLL_S = 3
    client.force_login(world.coach)
    page = client.get(reverse("coaching:dashboard")).content.decode()
    (poller,) = POLLER.findall(page)
    assert f'hx-get="{reverse("coaching:dashboard_tables")}"' in poller
    assert 'hx-swap="outerHTML"' in poller
    # No trigger filter (htmx evaluates those with eval, which the CSP refuses): static/js/dashboard.js skips
    # a poll while the tab is hidden and fires dashboard-visible when it shows again.
    assert 'hx-trigger="every 3s, dashboard-visible from:document"' in poller
    assert "[" not in poller.split('hx-trigger="', 1)[1].split('"', 1)[0]
    assert "js/dashboard.js" in page


def test_the_partial_is_the_tables_alone_and_shows_new_progress(client, world, settings,
                                                                django_capture_on_commit_callbacks):
    settings.COACH_DASHBOARD_POLL_S = 20
    # Due a week from the real clock, so "not started" rather than "late" whatever today's date is.
    Assignment.objects.filter(pk=world.assignment.pk).update(due_at=timezone.now() + timedelta(days=7))
    client.force_login(world.coach)
    url = reverse("coaching:dashboard_tables")
    before = client.get(url, headers={"HX-Request": "true"})
    assert before.status_code == 200 and "no-store" in before["Cache-Control"]
    html = before.content.decode()
    assert html.lstrip().startswith('<div id="dashboard-tables"') and "<html" not in html and "<nav" not in html
    assert "every 20s" in POLLER.findall(html)[0]  # the swapped-in block keeps polling
    assert _demo_cell(html) == "Not started 0/2"

    # demo answers the set's open question (the ladder is still to do).
    card = Card.objects.get(user=world.demo, item=world.question)
    # The coach's dashboard version is bumped when the review's transaction commits (5895873): run that callback.
    with django_capture_on_commit_callbacks(execute=True):
        record_open_review(world.demo, card.pk, card.version, None, answer="Fewer KV heads.", ticked=[0, 1])

    after = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert _demo_cell(after) == "In progress 1/2 · 100%"
    # Same tables as the full page renders, nothing else.
    page = client.get(reverse("coaching:dashboard")).content.decode()
    assert POLLER.sub("", after).split("</p>", 1)[1].strip() in page


def test_candidates_get_403_and_visitors_log_in(client, world):
    url = reverse("coaching:dashboard_tables")
    assert client.get(url).status_code == 302
    client.force_login(world.demo)
    assert client.get(url).status_code == 403
    assert client.post(url).status_code == 403  # the role check comes first

"""The coach dashboard's cache (coaching.dashboard_cache) shows what the overview would, never a stale one.

The tests commit (``transaction=True``), as requests do, so the versions are bumped when each change commits;
they run on SQLite and on PostgreSQL alike.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from coaching import dashboard, services
from coaching.dashboard_cache import cached_dashboard
from coaching.models import Assignment
from drills.models import Card
from drills.problems.generation import create_problem
from drills.reviews.services import record_open_review
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def _cell(html: str, username: str, table: str = "cohort-") -> str:
    """The text of ``username``'s row (after the name) in the first table whose id starts with ``table``."""
    body = html.split(f'id="table-{table}', 1)[1].split("</table>", 1)[0]
    row = next(r for r in body.split("<tr>") if f">{username}<" in r)
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
    assert _cell(first, "demo") == _cell(again, "demo") == "Not started 0/2"
    # The session and its user (with its coach flag): the overview's own queries are skipped.
    assert answered == 2 < built

    card = Card.objects.get(user=world.demo, item=world.question)
    record_open_review(world.demo, card.pk, card.version, None, answer="Fewer KV heads.", ticked=[0, 1])

    after, _ = _tables(client)
    assert _cell(after, "demo") == "In progress 1/2 · 100%"


def test_a_candidates_new_attempt_shows_on_each_of_their_coaches_dashboards_on_the_next_load(world, h):
    # demo is in carol's Spring cohort and in dave's cohort too; staff (sam) see every cohort.
    other = services.create_cohort(world.dave, "Autumn")
    services.accept_invitation(services.invite(other), world.demo)
    clients = {}
    for coach in (world.coach, world.dave, world.sam):
        clients[coach.username] = Client()
        clients[coach.username].force_login(coach)
    summary = {name: _cell(_tables(c)[0], "demo", "candidates") for name, c in clients.items()}
    assert all("rising" not in text for text in summary.values())

    # A ladder attempt with the query-heads mistake in kv_bytes_per_token, through the drill page.
    problem = create_problem("ladder", seed=7, user=world.demo, fixed_inputs=QWEN25_7B_LADDER)
    answers = h.answers(problem)
    # query heads instead of KV heads (tests/drills/problems/test_first_graded_attempt.py)
    answers["kv_bytes_per_token"] = "200704"
    candidate = Client()
    candidate.force_login(world.demo)
    assert candidate.post(problem.get_absolute_url(), {**answers, "started": ""}).status_code == 200

    for name, c in clients.items():
        after = _cell(_tables(c)[0], "demo", "candidates")
        assert after != summary[name] and "×1 (1 vs 0, new)" in after, (name, after)
    # eve is in no cohort of carol's: carol's cached dashboard is not rebuilt by her work.
    eve = Client()
    eve.force_login(world.eve)
    theirs = create_problem("ladder", seed=7, user=world.eve, fixed_inputs=QWEN25_7B_LADDER)
    assert eve.post(theirs.get_absolute_url(), {**answers, "started": ""}).status_code == 200
    assert _tables(clients["carol"])[1] == 2


def test_renaming_a_set_shows_on_the_next_load(client, world):
    client.force_login(world.coach)
    assert "Week 1 (due" in _tables(client)[0]
    response = client.post(reverse("coaching:set", args=[world.set.pk]), {"title": "Week one", "instructions": ""})
    assert response.status_code == 302
    html, _ = _tables(client)
    assert "Week one (due" in html and "Week 1 (due" not in html


def test_a_candidate_leaving_the_cohort_leaves_the_dashboard(client, world):
    client.force_login(world.coach)
    assert ">demo2<" in _tables(client)[0]
    services.leave_cohort(world.cohort, world.demo2.pk)
    assert ">demo2<" not in _tables(client)[0]


def test_the_cached_dashboard_is_the_overview_and_follows_the_clock(world):
    due = world.assignment.due_at
    before_due, after_due = due - timedelta(hours=1), due + timedelta(minutes=1)
    fresh = dashboard.overview(world.coach, before_due)
    assert fresh.changes_at == due  # "due within 48 h" already holds; the due time comes next
    stored = cached_dashboard(world.coach, before_due)
    with CaptureQueriesContext(connection) as captured:
        hit = cached_dashboard(world.coach, before_due + timedelta(seconds=1))
    assert not captured.captured_queries and hit.tables_html == stored.tables_html
    assert "Not started 0/2" in hit.tables_html and "Late 0/2" not in hit.tables_html
    # Past the due time the same cached rows would say "Not started": the entry has expired with the clock.
    late = cached_dashboard(world.coach, after_due)
    assert "Late 0/2" in late.tables_html
    # An earlier moment than the entry was built at is not served from it either.
    assert "Not started 0/2" in cached_dashboard(world.coach, before_due).tables_html


def test_work_leaving_the_trend_window_is_a_moment_the_clock_changes_the_overview(world, h):
    problem = create_problem("ladder", seed=7, user=world.demo, fixed_inputs=QWEN25_7B_LADDER)
    answers = h.answers(problem)
    answers["kv_bytes_per_token"] = "200704"
    client = Client()
    client.force_login(world.demo)
    client.post(problem.get_absolute_url(), {**answers, "started": ""})
    submitted = world.demo.attempts.get().submitted_at
    far = world.assignment.due_at + timedelta(days=1)  # past every due moment: only the windows remain
    assert dashboard.overview(world.coach, far).changes_at == submitted + timedelta(days=dashboard.TREND_DAYS)
    later = submitted + timedelta(days=dashboard.TREND_DAYS, seconds=1)
    assert dashboard.overview(world.coach, later).changes_at == submitted + timedelta(days=2 * dashboard.TREND_DAYS)


def test_each_coach_and_time_zone_has_its_own_entry(world):
    now = world.assignment.due_at - timedelta(days=1)
    assert cached_dashboard(world.coach, now).candidate_count == 2
    assert cached_dashboard(world.dave, now).candidate_count == 0
    assert cached_dashboard(world.sam, now).candidate_count == 2
    with timezone.override("Pacific/Honolulu"):  # due 08:00 UTC: the evening before there
        local = cached_dashboard(world.coach, now)
        assert local.tables_html == cached_dashboard(world.coach, now).tables_html
    assert cached_dashboard(world.coach, now).tables_html != local.tables_html


def test_a_coach_handing_over_an_assignment_shows_on_the_successors_dashboard_on_the_next_load(client, world):
    # carol's only remaining work is an assignment to demo alone (her cohort is gone): the hand-over moves it by a
    # queryset update, which sends no signal, and saves no cohort of hers.
    autumn = services.create_cohort(world.dave, "Autumn")
    services.accept_invitation(services.invite(autumn), world.demo)
    single = services.assign(world.set, world.coach, due_at=timezone.now() + timedelta(days=7), candidate=world.demo)
    world.cohort.delete()
    assert Assignment.objects.filter(coach=world.coach).get() == single
    client.force_login(world.dave)
    before, _ = _tables(client)
    assert "Week 1 (due" not in before and _tables(client)[1] == 2

    from home.deletion import settle_coaching

    settle_coaching(world.coach, successor=world.dave)

    after, _ = _tables(client)
    assert "Week 1 (due" in after and _cell(after, "demo") == "Not started 0/2"


def _attempt(world, h, user, seed: int) -> None:
    """``user`` submits a ladder problem with the query-heads mistake through the drill page."""
    problem = create_problem("ladder", seed=seed, user=user, fixed_inputs=QWEN25_7B_LADDER)
    answers = {**h.answers(problem), "kv_bytes_per_token": "200704"}
    candidate = Client()
    candidate.force_login(user)
    assert candidate.post(problem.get_absolute_url(), {**answers, "started": ""}).status_code == 200


def test_a_candidates_coaches_come_from_the_cache_once_read(world, h):
    _attempt(world, h, world.demo, 7)  # reads demo's coaches (carol) and keeps them
    with CaptureQueriesContext(connection) as captured:
        _attempt(world, h, world.demo, 8)
    assert not [q for q in captured.captured_queries if "coaching_membership" in q["sql"]]
    carol = Client()
    carol.force_login(world.coach)
    assert "×2 (2 vs 0, rising)" in _cell(_tables(carol)[0], "demo", "candidates")


def test_a_coach_the_candidate_joins_after_their_coaches_were_kept_sees_the_next_attempt(world, h):
    _attempt(world, h, world.demo, 7)  # demo's coaches (carol) are now kept in the cache
    dave = Client()
    dave.force_login(world.dave)
    assert ">demo<" not in _tables(dave)[0]
    autumn = services.create_cohort(world.dave, "Autumn")
    services.accept_invitation(services.invite(autumn), world.demo)
    shown = _cell(_tables(dave)[0], "demo", "candidates")
    assert "×1 (1 vs 0, new)" in shown

    _attempt(world, h, world.demo, 8)
    assert "×2 (2 vs 0, rising)" in _cell(_tables(dave)[0], "demo", "candidates")


def test_a_cohort_handed_to_another_coach_bumps_them_at_the_candidates_next_attempt(world, h):
    _attempt(world, h, world.demo, 7)
    dave = Client()
    dave.force_login(world.dave)
    world.cohort.coach = world.dave
    world.cohort.save(update_fields=["coach"])
    assert "×1 (1 vs 0, new)" in _cell(_tables(dave)[0], "demo", "candidates")

    _attempt(world, h, world.demo, 8)
    assert "×2 (2 vs 0, rising)" in _cell(_tables(dave)[0], "demo", "candidates")

"""Database queries per page are bounded, and the coach dashboard's do not grow with the cohort (no N+1).

Every page is requested with the real content (``load_content`` of ``fixtures/``) and a cold cache, so the
bound covers the worst case: the first request after a deploy. The bounds carry a little headroom over what
the pages issue today (measured on SQLite and PostgreSQL); a view that starts querying per row blows through
them at once. The coach pages, the chapter, the graded submission and the review answer are counted exactly.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from coaching.sample import cohort_with_progress
from drills.models import BankItem, Card
from drills.problems.generation import create_problem
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import drawn_problem
from runbook.loading import load_content
from runbook.models import Chapter
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(settings.BASE_DIR) / "fixtures"
# Per coach page, exactly, the same for 10 and for 100 candidates (issue 22: the dashboard reads each candidate
# once and selects them by a subquery). The dashboard, built on its first load: the session, its user with its
# coach flag, the cohorts and their memberships, the candidates, the assignments with their sets' entries and
# items, the progress evidence (work, attempts, reviews, critiques), the three queries of
# coaching.visibility.hidden_work, the misconceptions, the review activity, the follow-up scores (issue 33), and the
# coach's sets. Its polled
# tables, loaded next with nothing changed, come from the cache (coaching.dashboard_cache): the session and its
# user. The assignment page runs hidden_work's three queries too: work hidden from the coach completes none of
# the coach's entries. The cohort page also lists the coach's calibrations, each with whether it is shared with
# the cohort (one query, issue 32).
COACH_QUERIES = {"dashboard": 18, "tables": 2, "cohort": 23, "assignment": 14}


@pytest.fixture
def content(db):
    """The repository's content (chapters, bank, problem templates) loaded, and the cache emptied."""
    load_content(FIXTURES)
    cache.clear()
    yield
    cache.clear()


def _count(client: Client, method: str, path: str, data=None, **headers) -> tuple[int, int]:
    """Request ``path``; return (status code, number of queries)."""
    with CaptureQueriesContext(connection) as captured:
        response = getattr(client, method)(path, data, headers=headers) if data is not None \
            else getattr(client, method)(path, headers=headers)
    return response.status_code, len(captured.captured_queries)


def test_reading_pages_and_the_calculator_stay_under_their_bounds(content, client, django_assert_max_num_queries):
    chapter = Chapter.objects.order_by("number").filter(number=6).first()
    user = UserFactory(username="reader", role="candidate")
    anonymous, member = Client(), Client()
    member.force_login(user)
    pages = [
        ("home, anonymous", anonymous, "/", {}, 1),
        # The candidate's day (home/overview.py): settings, paths, due count, forecast, deck, assignments with
        # their progress, the next chapter, misconceptions -- a fixed number whatever the deck's size.
        ("home, signed in", member, "/", {}, 15),
        ("bank", member, "/bank/", {}, 11),
        ("calculator page", member, "/calculators/ladder/", {}, 5),
        ("calculator recompute", member, "/calculators/ladder/?context=16384&gpu=a100-sxm4-80gb",
         {"HX-Request": "true"}, 4),
    ]
    for label, who, path, headers, bound in pages:
        with django_assert_max_num_queries(bound):
            response = who.get(path, headers=headers)
        assert response.status_code == 200, label
    # Exactly: the session, its user, the chapter, the glossary (the body's cache key), the rail's documents with
    # their tracks, the chapters for previous/next, the questions (the menu's coach flag comes with the user,
    # accounts.backends). The rendered body
    # comes from the cache; the chapters' text is not read for the rail.
    assert _count(member, "get", chapter.get_absolute_url()) == (200, 7)
    # The calculator touches no model: only the session and its user (the time zone is kept in the session).
    status, queries = _count(member, "get", "/calculators/ladder/?context=4096", HX_Request="true")
    assert (status, queries) == (200, 2)


def test_candidate_pages_stay_under_their_bounds(content, django_assert_max_num_queries,
                                                 django_capture_on_commit_callbacks):
    user = UserFactory(username="cand", role="candidate")
    client = Client()
    client.force_login(user)
    problem = create_problem("ladder", seed=7, user=user)
    answers = {step.key: repr(step.value) for step in problem.solve().steps}
    open_items = list(BankItem.objects.published().filter(kind=BankItem.OPEN).order_by("pk")[:30])
    template = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    add_to_deck(user, [*open_items, template], now=timezone.now() - timedelta(hours=1))
    open_card = Card.objects.get(user=user, item=open_items[0])
    problem_card = Card.objects.get(user=user, item=template)

    with django_assert_max_num_queries(6):
        assert client.get(problem.get_absolute_url()).status_code == 200
    # Exactly: the session, its user, the problem with the candidate's earliest earlier attempt of it (a
    # re-submission is practice and the page says which score counts, issue 20), and, in one transaction (its
    # begin and end are two more), the attempt and its steps in one insert whatever their count; after the commit
    # (run here: the test's transaction never commits), the coaches whose dashboards it changes, once, read and
    # kept in the cache the first time (coaching.dashboard_cache): the next submission does not read them.
    # First a submission that is not counted: an earlier test's transaction, rolled back, may have left bumps pending
    # on this thread (a membership saved: they ride along with the next flush, coaching.dashboard_cache._on_commit),
    # and they would read the memberships and bump their version; then an empty cache, as on a first request.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(problem.get_absolute_url(), {**answers, "started": ""}, headers={"HX-Request": "true"})
    cache.clear()
    for count in (8, 7):
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            response = client.post(problem.get_absolute_url(), {**answers, "started": ""},
                                   headers={"HX-Request": "true"})
        assert len(captured.captured_queries) == count, [q["sql"][:60] for q in captured.captured_queries]
    assert response.status_code == 200
    assert b'data-score="1.0"' in response.content and b"<html" not in response.content  # the graded fragment
    # Opened again, the page shows the latest attempt's stored grade: exactly the session, its user, the problem,
    # the latest attempt's steps with the attempt (one query), its follow-ups and the first attempt (whose score
    # counts). Twice: the second load takes the rendered rows from the cache and reads the same.
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(problem.get_absolute_url())
        assert len(captured.captured_queries) == 6, [q["sql"][:60] for q in captured.captured_queries]
        assert b'id="restored-note"' in response.content and b'data-score="1.0"' in response.content
    # 31 cards due: the queue's first card with the queue's length is one query, the forecast with the deck one.
    with django_assert_max_num_queries(12):
        assert client.get("/review/").status_code == 200
    # Exactly the session, its user, and the card read with the review settings in one query (the rating buttons
    # show each rating's next interval, which depends on the desired retention and the interview date): no queue,
    # forecast nor counts; whether the candidate has an endpoint grading the answer is asked in that query too
    # (llm_grading: an EXISTS), so without one nothing more is read.
    with CaptureQueriesContext(connection) as captured:
        response = client.post(f"/review/card/{open_card.pk}/reveal/",
                               {"version": open_card.version, "answer": "Fewer KV heads.", "started": ""},
                               headers={"HX-Request": "true"})
    assert len(captured.captured_queries) == 3
    assert response.status_code == 200
    assert b'id="review-card"' in response.content and b"<html" not in response.content  # the card fragment
    assert client.get(f"/review/card/{problem_card.pk}/").status_code == 200  # shows the variant, stores nothing
    problem_card.refresh_from_db()
    variant = drawn_problem(problem_card)
    typed = {step.key: repr(step.value) for step in variant.solve().steps}
    # grade, attempt + steps, review log, card update under a row lock, the coaches of each (dashboard versions),
    # and what the card page no longer stores when read: the variant and its claim, the first review settings;
    # and the card's follow-up chain stored with the attempt (issue 33: the chain is the card, always graded)
    with django_assert_max_num_queries(27):
        response = client.post(f"/review/card/{problem_card.pk}/answer/",
                               {**typed, "version": problem_card.version, "started": ""})
    assert response.status_code == 302 and "/review/result/" in response["Location"]
    with django_assert_max_num_queries(15):  # reads only: the presets come with the content
        assert client.get("/rounds/").status_code == 200
    with django_assert_max_num_queries(6):
        assert client.get("/assignments/").status_code == 200


def _cohort(size: int):
    """A coach with a cohort of ``size`` candidates, an assigned set, and a tenth of them with work done."""
    coach = UserFactory(username=f"coach{size}", role="coach")
    people = [UserFactory(username=f"c{size}-{i:03d}", role="candidate") for i in range(size)]
    cohort, assignment = cohort_with_progress(coach, people, name=f"Cohort {size}", now=timezone.now())
    return coach, people, cohort, assignment


def test_the_coach_dashboard_issues_as_many_queries_for_100_candidates_as_for_10(content,
                                                                                django_capture_on_commit_callbacks):
    counts = {}
    for size in (10, 100):
        coach, people, cohort, assignment = _cohort(size)
        client = Client()
        client.force_login(coach)
        for name, path in [("dashboard", "/coach/"), ("tables", "/coach/tables/"),
                           ("cohort", f"/coach/cohorts/{cohort.pk}/"),
                           ("assignment", f"/coach/assignments/{assignment.pk}/")]:
            with CaptureQueriesContext(connection) as captured:
                response = client.get(path)
            assert response.status_code == 200
            assert people[-1].username in response.content.decode()
            counts[(name, size)] = len(captured.captured_queries)
    for name, expected in COACH_QUERIES.items():
        assert counts[(name, 10)] == counts[(name, 100)] == expected, (name, counts)

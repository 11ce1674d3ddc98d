"""A coach in a real browser builds a set with one bank item and assigns it; the candidate sees it on /assignments/.

Then the dashboard stays open in the coach's browser while the candidate, in a browser context of their own,
answers the assigned question: the coach's page shows the new progress without a reload (htmx polls the tables
partial; not while the tab is hidden, and at once when it is shown again).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from tests import needs
from tests.factories import CohortFactory, UserFactory

from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

SET_URL = re.compile(r"/coach/sets/(\d+)/$")
TITLE = "KV cache warm-up"


@pytest.fixture
def people(transactional_db):
    """carol, a coach with a cohort holding alice, a candidate."""
    coach = UserFactory(username="carol", role="coach")
    candidate = UserFactory(username="alice", role="candidate")
    CohortFactory(coach=coach, name="Autumn cohort", members=[candidate])
    return coach, candidate


def test_build_assign_and_see_it_as_the_candidate(live_server, new_context, people, content):
    from coaching.models import Assignment, QuestionSet

    coach, candidate = people
    page = new_context().new_page()
    log_in(page, live_server.url, "carol", "/coach/sets/new/")
    form = page.locator("form[action='/coach/sets/new/']")
    form.locator("input[name='title']").fill(TITLE)
    with page.expect_navigation(url=SET_URL):
        form.locator("[type='submit']").click()
    set_pk = int(SET_URL.search(page.url).group(1))

    # One bank item in the set, picked in the search box (its suggestions are the bank's titles).
    chosen = page.locator("#bank-item-options option").first
    item_label = chosen.get_attribute("label") or chosen.inner_text()
    item_label = item_label.split("] ", 1)[1].strip()
    page.fill("#add-item", chosen.get_attribute("value"))
    with page.expect_navigation(url=SET_URL):
        page.locator("form:has(#add-item) button").click()
    assert QuestionSet.objects.get(pk=set_pk, coach=coach).entries.count() == 1
    expect(page.locator("main, body").first).to_contain_text(item_label[:40])

    # Assign it to alice, who is in carol's cohort.
    page.goto(f"{live_server.url}/coach/sets/{set_pk}/assign/")
    page.select_option("select[name='target']", f"candidate:{candidate.pk}")
    with page.expect_navigation(url=re.compile(r"/coach/assignments/\d+/$")):
        page.locator("form:has(select[name='target']) [type='submit'], "
                     "form:has(select[name='target']) button").first.click()
    assert Assignment.objects.filter(question_set_id=set_pk).count() == 1

    # As alice, in a context of her own.
    other = new_context().new_page()
    log_in(other, live_server.url, "alice", "/assignments/")
    link = other.get_by_role("link", name=TITLE)
    expect(link).to_be_visible()
    link.click()
    other.wait_for_url(re.compile(r"/assignments/\d+/$"))
    expect(other.locator("body")).to_contain_text(TITLE)


TABLES = "/coach/tables/"


def test_the_open_dashboard_shows_the_candidates_progress_without_a_reload(live_server, new_context, people,
                                                                          content, settings):
    from django.utils import timezone

    from coaching import services
    from coaching.models import QuestionSet
    from drills.models import BankItem, ReviewLog

    settings.COACH_DASHBOARD_POLL_S = 1  # the live server runs in this process: it reads the same settings
    coach, candidate = people
    question = BankItem.objects.filter(kind=BankItem.OPEN, published=True).exclude(rubric=[]).order_by("pk").first()
    question_set = QuestionSet.objects.create(coach=coach, title=TITLE)
    services.add_entry(question_set, item=question)
    services.assign(question_set, coach, candidate=candidate, due_at=timezone.now() + timedelta(days=3))

    # The coach's dashboard, open in one browser.
    page = new_context().new_page()
    polls = []
    page.on("request", lambda r: polls.append(r) if TABLES in r.url else None)
    log_in(page, live_server.url, "carol", "/coach/")
    cell = page.locator("#dashboard-tables [id^='table-cohort-'] tbody tr", has_text="alice").locator("td").nth(1)
    expect(cell).to_have_text(re.compile(r"^\s*Not started 0/1\s*$"))
    page.evaluate("window.__noReload = 'still here'")
    with page.expect_response(lambda r: TABLES in r.url, timeout=5_000) as polled:
        pass  # the next poll, within a second or so
    assert polled.value.status == 200 and polled.value.request.headers.get("hx-request") == "true"

    # Hidden tab: no polling.
    page.evaluate("Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true})")
    page.wait_for_timeout(1_500)  # let a poll already in flight land
    before = len(polls)
    page.wait_for_timeout(3_000)
    assert len(polls) == before, "the dashboard polled while its tab was hidden"

    # The candidate, in a context of their own, answers the assigned question.
    other = new_context().new_page()
    log_in(other, live_server.url, "alice", "/assignments/")
    other.get_by_role("link", name=TITLE).click()
    other.wait_for_url(re.compile(r"/assignments/\d+/$"))
    with other.expect_navigation(url=re.compile(r"/review/card/\d+/$")):
        other.get_by_role("button", name="Start").click()
    other.fill("#review-card textarea[name='answer']", "Weights plus KV cache per user, divided into what is left.")
    other.locator("#review-card .review-answer-form [type='submit']").click()
    expect(other.locator("#review-card .review-model-answer")).to_be_visible()
    with other.expect_navigation():
        other.locator("#ratings button[name='rating'][value='3']").click()
    log = ReviewLog.objects.get(user=candidate, item=question)
    assert log.rating == ReviewLog.GOOD

    # Still hidden: the coach's page has not changed. Shown again: it refreshes at once, without a reload.
    expect(cell).to_contain_text("Not started 0/1")
    page.evaluate("Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true});"
                  "document.dispatchEvent(new Event('visibilitychange'))")
    expect(cell).to_contain_text("Done 1/1", timeout=5_000)
    assert page.evaluate("window.__noReload") == "still here"
    assert page.url == f"{live_server.url}/coach/"


def test_a_coach_adds_a_follow_up_chain_and_the_candidate_starts_it(live_server, new_context, people, content):
    """Issue 33: the set page's problem template form takes a chain of follow-ups; the candidate's assignment
    lists the entry as follow-ups and starting it opens a round of the problem and its chain."""
    from django.utils import timezone

    from coaching import services
    from coaching.models import QuestionSet, SetEntry
    from drills.models import BankItem

    coach, candidate = people
    question_set = QuestionSet.objects.create(coach=coach, title="Chains")
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    page = new_context().new_page()
    log_in(page, live_server.url, "carol", f"/coach/sets/{question_set.pk}/")
    page.select_option("#add-template-item", str(ladder.pk))
    page.select_option("#add-template-followups", "2")
    with page.expect_navigation(url=SET_URL):
        page.locator("form:has(#add-template-item) button").click()
    entry = SetEntry.objects.get(question_set=question_set)
    assert (entry.item_id, entry.followups) == (ladder.pk, 2)
    expect(page.locator("body")).to_contain_text("then a chain of 2 follow-ups")

    assignment = services.assign(question_set, coach, candidate=candidate, due_at=timezone.now() + timedelta(days=2))
    other = new_context().new_page()
    log_in(other, live_server.url, "alice", f"/assignments/{assignment.pk}/")
    row = other.locator("li.list-group-item", has_text="then a chain of 2 follow-ups")
    expect(row.locator(".badge").first).to_have_text("follow-ups")
    with other.expect_navigation(url=re.compile(r"/rounds/\d+/")):
        row.get_by_role("button", name="Start").click()

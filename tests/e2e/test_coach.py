"""A coach in a real browser builds a set with one bank item and assigns it; the candidate sees it on /assignments/."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from .test_candidate import PASSWORD, log_in

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

SET_URL = re.compile(r"/coach/sets/(\d+)/$")
TITLE = "KV cache warm-up"


@pytest.fixture
def people(transactional_db):
    """carol, a coach with a cohort holding alice, a candidate."""
    from coaching.models import Cohort, Membership

    users = get_user_model().objects
    coach = users.create_user(username="carol", email="carol@example.com", password=PASSWORD)
    coach.groups.add(Group.objects.get_or_create(name="coach")[0])
    candidate = users.create_user(username="alice", email="alice@example.com", password=PASSWORD)
    candidate.groups.add(Group.objects.get_or_create(name="candidate")[0])
    cohort = Cohort.objects.create(coach=coach, name="Autumn cohort")
    Membership.objects.create(cohort=cohort, candidate=candidate)
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

    # One bank item in the set.
    chosen = page.locator("#add-item option").first
    item_label = chosen.inner_text().split("] ", 1)[1].strip()
    page.select_option("#add-item", chosen.get_attribute("value"))
    with page.expect_navigation(url=SET_URL):
        page.locator("form:has(#add-item) button").click()
    assert QuestionSet.objects.get(pk=set_pk, coach=coach).entries.count() == 1
    expect(page.locator("main, body").first).to_contain_text(item_label[:40])

    # Assign it to alice, who is in carol's cohort.
    page.goto(f"{live_server.url}/coach/sets/{set_pk}/assign/")
    page.select_option("select[name='target']", f"candidate:{candidate.pk}")
    with page.expect_navigation(url=re.compile(r"/coach/assignments/\d+/$")):
        page.locator("form:has(select[name='target']) [type='submit'], form:has(select[name='target']) button").first.click()
    assert Assignment.objects.filter(question_set_id=set_pk).count() == 1

    # As alice, in a context of her own.
    other = new_context().new_page()
    log_in(other, live_server.url, "alice", "/assignments/")
    link = other.get_by_role("link", name=TITLE)
    expect(link).to_be_visible()
    link.click()
    other.wait_for_url(re.compile(r"/assignments/\d+/$"))
    expect(other.locator("body")).to_contain_text(TITLE)

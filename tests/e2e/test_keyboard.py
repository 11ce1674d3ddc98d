"""Keyboard only (issue 12): a calculator, a ladder problem, a review and a round, worked with Tab, Enter and Space.

Only ``page.keyboard`` drives the flows (logging in, to set up, is the one exception). After each htmx swap the
test asserts where focus is, by the rule of ``static/js/a11y.js``: an explicit submit moves focus to the result;
a live recompute triggered by leaving or ticking a field leaves focus where it was and is announced in
``#a11y-status`` instead; after a post that redirects, the message saying what happened has focus.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from tests import needs
from tests.factories import CohortFactory, UserFactory

from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

# The reference stack's ladder, worked right (README: 53 users worst case, 191 paged).
CORRECT_ANSWERS = {
    "card_gib": "81559/1024", "usable_gib": "71.68 GiB", "weights_gib": "14.96", "kv_budget_gib": "53.72",
    "kv_bytes_per_token": "128 KiB", "per_user_gib": "1", "users_worst_case": "53", "users_paged": "191",
}

FOCUSED_JS = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  return {tag: el.tagName.toLowerCase(), id: el.id, name: el.getAttribute("name"),
          value: el.getAttribute("value"), classes: Array.from(el.classList),
          text: (el.innerText || "").trim().slice(0, 200),
          focusVisible: el.matches(":focus-visible"),
          ring: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0 || style.boxShadow !== "none"};
}"""


def focused(page) -> dict | None:
    """What has focus now: tag, id, name, value, classes, text, and whether a focus ring is drawn."""
    return page.evaluate(FOCUSED_JS)


def is_focused(page, selector: str) -> bool:
    return page.evaluate("(s) => document.activeElement !== null && document.activeElement.matches(s)", selector)


def tab_to(page, selector: str, *, back: bool = False, limit: int = 120) -> dict:
    """Press Tab (Shift+Tab with ``back``) until the focused element matches ``selector``; fail if it never does."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        if is_focused(page, selector):
            return focused(page)
    raise AssertionError(f"{limit} presses of Tab never reached {selector!r}; stopped on {focused(page)}")


def assert_ring(state: dict | None) -> None:
    """Focus is visible: the element matches :focus-visible and draws an outline or a box-shadow."""
    assert state is not None
    assert state["focusVisible"] and state["ring"], state


def type_over(page, text: str) -> None:
    """Replace the focused field's value by typing, as a keyboard user does (select all, type)."""
    page.keyboard.press("Control+A")
    page.keyboard.type(text)


@pytest.fixture
def candidate(transactional_db):
    return UserFactory(username="alice", role="candidate")


def test_skip_link_leads_past_the_navigation(content, live_server, page):
    page.goto(f"{live_server.url}/runbook/")
    page.keyboard.press("Tab")
    state = focused(page)
    assert state["tag"] == "a" and "skip-link" in state["classes"] and state["text"] == "Skip to content"
    assert_ring(state)
    assert page.locator(".skip-link").is_visible()           # hidden until focused, then shown

    page.keyboard.press("Enter")
    assert is_focused(page, "main#content")
    # The next Tab goes into the page's own content, not back into the menus.
    page.keyboard.press("Tab")
    assert page.evaluate("document.getElementById('content').contains(document.activeElement)")
    assert not page.evaluate("document.activeElement.closest('nav.app-navbar, nav.app-strip') !== null")


def test_calculator_recomputes_from_the_keyboard(content, live_server, page):
    page.goto(f"{live_server.url}/calculators/ladder/")
    users = page.locator("#headline-users_worst_case .calc-headline-number .tabular-nums")
    expect(users).to_have_text("53")

    # Live: type a new context and Tab away. The change recomputes in place; focus moves on to the next field as
    # Tab says, not to the results, and the new headline numbers are announced.
    state = tab_to(page, "input[name='context']")
    assert_ring(state)
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.headers.get("hx-request")):
        type_over(page, "16384")
        page.keyboard.press("Tab")
    expect(users).to_have_text("26")
    after_tab = focused(page)
    assert after_tab["tag"] in ("input", "select", "textarea") and after_tab["name"] != "context", after_tab
    assert "#results" not in (after_tab["id"] or "") and after_tab["id"] != "results"
    expect(page.locator("#a11y-status")).to_contain_text("26 users")

    # Explicit: back to the field, a new value, Enter. Focus lands on the results, with a visible ring.
    tab_to(page, "input[name='context']", back=True)
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.headers.get("hx-request")):
        type_over(page, "32768")
        page.keyboard.press("Enter")
    expect(users).to_have_text("13")
    expect(page.locator("#results")).to_be_focused()
    assert_ring(focused(page))
    # Tab from the results continues after them, nowhere unexpected: the page footer's first link.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('footer') !== null"), focused(page)


def test_ladder_problem_worked_from_the_keyboard(live_server, page, candidate, reference_problem):
    from drills.models import Attempt

    path = reference_problem.get_absolute_url()
    log_in(page, live_server.url, "alice", path)

    state = tab_to(page, "#answers input[name='card_gib']")
    assert_ring(state)
    keys = list(CORRECT_ANSWERS)
    for index, key in enumerate(keys):
        assert is_focused(page, f"#answers input[name='{key}']"), (key, focused(page))
        page.keyboard.type(CORRECT_ANSWERS[key])
        if index < len(keys) - 1:
            page.keyboard.press("Tab")          # the steps follow each other in the Tab order
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith(path)):
        page.keyboard.press("Enter")

    score = page.locator("#answers .score")
    expect(score).to_be_focused()
    expect(score).to_have_text("Score 100 %")
    assert_ring(focused(page))
    for key in keys:
        expect(page.locator(f"#step-{key}")).to_have_class(re.compile(r"(^|\s)verdict-correct(\s|$)"))
    attempt = Attempt.objects.get(user=candidate)
    assert attempt.score == 1 and attempt.steps.filter(verdict="correct").count() == 8

    # Tab from the score goes on through the graded form: the first step's field, its answer kept.
    page.keyboard.press("Tab")
    assert is_focused(page, "#answers input[name='card_gib']"), focused(page)


def test_review_a_due_card_from_the_keyboard(content, live_server, page, candidate):
    from drills.models import BankItem, ReviewLog
    from drills.reviews.scheduling import add_to_deck

    item = BankItem.objects.filter(kind=BankItem.OPEN, published=True).exclude(rubric=[]).order_by("pk").first()
    assert add_to_deck(candidate, [item]) == 1
    log_in(page, live_server.url, "alice", "/review/")

    tab_to(page, "#review-card textarea[name='answer']")
    page.keyboard.type("Weights first, then the KV cache per user at the context limit.")
    tab_to(page, "#review-card .review-answer-form [type='submit']")
    with page.expect_response(lambda r: r.request.method == "POST" and "/reveal/" in r.url):
        page.keyboard.press("Enter")
    heading = page.locator("#model-answer-heading")
    expect(heading).to_be_focused()
    expect(heading).to_have_text("Model answer")
    assert_ring(focused(page))

    # Tick the first rubric point with Space: the suggestion is recomputed (live) and announced; focus stays.
    tab_to(page, "#review-card input[name='ticked']")
    with page.expect_response(lambda r: "/suggest/" in r.url):
        page.keyboard.press("Space")
    expect(page.locator("#review-card input[name='ticked']").first).to_be_checked()
    expect(page.locator("#review-card input[name='ticked']").first).to_be_focused()
    total = len(item.rubric)
    expect(page.locator("#a11y-status")).to_contain_text(f"1 of {total} point")

    # Rate Good with Enter: the next page says so, and that message has focus.
    tab_to(page, "#ratings button[name='rating'][value='3']")
    with page.expect_navigation(url=re.compile(r"/review/$")):
        page.keyboard.press("Enter")
    message = page.locator("#messages .alert").first
    expect(message).to_contain_text("Recorded: Good")
    expect(message).to_be_focused()
    log = ReviewLog.objects.get(user=candidate)
    assert (log.rating, log.rubric_ticked) == (ReviewLog.GOOD, [0])


def test_round_started_and_answered_from_the_keyboard(content, live_server, page, candidate):
    from drills.bank.problem_templates import sync_problem_templates
    from drills.rounds.models import Round
    from drills.rounds.presets import sync_presets

    sync_problem_templates()
    sync_presets()  # as load_content does
    log_in(page, live_server.url, "alice", "/rounds/")
    tab_to(page, "form[action='/rounds/start/phone/'] [type='submit']")
    with page.expect_navigation(url=re.compile(r"/rounds/\d+/1/$")):
        page.keyboard.press("Enter")
    round_ = Round.objects.get(user=candidate)
    assert round_.is_active and round_.items.count() == 4

    # The first item is a ladder: type the first step. The autosave swaps the status in while focus stays in
    # the field being typed into, and the status is announced.
    first = tab_to(page, "#item-form .answer-input")
    assert_ring(first)
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/1/save/")):
        page.keyboard.type("79.65 GiB")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert is_focused(page, f"#{first['id']}")
    expect(page.locator("#a11y-status")).to_contain_text("Saved")

    # Submit the item with Enter on its button: the next item opens and the message about the last has focus.
    tab_to(page, "#item-form button:not([formaction])")
    with page.expect_navigation(url=re.compile(rf"/rounds/{round_.pk}/2/$")):
        page.keyboard.press("Enter")
    message = page.locator("#messages .alert").first
    expect(message).to_have_text(re.compile(r"Item 1 recorded\."))
    expect(message).to_be_focused()
    answered = round_.items.get(position=1)
    assert answered.is_submitted and answered.answers.get("card_gib") == "79.65 GiB"


def test_add_to_deck_keeps_focus_on_the_replaced_button(content, live_server, page, candidate):
    from drills.models import Card

    log_in(page, live_server.url, "alice", "/bank/")
    tab_to(page, ".deck-button button")
    slug = page.evaluate("document.activeElement.closest('form').querySelector(\"input[name='item']\").value")
    with page.expect_response(lambda r: r.request.method == "POST" and "/bank/deck/add/" in r.url):
        page.keyboard.press("Enter")
    # The form was swapped for its "in your deck" twin: focus is on the new button, not lost to the page.
    button = page.locator(f".deck-button:has(input[name='item'][value='{slug}']) button")
    expect(button).to_contain_text("In your deck")
    expect(button).to_be_focused()
    assert Card.objects.filter(user=candidate, item__slug=slug).count() == 1


def test_sign_up_errors_take_focus(content, live_server, page):
    page.goto(f"{live_server.url}/accounts/signup/")
    tab_to(page, "input[name='username']")
    page.keyboard.type("bob")
    tab_to(page, "input[name='email']")
    page.keyboard.type("bob@example.com")
    tab_to(page, "input[name='password1']")
    page.keyboard.type("correct-horse-battery-staple-9")
    tab_to(page, "input[name='password2']")
    page.keyboard.type("something-else-entirely-7")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    # The form comes back with the second password marked (and only it): focus is on it, not on the first
    # field's autofocus.
    assert page.locator("main [aria-invalid='true']").count() == 1
    field = page.locator("input[name='password2']")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    assert get_user_model().objects.filter(username="bob").count() == 0


def test_a_poll_refreshing_the_coach_tables_keeps_focus(content, live_server, page):
    coach = UserFactory(username="carol", role="coach")
    CohortFactory(coach=coach, name="Autumn cohort", members=[UserFactory(username="alice", role="candidate")])
    log_in(page, live_server.url, "carol", "/coach/")

    # The last table's CSV link: not the block's first control, so the same position must be found again.
    link = "#dashboard-tables a[href='?export=candidates']"
    tab_to(page, link)
    # The tables refresh at once when the tab becomes visible again (and every few seconds): the block holding
    # the focused link is replaced, and focus goes to the same link in the new block.
    with page.expect_response(lambda r: r.request.headers.get("hx-request") and "/coach/" in r.url):
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(page.locator("#dashboard-tables p").first).to_contain_text("Updated")
    expect(page.locator(link)).to_be_focused()

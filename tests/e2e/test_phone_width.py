"""The main pages on a phone (issue 12): at 390 × 844 nothing widens the page, the menu collapses, text stays legible.

Every page is measured in a real Chromium at an iPhone-sized viewport: the document may not scroll sideways
(``scrollWidth <= 390``; a wide table or formula may scroll inside its own ``overflow-x: auto`` box), the main
menu is folded behind its toggler, and no visible text is smaller than 11 px. A full-page screenshot of every
page is saved to ``test-artifacts/phone/`` whether the test passes or not, to be looked at.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests import needs
from tests.factories import CohortFactory, UserFactory

from .conftest import ARTIFACTS, DRAWN_PROBLEM
from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

PHONE = {"width": 390, "height": 844}
SHOTS = ARTIFACTS / "phone"
SMALLEST_TEXT_PX = 11

# What sticks out of the page: the document's width, the elements reaching past the viewport's right edge that
# no scrolling or clipping box of their own contains, and the smallest font size of any visible text.
MEASURE = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = el => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      const overflow = getComputedStyle(up).overflowX;
      if (overflow !== 'visible') return true;
    }
    return false;
  };
  const outside = [];
  let smallest = Infinity, smallestText = '';
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== 'visible') continue;
    if ((box.right > width + 0.5 || box.left < -0.5) && !clipped(el) && !el.closest('.visually-hidden, .visually-hidden-focusable')) {
      outside.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${[...el.classList].join('.')} [${Math.round(box.left)}, ${Math.round(box.right)}]`);
    }
    const ownText = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    // Superscripts (2^30) are meant to be smaller; SVG and MathML scale with their own rules.
    if (ownText && !el.closest('.visually-hidden, .visually-hidden-focusable, svg, math, sup, sub, [aria-hidden="true"]')) {
      const size = parseFloat(style.fontSize);
      if (size < smallest) { smallest = size; smallestText = el.textContent.trim().slice(0, 40); }
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, width, outside: outside.slice(0, 8),
          smallest, smallestText};
}"""  # noqa: E501 (JavaScript run in the page: the string is kept as written)


def shoot(page, name: str) -> None:
    """A full-page screenshot of ``page`` as ``test-artifacts/phone/<name>.png`` (kept on success too)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    # A chapter is some 25,000 px tall at 2x: more than the default 10 s on a busy two-core machine.
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True, timeout=60_000)


def check(page, name: str, path: str, problems: dict) -> None:
    """Open ``path``, screenshot it, and note in ``problems[name]`` whatever does not fit a phone."""
    response = page.goto(path)  # relative to the context's base_url, the live server
    assert response.ok, (name, path, response.status)
    page.wait_for_load_state("networkidle")
    shoot(page, name)
    found = []
    measured = page.evaluate(MEASURE)
    if measured["scrollWidth"] > PHONE["width"]:
        found.append(f"the page is {measured['scrollWidth']} px wide: {measured['outside']}")
    if measured["smallest"] < SMALLEST_TEXT_PX:
        found.append(f"{measured['smallest']} px text: {measured['smallestText']!r}")
    toggler = page.locator(".app-navbar .navbar-toggler")
    if not toggler.is_visible() or page.locator("#main-nav").is_visible():
        found.append("the main menu is not collapsed behind its toggler")
    if found:
        problems[name] = found


def phone(new_context, live_server):
    """A phone-sized, touch, JavaScript-enabled context on the live server."""
    return new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True,
                       base_url=live_server.url)


@pytest.fixture
def people(transactional_db):
    """carol, a coach with a cohort holding alice, a candidate."""
    coach = UserFactory(username="carol", role="coach")
    candidate = UserFactory(username="alice", role="candidate")
    CohortFactory(coach=coach, name="Autumn cohort", members=[candidate])
    return coach, candidate


@pytest.fixture
def busy_candidate(content, people):
    """alice with two due cards, the problem templates synced for rounds, and an assignment from carol."""
    from coaching.models import QuestionSet
    from coaching.services import add_entry, assign
    from drills.bank.problem_templates import sync_problem_templates
    from drills.models import BankItem
    from drills.reviews.scheduling import add_to_deck
    from drills.rounds.presets import sync_presets

    coach, candidate = people
    sync_problem_templates()
    sync_presets()  # as load_content does
    items = list(BankItem.objects.filter(kind=BankItem.OPEN, published=True).exclude(rubric=[]).order_by("pk")[:2])
    assert add_to_deck(candidate, items) == 2
    question_set = QuestionSet.objects.create(coach=coach, title="KV cache warm-up before the onsite interview")
    for item in items:
        add_entry(question_set, item=item)
    assign(question_set, coach, due_at=timezone.now() + timedelta(days=3), candidate=candidate)
    return candidate


def test_public_pages_fit_a_phone(content, live_server, new_context):
    """Home, the track page, two chapters, a calculator, a problem and the login page; then the menu opened."""
    page = phone(new_context, live_server).new_page()
    problems: dict[str, list[str]] = {}
    for name, path in [("home", "/"), ("track", "/runbook/"), ("chapter", "/runbook/06-kv-cache/"),
                       ("chapter-figure", "/runbook/04-gpu-roofline/"), ("calculator", "/calculators/ladder/"),
                       ("problem", DRAWN_PROBLEM), ("login", "/accounts/login/"),
                       ("errata", "/errata/"), ("glossary", "/glossary/"), ("bank", "/bank/"),
                       ("reading", "/reading/"), ("drills", "/drills/"), ("signup", "/accounts/signup/")]:
        check(page, name, path, problems)
    assert problems == {}

    # The collapsed menu opens on a tap and fits the width too.
    page.goto("/")
    page.locator(".app-navbar .navbar-toggler").tap()
    expect(page.locator("#main-nav")).to_be_visible()
    expect(page.locator("#main-nav")).not_to_have_class(re.compile(r"\bcollapsing\b"))
    shoot(page, "home-menu-open")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_no_chapter_widens_the_page_on_a_phone(content, live_server, new_context):
    """Every chapter, with its tables, formulas, figures and calculators, stays within 390 px."""
    from runbook.models import Chapter

    page = phone(new_context, live_server).new_page()
    chapters = [chapter.get_absolute_url() for chapter in Chapter.objects.order_by("number")]
    assert len(chapters) == 16
    wide = {}
    for path in chapters:
        page.goto(path)
        measured = page.evaluate(MEASURE)
        if measured["scrollWidth"] > PHONE["width"]:
            wide[path] = (measured["scrollWidth"], measured["outside"])
    assert wide == {}


def test_candidate_pages_fit_a_phone(live_server, new_context, busy_candidate):
    """A candidate's review queue, assignments, round presets and a round in progress."""
    page = phone(new_context, live_server).new_page()
    log_in(page, live_server.url, "alice", "/review/")
    problems: dict[str, list[str]] = {}
    check(page, "reviews", "/review/", problems)
    check(page, "assignments", "/assignments/", problems)
    check(page, "rounds", "/rounds/", problems)
    preset = page.locator("form.round-preset", has=page.locator("h3", has_text=re.compile(r"^\s*Phone screen\s*$")))
    with page.expect_navigation(url=re.compile(r"/rounds/\d+/1/$")):
        preset.locator("[type='submit']").click()
    check(page, "round", page.url, problems)
    check(page, "home-signed-in", "/", problems)

    # The round closed: its report, with the rounds table now holding a row.
    from drills.models import Round
    from drills.rounds.services import close

    round_ = Round.objects.get(user=busy_candidate)
    close(round_)
    check(page, "round-report", f"/rounds/{round_.pk}/report/", problems)
    check(page, "rounds-with-a-row", "/rounds/", problems)
    assert problems == {}


def test_coach_dashboard_fits_a_phone(live_server, new_context, busy_candidate):
    """The coach's dashboard with a cohort, an assignment and its tables."""
    page = phone(new_context, live_server).new_page()
    log_in(page, live_server.url, "carol", "/coach/")
    problems: dict[str, list[str]] = {}
    check(page, "coach-dashboard", "/coach/", problems)
    assert problems == {}


@pytest.fixture
def reviewed_candidate(busy_candidate):
    """alice after reviewing her two due cards, with an interview date: every table of /progress/ has rows."""
    from drills.models import Card, ReviewLog, ReviewSettings
    from drills.reviews.services import record_open_review

    for card in Card.objects.filter(user=busy_candidate):
        record_open_review(busy_candidate, card.pk, card.version, ReviewLog.HARD, answer="KV heads.", ticked=[0])
    settings = ReviewSettings.for_user(busy_candidate)
    settings.interview_date = timezone.localdate() + timedelta(days=20)
    settings.save()
    return busy_candidate


def test_progress_fits_a_phone(live_server, new_context, reviewed_candidate):
    """/progress/ with history, a forecast and an interview date: its number tables scroll inside their box."""
    page = phone(new_context, live_server).new_page()
    log_in(page, live_server.url, "alice", "/progress/")
    problems: dict[str, list[str]] = {}
    check(page, "progress", "/progress/", problems)
    assert problems == {}
    # Regression: the five-column recall table ran 9 px past the window (its right edge at 399 px), cut off by
    # its box. Every table now fits its box, so nothing hides behind a sideways scroll.
    tables = page.evaluate("""() => [...document.querySelectorAll('.progress-page table')].map(t => ({
        id: t.id, right: t.getBoundingClientRect().right, box: t.parentElement.clientWidth, width: t.scrollWidth}))""")
    assert {t["id"] for t in tables} >= {"table-recall", "table-reviews", "table-forecast", "table-retention"}
    assert [t for t in tables if t["right"] > PHONE["width"] or t["width"] > t["box"]] == []


DESKTOP = {"width": 1280, "height": 800}


def test_no_chapter_scrolls_sideways_on_a_desktop(content, live_server, new_context):
    """At 1280 px, where the "On this page" column shows (xl), no chapter is wider than the window.

    Regression: the chapter row's 3rem gutters (``g-xl-5``) pulled it 12 px past the container's padding.
    """
    from runbook.models import Chapter

    page = new_context(viewport=DESKTOP, base_url=live_server.url).new_page()
    wide = {}
    for chapter in Chapter.objects.order_by("number"):
        page.goto(chapter.get_absolute_url())
        expect(page.locator("aside.rb-toc")).to_be_visible()
        measured = page.evaluate(MEASURE)
        assert measured["width"] <= DESKTOP["width"]  # the window less any vertical scrollbar
        if measured["scrollWidth"] > measured["width"]:
            wide[chapter.slug] = (measured["scrollWidth"], measured["outside"])
    assert wide == {}


def test_the_coach_navbar_holds_one_row_at_1366_px(live_server, new_context, busy_candidate):
    """A laptop's 1366 px: the coach's menu (five links, search, Assignments, Coach, name, Log out) is one row."""
    page = new_context(viewport={"width": 1366, "height": 800}, base_url=live_server.url).new_page()
    log_in(page, live_server.url, "carol", "/coach/")
    tops = page.evaluate("""() => [...document.querySelectorAll(
        '.app-navbar .navbar-brand, .app-navbar .nav-link, .app-navbar .navbar-text, .app-navbar form button')]
        .map(el => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2))""")
    assert len(tops) >= 9 and max(tops) - min(tops) <= 4, tops
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366


def test_a_changed_input_shows_its_result_where_the_phone_user_is(content, live_server, new_context):
    """The ladder's results sit some 2,000 px below its inputs on a phone: a bar at the bottom of the screen
    carries the headline numbers while they are off screen, and hides once the results are in view."""
    page = phone(new_context, live_server).new_page()
    page.goto("/calculators/ladder/")
    context_box = page.locator("input[name='context']")
    context_box.scroll_into_view_if_needed()
    bar = page.locator("#calc-summary")
    expect(bar).to_be_in_viewport()
    expect(bar).to_contain_text("Users, worst case 53 users")
    assert page.locator("#results").evaluate("el => el.getBoundingClientRect().top") > PHONE["height"]

    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.method == "GET"):
        context_box.fill("32768")
        context_box.blur()
    # 8,192 → 32,768 tokens: a quarter of the users (⌊52.62 GiB ÷ 4 GiB⌋ = 13), in sight without scrolling.
    expect(bar).to_contain_text("Users, worst case 13 users")
    expect(bar.locator(".calc-summary-item.is-changed")).to_have_count(1)
    expect(bar).to_be_in_viewport()

    page.locator("#results").scroll_into_view_if_needed()
    expect(bar).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_progress_tables_show_their_last_row(live_server, new_context, reviewed_candidate):
    """Regression: the table of ladder steps was cut at 300 px, its last steps hidden with nothing saying so."""
    from drills.models import Attempt, StepAnswer
    from drills.problems.generation import create_problem

    problem = create_problem("ladder", seed=5, user=reviewed_candidate)
    attempt = Attempt.objects.create(problem=problem, user=reviewed_candidate, score=1.0)
    for position, step in enumerate(problem.solve().steps, start=1):
        StepAnswer.objects.create(attempt=attempt, position=position, key=step.key, unit=step.unit,
                                  raw_input=repr(step.value), parsed_value=step.value, verdict="correct", credit=1,
                                  expected=step.value)
    page = new_context(viewport={"width": 1366, "height": 900}, base_url=live_server.url).new_page()
    log_in(page, live_server.url, "alice", "/progress/")

    expect(page.locator("#table-steps tbody tr")).to_have_count(8)
    cut = page.evaluate("""() => [...document.querySelectorAll('.progress-page .table-box')].filter(box => {
        const last = box.querySelector('tbody tr:last-child');
        return last && last.getBoundingClientRect().bottom > box.getBoundingClientRect().bottom + 1;
      }).map(box => box.querySelector('table').id)""")
    assert cut == []


# Issue of a new user's try at 390 px: what was cut off at the right edge with no sign of more.
FORMULAS = """() => [...document.querySelectorAll('.calc-formula')].map(el => ({
  wide: el.scrollWidth > el.clientWidth + 1,
  more: el.nextElementSibling.classList.contains('calc-formula-more') && el.nextElementSibling.offsetHeight > 0
        ? el.nextElementSibling.textContent : '',
}))"""


def test_a_formula_wider_than_a_phone_says_it_scrolls(content, live_server, new_context):
    """On /calculators/ladder/ the formulas of steps 6 and 8 (among others) are wider than 390 px; a phone draws no
    scrollbar until one scrolls, so the formula looked cut off: a sentence under each wide one says to swipe it,
    and none under those that fit."""
    page = phone(new_context, live_server).new_page()
    problems: dict[str, list[str]] = {}
    check(page, "calculator-formulas", "/calculators/ladder/", problems)
    assert problems == {}
    formulas = page.evaluate(FORMULAS)
    wide = {index + 1 for index, formula in enumerate(formulas) if formula["wide"]}
    assert {6, 8} <= wide, wide
    told = {index + 1 for index, formula in enumerate(formulas) if formula["more"]}
    assert told == wide
    assert formulas[5]["more"] == "Swipe sideways for the rest of the formula →"


CANDIDATES = """() => {
  const table = document.querySelector('#table-candidates table');
  const header = table.querySelector('thead').getBoundingClientRect();
  const firstRow = table.querySelector('tbody tr').getBoundingClientRect();
  return {headerHeight: header.height, gap: firstRow.top - table.getBoundingClientRect().top,
          labels: [...table.querySelectorAll('tbody tr:first-child td')].map(td => getComputedStyle(td, '::before').content),
          rightmost: Math.max(...[...table.querySelectorAll('td')].map(td => td.getBoundingClientRect().right)),
          scrolls: table.parentElement.scrollWidth > table.parentElement.clientWidth};
}"""  # noqa: E501


def test_the_coach_candidates_table_reads_row_by_row_on_a_phone(live_server, new_context, busy_candidate):
    """The Candidates table had a tall empty band above its headers and columns cut off past "Time on
    assignments"; on a phone each row is now a block of "header: value" lines, all within the screen."""
    page = phone(new_context, live_server).new_page()
    log_in(page, live_server.url, "carol", "/coach/")
    problems: dict[str, list[str]] = {}
    check(page, "coach-candidates", "/coach/", problems)
    assert problems == {}
    table = page.evaluate(CANDIDATES)
    headers = page.locator("#table-candidates thead th").all_inner_texts()
    assert table["labels"] == [f'"{header}"' for header in headers]
    assert "Time on assignments" in headers
    assert table["headerHeight"] <= 1 and table["gap"] <= 1  # the headers are hidden: no band above the rows
    assert table["rightmost"] <= PHONE["width"] and not table["scrolls"]


def test_a_long_username_ends_in_an_ellipsis_in_the_phone_menu(live_server, new_context, transactional_db):
    """A name of 150 characters (the column's limit, possible before sign-up took at most 40) stays inside the
    opened menu, cut with an ellipsis; the full name is in the link's title."""
    name = "a" * 150
    UserFactory(username=name, role="candidate")
    page = phone(new_context, live_server).new_page()
    log_in(page, live_server.url, name, "/")
    page.locator(".app-navbar .navbar-toggler").click()
    page.wait_for_selector("#main-nav.show")  # the collapse's transition has ended
    link = page.locator(".app-username")
    expect(link).to_be_visible()
    shoot(page, "long-username-menu")
    assert page.evaluate(MEASURE)["outside"] == []
    box = link.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    assert link.evaluate("el => el.scrollWidth > el.clientWidth && getComputedStyle(el).textOverflow") == "ellipsis"
    assert link.get_attribute("title") == f"{name}: account settings"
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

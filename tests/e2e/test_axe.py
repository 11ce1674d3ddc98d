"""axe-core scans the main pages, logged out and in, and every visible form field has an accessible name (issue 12).

axe-core comes from the npm registry at install time (``package.json``, pinned by ``package-lock.json``,
``npm ci`` in ``.ci/run``) and is injected from ``node_modules`` into each page: nothing is fetched at run time.
A violation of impact *serious* or *critical* fails the test, listed with its rule, impact and target nodes.
Pages are scanned in the states that matter: a calculator after an htmx recompute, a problem after a graded
submit, a review card revealed, a round in progress and its report, a form with errors.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests import needs
from tests.factories import AssignmentFactory, CohortFactory, UserFactory

from .conftest import DRAWN_PROBLEM
from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
CHAPTER = "/runbook/06-kv-cache/"   # a ladder calculator, a figure and the chapter's questions

# Every visible form control the user can operate, and whether it has an accessible name by the rules of
# HTML-AAM that apply to form fields: aria-labelledby, aria-label, a <label>, then title. A placeholder does
# not count (it disappears as soon as one types). A second opinion beside axe's "label" rule.
UNNAMED_FIELDS_JS = """() => {
  const text = (el) => (el ? (el.innerText || el.textContent || "") : "").trim();
  const named = (el) => {
    const ids = (el.getAttribute("aria-labelledby") || "").split(/\\s+/).filter(Boolean);
    if (ids.some((id) => text(document.getElementById(id)))) return true;
    if ((el.getAttribute("aria-label") || "").trim()) return true;
    if (Array.from(el.labels || []).some((label) => text(label))) return true;
    return Boolean((el.getAttribute("title") || "").trim());
  };
  const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  return Array.from(document.querySelectorAll("input, select, textarea"))
    .filter((el) => el.type !== "hidden" && visible(el) && !named(el))
    .map((el) => el.outerHTML.slice(0, 160));
}"""


def axe_problems(page, label: str) -> list[str]:
    """Run axe-core on the page as it is now; one line per serious/critical violation, naming rule and nodes."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated through the DevTools protocol: a <script> tag added to the page (add_script_tag) would be
        # refused by the site's Content-Security-Policy, which allows scripts from the site only.
        page.evaluate(AXE.read_text() + "\n;undefined")
    results = page.evaluate("""async () => {
      const results = await axe.run(document, {resultTypes: ["violations"]});
      return results.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => ({target: n.target.join(" "), summary: n.failureSummary}))}));
    }""")
    problems = []
    for violation in results:
        if violation["impact"] not in BLOCKING:
            continue
        nodes = "; ".join(node["target"] for node in violation["nodes"][:8])
        more = f" (+{len(violation['nodes']) - 8} more)" if len(violation["nodes"]) > 8 else ""
        # The first node's summary says why (e.g. "contrast of 4.47 (foreground #0d6efd, background #fbfcfd)").
        why = " ".join((violation["nodes"][0]["summary"] or "").split()) if violation["nodes"] else ""
        problems.append(f"{label}: {violation['id']} [{violation['impact']}] {violation['help']} -> {nodes}{more}"
                        f" | {why}")
    return problems


def unnamed_fields(page, label: str) -> list[str]:
    """Visible inputs, selects and textareas without an accessible name, one line each."""
    return [f"{label}: no accessible name: {html}" for html in page.evaluate(UNNAMED_FIELDS_JS)]


class Scanner:
    """Collects axe's serious/critical violations and unnamed fields over several pages, then fails once."""

    def __init__(self, page, base_url: str):
        self.page, self.base_url = page, base_url
        self.problems: list[str] = []
        self.scanned: list[str] = []

    def scan(self, label: str) -> None:
        """Scan the page in its current state under ``label``."""
        self.page.wait_for_load_state("load")
        self.problems += axe_problems(self.page, label)
        self.problems += unnamed_fields(self.page, label)
        self.scanned.append(label)

    def visit(self, path: str, label: str | None = None) -> None:
        """Open ``path`` (which must answer 200) and scan it."""
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.status == 200, (path, response and response.status)
        self.scan(label or path)

    def check(self) -> None:
        assert not self.problems, f"{len(self.problems)} accessibility problem(s):\n" + "\n".join(self.problems)


@pytest.fixture(autouse=True)
def axe_installed():
    """axe-core must be installed under CI; elsewhere its absence skips these tests with the way to fix it."""
    needs.file(AXE, "run `npm ci` at the repository root (.ci/run does)")


@pytest.fixture
def people(transactional_db):
    """carol, a coach with a cohort holding alice, a candidate."""
    coach, candidate = UserFactory(username="carol", role="coach"), UserFactory(username="alice", role="candidate")
    CohortFactory(coach=coach, name="Autumn cohort", members=[candidate])
    return coach, candidate


@pytest.fixture
def assigned_set(content, people):
    """A set of two bank items (an open question and a problem template) assigned to alice, due in a week."""
    from coaching.models import QuestionSet, SetEntry
    from drills.bank.problem_templates import sync_problem_templates
    from drills.models import BankItem

    sync_problem_templates()
    coach, candidate = people
    question_set = QuestionSet.objects.create(coach=coach, title="KV cache warm-up")
    items = [BankItem.objects.filter(kind=BankItem.OPEN, published=True).order_by("pk").first(),
             BankItem.objects.filter(kind=BankItem.PROBLEM, published=True).order_by("pk").first()]
    for position, item in enumerate(items, start=1):
        SetEntry.objects.create(question_set=question_set, position=position, item=item)
    assignment = AssignmentFactory(question_set=question_set, candidate=candidate)
    return question_set, assignment


@pytest.fixture
def problem_owner(people):
    """alice, who drives the candidate's pages, owns the reference problem."""
    return people[1]


def test_public_pages_logged_out(content, live_server, page):
    scanner = Scanner(page, live_server.url)
    for path in ("/", "/runbook/", CHAPTER, "/glossary/", "/errata/", "/calculators/ladder/",
                 "/accounts/login/", "/accounts/signup/"):
        scanner.visit(path)

    # The calculator after an htmx recompute: a new model, the results swapped in place.
    page.goto(f"{live_server.url}/calculators/ladder/")
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.headers.get("hx-request")):
        page.select_option("select[name='model']", "qwen2.5-7b")
    expect(page.locator("#results .calc-badge").first).to_be_visible()
    scanner.scan("calculator after a recompute")

    # ...and with an input error marked beside its field.
    with page.expect_response(lambda r: "/calculators/ladder/" in r.url and r.request.headers.get("hx-request")):
        page.fill("input[name='context']", "-5")
        page.locator("input[name='context']").press("Enter")
    expect(page.locator("#error-context")).not_to_be_empty()
    scanner.scan("calculator with an input error")

    # A problem page before and after a graded (htmx) submit: a drawn one (a stored problem is its owner's).
    scanner.visit(DRAWN_PROBLEM, "problem")
    page.fill("#answers input[name='card_gib']", "79.6")
    page.fill("#answers input[name='usable_gib']", "71.68 GiB")
    page.locator("#answers [type='submit']").first.click()
    page.locator("#not-recorded").wait_for()  # six steps blank: nothing recorded, the boxes marked
    scanner.scan("problem with blank steps refused")
    page.locator("#answers button[name='blanks']").click()
    page.locator("#answers .score").wait_for()
    scanner.scan("problem after a graded submit")

    # Forms with errors: a sign-up whose passwords differ, a failed log-in.
    page.goto(f"{live_server.url}/accounts/signup/")
    page.fill("input[name='username']", "bob")
    page.fill("input[name='password1']", "correct-horse-battery-staple-9")
    page.fill("input[name='password2']", "something-else-entirely-7")
    page.locator("form:has(input[name='password2']) [type='submit']").click()
    page.locator(".invalid-feedback, .errorlist, .alert-danger").first.wait_for()
    scanner.scan("sign-up with errors")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name='username']", "nobody")
    page.fill("input[name='password']", "wrong-password-1")
    page.locator("form:has(input[name='password']) [type='submit']").click()
    page.locator(".alert-danger, .errorlist, .invalid-feedback").first.wait_for()
    scanner.scan("log-in with errors")

    scanner.check()
    assert len(scanner.scanned) == 15


def test_candidate_pages(live_server, page, people, assigned_set, reference_problem):
    from drills.models import BankItem
    from drills.reviews.scheduling import add_to_deck
    from drills.rounds.models import Round
    from drills.rounds.services import start_round

    _, candidate = people
    item = BankItem.objects.filter(kind=BankItem.OPEN, published=True).exclude(rubric=[]).order_by("pk").first()
    assert add_to_deck(candidate, [item]) == 1
    live = start_round(candidate, "phone", rng=random.Random(7))
    over = start_round(candidate, "capacity", rng=random.Random(8))

    scanner = Scanner(page, live_server.url)
    log_in(page, live_server.url, "alice", "/review/")
    scanner.scan("review: a due card")
    page.fill("#review-card textarea[name='answer']", "Weights, then the KV cache per user.")
    page.locator("#review-card .review-answer-form [type='submit']").click()
    expect(page.locator("#review-card .review-model-answer")).to_be_visible()
    page.locator("#review-card .review-rubric input[name='ticked']").first.check()
    expect(page.locator("#ratings .review-suggestion")).to_contain_text("Suggested")
    scanner.scan("review: revealed, a rubric point ticked")

    for path in ("/", CHAPTER, "/assignments/", f"/assignments/{assigned_set[1].pk}/", "/rounds/", "/progress/",
                 "/bank/"):
        scanner.visit(path)
    for position in range(1, live.items.count() + 1):
        scanner.visit(f"/rounds/{live.pk}/{position}/", f"round in progress, item {position}")

    problem = reference_problem.get_absolute_url()
    page.goto(live_server.url + problem)
    page.fill("#answers input[name='card_gib']", "79.6")
    page.locator("#answers [type='submit']").first.click()
    page.locator("#answers button[name='blanks']").click()  # the blank steps counted as unanswered
    page.locator("#answers .score").wait_for()
    scanner.scan("problem graded and saved")
    # The interviewer's follow-up (issue 33 item 1): a step ticked, its value asked, then graded.
    page.locator("#followup input[name='marked']").first.check()
    page.locator("#followup [type='submit']").click()
    page.locator("#followup .followup-values input[type='text']").first.fill("1")
    scanner.scan("follow-up: the values of the ticked steps asked")
    page.locator("#followup [type='submit']").first.click()
    page.locator("#followup .followup-score").wait_for()
    scanner.scan("follow-up graded")
    followups = start_round(candidate, "followups", rng=random.Random(9))
    scanner.visit(f"/rounds/{followups.pk}/2/", "a follow-up round item")

    page.goto(f"{live_server.url}/rounds/{over.pk}/1/")
    page.locator(f"a[href='/rounds/{over.pk}/finish/confirm/']").click()
    with page.expect_navigation(url=re.compile(rf"/rounds/{over.pk}/report/$")):
        page.locator(f"form[action='/rounds/{over.pk}/finish/'] [type='submit']").click()
    assert not Round.objects.get(pk=over.pk).is_active
    scanner.scan("round report")

    scanner.check()
    assert len(scanner.scanned) == 14 + live.items.count()


def test_coach_pages(live_server, page, people, assigned_set):
    question_set, assignment = assigned_set
    scanner = Scanner(page, live_server.url)
    log_in(page, live_server.url, "carol", "/coach/")
    scanner.visit("/coach/", "coach dashboard")
    cohort = people[0].coached_cohorts.get()
    for path in (f"/coach/cohorts/{cohort.pk}/", f"/coach/candidates/{people[1].pk}/", "/coach/sets/",
                 f"/coach/sets/{question_set.pk}/", f"/coach/sets/{question_set.pk}/assign/",
                 f"/coach/assignments/{assignment.pk}/", "/coach/questions/", "/coach/questions/new/"):
        scanner.visit(path)

    # A coach's form with errors: a question with no prompt.
    page.goto(f"{live_server.url}/coach/questions/new/")
    page.locator("main form[method='post'] [type='submit']").last.click()
    page.locator("main .text-danger, main .invalid-feedback, main .errorlist").first.wait_for()
    scanner.scan("new question with errors")

    scanner.check()
    assert len(scanner.scanned) == 10


def test_the_checks_catch_what_they_look_for(page):
    """Neither check is vacuous: unlabelled fields and grey-on-white text are caught.

    axe accepts a placeholder as a field's name; the explicit check does not (it vanishes as one types)."""
    page.set_content("""<!doctype html><html lang="en"><head><title>t</title></head><body><main>
      <h1>Check</h1>
      <label for="named">Named</label><input id="named">
      <input name="placeholder-only" placeholder="a placeholder is not a label">
      <input name="bare">
      <input type="hidden" name="hidden">
      <p id="pale" style="color: #bbbbbb; background: #ffffff">Pale text</p>
    </main></body></html>""")
    unnamed = unnamed_fields(page, "fixture")
    assert len(unnamed) == 2
    assert 'name="placeholder-only"' in unnamed[0] and 'name="bare"' in unnamed[1]
    problems = sorted(axe_problems(page, "fixture"))
    assert [line.split(" ", 2)[1] for line in problems] == ["color-contrast", "label"], problems
    assert "#pale" in problems[0] and 'input[name="bare"]' in problems[1], problems

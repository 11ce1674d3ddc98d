"""A chapter's questions as practice (issue 37, item 2): write an answer, then compare; or ask for the answer.

On a chapter page each question shows its prompt and an answer box; the model answer and rubric stay closed
until the reader has written something and presses "Compare with the model answer" (static/js/practice.js), or
opens the quieter "Show the model answer without answering". An empty box opens nothing and says why. The
question set is one link from the chapter's header; in print every answer is open. Nothing typed is sent:
the test counts the requests the page makes while practising. Screenshots of the first question at phone
(390 px) and desktop (1366 px) width, before and after the reveal, go to ``test-artifacts/practice/``.
"""

from __future__ import annotations

import pytest

from tests import needs

from .conftest import ARTIFACTS
from .test_axe import AXE, axe_problems, unnamed_fields

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

CHAPTER = "/runbook/06-kv-cache/"
OUT = ARTIFACTS / "practice"
ANSWER = "KV bytes per token = 2 × layers × KV heads × head dim × bytes: 131,072 bytes for Llama-3.1-8B in BF16."


def test_a_model_answer_stays_closed_until_the_reader_answers_or_asks(content, live_server, page):
    page.goto(f"{live_server.url}{CHAPTER}")
    questions = page.locator("#questions .rb-question")
    assert questions.count() >= 10
    assert page.locator("details.rb-answer[open]").count() == 0
    for index in range(questions.count()):  # closed on arrival: prompt and box shown, answer and rubric not
        question = questions.nth(index)
        assert question.locator(".rb-question-prompt").is_visible()
        assert question.locator("textarea").is_visible()
        assert not question.locator(".rb-answer-body").is_visible()

    # The set is one click from the chapter's top: the header's link lands on the questions.
    page.locator(".rb-chapter-head a[href='#questions']").click()
    expect(page).to_have_url(f"{live_server.url}{CHAPTER}#questions")
    expect(page.locator("#questions-heading")).to_be_in_viewport()

    sent = []
    page.on("request", lambda request: sent.append(request.url))
    first, second = questions.nth(0), questions.nth(1)
    compare = first.locator("[data-practice-check]")

    # An empty box: the compare button opens nothing and says what to do instead.
    compare.click()
    expect(first.locator(".rb-practice-hint")).to_have_text(
        "Write an answer first, or use “Show the model answer without answering” below.")
    assert not first.locator(".rb-answer-body").is_visible()
    expect(first.locator("textarea")).to_be_focused()

    # Written, then compared: the model answer and rubric open beside what was typed; focus moves to them.
    first.locator("textarea").fill(ANSWER)
    compare.click()
    body = first.locator(".rb-answer-body")
    expect(body).to_be_visible()
    assert body.locator("p, li").first.text_content().strip()
    expect(first.locator(".rb-answer-heading").first).to_be_focused()
    expect(first.locator("textarea")).to_have_value(ANSWER)
    assert first.locator(".rb-rubric li").count() >= 1
    assert not second.locator(".rb-answer-body").is_visible()  # one question's reveal opens no other

    # On request, without writing: the secondary summary opens the second answer.
    summary = second.locator("details.rb-answer > summary")
    expect(summary.locator(".rb-answer-show")).to_have_text("Show the model answer without answering")
    expect(summary.locator(".rb-answer-show")).to_be_visible()
    summary.click()
    expect(second.locator(".rb-answer-body")).to_be_visible()
    assert page.locator("details.rb-answer[open]").count() == 2
    assert sent == [], f"practising sent requests: {sent}"

    # In print every answer is open, those nobody revealed included, and the practice controls are not printed.
    page.emulate_media(media="print")
    bodies = page.locator(".rb-answer-body")
    assert bodies.count() == questions.count()
    for index in range(bodies.count()):
        assert bodies.nth(index).is_visible(), f"answer {index + 1} is hidden in print"
    assert not first.locator(".rb-practice").is_visible()
    page.emulate_media(media="screen")
    assert not questions.nth(2).locator(".rb-answer-body").is_visible()


def test_what_was_typed_survives_a_reload_and_stays_in_the_browser(content, live_server, page):
    """A reload (or a return to the chapter) finds each answer where it was written, and the model answers
    closed again; an emptied box stays empty (issue 28's new-user pass: answers were lost on reload)."""
    page.goto(f"{live_server.url}{CHAPTER}")
    questions = page.locator("#questions .rb-question")
    sent = []
    page.on("request", lambda request: sent.append(request.url) if request.method != "GET" else None)
    questions.nth(0).locator("textarea").fill(ANSWER)
    questions.nth(2).locator("textarea").fill("Paged attention: blocks of 16 tokens.")
    questions.nth(2).locator("textarea").fill("")

    page.reload()

    expect(questions.nth(0).locator("textarea")).to_have_value(ANSWER)
    expect(questions.nth(1).locator("textarea")).to_have_value("")
    expect(questions.nth(2).locator("textarea")).to_have_value("")
    assert page.locator("details.rb-answer[open]").count() == 0
    assert sent == [], f"typing sent requests: {sent}"
    page.goto(f"{live_server.url}/runbook/09-number-formats/")
    assert all(box == "" for box in page.locator("#questions textarea").evaluate_all("bs => bs.map(b => b.value)"))


def test_without_javascript_the_summary_still_opens_the_answer(content, live_server, new_context):
    page = new_context(java_script_enabled=False).new_page()
    page.goto(f"{live_server.url}{CHAPTER}")
    first = page.locator("#questions .rb-question").first
    assert not first.locator("[data-practice-check]").is_visible()  # the button needs the script: hidden
    assert not first.locator(".rb-answer-body").is_visible()
    first.locator("details.rb-answer > summary").click()
    assert first.locator(".rb-answer-body").is_visible()


@pytest.mark.parametrize("width", [390, 1366])
def test_screenshots_of_a_question_before_and_after_its_reveal(content, live_server, new_context, width):
    page = new_context(viewport={"width": width, "height": 900}).new_page()
    page.goto(f"{live_server.url}{CHAPTER}#questions")
    first = page.locator("#questions .rb-question").first
    first.scroll_into_view_if_needed()
    OUT.mkdir(parents=True, exist_ok=True)
    box = first.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box  # no sideways scroll
    first.screenshot(path=str(OUT / f"question-{width}-before.png"))
    first.locator("textarea").fill(ANSWER)
    first.locator("[data-practice-check]").click()
    expect(first.locator(".rb-answer-body")).to_be_visible()
    first.screenshot(path=str(OUT / f"question-{width}-after.png"))


def test_the_chapter_with_an_answer_revealed_passes_axe(content, live_server, page):
    needs.file(AXE, "run `npm ci` at the repository root (.ci/run does)")
    page.goto(f"{live_server.url}{CHAPTER}")
    first = page.locator("#questions .rb-question").first
    first.locator("textarea").fill(ANSWER)
    first.locator("[data-practice-check]").click()
    expect(first.locator(".rb-answer-body")).to_be_visible()
    problems = axe_problems(page, CHAPTER) + unnamed_fields(page, CHAPTER)
    assert not problems, "\n".join(problems)

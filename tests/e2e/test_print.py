"""Printing a chapter (issue 12): figures flattened, answers revealed, calculators with their current values.

A chapter with a step-through figure, an embedded calculator and interview questions is printed twice: as the
print media type (computed visibility of each part) and as a real PDF from Chromium's print pipeline, whose
text is read back with pypdf. The calculator is recomputed first (htmx swap), so the print must carry the new
values, not the preset's. The PDF and a print-media screenshot are kept in ``test-artifacts/print/``.
"""

from __future__ import annotations

import re
import unicodedata

import pytest

from tests import needs

from .conftest import ARTIFACTS

pypdf = needs.module("pypdf")
expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

CHAPTER = "/runbook/04-gpu-roofline/"
ROOFLINE_EMBED = "aside.calc-embed:has(form[action$='/calculators/roofline/'])"
NEW_BATCH = "777"
# The decode step's arithmetic intensity at a batch of 777: one FLOP per byte per sequence (engine value).
NEW_INTENSITY = "777.0 FLOP/byte"
OUT = ARTIFACTS / "print"


def squash(text: str) -> str:
    """``text`` without whitespace or ligatures: PDF text extraction breaks and joins lines where the layout
    wraps, and gives the font's "fi"/"fl" ligatures back as single characters (NFKC splits them again)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def pdf_text(path) -> str:
    """All the text of the PDF at ``path``, page after page."""
    return "\n".join(page.extract_text() or "" for page in pypdf.PdfReader(str(path)).pages)


def recompute_calculator(page) -> None:
    """Type a new batch into the chapter's roofline calculator and wait for htmx to swap the new results in."""
    embed = page.locator(ROOFLINE_EMBED)
    embed.scroll_into_view_if_needed()
    field = embed.locator("input[name='batch']")
    with page.expect_response(lambda r: "/calculators/roofline/" in r.url and "embed=calc-" in r.url) as response:
        field.fill(NEW_BATCH)
        field.dispatch_event("change")
    assert response.value.ok
    embed.locator(".calc-embed-step-value", has_text=NEW_INTENSITY).wait_for()


def figure_captions(page) -> list[str]:
    """Every frame caption of the chapter's first figure, without its "Step n of m" badge."""
    return page.locator(".rb-figure").first.evaluate(
        """figure => Array.from(figure.querySelectorAll('.rb-figure-caption')).map(p => {
             const clone = p.cloneNode(true);
             clone.querySelector('.rb-figure-stepno').remove();
             return clone.textContent.trim();
           })""")


def assert_print_layout(page, *, recomputed: bool) -> None:
    """In print media: chrome and buttons hidden, the figure flattened, every answer shown, the calculator's values."""
    # Navigation, footer and every button (figure stepper, calculator, deck, summaries) stay off paper.
    for selector in (".app-navbar", ".app-strip", ".app-footer", ".rb-pager", ".rb-figure-controls",
                     ".calc-embed-actions", ".rb-answer > summary"):
        hidden = page.locator(selector)
        assert hidden.count() > 0, selector
        for index in range(hidden.count()):
            assert not hidden.nth(index).is_visible(), f"{selector} prints"
    buttons = page.locator("main button")
    assert all(not buttons.nth(i).is_visible() for i in range(buttons.count())), "a button prints"

    # The figure: its last frame (the full final picture) is drawn, and every step is listed in order.
    figure = page.locator(".rb-figure").first
    steps = int(figure.get_attribute("data-steps"))
    frames = figure.locator(".rb-figure-frame")
    assert frames.count() == steps >= 3
    final = frames.nth(steps - 1)
    assert final.is_visible()
    box = final.locator("svg").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 150, box
    assert final.evaluate("el => getComputedStyle(el).opacity") == "1"
    assert final.evaluate("el => getComputedStyle(el).visibility") == "visible"
    for index in range(steps - 1):  # the earlier frames are summed up by the final picture and the list
        assert not frames.nth(index).is_visible()
    listed = figure.locator("ol.rb-figure-steps > li")
    assert figure.locator("ol.rb-figure-steps").is_visible()
    assert [listed.nth(i).inner_text().strip() for i in range(listed.count())] == figure_captions(page)
    assert all(listed.nth(i).is_visible() for i in range(steps))

    # Every question's model answer and rubric, open although no one clicked them.
    answers = page.locator(".rb-answer-body")
    assert answers.count() >= 3
    for index in range(answers.count()):
        body = answers.nth(index)
        assert body.is_visible(), f"answer {index + 1} is hidden in print"
        assert body.bounding_box()["height"] > 20
        assert body.locator("p, li").first.is_visible()

    # The calculator: the values in the form now, and their results.
    embed = page.locator(ROOFLINE_EMBED)
    field = embed.locator("input[name='batch']")
    assert field.is_visible()
    assert field.input_value() == (NEW_BATCH if recomputed else "1")
    intensity = embed.locator(".calc-embed-step-value").nth(1)
    assert intensity.is_visible()
    assert intensity.inner_text().startswith(NEW_INTENSITY if recomputed else "1 FLOP/byte")


def test_a_chapter_prints_flattened_figures_answers_and_current_calculator_values(content, live_server, page):
    """Figure stepped to 2, calculator recomputed, answers closed: print media and the PDF show it all."""
    page.goto(f"{live_server.url}{CHAPTER}")
    page.locator(".rb-figure.is-enhanced").first.wait_for()
    # Leave the figure on its second step: print must not depend on where the reader stopped.
    page.locator(".rb-figure").first.locator("[data-figure-action='next']").click()
    recompute_calculator(page)
    answer = page.locator(".rb-answer").first
    answer_text = answer.locator(".rb-answer-body p").first.text_content().strip()
    assert len(answer_text) > 40
    assert page.locator(".rb-answer[open]").count() == 0
    captions = figure_captions(page)

    page.emulate_media(media="print")
    assert_print_layout(page, recomputed=True)
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "chapter-print-media.png"), full_page=True)

    pdf = OUT / "chapter.pdf"
    page.pdf(path=str(pdf), format="A4", print_background=True)
    assert pdf.read_bytes().startswith(b"%PDF-")
    text = squash(pdf_text(pdf))
    for number, caption in enumerate(captions, start=1):
        assert squash(caption) in text, f"step {number}'s caption is not in the PDF"
    assert squash(answer_text) in text, "the first model answer is not in the PDF"
    assert squash(NEW_INTENSITY) in text, "the recomputed calculator value is not in the PDF"
    assert squash("1 FLOP/byte, below the ridge") in text  # the figure keeps its own preset (batch 1 first)
    for chrome in ("Skip to content", "Log in", "Search the runbook", "Calculate", "Reveal the model answer", "Next →"):
        assert chrome.replace(" ", "") not in text, f"{chrome!r} is printed"

    # After printing, the page is as the reader left it: answers closed, the figure on step 2.
    page.emulate_media(media="screen")
    assert page.locator(".rb-answer[open]").count() == 0
    assert page.locator(".rb-figure").first.locator(".rb-figure-frame.is-current").get_attribute("data-step") == "2"
    # (expect waits: the stepper's cross-fade hides the final frame again over 0.2 s.)
    expect(page.locator(".rb-figure").first.locator(".rb-figure-frame").last).to_be_hidden()


def test_print_opens_closed_details_and_restores_them_after(content, live_server, page):
    """static/js/print.js: beforeprint opens every closed <details>; afterprint closes only those it opened."""
    page.goto(f"{live_server.url}{CHAPTER}")
    answers = page.locator("details.rb-answer")
    assert answers.count() >= 3
    answers.nth(1).locator("summary").click()  # the reader opened the second answer themselves
    assert page.locator("details[open]").count() == 1

    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert page.locator("details:not([open])").count() == 0
    assert answers.nth(0).locator(".rb-answer-body").is_visible()  # open for real, even in screen media

    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    assert page.locator("details.rb-answer[open]").count() == 1
    assert answers.nth(1).get_attribute("open") is not None
    assert not answers.nth(0).locator(".rb-answer-body").is_visible()


def test_a_chapter_prints_the_same_without_javascript(content, live_server, new_context):
    """With scripts off only the print CSS works: the same flattened figure, open answers and preset values."""
    page = new_context(java_script_enabled=False).new_page()
    page.goto(f"{live_server.url}{CHAPTER}")
    answer_text = page.locator(".rb-answer-body p").first.text_content().strip()
    captions = figure_captions(page)

    page.emulate_media(media="print")
    assert_print_layout(page, recomputed=False)

    OUT.mkdir(parents=True, exist_ok=True)
    pdf = OUT / "chapter-no-js.pdf"
    page.pdf(path=str(pdf), format="A4")
    text = squash(pdf_text(pdf))
    assert all(squash(caption) in text for caption in captions)
    assert squash(answer_text) in text

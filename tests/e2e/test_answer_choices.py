"""A verdict step answered by its choice and a rounded answer, in the browser (issue 33 item 2): the drill page
grades over htmx, keeps the choice and says what it read; the tolerance sits beside each box."""

from __future__ import annotations

import re

import pytest

from tests import needs

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

# The reference roofline (the family's default inputs), drawn for a visitor, not stored.
ROOFLINE = "/drills/roofline/new/?seed=0"


def test_a_choice_and_rounded_figures_grade_on_the_drill_page(content, live_server, page):
    from drills.problems.generation import draw_problem

    problem = draw_problem("roofline", 0)
    right = {step.key: step.value for step in problem.solve().steps}
    word = "compute-bound" if right["decode_bound"] == 1 else "memory-bound"
    ridge = right["ridge_flop_per_byte"]
    typed = f"{ridge:.2g}"  # the ridge to two figures ("3.1e+02" for 312.5)
    # Outside the 0.5 % tolerance, only the figures make it right, and the message says so.
    note = "Correct to 2 significant figures" if abs(float(typed) - ridge) > 0.005 * ridge else "Correct."

    page.goto(live_server.url + ROOFLINE)
    expect(page.locator("#step-ridge_flop_per_byte .step-tolerance")).to_have_text("±0.5 %")
    page.select_option("#answers select[name='decode_bound']", word)
    page.fill("#answers input[name='ridge_flop_per_byte']", typed)
    page.locator("#answers [type='submit']").first.click()
    page.locator("#answers button[name='blanks']").click()  # the other steps left blank, counted unanswered
    page.locator("#answers .score").wait_for()

    expect(page.locator("#step-decode_bound")).to_have_class(re.compile(r"(^|\s)verdict-correct(\s|$)"))
    expect(page.locator("#answers select[name='decode_bound']")).to_have_value(word)
    ridge_step = page.locator("#step-ridge_flop_per_byte")
    expect(ridge_step).to_have_class(re.compile(r"(^|\s)verdict-correct(\s|$)"))
    expect(ridge_step.locator(".grade-message")).to_contain_text(note)

"""Unit labels stay on one line beside their box, and a formula wider than its block says it scrolls (issue 20, item 7).

Measured in Chromium at a phone's 390 px and a laptop's 1366 px: every calculator page, the drill page and the
errata. A unit (``GiB``, ``tok/s``) is an ``.input-group-text`` beside its input or the "in GiB" of a step's
label: it must sit on the input's row and not break over two lines. A formula block (``.rb-formula``,
``.calc-formula``) wider than its box scrolls inside it, with a shadow at the clipped edge (a phone hides its
scrollbar) and a thin visible scrollbar on a desktop.
"""

from __future__ import annotations

import pytest

from .conftest import ARTIFACTS, DRAWN_PROBLEM

pytestmark = [pytest.mark.browser]

WIDTHS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1366, "height": 800}}
SHOTS = ARTIFACTS / "units"

# Units that wrap or leave their input's row; formula blocks that overflow without a cue of their own.
MEASURE = """() => {
  const lines = el => {
    const range = document.createRange();
    range.selectNodeContents(el);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    return tops.size;
  };
  const units = [];
  for (const group of document.querySelectorAll('.input-group')) {
    const input = group.querySelector('input, select');
    for (const unit of group.querySelectorAll('.input-group-text')) {
      if (!input || unit.offsetParent === null) continue;
      const a = input.getBoundingClientRect(), b = unit.getBoundingClientRect();
      if (lines(unit) > 1 || Math.abs(a.top - b.top) > 2) units.push(`${input.name}: ${unit.textContent.trim()}`);
    }
  }
  for (const unit of document.querySelectorAll('.step-unit')) {
    if (unit.offsetParent !== null && lines(unit) > 1) units.push(`step: ${unit.textContent.trim()}`);
  }
  const formulas = [];
  let overflowing = 0;
  for (const block of document.querySelectorAll('.rb-formula, .calc-formula')) {
    if (block.offsetParent === null || block.scrollWidth <= block.clientWidth + 1) continue;
    overflowing += 1;
    const style = getComputedStyle(block);
    if (!style.backgroundImage.includes('radial-gradient') || style.scrollbarWidth === 'none')
      formulas.push(block.textContent.trim().slice(0, 40));
  }
  return {units, formulas, overflowing, scrollWidth: document.documentElement.scrollWidth,
          width: document.documentElement.clientWidth};
}"""


@pytest.mark.parametrize("width", list(WIDTHS))
def test_units_hold_their_row_and_wide_formulas_show_they_scroll(content, live_server, new_context,
                                                                 width):
    from calculators.families import FAMILIES

    viewport = WIDTHS[width]
    page = new_context(viewport=viewport, device_scale_factor=1, base_url=live_server.url).new_page()
    paths = [f"/calculators/{family}/" for family in sorted(FAMILIES)]
    paths += [DRAWN_PROBLEM, "/errata/", "/runbook/06-kv-cache/", "/runbook/12-slo/"]
    problems, overflowing = {}, 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    for path in paths:
        response = page.goto(path)
        if response.status == 404:
            continue
        assert response.ok, path
        measured = page.evaluate(MEASURE)
        overflowing += measured["overflowing"]
        found = {key: measured[key] for key in ("units", "formulas") if measured[key]}
        if measured["scrollWidth"] > measured["width"]:
            found["page"] = measured["scrollWidth"]
        if found:
            problems[path] = found
        if path in ("/errata/", "/calculators/ladder/"):
            page.screenshot(path=str(SHOTS / f"{width}{path.replace('/', '-')}.png"), full_page=True, timeout=60_000)
    assert problems == {}
    if width == "phone":
        assert overflowing > 0  # the check has something to look at

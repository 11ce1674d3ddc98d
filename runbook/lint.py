"""The render lint: seams a reader would trip on in rendered text.

A shortcode renders a number *with* its unit ("191 users"), so prose that also types the
unit after it prints the unit twice; an engine note quoted into a sentence repeats the
clause that introduced it. These checks run on the plain text a reader sees (shortcodes
resolved by :func:`runbook.content.plain_text`), over every chapter, question, answer,
rubric point and errata entry (``tests/runbook/test_runbook_lint.py``).
"""

from __future__ import annotations

import re

# Count nouns a shortcode prints after its number; a second one right after means the prose
# typed the unit again ("10 GPUs GPUs", "385 users paged users", "595 users sequences").
_COUNT_NOUNS = r"(?:users?|GPUs?|cards?|sequences?|conversations?|requests?|replicas?|nodes?|tokens?)"
_LINKS = r"(?:per|of|to|at|in|on|for|from|and|or|with|by|a|an|the|each|against|instead|than|is|are)"
DOUBLED_UNIT = re.compile(
    rf"\b\d[\d,.]*[ \t]+{_COUNT_NOUNS}[ \t]+(?:(?!{_LINKS}\b)[a-z][\w-]*[ \t]+)?{_COUNT_NOUNS}\b")
# A measured unit printed twice: "14.96 GiB GiB", "131,072 B bytes".
DOUBLED_MEASURE = re.compile(r"\b\d[\d,.]*[ \t]*(GiB|GB/s|GB|TFLOP/s|ms|B|bytes|tok/s)[ \t]+(?:\1|bytes|GiB|GB)\b"
                             r"|\d/Mtok[ \t]+(?:per|a|of a)[ \t]+million\b")
# The same run of five or more words twice in a row (an engine note spliced after the clause it
# repeats: "A hit skips ...: A hit skips ...").
REPEATED_CLAUSE = re.compile(r"\b((?:[\w'’×.-]+[ \t,;:()]+){4,}?[\w'’×.-]+)[ \t,;:()—–-]+\1\b", re.IGNORECASE)
# A catalog name quoted and then the note that starts with it: "B200 (...): B200 (...)".
REPEATED_NAME = re.compile(r"\b([A-Z][\w-]*\d[\w-]*(?: [\w-]+)?) \(([^()]{3,})\)[:,]\s*\1 \(")
PLACEHOLDERS = re.compile(
    r"\{\{|\}\}|\brbsc[0-9a-f]+|\bTODO\b|\bTBD\b|\bFIXME\b|\bXXX\b"
    r"|(?<![.!?] )(?<!^)\bNone\b(?! of)|\bnan\b|\(in 1\)|\bseed 0\d\d\b")


def seams(text: str) -> list[str]:
    """Each seam found in one rendered plain text, as ``kind: excerpt`` strings (empty when clean).

    ``text`` is what a reader sees (numbers filled in). Kinds: doubled unit, repeated clause,
    placeholder (an unresolved shortcode, a block token, a TODO, a ``None``/``nan``, "(in 1)",
    a seed file named instead of a fact).
    """
    found = []
    for kind, pattern in (("doubled unit", DOUBLED_UNIT), ("doubled unit", DOUBLED_MEASURE),
                          ("repeated clause", REPEATED_CLAUSE), ("repeated clause", REPEATED_NAME),
                          ("placeholder", PLACEHOLDERS)):
        for match in pattern.finditer(text):
            start = max(0, match.start() - 30)
            found.append(f"{kind}: …{text[start:match.end() + 30]}…".replace("\n", " "))
    return found


# --- Hand-typed numbers: a literal in prose that the engine computes ------------------------------

#: Literals the number lint leaves in prose, each with its reason: (chapter or question-file stem,
#: literal as typed) → why it is not a derived number.
ALLOWED_LITERALS: dict[tuple[str, str], str] = {
    ("01-tokenisation", "131,072"): "the 128k context limit, an input; equal to the per-token cache bytes by chance",
    ("01-tokenisation", "576"): "LLaVA-1.5's 24 × 24 grid of image tokens, a published input; near the requests in "
                                "the system of the ttftp99 drill's default stack by chance",
    ("08-rope-and-long-context", "131,072"): "the 128k context limit, an input; equal to the per-token cache bytes "
                                              "by chance",
    ("02-forward-pass", "8.03"): "the parameter count the Hugging Face Hub page shows, a cited figure",
    ("04-gpu-roofline", "295"): "a colleague's claim the question quotes to be corrected",
    ("13-speculative-and-constrained", "295"): "a colleague's claim the question quotes (over two lines) to be "
                                               "corrected",
    ("13-speculative-and-constrained", "90 %"): "DeepSeek-V3's published 85 to 90 % acceptance of its drafted "
                                                "token, a cited figure",
    ("15-production", "295"): "a colleague's prediction the question quotes to be corrected",
    ("15-production", "57.4"): "the seconds vLLM's documentation measured to load Qwen3-30B-A3B, a cited figure; "
                               "near that model's GiB by chance",
    ("04-gpu-roofline", "50 %"): "the top of the published 35–50 % MFU range for prefill kernels, a cited range",
    ("05-prefill-and-decode", "128"): "a batch size chosen as a table row and the 128k context, inputs",
    ("05-prefill-and-decode", "208"): "a colleague's answer the question quotes (the ceiling, truncated)",
    ("06-kv-cache", "106"): "the wrong answer (53 doubled) the text refutes beside the engine's value",
    ("10-paged-memory-and-prefix-caching", "106"): "the wrong answer (53 doubled) the text refutes beside the "
                                                   "engine's value",
    ("08-rope-and-long-context", "128"): "the 128k context of the standard prompt, an input",
    ("09-number-formats", "128"): "the 128 × 128 scaling block and 32–128 group sizes of published formats",
    ("09-number-formats", "240"): "the wrong IEEE-style E4M3 maximum the trap names, not the usable GiB it matches",
    ("09-number-formats", "4.25"): "the rubric's restatement of MXFP4's effective bits derived in the answer",
    ("10-paged-memory-and-prefix-caching", "128"): "the 128k context of the standard prompt, an input",
    ("11-multi-gpu", "131"): "an engineer's rounded claim the question quotes to be corrected",
    ("11-multi-gpu", "160"): "the marketed 2 × 80 GB the quoted engineer adds, a datasheet figure",
    ("11-multi-gpu", "144"): "the decode cards of DeepSeek's published deployment, a cited figure",
    ("12-engines", "100"): "a 100 Gb/s Ethernet link, a network rate given as an input",
    ("15-production", "100"): "a 100 Gb/s network, a network rate given as an input",
    ("14-capacity-planning", "40 %"): "the busy fraction of a fleet sized for a peak 2.5 times the mean, and "
                                      "the CFO's cost-cut target; inputs to the cost calculator",
    ("14-capacity-planning", "400"): "the daily mean rate of the forecast, an input",
    ("14-capacity-planning", "100"): "100 million users, the scale the dense-against-MoE comparison states",
    ("14-capacity-planning", "12,000"): "the peak request rate assumed for 100 million users, an input",
    ("15-production", "400"): "400 ms of queueing, a scenario input",
    ("15-production", "256"): "a batch size chosen for the sweep, an input",
    ("00-map", "200"): "a 200 ms TTFT target, an SLO input",
    ("03-journey-of-a-token", "2,048"): "a 2,048-token prompt length, an input; equal to a 32k prompt's causal "
                                        "prefill time in ms by chance",
    ("03-journey-of-a-token", "200"): "a 200 ms TTFT target, an SLO input",
    ("design", "200"): "a 200 ms TTFT target, an SLO input",
    ("design", "1,000"): "1,000 requests a second and the like: traffic given in the prompts",
    ("design", "100"): "100 million users, a scenario input",
    ("design", "2,048"): "a chunked-prefill token budget given as an example setting",
    ("design", "40 %"): "a fleet's busy fraction over a day, a scenario input",
    # The 128k context (and 128 heads) are inputs; the tpotbatch drill's default stack crosses its TPOT target at
    # 126.9 sequences under the per-collective calibration refit, within the lint's 1 % of 128 by chance.
    ("00-map", "128"): "the 128k context of the standard prompt, an input; near the tpotbatch crossing by chance",
    ("06-kv-cache", "128"): "the 128k context the fixes are ranked at, an input; near the tpotbatch crossing by "
                            "chance",
    ("07-attention-variants", "128"): "the 128 query heads and 128-wide heads of the models compared, inputs",
    ("design", "128"): "the 128k context the designs serve, an input; near the tpotbatch crossing by chance",
}

_LITERAL = re.compile(r"(?<![\w.,/$-])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
                      r"(?P<pct>[ \t]?%)?(?![\w.-]?\d)")
_YEAR = re.compile(r"^(19|20)\d\d$")
_CODE = re.compile(r"`[^`]*`")
_QUOTED = re.compile(r"“[^”]*”|\"[^\"\n]*\"")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML = re.compile(r"<[^>]+>")
_TOKENS_AFTER = re.compile(r"[ \t-]*(?:tokens?|tok\b|positions?)")


def _significant(text: str) -> int:
    digits = text.replace(",", "").replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." not in text else len(digits)


def _checked(text: str, percent: bool) -> float | None:
    """The literal's value when the lint checks it: percentages, ≥ 3 significant figures or ≥ 100;
    years, versions and small counts (≤ 16) are left out."""
    value = float(text.replace(",", ""))
    if percent:
        return value
    if "," not in text and "." not in text and _YEAR.match(text):
        return None
    if value <= 16 and "." not in text:
        return None
    if value >= 100 or _significant(text) >= 3:
        return value
    return None


def _calls(markdown: str) -> set[tuple[str, tuple]]:
    """(family, sorted inputs) of the reference stack (every family with no inputs) and of every
    value/worked/note/calculator shortcode in ``markdown``."""
    from calculators.families import FAMILIES

    from .shortcodes import SHORTCODE, ShortcodeError, _parse_pairs

    calls = {(family, ()) for family in FAMILIES}
    for match in SHORTCODE.finditer(markdown):
        if match["kind"] not in ("value", "worked", "note", "calculator"):
            continue
        tokens = match["body"].split()
        family = tokens[0] if match["kind"] == "calculator" else tokens[0].split(".", 1)[0]
        try:
            pairs = _parse_pairs(tokens[1:])  # an input referencing another run's step enters as its value
        except ShortcodeError:
            continue  # reported by find_errors, not by this lint
        pairs.pop("as", None)
        calls.add((family, tuple(sorted(pairs.items()))))
    return calls


def engine_values(markdown: str) -> list[tuple[float, str, str]]:
    """Every number the engine computes for the reference stack or for the family runs named by the
    shortcodes of ``markdown`` (steps that merely echo an input left out), plus the fraction
    defaults of the input quantities, as (value, unit, call) sorted by value.
    Runs are cached per call (:func:`runbook.shortcodes._run`)."""
    from calculators.engine.quantities import INPUTS

    from .shortcodes import ShortcodeError, _run

    # The fraction defaults (bandwidth efficiency, MFU, memory utilisation, …), typed as percentages in prose.
    found = [(q.default, "1", f"the default of {key}") for key, q in INPUTS.items() if q.default and q.unit == "1"]
    for family, inputs in sorted(_calls(markdown)):
        try:
            result = _run(family, inputs)
        except ShortcodeError:
            continue  # reported by find_errors, not by this lint
        args = " ".join(f"{k}={v}" for k, v in inputs)
        where = f"{family}({args})"
        given = {float(v) for v in result.inputs.values()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)}
        # A step that only echoes one of the run's inputs (bf16 prefill intensity = prompt tokens) is not
        # a derived number of its own.
        found += [(float(step.value), step.unit, f"{family}.{step.key} of {where}") for step in result.steps
                  if isinstance(step.value, (int, float)) and step.value and float(step.value) not in given]
        found += [(float(value), "", f"{family}.{key} of {where}") for key, value in result.extra.items()
                  if isinstance(value, (int, float)) and not isinstance(value, bool) and value
                  and float(value) not in given]
    return sorted(found)


def _match(value: float, values: list, units: tuple[str, ...] | None = None) -> tuple | None:
    """The closest engine value within 1 % of ``value`` (only of ``units`` when given), or ``None``."""
    from bisect import bisect_left

    best = None
    for candidate in values[bisect_left(values, (value / 1.0101,)):]:
        if candidate[0] > value * 1.0101:
            break
        if units is not None and candidate[1] not in units:
            continue
        if units is not None and candidate[1] == "1" and not 0 < candidate[0] < 1:
            continue  # a yes/no flag or a count, not a fraction a percentage could quote
        if abs(candidate[0] - value) <= 0.01 * abs(candidate[0]) and (
                best is None or abs(candidate[0] - value) < abs(best[0] - value)):
            best = candidate
    return best


def hand_typed(markdown: str, where: str, values: list | None = None) -> list[str]:
    """Each literal in ``markdown``'s prose (outside shortcodes, code, quotations and link targets)
    that equals, within 1 %, a number the engine computes (:func:`engine_values`), as
    ``where:line: 'literal' = value (call)``. A percentage matches a fraction (unit 1) or a
    percentage of the engine's; a count of tokens ("2,048 tokens", "8,192-token") is an input, not
    checked.
    :data:`ALLOWED_LITERALS` exempts (``where``'s stem, literal) pairs."""
    from .shortcodes import SHORTCODE

    values = engine_values(markdown) if values is None else values
    stem = where.rsplit("/", 1)[-1].split(".", 1)[0]
    found, fenced = [], False
    for number, line in enumerate(markdown.splitlines(), start=1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("#"):
            continue
        prose = line
        for pattern in (SHORTCODE, _CODE, _QUOTED, _LINK_TARGET, _HTML):
            prose = pattern.sub(" ", prose)
        for literal in _LITERAL.finditer(prose):
            percent = literal["pct"] is not None
            value = _checked(literal["num"], percent)
            if value is None:
                continue
            typed = literal.group(0).strip()
            if (stem, typed) in ALLOWED_LITERALS:
                continue
            if not percent and _TOKENS_AFTER.match(prose, literal.end()):
                continue
            hit = (_match(value / 100, values, ("1",)) or _match(value, values, ("%",))) if percent \
                else _match(value, values)
            if hit is not None:
                found.append(f"{where}:{number}: '{typed}' = {format(hit[0], '.6g')} {hit[1]} ({hit[2]})")
    return found

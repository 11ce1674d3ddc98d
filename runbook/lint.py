"""The render lint: seams a reader would trip on in rendered text.

A shortcode renders a number *with* its unit ("191 users"), so prose that also types the
unit after it prints the unit twice; an engine note quoted into a sentence repeats the
clause that introduced it. These checks run on the plain text a reader sees (shortcodes
resolved by :func:`runbook.content.plain_text`), over every chapter, question, answer,
rubric point and errata entry (``tests/test_runbook_lint.py``).
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
DOUBLED_MEASURE = re.compile(r"\b\d[\d,.]*[ \t]*(GiB|GB/s|GB|TFLOP/s|ms|B|bytes|tok/s)[ \t]+(?:\1|bytes|GiB|GB)\b")
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

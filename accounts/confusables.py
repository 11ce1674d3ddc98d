"""Look-alike usernames: a skeleton in the manner of Unicode's UTS #39, from ``confusable_homoglyphs``'s data.

UTS #39 maps every character to a prototype of its confusable class (Cyrillic ``а`` to Latin ``a``) and
compares the resulting "skeletons". ``confusable_homoglyphs`` ships the Unicode confusables table as pairs
(``а`` ↔ ``a``); :func:`prototypes` joins the pairs into classes and names each class by its ASCII member
(the smallest, when several) or else its smallest character, so the mapping is the same whichever member
of a class is looked up. :func:`skeleton` is then case-folding, NFKD (accents dropped), prototypes, NFKD
and case-folding again: two
usernames with the same skeleton look alike, and a new one is refused (``accounts.forms.SignUpForm``).
Joining classes can only merge more than UTS #39 does (``0`` and ``O``), which errs on the side of refusing.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


@lru_cache(maxsize=1)
def prototypes() -> dict[str, str]:
    """Each confusable character -> the prototype of its class (built once from the package's table)."""
    from confusable_homoglyphs.confusables import confusables_data

    parent: dict[str, str] = {}

    def find(char: str) -> str:
        root = char
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(char, char) != root:  # path compression
            parent[char], char = root, parent[char]
        return root

    def rank(char: str) -> tuple[bool, str]:
        return (not char.isascii(), char)

    for char, homoglyphs in confusables_data.items():
        if len(char) != 1:
            continue
        for glyph in homoglyphs:
            other = glyph["c"]
            if len(other) != 1:
                continue
            a, b = find(char), find(other)
            if a != b:
                low, high = sorted((a, b), key=rank)
                parent[high] = low
    return {char: find(char) for char in list(parent)}


def skeleton(text: str) -> str:
    """The look-alike skeleton of ``text``: equal skeletons read the same to a person."""
    table = prototypes()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    mapped = "".join(table.get(char, char) for char in decomposed if not unicodedata.combining(char))
    return unicodedata.normalize("NFKD", mapped).casefold()


def look_alike(username: str, existing) -> str | None:
    """The first of ``existing`` (usernames) whose skeleton equals ``username``'s, or ``None``."""
    wanted = skeleton(username)
    return next((name for name in existing if skeleton(name) == wanted), None)

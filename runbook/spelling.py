"""Search that tolerates a typo: a query word that no indexed word starts with is replaced by its closest word.

The vocabulary is every word of four letters or more in what search reads (the rows' ``search_text``, titles
and terms of :data:`runbook.search.KINDS`). :func:`respelled` looks each query word up in it and, for one that
nothing starts with ("quantisaton"), takes the closest by :func:`difflib.get_close_matches` (ratio ≥ 0.8:
one or two letters wrong in a long word) — the same on SQLite and PostgreSQL, whose full-text search would
miss the typo as well. The vocabulary is kept in the cache under a key made from the loaded content's
fingerprint (row counts and the chapters' content hashes), so a new ``load_content`` builds a new one.
"""

from __future__ import annotations

import difflib
import hashlib
import re

from django.core.cache import cache

from runbook.models import Chapter

MIN_LETTERS = 4
CUTOFF = 0.8
_LETTERS = re.compile(r"[a-z]{%d,}" % MIN_LETTERS)


def _fingerprint(kinds) -> str:
    parts = [str(kind.queryset().count()) for kind in kinds]
    parts += list(Chapter.objects.order_by("pk").values_list("content_hash", flat=True))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def vocabulary(kinds) -> list[str]:
    """Every distinct word (lower case, ``MIN_LETTERS`` letters or more) that search can find, sorted."""
    key = f"search-vocabulary:{_fingerprint(kinds)}"
    words = cache.get(key)
    if words is None:
        found: set[str] = set()
        for kind in kinds:
            names = [name for name, _ in kind.fields]
            for values in kind.queryset().values_list(*names):
                for value in values:
                    found.update(_LETTERS.findall(str(value or "").lower()))
        words = sorted(found)
        cache.set(key, words, 24 * 3600)
    return words


def respelled(terms: list[str], kinds) -> dict[str, str]:
    """Query word → the closest indexed word, for each word (of ``MIN_LETTERS`` or more) nothing starts with."""
    candidates = [term for term in terms if len(term) >= MIN_LETTERS and term.isalpha()]
    if not candidates:
        return {}
    words = vocabulary(kinds)
    fixes = {}
    for term in candidates:
        if any(word.startswith(term) for word in words):
            continue
        close = difflib.get_close_matches(term, words, n=1, cutoff=CUTOFF)
        if close:
            fixes[term] = close[0]
    return fixes

"""``{{figure bpe-merges}}``: byte-pair encoding learns its merges on a toy corpus, then encodes a word it never saw.

The corpus is Sennrich, Haddow and Birch's example (*Neural Machine Translation of
Rare Words with Subword Units*, 2016): the words ``low`` ×5, ``lower`` ×2,
``newest`` ×6 and ``widest`` ×3, already pre-tokenised into words. The figure
runs BPE training on it for real (:func:`learn_merges`): it counts every pair of
adjacent symbols weighted by the word counts, merges the most frequent (the
first in corpus order on a tie), rewrites the corpus and repeats. One frame per
merge, then a last frame that encodes a new word by replaying the merges in the
order they were learned. No count in it is typed: each comes from the run.

Options: ``merges`` (3 to 8, default 6) and ``word`` (the word encoded at the
end, lower-case letters, default ``lowest``).
"""

from __future__ import annotations

import re

from core.svg import BLUE, INK, MUTED, ORANGE, RULE, TINT, rect, text

from . import register
from .frames import Frame, int_option, render_figure, take_options

NAME = "bpe-merges"
DEFAULTS: dict[str, str | None] = {"merges": "6", "word": "lowest"}
CORPUS = (("low", 5), ("lower", 2), ("newest", 6), ("widest", 3))

WIDTH, HEIGHT = 560, 350
ROW_TOP, ROW_H = 84, 44
SYMBOLS_X, CHAR_W = 112, 13
MERGES_X = 380


Merge = tuple[tuple[str, str], int, list[list[str]]]


def learn_merges(corpus: tuple[tuple[str, int], ...], rounds: int) -> list[Merge]:
    """BPE training: ``rounds`` merges over ``corpus`` (word, count) pairs, characters as base symbols.

    Returns one entry per merge: the pair merged, its weighted count, and every word's symbols after the merge.
    Stops early when no pair is left (every word one symbol)."""
    words = [list(word) for word, _ in corpus]
    history = []
    for _ in range(rounds):
        counts: dict[tuple[str, str], int] = {}
        for symbols, (_, count) in zip(words, corpus):
            for pair in zip(symbols, symbols[1:]):
                counts[pair] = counts.get(pair, 0) + count
        if not counts:
            break
        best = max(counts, key=lambda pair: counts[pair])  # max keeps the first of equal counts: corpus order
        words = [apply_merge(symbols, best) for symbols in words]
        history.append((best, counts[best], [list(symbols) for symbols in words]))
    return history


def apply_merge(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """``symbols`` with every adjacent occurrence of ``pair`` (left to right) joined into one symbol."""
    out: list[str] = []
    index = 0
    while index < len(symbols):
        if index + 1 < len(symbols) and (symbols[index], symbols[index + 1]) == pair:
            out.append(symbols[index] + symbols[index + 1])
            index += 2
        else:
            out.append(symbols[index])
            index += 1
    return out


def _symbols(x: float, y: float, symbols: list[str], fresh: str | None) -> list[str]:
    parts = []
    for symbol in symbols:
        width = CHAR_W * len(symbol) + 10
        new = fresh is not None and symbol == fresh
        parts += [rect(x, y, width, 24, fill=TINT[ORANGE] if new else TINT[BLUE], stroke=ORANGE if new else BLUE,
                       stroke_width=2.2 if new else 1.0, rx=3),
                  text(x + width / 2, y + 17, symbol, size=14, anchor="middle", weight="700" if new else None,
                       font_family="ui-monospace, monospace")]
        x += width + 4
    return parts


@register(NAME)
def bpe_merges(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    rounds = int_option(NAME, opts, "merges", 3, 8)
    word = opts["word"]
    if not re.fullmatch(r"[a-z]{1,12}", word):
        raise ValueError(f"The {NAME} figure's word must be 1 to 12 lower-case letters, not '{word}'.")
    history = learn_merges(CORPUS, rounds)
    start = [list(w) for w, _ in CORPUS]

    def table(words: list[list[str]], fresh: str | None) -> list[str]:
        parts = [text(14, ROW_TOP - 12, "word ×count", size=13, fill=MUTED),
                 text(SYMBOLS_X, ROW_TOP - 12, "symbols now", size=13, fill=MUTED)]
        for index, ((source, count), symbols) in enumerate(zip(CORPUS, words)):
            y = ROW_TOP + index * ROW_H
            parts += [text(14, y + 17, f"{source} ×{count}", size=14), *_symbols(SYMBOLS_X, y, symbols, fresh)]
        return parts

    def merge_list(upto: int) -> list[str]:
        parts = [text(MERGES_X, ROW_TOP - 12, "merges, in order", size=13, fill=MUTED)]
        for index, ((left, right), count, _) in enumerate(history[:upto]):
            parts.append(text(MERGES_X, ROW_TOP + 10 + index * 22, f"{index + 1}. {left} + {right} → {left + right}"
                              f"  ({count})", size=13, weight="700" if index == upto - 1 else None,
                              fill=INK if index == upto - 1 else MUTED))
        return parts

    header = text(14, 26, "Byte-pair encoding on a toy corpus", size=15, weight="600")
    sub = text(14, 46, "pre-tokenised into words; characters are the base symbols", size=13, fill=MUTED)
    frames = [Frame("".join([header, sub, *table(start, None), *merge_list(0)]),
                    f"Start from characters: {sum(len(w) * c for w, c in CORPUS)} symbols across "
                    f"{sum(c for _, c in CORPUS)} words. Count every adjacent pair, weighted by how often its word "
                    f"occurs.", "Four words split into single letters; no merges yet.")]
    for index, ((left, right), count, words) in enumerate(history, start=1):
        joined = left + right
        frames.append(Frame(
            "".join([header, sub, *table(words, joined), *merge_list(index)]),
            f"Merge {index}: the most frequent pair is {left} + {right}, {count} times; it becomes the symbol "
            f"'{joined}' everywhere, and the vocabulary grows by one.",
            f"Merge {index}: {left} + {right} becomes {joined}, marked in every word that has it."))
    encoded = list(word)
    for pair, _, _ in history:
        encoded = apply_merge(encoded, pair)
    y = ROW_TOP + len(CORPUS) * ROW_H + 40
    body = [header, sub, *table(history[-1][2], None), *merge_list(len(history)),
            text(14, y - 10, f"encoding '{word}' (not in the corpus): replay the merges in order", size=13,
                 fill=MUTED),
            *_symbols(SYMBOLS_X, y, encoded, None),
            text(14, y + 17, word, size=14, weight="700"),
            rect(12, y - 26, WIDTH - 24, 60, stroke=RULE, fill="none", rx=6)]
    frames.append(Frame(
        "".join(body),
        f"Encoding replays the {len(history)} merges in the order they were learned. '{word}' never occurs in the "
        f"corpus, yet it becomes {len(encoded)} token{'s' if len(encoded) != 1 else ''}: "
        f"{' + '.join(repr(s) for s in encoded)}. The same text always gives the same tokens.",
        f"The word {word} encoded as {' '.join(encoded)}."))
    title = "Byte-pair encoding: merges learned, then replayed"
    intro = ("A toy corpus of four words. Each step merges the most frequent adjacent pair (orange marks the new "
             "symbol); the last step encodes a word the corpus never held.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)


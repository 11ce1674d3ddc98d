"""``{{figure speculative-decoding}}``: draft, verify in one pass, accept a prefix, reject the rest, bonus token.

Two verify rounds of speculative decoding. In the first, the draft proposes γ
tokens, the target scores all γ + 1 positions in one forward pass, accepts the
drafts up to the first disagreement, throws the rest away and keeps its own
token at that position. In the second every draft is accepted and the target's
prediction after the last one is the bonus token (γ + 1 tokens from one pass).
The last frame sets the two rounds against the ``spec`` family's expected
tokens per verify step E and its speed-up bound for the α, γ and c shown.

Options: ``alpha`` (0 to 0.99, default 0.8), ``gamma`` (1 to 6 here, default 4)
and ``draft_cost`` (default 0.05), the ``spec`` family's inputs.
"""

from __future__ import annotations

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, INK, MUTED, ORANGE, PAPER, RULE, TINT, VERMILLION, group, line, path, rect, text

from . import register
from .frames import Frame, int_option, render_figure, take_options

NAME = "speculative-decoding"
DEFAULTS = {"alpha": None, "gamma": "4", "draft_cost": None}
MAX_GAMMA = 6

WIDTH, HEIGHT = 560, 510
LABEL_X, COLUMNS_X, COLUMNS_RIGHT = 14, 104, 548
ROW_TEXT, ROW_DRAFT, ROW_TARGET, ROW_RESULT, ROW_GAUGE = 48, 138, 214, 290, 396
CHIP_H = 30

CONTEXT = ["the", "KV", "cache", "grows"]
# What the target model would write next, word by word, and a wrong guess of the draft's for each place.
TRUTH = "by one row for every token it decodes until the request ends and frees its blocks".split()
WRONG = ["with", "two", "block", "each", "step", "per", "time"]


def _chip(x: float, y: float, w: float, word: str, colour: str, dashed: bool = False, strike: bool = False,
          bold: bool = False, mark: str = "", size: float = 14) -> str:
    parts = [rect(x, y, w, CHIP_H, fill=TINT.get(colour, PAPER) if colour else PAPER, stroke=colour or RULE,
                  stroke_width=1.5, stroke_dasharray="5 3" if dashed else None, rx=5)]
    label = f"{mark} {word}" if mark else word
    parts.append(text(x + w / 2, y + 20, label, size=size, anchor="middle", weight="700" if bold else None,
                      fill=MUTED if strike else INK))
    if strike:
        parts.append(line(x + 6, y + CHIP_H / 2, x + w - 6, y + CHIP_H / 2, stroke=DARK[VERMILLION], stroke_width=2.0))
    return group(parts)


def _flow(words: list[tuple[str, str]], y: float) -> str:
    """Chips flowing left to right (wrapping under themselves): (word, kind) with kind ``context``,
    ``accepted``, ``target``, ``rejected`` (a draft the target refused) or ``discarded`` (drafts after it)."""
    parts, x, line_y = [], COLUMNS_X, y
    styles = {"context": (MUTED, False, ""), "accepted": (GREEN, False, "✓"), "target": (BLUE, True, "★"),
              "rejected": (VERMILLION, False, "✗"), "discarded": (RULE, False, "")}
    for word, kind in words:
        colour, bold, mark = styles[kind]
        label = f"{mark} {word}" if mark else word
        width = 8.4 * len(label) + 16
        if x + width > COLUMNS_RIGHT:
            x, line_y = COLUMNS_X, line_y + CHIP_H + 2
        struck = kind in ("rejected", "discarded")
        parts.append(rect(x, line_y, width, CHIP_H - 4, fill=TINT.get(colour, PAPER), stroke=colour,
                          stroke_width=1.0, stroke_dasharray="5 3" if kind == "discarded" else None, rx=5))
        parts.append(text(x + width / 2, line_y + 18, label, size=14, anchor="middle", weight="700" if bold else None,
                          fill=MUTED if struck else INK))
        if struck:
            parts.append(line(x + 5, line_y + (CHIP_H - 4) / 2, x + width - 5, line_y + (CHIP_H - 4) / 2,
                              stroke=DARK[VERMILLION], stroke_width=2.0))
        x += width + 5
    return group(parts)


@register(NAME)
def speculative_decoding(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    gamma = int_option(NAME, opts, "gamma", 1, MAX_GAMMA)
    engine = {key: opts[key] for key in ("alpha", "draft_cost") if key in opts}
    result = FAMILIES["spec"].run({**engine, "gamma": gamma})
    alpha, cost = result.inputs["alpha"], result.inputs["draft_cost"]
    expected = result.step("expected_tokens")
    speedup = result.step("speedup")
    e_text = format_number(expected.value, "tok")
    s_text = format_number(speedup.value, "1") + "×"
    best_gamma, best_speedup = result.extra["best_gamma"], result.extra["best_speedup"]

    # Round one accepts about what E says (at least one rejection, so the correction shows).
    accepted = max(0, min(gamma - 1, round(expected.value) - 1))
    columns = gamma + 1
    col_w = min(84.0, (COLUMNS_RIGHT - COLUMNS_X) / columns)
    chip_w = col_w - 8
    size = 14 if chip_w >= 70 else 12

    def cx(position: int) -> float:
        return COLUMNS_X + position * col_w

    def labels(rows: list[tuple[float, str]], active: str) -> str:
        return group(text(LABEL_X, y + 20, label, size=14, weight="700" if label == active else None,
                          fill=INK if label == active else MUTED) for y, label in rows)

    step_rows = [(ROW_TEXT, "text so far"), (ROW_DRAFT, "draft"), (ROW_TARGET, "target"), (ROW_RESULT, "result")]
    header = text(LABEL_X, 26, f"α = {alpha:g} per-token acceptance · γ = {gamma} drafts · draft pass c = {cost:g}",
                  size=15, weight="600")

    def draft_row(words: list[str]) -> str:
        parts = [_chip(cx(i), ROW_DRAFT, chip_w, word, ORANGE, dashed=True, size=size) for i, word in enumerate(words)]
        parts.append(text(cx(0), ROW_DRAFT + CHIP_H + 17, f"{gamma} cheap draft passes, one token each",
                          size=13, fill=MUTED))
        return group(parts)

    def target_row(words: list[str]) -> str:
        parts = [_chip(cx(i), ROW_TARGET, chip_w, word, BLUE, size=size) for i, word in enumerate(words)]
        top = ROW_TARGET - 8
        parts.append(path(f"M {cx(0)} {top + 5} V {top} H {cx(gamma) + chip_w} V {top + 5}", stroke=BLUE,
                          stroke_width=2.0))
        parts.append(text(cx(0), ROW_TARGET + CHIP_H + 17,
                          f"one target pass scores all {columns} positions at once", size=13, fill=DARK[BLUE]))
        return group(parts)

    def result_row(draft: list[str], truth: list[str], taken: int) -> str:
        parts = []
        for i in range(columns):
            if i < taken:
                parts.append(_chip(cx(i), ROW_RESULT, chip_w, draft[i], GREEN, mark="✓", size=size))
            elif i == taken:
                if i < gamma:
                    parts.append(_chip(cx(i), ROW_RESULT, chip_w, draft[i], VERMILLION, strike=True, mark="✗",
                                       size=size))
                    parts.append(_chip(cx(i), ROW_RESULT + CHIP_H + 4, chip_w, truth[i], BLUE, bold=True, mark="★",
                                       size=size))
                else:
                    parts.append(_chip(cx(i), ROW_RESULT, chip_w, truth[i], BLUE, bold=True, mark="★", size=size))
            elif i < gamma:
                parts.append(_chip(cx(i), ROW_RESULT, chip_w, draft[i], "", dashed=True, strike=True, size=size))
        return group(parts)

    def summary_box(lines: list[str]) -> str:
        y = HEIGHT - 56
        parts = [rect(LABEL_X, y, WIDTH - 2 * LABEL_X, 48, fill="#f4f7fb", stroke=RULE, stroke_width=1.0, rx=6)]
        for index, content in enumerate(lines):
            parts.append(text(LABEL_X + 12, y + 20 + index * 19, content, size=14 if index == 0 else 13,
                              weight="700" if index == 0 else None))
        return group(parts)

    context = [(word, "context") for word in CONTEXT]
    truth1 = TRUTH[:columns]
    draft1 = truth1[:accepted] + [WRONG[i] for i in range(accepted, gamma)]
    round1 = [(w, "accepted") for w in truth1[:accepted]] + [(truth1[accepted], "target")]
    start2 = accepted + 1
    truth2 = TRUTH[start2:start2 + columns]
    draft2 = truth2[:gamma]
    round2 = [(w, "accepted") for w in truth2[:gamma]] + [(truth2[gamma], "target")]
    got1 = accepted + 1
    plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"  # noqa: E731
    gauge = lambda got=None: _gauge(expected.value, columns, e_text, ROW_GAUGE, got)  # noqa: E731
    frames = []

    body = [header, labels(step_rows, "draft"), _flow(context, ROW_TEXT), draft_row(draft1), gauge(),
            summary_box([f"draft: {plural(gamma, 'token')} proposed",
                         f"each draft pass costs c = {cost:g} of a target pass"])]
    frames.append(Frame("".join(body),
                        f"The draft model guesses the next γ = {gamma} tokens one after another: {gamma} cheap passes "
                        f"that each cost c = {cost:g} of a target pass. Nothing is committed yet.",
                        f"The draft proposes {plural(gamma, 'token')}: {' '.join(draft1)}."))

    body = [header, labels(step_rows, "target"), _flow(context, ROW_TEXT), draft_row(draft1), target_row(truth1),
            gauge(), summary_box(["verify: 1 target pass", f"{columns} positions scored, the weights read once"])]
    frames.append(Frame("".join(body),
                        f"The target model runs once over the text plus the {plural(gamma, 'draft')} and scores all "
                        f"{columns} positions in parallel, giving its own choice at each. While decode is "
                        f"memory-bound that pass costs about what scoring one token does: the weights are read once "
                        f"either way.",
                        f"The target scores {columns} positions in one pass: {' '.join(truth1)}."))

    if accepted:
        verdict = (f"The first {plural(accepted, 'draft')} match what the target would have written and "
                   f"{'are' if accepted != 1 else 'is'} accepted; draft {accepted + 1} does not.")
    else:
        verdict = "Draft 1 already differs from what the target would have written."
    body = [header, labels(step_rows, "result"), _flow(context + round1, ROW_TEXT), draft_row(draft1),
            target_row(truth1), result_row(draft1, truth1, accepted), gauge(got1),
            summary_box([f"this round: {plural(got1, 'token')} from one target pass",
                         f"{accepted} accepted + the target's own token at the first rejection"])]
    frames.append(Frame("".join(body),
                        f"{verdict} It and every draft after it are thrown away, and the target's own token for that "
                        f"position is kept instead: {plural(got1, 'token')} from one target pass.",
                        f"{accepted} drafts accepted, draft {accepted + 1} rejected and replaced by the target's "
                        f"token, the rest discarded."))

    body = [header, labels(step_rows, "result"), _flow(context + round1 + round2, ROW_TEXT), draft_row(draft2),
            target_row(truth2), result_row(draft2, truth2, gamma), gauge(columns),
            summary_box([f"this round: {columns} tokens = γ + 1, the most a round gives",
                         f"all {gamma} accepted + the bonus token"])]
    frames.append(Frame("".join(body),
                        f"Next round the draft proposes {gamma} more and the target agrees with all of them. Its "
                        f"prediction for the position after the last draft comes with the same pass: the bonus "
                        f"token. {columns} tokens = γ + 1, the most one round can yield.",
                        f"All {plural(gamma, 'draft')} accepted plus the bonus token."))

    # The full picture: what each round did, the text it produced, and E.
    rejected = [(draft1[accepted], "rejected"), (truth1[accepted], "target")] if accepted < gamma else []
    round1_marks = ([(w, "accepted") for w in truth1[:accepted]] + rejected
                    + [(w, "discarded") for w in draft1[accepted + 1:]])
    final_rows = [(ROW_TEXT, "text so far"), (ROW_DRAFT + 10, "round 1"), (ROW_DRAFT + 60, "round 2")]
    body = [header, labels(final_rows, "text so far"), _flow(context + round1 + round2, ROW_TEXT),
            _flow(round1_marks, ROW_DRAFT + 10), _flow(round2, ROW_DRAFT + 60),
            text(COLUMNS_X, ROW_DRAFT + 124, f"2 target passes gave {got1 + columns} tokens; plain decoding gives 2",
                 size=14, weight="700"),
            _legend(ROW_DRAFT + 156), gauge(),
            summary_box([f"E = {e_text} per target pass · speed-up bound {s_text}",
                         f"{expected.substituted.rsplit(' = ', 1)[0]}; best γ for α {alpha:g}: {best_gamma} "
                         f"({format_number(best_speedup, '1')}×)"])]
    frames.append(Frame("".join(body),
                        f"Over many rounds, with each draft accepted independently with probability α = {alpha:g}, "
                        f"a verify step yields E = (1 − α^(γ+1)) ÷ (1 − α) = {e_text} per target pass "
                        f"(between 1 and γ + 1 = {columns}). Charging the {gamma} draft passes at c = {cost:g} each, "
                        f"the speed-up over plain decoding is at most {s_text}; for this α the best γ is "
                        f"{best_gamma}, at {format_number(best_speedup, '1')}×.",
                        f"Summary: two rounds gave {got1 + columns} tokens for 2 target passes; on average "
                        f"{e_text} per pass for α {alpha:g} and γ {gamma}."))

    title = f"Speculative decoding: draft, verify, accept, reject (α {alpha:g}, γ {gamma})"
    intro = ("A small draft model guesses ahead; the large target model checks every guess in one pass. "
             "✓ accepted draft, ✗ rejected draft, ★ the target's own token.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)


def _legend(y: float) -> str:
    items = [(MUTED, "", "context"), (GREEN, "✓", "accepted draft"), (BLUE, "★", "target's token"),
             (VERMILLION, "✗", "rejected")]
    parts, x = [], LABEL_X
    for colour, mark, label in items:
        parts.append(rect(x, y - 12, 14, 14, fill=TINT[colour], stroke=colour, stroke_width=1.0, rx=3))
        content = f"{mark} {label}".strip()
        parts.append(text(x + 20, y, content, size=13))
        x += 20 + 7.6 * len(content) + 14
    return group(parts)


def _gauge(value: float, ceiling: int, label: str, y: float, got: int | None = None) -> str:
    """The engine's E on a scale from 1 to γ + 1, with this round's count when there is one."""
    x0, x1 = COLUMNS_X + 8, COLUMNS_RIGHT - 20
    scale = lambda v: x0 + (v - 1) / max(ceiling - 1, 1) * (x1 - x0)  # noqa: E731
    parts = [text(LABEL_X, y + 5, "tokens", size=14, fill=MUTED),
             text(LABEL_X, y + 22, "per pass", size=14, fill=MUTED),
             rect(x0, y - 6, x1 - x0, 12, fill="#eef1f5", rx=6),
             rect(x0, y - 6, scale(value) - x0, 12, fill=BLUE, rx=6)]
    for tick in range(1, ceiling + 1):
        parts.append(line(scale(tick), y + 8, scale(tick), y + 14, stroke=MUTED, stroke_width=1.0))
        parts.append(text(scale(tick), y + 28, f"{tick}", size=13, anchor="middle", fill=MUTED))
    parts.append(text(scale(value), y - 12, f"E = {label} on average", size=14, anchor="middle", weight="700",
                      fill=DARK[BLUE], halo=True))
    if got is not None:
        gx = scale(got)
        parts.append(line(gx, y - 10, gx, y + 10, stroke=INK, stroke_width=3.0, stroke_linecap="round"))
        parts.append(text(gx, y + 44, f"▲ this round: {got}", size=13, anchor="middle", weight="700", halo=True))
    return group(parts)

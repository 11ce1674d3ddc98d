"""``{{figure attention-shapes}}``: what each attention variant keeps per token, and what one user costs.

One frame per variant, each on a published config: MHA (Llama-2-7B), GQA
(Llama-3.1-8B), MQA (Falcon-7B), MLA (DeepSeek-V2-Lite) and a sliding window
(Mistral-7B). The top panel is one layer for one token: the query heads and
the K/V heads (or the latent) they read from the cache, lines joining each
query head to what it shares. The bottom panel adds the variant's bar: one
user's cache at the context limit (``kv`` family, ``per_user_gib``, drawn to
scale) and the bytes per token beside it. Head counts, widths and the window
come from the ``kv`` family's ``given``, read from each config.

Options: ``context`` (tokens, default 8,192) and ``kv_dtype`` (default bf16).
"""

from __future__ import annotations

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, MUTED, ORANGE, PURPLE, RULE, SKY, TINT, VERMILLION, line, rect, text

from . import register
from .frames import Frame, int_option, model_name, render_figure, take_options

NAME = "attention-shapes"
DEFAULTS: dict[str, str | None] = {"context": "8192", "kv_dtype": None}

# (setting, model, colour): the variants in the order the chapter teaches them.
VARIANTS = (("MHA", "llama-2-7b", VERMILLION), ("GQA", "llama-3.1-8b", ORANGE), ("MQA", "falcon-7b", GREEN),
            ("MLA", "deepseek-v2-lite", PURPLE), ("sliding window", "mistral-7b-v0.1", SKY))

WIDTH, HEIGHT = 560, 470
LEFT, RIGHT = 20, 540
Q_Y, KV_Y = 84, 160          # query heads, cached heads (top panel)
MAX_DRAWN = 32               # query heads drawn; a wider model is drawn with its count written
BARS_TOP, BAR_H, BAR_GAP = 262, 22, 18
BAR_X, BAR_MAX = 150, 200


def _shape(setting: str, given: dict, colour: str) -> list[str]:
    """The top panel: query heads above, the cached K/V heads (or latent) below, one line per query head."""
    heads, kv_heads = int(given["heads"]), int(given["kv_heads"])
    drawn = min(heads, MAX_DRAWN)
    pitch = (RIGHT - LEFT) / drawn
    size = min(12.0, pitch - 3)
    parts = [text(LEFT, Q_Y - 12, f"{heads} query heads" + (f" ({drawn} drawn)" if drawn < heads else ""), size=13,
                  fill=MUTED)]
    q_x = [LEFT + pitch * k + (pitch - size) / 2 for k in range(drawn)]
    parts += [rect(x, Q_Y, size, size, fill=TINT[BLUE], stroke=BLUE, stroke_width=1.0) for x in q_x]
    if setting == "MLA":
        rank, rope = int(given["kv_lora_rank"]), int(given["qk_rope_head_dim"])
        width = (RIGHT - LEFT) * 0.6
        latent_w = width * rank / (rank + rope)
        x0 = LEFT + ((RIGHT - LEFT) - width) / 2
        parts += [line(x + size / 2, Q_Y + size, x0 + width / 2, KV_Y, stroke=RULE, stroke_width=1.0) for x in q_x]
        parts += [rect(x0, KV_Y, latent_w, 26, fill=TINT[colour], stroke=colour, stroke_width=2.0),
                  text(x0 + latent_w / 2, KV_Y + 18, f"latent, {rank} values", size=13, anchor="middle"),
                  rect(x0 + latent_w, KV_Y, width - latent_w, 26, fill=TINT[ORANGE], stroke=ORANGE, stroke_width=2.0),
                  text(x0 + latent_w + (width - latent_w) / 2, KV_Y + 18, f"{rope}", size=13, anchor="middle"),
                  text(LEFT, KV_Y + 46, f"cached per layer: one latent plus a shared rotary key of {rope}; "
                                        f"every head's K and V", size=13),
                  text(LEFT, KV_Y + 64, "are rebuilt from it when attention runs", size=13)]
        return parts
    group_size = heads / kv_heads
    kv_drawn = max(1, round(drawn / group_size))
    kv_pitch = (RIGHT - LEFT) / kv_drawn
    kv_w = min(kv_pitch - 4, 40.0)
    centres = [LEFT + kv_pitch * k + kv_pitch / 2 for k in range(kv_drawn)]
    for k, x in enumerate(q_x):
        target = centres[min(k * kv_drawn // drawn, kv_drawn - 1)]
        parts.append(line(x + size / 2, Q_Y + size, target, KV_Y, stroke=RULE, stroke_width=1.0))
    for x in centres:
        parts += [rect(x - kv_w / 2, KV_Y, kv_w, 11, fill=TINT[colour], stroke=colour, stroke_width=1.5),
                  rect(x - kv_w / 2, KV_Y + 13, kv_w, 11, fill=TINT[colour], stroke=colour, stroke_width=1.5)]
    parts += [text(LEFT + 520, KV_Y + 10, "K", size=12, anchor="end", fill=MUTED),
              text(LEFT + 520, KV_Y + 23, "V", size=12, anchor="end", fill=MUTED)] if kv_drawn < 8 else []
    head_dim = int(given["head_dim"])
    detail = (f"cached per layer: K and V for {kv_heads} head{'s' if kv_heads != 1 else ''} of {head_dim}"
              + (f", each shared by {group_size:g} query heads" if group_size > 1 else ", one per query head"))
    parts.append(text(LEFT, KV_Y + 46, detail, size=13))
    if setting == "sliding window":
        parts.append(text(LEFT, KV_Y + 64, f"and only the last {int(given['window']):,} positions: the window "
                                            f"caps the cache", size=13, weight="700", fill=DARK[colour]))
    return parts


@register(NAME)
def attention_shapes(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    context = int_option(NAME, opts, "context", 1, 1_048_576)
    extra = {"kv_dtype": opts["kv_dtype"]} if "kv_dtype" in opts else {}
    try:
        runs = [FAMILIES["kv"].run({"model": model, "context": context, **extra}) for _, model, _ in VARIANTS]
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    biggest = max(run.values["per_user_gib"] for run in runs)

    def bars(upto: int) -> list[str]:
        parts = [text(LEFT, BARS_TOP - 12, f"one user's cache at {context:,} tokens", size=13, fill=MUTED)]
        for index in range(upto + 1):
            (setting, model, colour), run = VARIANTS[index], runs[index]
            y = BARS_TOP + index * (BAR_H + BAR_GAP)
            gib = run.values["per_user_gib"]
            w = max(gib / biggest * BAR_MAX, 2.0)
            parts += [text(LEFT, y + 16, setting, size=13, weight="700", fill=DARK.get(colour, colour)),
                      text(LEFT, y + 32, model_name(model), size=12, fill=MUTED),
                      rect(BAR_X, y, w, BAR_H, fill=TINT[colour], stroke=colour,
                           stroke_width=2.5 if index == upto else 1.0),
                      text(BAR_X + w + 8, y + 16, f"{format_number(gib, 'GiB')} · "
                                                  f"{format_number(run.values['kv_bytes_per_token'], 'B')}/token",
                           size=13)]
        return parts

    frames = []
    for index, ((setting, model, colour), run) in enumerate(zip(VARIANTS, runs)):
        g = run.given
        name = model_name(model)
        header = [text(14, 26, f"{setting}: {name}, one layer, one token", size=15, weight="600"),
                  text(14, 46, f"{int(g['layers'])} layers, {run.inputs['kv_dtype']}", size=13, fill=MUTED)]
        body = header + _shape(setting, g, colour) + bars(index)
        per_user = format_number(run.values["per_user_gib"], "GiB")
        per_token = format_number(run.values["kv_bytes_per_token"], "B")
        if setting == "MLA":
            what = (f"caches one latent of {int(g['kv_lora_rank'])} values and a rotary key of "
                    f"{int(g['qk_rope_head_dim'])} per layer, whatever its {int(g['heads'])} heads")
        elif setting == "sliding window":
            what = (f"has GQA's {per_token} a token but keeps only the last {int(g['window']):,} positions in each of "
                    f"its {int(g['window_layers'])} windowed layers")
        else:
            what = (f"caches K and V for {int(g['kv_heads'])} head{'s' if g['kv_heads'] != 1 else ''} of "
                    f"{int(g['head_dim'])} per layer for its {int(g['heads'])} query heads, {per_token} a token")
        caption = f"{setting} ({name}) {what}: one user at {context:,} tokens holds {per_user}."
        if index == len(VARIANTS) - 1:
            caption += (" Side by side, the dial turns from a K/V head per query head to one shared head, a latent, "
                        "or a bounded window; the shorter the bar, the more users one card holds.")
        frames.append(Frame("".join(body), caption,
                            f"{setting} on {name}: query heads joined to the cached heads they read; bars of one "
                            f"user's cache for {index + 1} variant{'s' if index else ''}, {setting} at {per_user}."))
    title = "What each attention variant caches per token"
    intro = ("Top: one layer for one token, query heads (blue squares) joined to the cached K/V heads or latent they "
             "read. Bottom: one user's cache at the limit, to scale, variant by variant.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

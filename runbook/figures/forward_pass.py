"""``{{figure forward-pass}}``: one token through the model, and where the parameters it meets live.

Left, the forward pass as a column of blocks: the embedding row, one decoder
layer (RMSNorm, attention's q/k/v/o projections, RMSNorm, the MLP, each with its
residual add) repeated ``num_hidden_layers`` times, the final norm and the
output head that scores every vocabulary entry. Right, one bar of the model's
parameters, filled block by block as the token meets them. The counts are the
``params`` family's component counts (``given``: embedding, attention and MLP
per layer, norms) and its total; the shapes are the model's config fields.

Options: ``model`` (the reference Llama-3.1-8B by default).
"""

from __future__ import annotations

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, INK, MUTED, ORANGE, PAPER, PURPLE, RULE, TINT, group, line, path, rect, text

from . import register
from .frames import Frame, model_name, render_figure, take_options

NAME = "forward-pass"
DEFAULTS: dict[str, str | None] = {"model": None}

WIDTH, HEIGHT = 560, 470
BOX_X, BOX_W = 16, 266
BAR_X, BAR_W, BAR_TOP, BAR_BOTTOM = 330, 56, 70, 430
NOTE_X = 396


def _count(value: float) -> str:
    """A parameter count in millions or billions, as prose reads it (the exact count is in the captions)."""
    if value >= 1e9:
        return f"{value / 1e9:.2f} B"
    return f"{value / 1e6:,.1f} M"


@register(NAME)
def forward_pass(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    try:
        result = FAMILIES["params"].run(opts)
    except EngineError as exc:
        raise ValueError(str(exc)) from exc
    g = result.given
    total = result.values["total_params"]
    cfg = default_catalog().model(result.inputs["model"]).raw_config
    model = model_name(result.inputs["model"])
    vocab, hidden, layers = int(g["vocab_size"]), int(g["hidden_size"]), int(g["layers"])
    embedding = vocab * hidden
    head = embedding if g["embedding_copies"] == 2 else 0
    attention = layers * g["attention_per_layer"]
    mlp = g["mlp_layers"] * g["mlp_per_layer"]
    norms = total - embedding - head - attention - mlp
    heads, kv_heads = cfg.get("num_attention_heads"), cfg.get("num_key_value_heads")
    moe = g["idle_experts"] > 0

    # (key, box label, detail, y, height, colour, share of the bar)
    blocks = [
        ("embed", "Embedding: pick row of token id", f"table {vocab:,} × {hidden:,}", 70, 44, PURPLE, embedding),
        ("attn", "RMSNorm → attention, + residual",
         f"q, k, v, o; {heads} query heads, {kv_heads} K/V heads" if heads else "q, k, v, o projections",
         150, 54, BLUE, attention),
        ("mlp", "RMSNorm → MLP, + residual",
         "routed experts and router" if moe else f"gate, up {hidden:,} → {cfg.get('intermediate_size', 0):,}, down",
         212, 54, ORANGE, mlp),
        ("head", "Final RMSNorm → output head",
         f"{hidden:,} × {vocab:,}" + (" (tied: the embedding table)" if not head else ""), 330, 44, GREEN, head),
    ]
    bar_scale = (BAR_BOTTOM - BAR_TOP) / total

    def stack(upto: int) -> str:
        parts = [rect(BAR_X, BAR_TOP, BAR_W, BAR_BOTTOM - BAR_TOP, fill=PAPER, stroke=RULE, stroke_dasharray="4 3"),
                 text(BAR_X + BAR_W / 2, BAR_TOP - 10, "parameters", size=13, anchor="middle", fill=MUTED)]
        y = BAR_TOP
        for index, (key, _, _, _, _, colour, share) in enumerate(blocks):
            if share <= 0:
                continue
            h = share * bar_scale
            if index < upto:
                parts.append(rect(BAR_X, y, BAR_W, h, fill=TINT[colour], stroke=colour,
                                  stroke_width=2.5 if index == upto - 1 else 1.0))
                if h >= 16:
                    parts.append(text(NOTE_X, y + min(h / 2, 40) + 5, f"{_count(share)} · {share / total * 100:.0f} %",
                                      size=13, fill=DARK[colour]))
            y += h
        return group(parts)

    def column(current: int) -> str:
        parts = [text(BOX_X, 56, "token id", size=13, fill=MUTED)]
        for index, (key, label, detail, y, h, colour, _) in enumerate(blocks):
            on = index == current
            parts += [rect(BOX_X, y, BOX_W, h, fill=TINT[colour] if index <= current else PAPER, stroke=colour,
                           stroke_width=2.5 if on else 1.0, rx=6),
                      text(BOX_X + 10, y + 19, label, size=13, weight="700" if on else None),
                      text(BOX_X + 10, y + 37, detail, size=12, fill=INK if index <= current else MUTED)]
        # The repeated layer: a bracket round attention and MLP.
        parts += [path(f"M {BOX_X + BOX_W + 8} 150 h 8 V 266 h -8", stroke=INK, stroke_width=1.5),
                  text(BOX_X + BOX_W / 2, 290, f"× {layers} decoder layers", size=13, anchor="middle", weight="700"),
                  text(BOX_X + BOX_W / 2, 308, "(one layer drawn)", size=12, anchor="middle", fill=MUTED),
                  text(BOX_X, 396, f"→ {vocab:,} logits; the sampler picks", size=13),
                  text(BOX_X, 414, "the next token from the last position", size=13)]
        for top, bottom in ((114, 150), (204, 212), (266, 274), (314, 330), (374, 382)):
            parts.append(line(BOX_X + BOX_W / 2, top, BOX_X + BOX_W / 2, bottom, stroke=MUTED, stroke_width=1.2))
        return group(parts)

    header = text(14, 26, f"{model}: one forward pass, {format_number(total, '1')} parameters", size=15,
                  weight="600")
    captions = [
        (f"The token id picks one row of the embedding table, {vocab:,} × {hidden:,} = {embedding:,} parameters of "
         f"which this token reads only {hidden:,}."),
        (f"Each layer normalises the residual stream, projects it to queries, keys and values, attends over every "
         f"earlier position and projects back (o), then adds the result to the stream: "
         f"{int(g['attention_per_layer']):,} parameters a layer, {int(attention):,} over {layers} layers."),
        (f"Then the MLP: {int(g['mlp_per_layer']):,} parameters a layer, {int(mlp):,} in all"
         + (" (every expert counted; a token uses only its routed few)." if moe else
            ", the largest share of the model.")),
        (f"A final RMSNorm, then the output head scores all {vocab:,} vocabulary entries"
         + (f": another {vocab:,} × {hidden:,} = {head:,} parameters." if head else
            ": the head is tied to the embedding table, so it adds none.")),
        (f"All together: {format_number(total, '1')} parameters, {int(norms):,} of them in the norms. Every one is "
         f"read once per forward pass, which is why decode reads the whole model for each token step."),
    ]
    frames = []
    for index, caption in enumerate(captions):
        body = [header, column(index), stack(index + 1)]
        marked = (f"the {blocks[index][1].split(':')[0]} block marked" if index < len(blocks)
                  else "every block filled")
        frames.append(Frame("".join(body), caption,
                            f"The forward pass with {marked}; the parameter bar filled through it."))
    title = f"One token's forward pass and where the parameters live ({model})"
    intro = ("Left: the blocks a token passes through, the decoder layer repeated. Right: the model's parameters, "
             "filled block by block with each block's count and share.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

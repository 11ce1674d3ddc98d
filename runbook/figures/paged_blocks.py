"""``{{figure paged-blocks}}``: paged KV blocks, block tables, freeing and copy-on-write of a shared prefix.

A pool of 24 physical blocks of 16 token slots (a block's bytes are 16 × the
``kv`` family's bytes per token). Three requests of different lengths take
blocks from the free list, each through its block table (logical block →
physical block), so only each request's last block has empty slots. One
finishes and returns its blocks; a fourth request with the same prefix as the
first maps its table onto the first one's blocks (reference count 2), and when
it writes its own tokens the shared, partly filled last block is copied first
(copy-on-write). The captions quote the ``ladder`` family's worst-case and paged
per-user sizes and user counts: the fragmentation paging avoids.

Options: ``model``, ``gpu``, ``kv_dtype`` (reference stack by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from core.svg import BLUE, DARK, GREEN, INK, MUTED, ORANGE, PAPER, PURPLE, RULE, TINT, group, rect, text

from . import register
from .frames import Frame, model_name, render_figure, take_options

NAME = "paged-blocks"
DEFAULTS = {"model": None, "gpu": None, "kv_dtype": None}

BLOCK = 16  # token slots per block (the ladder's default block size)
POOL = 24
COLUMNS = 6
WIDTH, HEIGHT = 560, 410
GRID_X, GRID_Y = 14, 64
BLOCK_W, BLOCK_H, STEP_X, STEP_Y = 58, 62, 64, 72
PANEL_X = 412

COLOURS = {"A": BLUE, "B": ORANGE, "C": GREEN, "D": PURPLE}
# Request lengths in tokens: A and D share A's whole prompt as a prefix.
LENGTHS = {"A": 40, "B": 21, "C": 70}
D_OWN = 12


@dataclass
class _Block:
    owners: list[str]  # the requests whose block tables point here (the reference count is its length)
    filled: int


@dataclass
class _State:
    blocks: dict[int, _Block] = field(default_factory=dict)
    tables: dict[str, list[int]] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    fresh: set[int] = field(default_factory=set)  # blocks touched in this step
    free: list[int] = field(default_factory=lambda: list(range(POOL)))

    def copy(self) -> "_State":
        return _State({k: _Block(list(b.owners), b.filled) for k, b in self.blocks.items()},
                      {k: list(v) for k, v in self.tables.items()}, set(self.finished), set(), list(self.free))

    def allocate(self, request: str, tokens: int) -> None:
        table = self.tables.setdefault(request, [])
        while tokens > 0:
            physical = self.free.pop(0)
            take = min(BLOCK, tokens)
            self.blocks[physical] = _Block([request], take)
            table.append(physical)
            self.fresh.add(physical)
            tokens -= take

    @property
    def used(self) -> int:
        return len(self.blocks)

    @property
    def empty_slots(self) -> int:
        return sum(BLOCK - block.filled for block in self.blocks.values())


def _block_svg(index: int, block: _Block | None, fresh: bool) -> str:
    x = GRID_X + (index % COLUMNS) * STEP_X
    y = GRID_Y + (index // COLUMNS) * STEP_Y
    parts = []
    if block is None:
        parts.append(rect(x, y, BLOCK_W, BLOCK_H, fill=PAPER, stroke=RULE, stroke_width=1.2, stroke_dasharray="4 3",
                          rx=4))
        parts.append(text(x + 5, y + 13, f"{index}", size=13, fill=MUTED))
        return group(parts)
    colour = COLOURS[block.owners[0]]  # the request that wrote the tokens
    shared = len(block.owners) > 1
    parts.append(rect(x, y, BLOCK_W, BLOCK_H, fill=PAPER, stroke=INK if fresh else COLOURS[block.owners[-1]],
                      stroke_width=3.0 if fresh else 1.5, rx=4))
    # Header strip: physical number and owner letters (shape as well as colour: the letters).
    head = "+".join(block.owners)
    if shared:
        half = BLOCK_W / 2
        parts.append(rect(x, y, half, 17, fill=TINT[COLOURS[block.owners[0]]], rx=4))
        parts.append(rect(x + half, y, half, 17, fill=TINT[COLOURS[block.owners[1]]], rx=4))
    else:
        parts.append(rect(x, y, BLOCK_W, 17, fill=TINT[colour], rx=4))
    parts.append(text(x + 5, y + 13, f"{index}", size=13, fill=INK))
    parts.append(text(x + BLOCK_W - 5, y + 13, head, size=13, anchor="end",
                      weight="700", fill=INK))
    # 16 slots as a 4 × 4 grid: filled ones in the owner's colour, empty ones hatched.
    cell_w, cell_h = (BLOCK_W - 10) / 4, (BLOCK_H - 25) / 4
    filled, empty = [], []
    for slot in range(BLOCK):
        cx = x + 5 + (slot % 4) * cell_w
        cy = y + 20 + (slot // 4) * cell_h
        (filled if slot < block.filled else empty).append(rect(cx + 0.8, cy + 0.8, cell_w - 1.6, cell_h - 1.6,
                                                               fill=None))
    parts.append(group(filled, fill=colour, opacity=0.85))
    if empty:
        parts.append(group(empty, fill=PAPER, stroke=RULE, stroke_width=0.8))
    return group(parts)


def _panel(state: _State, highlight: tuple[str, int] | None) -> str:
    parts = [text(PANEL_X, GRID_Y + 10, "block tables", size=14, weight="700"),
             text(PANEL_X, GRID_Y + 27, "logical → physical", size=13, fill=MUTED)]
    y = GRID_Y + 52
    for request in ("A", "B", "C", "D"):
        table = state.tables.get(request)
        colour = COLOURS[request]
        done = request in state.finished
        label_colour = MUTED if done or table is None else DARK[colour]
        parts.append(text(PANEL_X, y + 13, request, size=16, weight="700", fill=label_colour))
        if table is None:
            parts.append(text(PANEL_X + 20, y + 13, "not yet", size=13, fill=MUTED))
        elif done:
            parts.append(text(PANEL_X + 20, y + 13, "finished, freed", size=13, fill=MUTED))
        else:
            for slot, physical in enumerate(table):
                cx = PANEL_X + 20 + slot * 25
                hot = highlight == (request, slot)
                parts.append(rect(cx, y, 22, 18, fill=TINT[colour], stroke=INK if hot else colour,
                                  stroke_width=2.5 if hot else 1.0, rx=3))
                parts.append(text(cx + 11, y + 13.5, f"{physical}", size=13, anchor="middle", weight="700"))
        y += 34
    return group(parts)


def _status(state: _State) -> str:
    y = HEIGHT - 52
    free = POOL - state.used
    parts = [rect(GRID_X, y, WIDTH - 2 * GRID_X, 40, fill="#f4f7fb", stroke=RULE, stroke_width=1.0, rx=6),
             text(GRID_X + 12, y + 25, f"used {state.used} · free {free} of {POOL} blocks", size=15, weight="700"),
             text(WIDTH - GRID_X - 12, y + 25, f"empty slots in used blocks: {state.empty_slots}", size=13,
                  anchor="end", fill=MUTED)]
    return group(parts)


def _body(header: str, state: _State, highlight=None) -> str:
    parts = [header]
    for index in range(POOL):
        parts.append(_block_svg(index, state.blocks.get(index), index in state.fresh))
    parts.append(_panel(state, highlight))
    parts.append(_status(state))
    return "".join(parts)


@register(NAME)
def paged_blocks(options: dict[str, str]) -> str:
    """The figure's HTML (see the module docstring)."""
    opts = take_options(NAME, options, DEFAULTS)
    kv_opts = {k: opts[k] for k in ("model", "kv_dtype") if k in opts}
    per_token = FAMILIES["kv"].run(kv_opts).values["kv_bytes_per_token"]
    ladder = FAMILIES["ladder"].run({**kv_opts, **({"gpu": opts["gpu"]} if "gpu" in opts else {}),
                                     "block_size": BLOCK})
    lv, inputs = ladder.values, ladder.inputs
    model = model_name(inputs["model"])
    block_bytes = format_number(per_token * BLOCK / 2**20, "MiB")
    worst = format_number(lv["per_user_gib"], "GiB")
    paged = format_number(ladder.extra["paged_user_gib"], "GiB")
    users_worst = format_number(lv["users_worst_case"], "users")
    users_paged = format_number(lv["users_paged"], "users")
    context, average = inputs["context"], inputs["avg_tokens"]

    header = text(GRID_X, 26, f"{model}: a pool of {POOL} KV blocks of {BLOCK} tokens, {block_bytes} each",
                  size=15, weight="600")
    frames: list[Frame] = []

    def add(state: _State, caption: str, label: str, highlight=None) -> None:
        frames.append(Frame(_body(header, state, highlight), caption, label))

    state = _State()
    add(state, f"The KV cache is carved into a pool of {POOL} physical blocks of {BLOCK} token slots; at "
               f"{format_number(per_token, 'B')} per token a block holds {block_bytes}. Used 0, free {POOL}.",
        f"An empty pool of {POOL} blocks.")

    sizes = {}
    for request in ("A", "B", "C"):
        state = state.copy()
        state.allocate(request, LENGTHS[request])
        sizes[request] = len(state.tables[request])
        tokens = LENGTHS[request]
        slack = sizes[request] * BLOCK - tokens
        caption = (f"Request {request} ({tokens} tokens) takes {sizes[request]} blocks from the free list, "
                   f"recorded in its block table; only its last block has empty slots ({slack}). "
                   f"Used {state.used}, free {POOL - state.used}.")
        if request == "C":
            caption += (f" Reserving each request's whole {context:,}-token context up front, as a contiguous "
                        f"allocator must, would cost {worst} per request ({users_worst} fit the card); paged, an "
                        f"average {average:,}-token conversation costs {paged} ({users_paged}). The only waste left is "
                        f"the {state.empty_slots} empty slots in last blocks, under one block per request.")
        add(state, caption, f"Request {request} holds blocks {', '.join(map(str, state.tables[request]))}.")

    # B finishes: its blocks go back to the front of the free list.
    state = state.copy()
    freed = state.tables["B"]
    for physical in freed:
        del state.blocks[physical]
    state.finished.add("B")
    state.free = freed + state.free
    add(state, f"Request B finishes and returns blocks {freed[0]} and {freed[1]} to the free list. They sit "
               f"between A's and C's blocks, a hole a contiguous allocator could only fill with a request that "
               f"fits it; here any request can use any free block. Used {state.used}, free {POOL - state.used}.",
        f"Blocks {freed[0]} and {freed[1]} free again between requests A and C.")

    # D shares A's prefix: same physical blocks, reference count 2.
    state = state.copy()
    state.tables["D"] = list(state.tables["A"])
    for physical in state.tables["A"]:
        state.blocks[physical].owners.append("D")
        state.fresh.add(physical)
    add(state, f"Request D starts with the same {LENGTHS['A']}-token prefix as A (a shared system prompt). Its block "
               f"table points at A's blocks {', '.join(map(str, state.tables['A']))}, each now referenced twice: the "
               f"prefix costs no new memory. Used {state.used}, free {POOL - state.used}.",
        "Request D's block table maps onto request A's blocks; each is shared by two requests.")

    # D writes: copy-on-write of the shared, partly filled last block, then one more block.
    state = state.copy()
    last = state.tables["A"][-1]
    shared_tokens = state.blocks[last].filled
    state.blocks[last].owners = ["A"]
    copy_to = state.free.pop(0)
    own_in_copy = min(BLOCK - shared_tokens, D_OWN)
    state.blocks[copy_to] = _Block(["D"], shared_tokens + own_in_copy)
    state.tables["D"][-1] = copy_to
    state.fresh.update({copy_to, last})
    rest = D_OWN - own_in_copy
    if rest:
        state.allocate("D", rest)
    d_blocks = state.tables["D"]
    add(state, f"D writes its own {D_OWN} tokens. Block {last} is shared and only {shared_tokens} of its slots are "
               f"full, so before writing, D copies it into free block {copy_to} (copy-on-write) and fills the copy; "
               f"{rest} more tokens take block {d_blocks[-1]}. A keeps block {last}; blocks "
               f"{d_blocks[0]} and {d_blocks[1]} stay shared. D holds {LENGTHS['A'] + D_OWN} tokens in "
               f"{len(d_blocks)} blocks, only {len(d_blocks) - 2} of them its own. Used {state.used}, free "
               f"{POOL - state.used}.",
        f"Block {last} copied to block {copy_to} for request D; D's table reads {', '.join(map(str, d_blocks))}.",
        highlight=("D", len(d_blocks) - 2))

    title = f"Paged KV blocks: block tables, a finish and a shared prefix ({model})"
    intro = ("Physical blocks on the left (number, owner, 16 token slots), each request's block table on the right. "
             "A thick outline marks the blocks touched in that step.")
    return render_figure(NAME, title, intro, frames, WIDTH, HEIGHT)

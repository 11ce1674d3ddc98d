"""Seeded problem generation: (family, seed) → the same inputs every time.

Each family's generator lives with its procedure in the engine
(``Family.generate``) and draws real configs and cards from the catalog with
``random.Random("<family>:<seed>")``; a family with ``prepare`` (the simulated
drills) completes the drawn inputs with what the problem must store (its sweep),
after any fixed inputs are applied. Bump :data:`GENERATOR_VERSION` whenever a
draw changes, so stored problems keep the version that made them (a problem
stores its resolved inputs and catalog entries, so its numbers never move).

Fixed inputs (a coach's template, ``{"model": …, "gpu": …}``) are not pasted over
a free draw: the generator draws on the catalog pinned to that model and card
(:func:`calculators.engine.procedures.base.pinned_catalog`), so every value
that depends on the stack is drawn for it (v4, which also keeps a decode
batch's KV cache within the memory the weights leave; other draws without
fixed inputs are those of v3). v5 solves each draw and draws again when its problem has no answer
(:data:`DRAW_ATTEMPTS`); every draw that had one is v4's. v6: the simulated drills' sweeps count goodput by the
simulator's window rule (a request still running at the run's end counts if it can still meet both targets), so a
new knee problem's stored goodputs are higher near the knee; problems stored before keep their sweep. v7: the
December 2026 cards (Rubin NVL72, Rubin CPX, MI455X, the MI355X's fp8/fp4 compute) join the cards a stack is drawn
on, and a served model on a card quoted only at fp8/fp4 draws fp8 or nvfp4 weights. v8: the Qwen3 models (8B, 32B,
30B-A3B, 235B-A22B) join the models a stack is drawn with. v9: prefill and prefix problems store their MFU as
``prefill_mfu`` (``mfu`` before, still read); every draw is v8's. v10: a draw stores the efficiencies its steps
use (bandwidth efficiency, MFU, prefill MFU, all-reduce latency) where the family takes them and did not draw them,
read from the calibration table for the drawn card and precision
(:func:`calculators.engine.procedures.inputs.calibrated_defaults`; the quantities' defaults for a card without a
row), so a problem shows them and keeps them when the table is refitted; problems stored before read the defaults.
v11: a knee problem also stores up to four refining runs between the swept rates either side of its knee (its answer
is where goodput ÷ rate crosses 0.9, read linearly between them), and every stored point keeps its p99 TPOT and the
requests missing each target. v12: Kimi K2 joins the models a stack is drawn with. v13: gpt-oss-120b and
gpt-oss-20b join them. v14: Llama 4 Scout and Maverick join them. v15: decode, roofline and preempt problems store
the tokens already cached as ``cached_tokens`` (``context`` before, still read); every draw is v14's.
v16: disaggregation's verdict compares a chunked prefill's step (one 256-token chunk, input prefill_chunk_tokens,
beside the full decode batch) with the TPOT target instead of the whole prefill, so its expected answer moves (the
70B default no longer pays). v17: a decode problem's batch is capped at the KV limit (the ladder's budget at
its default utilisation and reserve), with a note, so a drawn batch beyond it expects the capped step. v18: a
prefill problem also expects causal_prefill_ms (the attention term halved). v19: a drawn decode batch is the batch
the engine quotes its step for (capped at the KV limit, whose budget keeps the reserve), and the measured rate is
drawn against that batch's share of the ceiling. v20: a decode problem draws its batch and context under the one
capacity rule the plan caps with (kv_batch_limit, the reserve kept) instead of a second reserve-less one, so a
batch the cap would have cut to an odd size (61) is drawn as the largest listed batch that fits (32). v21:
DeepSeek-V3.2-Exp (sparse attention) joins the models a stack is drawn with. v22: a preemptrate problem also
expects the ladder's budget steps before its KV tokens (card_gib, usable_gib, weights_gib, kv_budget_gib,
kv_bytes_per_token); every draw and every earlier expected value is v21's. v23: the MI355X, now quoted at bf16 (AMD's
dense 2.5 PFLOP/s), joins the cards compute problems are drawn on. v24: the MI355X's Infinity Fabric (8 cards at
537.6 GB/s per direction) lets a stack on it be drawn on more than one card. v25: the calibration table is refitted
(TensorRT-LLM of 2023 its own engine), so the rows problems store move. v26: the simulated drills (knee, ttftp99,
tpotbatch, preemptrate) step and simulate at the calibration table's row for their card and precision instead of
the stated convention, so their sweeps and answers move; a stored problem keeps the constants its stored sweep
names (errata simulated-drills-calibrated). v27: tpotbatch draws only stacks whose prompts' prefill is
compute-bound (a small-active MoE on a fast card is drawn again or, fixed by a coach, refused with a sentence): its
sweep's centre charged each prefill as a whole step and missed the target (errata tpotbatch-memory-bound-prefill).
v28: the simulated drills' sweeps are centred charging each prefill the time it adds to the decode steps it shares
(the step model's mixed step less the decode step alone: its compute share where the step is compute-bound), not a
whole step of the card, so every simulated drill's sweep moves (the worked knee scenario's from 4.7 … 28 to 6 … 36
req/s); tpotbatch draws again any stack whose TPOT target binds before the 256-sequence limit, memory-bound
prefills included, and preemptrate's draw reads the prefills' share the same way (errata sim-centre-prefill-share).
v29: the calibration table is refitted (a card's efficiencies drawn toward the pool, the step overhead growing per
doubling of the TP degree, not per card), so the rows problems store and the simulated drills' sweeps move (errata
calibration-pooled-rows). v30: the H100 PCIe's memory is its nvidia-smi total, 81,559 MiB (79.65 GiB), not the marketed
80 GB read as decimal (74.51 GiB), so every problem on it moves (errata h100-pcie-driver-total). v31: the
calibration's TP cost grows per all-reduce (each all-reduce's latency per doubling of the degree), not per step, and
the table is refitted, so the rows problems store and the simulated drills' sweeps move (errata
calibration-tp-per-collective). v32: the 2023 vLLM runs pay the declared launch cost of an engine without CUDA
graphs, and the refit moves the A100 40GB's 16-bit row (bandwidth efficiency 0.66 → 0.74 at batch 1, 0.72 → 0.74
at large batch), so a problem drawn on that card stores the new values (errata calibration-eager-launch).
v33: a KV problem draws only the degrees whose cards hold the model's weights, so Llama-3.1-70B no longer "runs on
one card" (errata kv-drawn-degree-fits).
"""

from __future__ import annotations

import inspect
import random
import secrets

from calculators.engine.catalog import Catalog, default_catalog
from calculators.engine.errors import EngineError, InputError
from calculators.engine.procedures.base import STACK_INPUTS, pinned_catalog
from calculators.engine.procedures.compute import smallest_fitting_degree
from calculators.engine.procedures.inputs import calibrated_defaults, clean_inputs
from calculators.families import FAMILIES
from calculators.simulation import run_sweep
from drills.models import ProblemInstance

GENERATOR_VERSION = 33
MAX_SEED = 2**63


def drill_families() -> list:
    """The families that have a problem generator, in page order."""
    return [family for family in FAMILIES.values() if family.generate is not None]


# How many times one seed draws before it gives up: a draw whose problem cannot be solved (a simulated knee
# where no swept rate keeps 0.9 of its goodput, a sweep whose TPOT never crosses the target) is drawn again
# from the same seeded generator, so the seed still names one problem.
DRAW_ATTEMPTS = 8


def generate_inputs(family: str, seed: int, catalog: Catalog | None = None, fixed: dict | None = None) -> dict:
    """The inputs of problem (``family``, ``seed``), with ``fixed`` inputs held (``{"model": …}``).

    A fixed model or card pins the catalog the family draws from, so the values that depend on it are
    drawn for it; other fixed inputs replace the drawn ones, and a generator that takes ``fixed`` (decode)
    draws what depends on them (its measured rate) after holding them. A family with ``prepare`` (the
    simulated drills) then completes the inputs with what the problem stores beside them (its sweep, run
    for the final inputs). The problem is solved before it is returned: a draw whose problem cannot be
    solved (the engine's one sentence) is drawn again from the same seeded generator, up to
    :data:`DRAW_ATTEMPTS` times, so what depends on the fixed inputs is redrawn within their bounds.

    ``KeyError`` for a family without drills; :class:`InputError` (one sentence) when the family cannot draw
    a problem (for the fixed stack, or in :data:`DRAW_ATTEMPTS` draws), and :class:`.errors.CatalogError`
    for an unknown id.
    """
    record = FAMILIES[family]
    if record.generate is None:
        raise KeyError(family)
    catalog, fixed = catalog or default_catalog(), fixed or {}
    pinned = pinned_catalog(catalog, fixed)
    if fixed:  # a name the family does not take, or a value out of its bounds, fails every draw alike: say so once
        clean_inputs(record.inputs, fixed, catalog)
    rng = random.Random(f"{family}:{seed}")
    takes_fixed = bool(fixed) and "fixed" in inspect.signature(record.generate).parameters
    problem: EngineError | None = None
    for _ in range(DRAW_ATTEMPTS):
        try:
            if takes_fixed:  # it draws what depends on them
                inputs = {**record.generate(rng, pinned, fixed=fixed), **fixed}
            else:
                inputs = {**record.generate(rng, pinned), **fixed}
            inputs = {**calibrated_defaults(record.inputs, inputs), **inputs}  # stored with the draw (v10)
        except (RuntimeError, IndexError, InputError) as exc:  # the generators' "nothing fits" and empty pools
            if pinned is catalog:
                raise
            raise InputError(_no_draw(family, fixed, pinned, exc),
                             field="model" if "model" in fixed else "gpu") from exc
        if record.prepare:
            inputs = record.prepare(inputs, catalog, run_sweep)  # the sweep through the web's cache
        try:
            record.run(dict(inputs), catalog)
        except EngineError as exc:  # this draw has no answer: draw again
            problem = exc
            continue
        return inputs
    stack = " on ".join(str(fixed[name]) for name in STACK_INPUTS if name in fixed)
    where = f" for {stack}" if stack else ""
    raise InputError(f"No {family} problem{where} could be drawn in {DRAW_ATTEMPTS} tries (the last: "
                     f"{str(problem).rstrip('.')}).", field="model" if "model" in fixed else "gpu")


def unsolvable(problem: ProblemInstance) -> str | None:
    """The engine's sentence saying why a stored ``problem`` cannot be solved, or ``None`` when it can.

    A problem stored before its generator checked its draws (a knee with no rate meeting both targets), or
    whose fixed inputs name a model the catalog no longer holds, is answered with this sentence instead of
    an error page.
    """
    try:
        problem.solve()
    except EngineError as error:
        return str(error)
    return None


def _no_draw(family: str, fixed: dict, pinned: Catalog, problem: Exception) -> str:
    """Why ``family`` has no problem on the fixed stack: the weights do not fit, or the generator's reason."""
    stack = " on ".join(str(fixed[name]) for name in STACK_INPUTS if name in fixed)
    if not isinstance(problem, IndexError) and "model" in fixed and "gpu" in fixed and not any(
            smallest_fitting_degree(pinned, fixed["model"], fixed["gpu"], dtype) for dtype in ("bf16", "int4")):
        return (f"No {family} problem can be drawn for {stack}: its weights do not fit even 8 of those cards "
                f"at 4-bit.")
    if isinstance(problem, IndexError):  # an empty pool: the family draws only other kinds of model or card
        return f"No {family} problem can be drawn for {stack}: the family does not draw problems on it."
    return f"No {family} problem can be drawn for {stack} ({str(problem).rstrip('.')})."


def snapshot_for(inputs: dict, catalog: Catalog) -> dict:
    """The raw catalog entries a problem uses, to store beside it."""
    snapshot = {"models": [], "gpus": []}
    if "model" in inputs:
        snapshot["models"].append(catalog.model(inputs["model"]).entry)
    if "gpu" in inputs:
        snapshot["gpus"].append(catalog.gpu(inputs["gpu"]).entry)
    return snapshot


def draw_problem(family: str, seed: int, fixed_inputs: dict | None = None) -> ProblemInstance:
    """The problem of ``family`` drawn from ``seed``, *not saved* (what reading a page shows).

    The same seed always draws the same inputs (``generate_inputs``), so the page can be rebuilt from the
    address alone (``/drills/<family>/new/?seed=N``) and nothing is stored until a write. ``fixed_inputs`` (a
    bank template's, e.g. ``{"model": "llama-3.1-70b"}``) are held, and what depends on a fixed model or card
    is drawn for it.
    """
    catalog = default_catalog()
    inputs = generate_inputs(family, seed, catalog, fixed_inputs)
    return ProblemInstance(family=family, seed=seed, generator_version=GENERATOR_VERSION, inputs=inputs,
                           snapshot=snapshot_for(inputs, catalog))


def create_problem(family: str, seed: int | None = None, user=None,
                   fixed_inputs: dict | None = None) -> ProblemInstance:
    """Draw (:func:`draw_problem`) and save a problem; a random seed when none is given."""
    problem = draw_problem(family, secrets.randbelow(2**31) if seed is None else seed, fixed_inputs)
    problem.created_by = user if user and user.is_authenticated else None
    problem.save()
    return problem

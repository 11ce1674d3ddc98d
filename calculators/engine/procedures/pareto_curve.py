"""The throughput–interactivity curve itself: every grid point of docs/architecture.md §12, costed by the step model.

:func:`pareto_curve` walks the tensor-parallel degrees 1, 2, 4 and 8 (and the
one asked for), keeps those the heads accept and whose cards hold the weights
and at least one sequence, and at each costs batches 1, 2, 4, … up to the KV
limit with :func:`~..step_model.step_ms`: tok/s per user = 1 ÷ step, tok/s per
card = batch ÷ step ÷ cards. A point meets the TPOT target when its step is at
most the target. The result is plain data (JSON-ready) for the page's chart
and table, the API and the notes.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import InputError
from ..hf_config import ModelConfig
from ..step_model import Replica, step_ms
from .base import format_number

CURVE_DEGREES = (1, 2, 4, 8)
# A step this close above the target still meets it (the largest_batch search's tolerance).
TARGET_TOLERANCE = 1e-12


def power_of_two_at_most(value: float) -> int:
    """The largest power of two ``≤ value`` (1, 2, 4, …), or 0 when ``value < 1``."""
    if value < 1:
        return 0
    power = 1 << (int(value).bit_length() - 1)
    return power


def grid_batches(limit: int) -> list[int]:
    """Batches 1, 2, 4, … up to ``limit`` (the KV limit); empty below 1."""
    batches, batch = [], 1
    while batch <= limit:
        batches.append(batch)
        batch *= 2
    return batches


def _point(replica: Replica, batch: int, context: int, target_ms: float) -> dict[str, Any]:
    cost = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * context)
    return {"batch": batch, "step_ms": cost.step_ms, "memory_ms": cost.memory_ms, "compute_ms": cost.compute_ms,
            "comm_ms": cost.comm_ms, "tok_s_per_user": 1000 / cost.step_ms,
            "tok_s_per_card": batch * 1000 / cost.step_ms / replica.tp,
            "meets_target": cost.step_ms <= target_ms * (1 + TARGET_TOLERANCE)}


def pareto_curve(cfg: ModelConfig, gpu, inputs: dict[str, Any], kv_limit: Callable[[int], int]) -> dict[str, Any]:
    """The curve for cleaned ``inputs`` (the pareto family's), with ``kv_limit(degree)`` giving the
    batch the KV budget holds at a degree (raising :class:`InputError` where the degree is refused).

    Returns ``{"target_ms", "target_tok_s_per_user", "marked": {"gpus", "batch"} | None, "best": point
    | None, "degrees": [{"gpus", "kv_limit", "refused", "points", "marked_batch"}]}``; each point holds
    ``batch``, ``step_ms``, ``memory_ms``, ``compute_ms``, ``comm_ms``, ``tok_s_per_user``,
    ``tok_s_per_card`` and ``meets_target`` (and ``gpus`` in ``best``).
    """
    target = inputs["tpot_target_ms"]
    degrees = []
    for degree in sorted(set(CURVE_DEGREES) | {inputs["gpus"]}):
        entry: dict[str, Any] = {"gpus": degree, "kv_limit": 0, "refused": "", "points": [], "marked_batch": 0}
        degrees.append(entry)
        try:
            limit = kv_limit(degree)
            replica = Replica(cfg, gpu, degree, inputs["weights_dtype"], inputs["kv_dtype"], inputs["weights_bits"],
                              bandwidth_efficiency=inputs["bandwidth_efficiency"], mfu=inputs["mfu"],
                              allreduce_latency_us=inputs["allreduce_latency_us"])
        except InputError as exc:
            entry["refused"] = str(exc)
            continue
        entry["kv_limit"] = limit
        if limit < 1:
            entry["refused"] = (f"a replica of {degree} × {gpu.name} holds no sequence of {inputs['context']:,} "
                                f"tokens beside the weights and reserves.")
            continue
        entry["points"] = [_point(replica, batch, inputs["context"], target) for batch in grid_batches(limit)]
        meeting = [p["batch"] for p in entry["points"] if p["meets_target"]]
        entry["marked_batch"] = max(meeting, default=0)
    marked = next((d for d in degrees if d["gpus"] == inputs["gpus"] and d["marked_batch"]), None)
    candidates = [{**p, "gpus": d["gpus"]} for d in degrees for p in d["points"] if p["meets_target"]]
    best = max(candidates, key=lambda p: (p["tok_s_per_card"], p["tok_s_per_user"]), default=None)
    return {"target_ms": target, "target_tok_s_per_user": 1000 / target,
            "marked": {"gpus": marked["gpus"], "batch": marked["marked_batch"]} if marked else None,
            "best": best, "degrees": degrees}


def curve_notes(curve: dict[str, Any], inputs: dict[str, Any], values: dict[str, float], gpu_name: str) -> list[str]:
    """What the curve is, where the target puts the graded point, the best point across degrees and
    why any degree is missing."""
    tok_s = lambda v: format_number(v, "tok/s")  # noqa: E731 - a local shorthand
    target = curve["target_ms"]
    shown = [d for d in curve["degrees"] if d["points"]]
    notes = [
        f"The curve: at each tensor-parallel degree of {', '.join(str(d['gpus']) for d in shown)} the batch "
        f"doubles from 1 up to the KV limit; each point is one decode step of the serving model (every sequence "
        f"holding {inputs['context']:,} tokens), plotted as tok/s per user (1 ÷ step) against tok/s per card "
        f"(batch ÷ step ÷ cards). Points right of {tok_s(curve['target_tok_s_per_user'])} per user meet the "
        f"{target:g} ms TPOT target.",
    ]
    batch, exact = int(values["batch"]), int(min(values["batch_memory_limit"], values["batch_tpot_limit"]))
    binding = "the KV cache" if values["batch_memory_limit"] <= values["batch_tpot_limit"] else "the TPOT target"
    bound = "compute" if values["compute_ms"] > values["memory_ms"] else "memory-bandwidth"
    notes.append(
        f"On {inputs['gpus']} × {gpu_name} the target marks batch {batch:,}: {values['step_ms']:.3f} ms per step "
        f"({bound}-bound), {tok_s(values['tok_s_per_user'])} per user and {tok_s(values['tok_s_per_card'])} per "
        f"card. {binding[0].upper() + binding[1:]} binds: the largest batch within both limits is {exact:,}"
        + (f", and the grid rounds it down to {batch:,}." if exact != batch else ", itself a grid point."))
    best = curve["best"]
    if best and (best["gpus"], best["batch"]) != (inputs["gpus"], batch):
        notes.append(
            f"Across the degrees the most tok/s per card that meets the target is batch {best['batch']:,} on "
            f"{best['gpus']} card{'s' if best['gpus'] > 1 else ''}: {tok_s(best['tok_s_per_card'])} per card at "
            f"{tok_s(best['tok_s_per_user'])} per user, {best['tok_s_per_card'] / values['tok_s_per_card']:.2f}× "
            f"the marked point's.")
    elif best:
        notes.append("The marked point is also the most tok/s per card that meets the target at any degree of the "
                     "grid.")
    for degree in curve["degrees"]:
        if degree["refused"]:
            notes.append(f"No curve at {degree['gpus']} card{'s' if degree['gpus'] > 1 else ''}: {degree['refused']}")
    notes.append("A larger degree buys interactivity (each step reads its share of the weights from more cards) "
                 "but pays two all-reduces per layer and, past the K/V head count, a copy of the cache per card: "
                 "per card it earns less unless its batch grows with it.")
    return notes

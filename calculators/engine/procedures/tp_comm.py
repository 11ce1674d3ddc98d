"""What tensor parallelism's all-reduces cost per step, and when a bigger degree stops paying.

Read by the ``tp`` family's notes. Every number comes from the serving model's
step (:mod:`..step_model`, docs/architecture.md §12): two ring all-reduces of the step's
activations per layer, each ``2 × (t − 1) ÷ t × tokens × d_model × 2 B`` over
the ring's slowest per-direction link plus a fixed latency. At batch 1 a step
is memory-bound: a doubling of the degree halves the memory time but adds
nothing it removes from the all-reduces, whose latency is paid per layer
whatever the degree, so past some degree the step stops falling.
"""

from __future__ import annotations

from ..catalog import Gpu
from ..errors import InputError
from ..hf_config import ModelConfig
from ..step_model import Replica, check_degree, step_ms
from .base import format_number

# Degrees compared for "when does a bigger one stop paying": powers of two to 64.
DEGREES_COMPARED = (1, 2, 4, 8, 16, 32, 64)


def _replica(cfg: ModelConfig, gpu: Gpu, degree: int, weights_dtype: str, kv_dtype: str,
             weights_bits: float | None) -> Replica | None:
    try:
        check_degree(cfg, degree)
        return Replica(cfg, gpu, degree, weights_dtype, kv_dtype, weights_bits)
    except InputError:
        return None


def comm_notes(cfg: ModelConfig, gpu: Gpu, degree: int, weights_dtype: str, kv_dtype: str,
               weights_bits: float | None, per_node: int) -> tuple[dict, list[str]]:
    """(extra values, sentences) on the all-reduce cost at ``degree`` and the degree past which
    a single stream's step (batch 1, empty cache) no longer falls. ``extra`` holds ``comm_ms``
    and ``step_ms`` at the degree (ms) and ``fastest_degree`` (cards); empty when the step
    cannot be costed (a link with no figure on record, a degree the heads refuse)."""
    replica = _replica(cfg, gpu, degree, weights_dtype, kv_dtype, weights_bits)
    if replica is None:
        return {}, []
    notes = []
    here = step_ms(replica, decode_batch=1, decode_context_tokens=0)
    link, kind = replica.link
    if degree > 1 and link is not None:  # a ring without a link on record was refused when the replica was made
        notes.append(
            f"All-reduces: 2 per layer × {cfg.layers} layers = {2 * cfg.layers} per step, each moving "
            f"{cfg.hidden_size:,} × 2 B per token over {kind} ({format_number(link, 'GB/s')} per direction). "
            f"At batch 1 they cost {here.comm_ms:.3f} ms of a {here.step_ms:.3f} ms step (memory "
            f"{here.memory_ms:.3f} ms at {replica.bandwidth_efficiency:.0%} of peak bandwidth); "
            f"{_larger_part(replica, here.comm_ms)}.")
    steps = {}
    for candidate in DEGREES_COMPARED:
        other = _replica(cfg, gpu, candidate, weights_dtype, kv_dtype, weights_bits) if candidate >= degree else None
        if other is not None:
            steps[candidate] = step_ms(other, decode_batch=1, decode_context_tokens=0).step_ms
    if not steps:
        return {"comm_ms": here.comm_ms, "step_ms": here.step_ms}, notes
    fastest = min(steps, key=lambda candidate: steps[candidate])
    if fastest == max(steps) and fastest > degree:
        notes.append(f"A single stream's step keeps falling through {fastest} cards, the largest degree compared "
                     f"({steps[degree]:.3f} → {steps[fastest]:.3f} ms), but ever more slowly: the all-reduces' "
                     f"fixed latency stays while the memory time halves.")
    elif fastest > degree:
        notes.append(f"A single stream's step keeps falling up to {fastest} cards "
                     f"({steps[degree]:.3f} → {steps[fastest]:.3f} ms); beyond that the all-reduces cost more "
                     f"than the halved memory time saves, so a bigger degree stops paying.")
    elif len(steps) > 1:
        bigger = min(d for d in steps if d > degree)
        notes.append(f"A bigger degree does not pay for latency: at {bigger} cards a single stream's step is "
                     f"{steps[bigger]:.3f} ms against {steps[degree]:.3f} ms here, because the all-reduces "
                     f"cost more than the halved memory time saves.")
    return {"comm_ms": here.comm_ms, "step_ms": here.step_ms, "fastest_degree": fastest}, notes


def _larger_part(replica: Replica, comm_ms: float) -> str:
    """Which part of the all-reduce time dominates: the fixed latency or the bytes."""
    latency_ms = 2 * replica.model.layers * replica.allreduce_latency_us / 1000
    if latency_ms >= comm_ms / 2:
        return (f"the {replica.allreduce_latency_us:g} µs fixed cost per collective ({latency_ms:.3f} ms in all), "
                f"not the bytes, is most of it")
    return f"the bytes, not the {replica.allreduce_latency_us:g} µs fixed cost per collective, are most of it"

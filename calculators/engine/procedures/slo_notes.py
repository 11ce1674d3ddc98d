"""The ``slo`` family's feasibility check and the notes that explain its result.

The notes say which limit binds (memory or the TPOT target, and on which side of
the roofline), whether the step at that batch is memory- or compute-bound, how
the fleet follows from the load, and the model's own caveats.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Gpu
from ..dtypes import NOMINAL_BITS
from ..errors import InputError
from ..hf_config import ModelConfig
from .base import format_number
from .kv import fp4_cache_note, kv_notes
from .slo_inputs import GIB, flops_per_sequence, weights_read_ms


def _step_parts_ms(given: dict[str, float], bytes_gib: float, batch: float) -> tuple[float, float]:
    """(bandwidth time, compute time) of one step, in ms."""
    reading = bytes_gib * GIB / (given["gpus"] * given["bandwidth_gb_s"] * 1e9 * given["bandwidth_efficiency"])
    computing = flops_per_sequence(given) * batch / (given["gpus"] * given["peak_tflops"] * 1e12 * given["mfu"])
    return reading * 1e3, computing * 1e3


def check_feasible(values: dict[str, float], given: dict[str, float], gpu: Gpu, inputs: dict[str, Any]) -> None:
    """Raise :class:`~..errors.InputError` when the replica cannot serve one sequence within the target.

    ``values`` are the steps through ``max_batch`` (GiB and sequences); the error names the field
    to change: ``gpus`` when the weights or one sequence's cache do not fit, ``tpot_target_ms``
    when reading the weights alone takes longer than the target.
    """
    gib = lambda v: format_number(v, "GiB")  # noqa: E731 - a local shorthand
    cards = f"{inputs['gpus']} × {gpu.name}"
    if values["batch_memory_limit"] < 1:
        if values["replica_kv_budget_gib"] <= 0:
            raise InputError(
                f"The weights ({gib(values['weights_gib'])}) and the activation reserves do not fit in {cards}; "
                f"use more GPUs per replica or a smaller weight precision.", field="gpus")
        raise InputError(
            f"The KV budget of {gib(values['replica_kv_budget_gib'])} on {cards} cannot hold one sequence of "
            f"{inputs['context']:,} tokens ({gib(values['per_user_gib'])}); use more GPUs, a shorter context or "
            f"an fp8 cache.", field="gpus")
    if values["batch_tpot_limit"] < 1:
        reading = weights_read_ms(given, values["weights_gib"])
        raise InputError(
            f"Not even one sequence meets a TPOT of {inputs['tpot_target_ms']:g} ms: reading the weights alone "
            f"takes {reading:.3g} ms at {inputs['bandwidth_efficiency']:g} of {cards}'s bandwidth. Relax the target "
            f"or add GPUs.", field="tpot_target_ms")


def _step_model_note(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any], given: dict[str, float],
                     precision: str) -> str:
    """How a decode step at batch B is timed, with this replica's numbers."""
    n, context = inputs["gpus"], inputs["context"]
    return (
        f"A decode step at batch B (the serving model's step) takes the longer of two times, plus the "
        f"all-reduces: the bytes read (the weights once plus B replica-wide caches, each at the full "
        f"{context:,}-token context) over {n} × {format_number(gpu.bandwidth_gb_s, 'GB/s')} at "
        f"{inputs['bandwidth_efficiency']:g} of peak, and B × (2 × {given['active_params']:,} active parameters + "
        f"the attention over {context:,} cached tokens) FLOPs over {n} × {given['peak_tflops']:g} dense {precision} "
        f"TFLOP/s at an MFU of {inputs['mfu']:g} (never the 2:4 sparse figure)"
        + (f"; then {int(given['allreduces'])} all-reduces of B × {cfg.hidden_size:,} × 2 B over "
           f"{format_number(given['link_gb_s'], 'GB/s')} per direction plus {inputs['allreduce_latency_us']:g} µs "
           f"each" if given["allreduces"] else "")
        + ". The KV budget is the ladder's: cards × utilisation − weights − one reserve per card.")


def _binding_note(inputs: dict[str, Any], given: dict[str, float], values: dict[str, float]) -> tuple[str, str]:
    """Which limit binds (``memory``, ``tpot`` or ``both``) and the note that says why."""
    n, context, target = inputs["gpus"], inputs["context"], inputs["tpot_target_ms"]
    memory, tpot, batch = (int(values[k]) for k in ("batch_memory_limit", "batch_tpot_limit", "max_batch"))
    if memory < tpot:
        return "memory", (
            f"Memory binds: the KV budget holds {memory:,} sequences at {context:,} tokens, while the {target:g} ms "
            f"target would allow {tpot:,}. The replica has latency to spare; more cache room (more cards, an fp8 "
            f"cache, a shorter context limit) raises the batch, a faster card does not.")
    if tpot == memory:
        return "both", (f"Both limits allow {batch:,} sequences: the KV budget and the {target:g} ms target bind "
                        f"together.")
    reading_weights = weights_read_ms(given, values["weights_gib"])
    bandwidth_side = ((target - reading_weights) * 1e-3 * n * given["bandwidth_gb_s"] * 1e9
                      * given["bandwidth_efficiency"] / (values["per_user_gib"] * GIB))
    compute_side = target * 1e-3 * n * given["peak_tflops"] * 1e12 * given["mfu"] / flops_per_sequence(given)
    if bandwidth_side <= compute_side:
        side = (f"the bandwidth side: reading the weights takes {reading_weights:.3g} ms of each step, and the "
                f"rest reads {bandwidth_side:,.1f} caches")
        lever = "Fewer bytes per step (fp8 weights or cache, a shorter context) or a looser target"
    else:
        side = (f"the compute side: the FLOPs of {compute_side:,.1f} sequences fill the target, so this batch "
                f"is compute-bound")
        lever = "More FLOP/s (fp8 tensor cores, more cards) or a looser target"
    return "tpot", (f"The TPOT target binds: {target:g} ms allows {tpot:,} sequences ({side}), while the KV budget "
                    f"would hold {memory:,}. {lever} raises the batch.")


def _model_notes(cfg: ModelConfig, inputs: dict[str, Any], given: dict[str, float], batch: int,
                 precision_note: str | None) -> list[str]:
    """The notes about the model: its experts, its compute precision, its weights' width, its cache."""
    notes = []
    if cfg.is_moe:
        touched = cfg.num_experts * (1 - (1 - cfg.experts_per_token / cfg.num_experts) ** batch)
        notes.append(
            f"Mixture of experts: a batch of {batch:,} touches {touched:.2f} of the {cfg.num_experts} routed "
            f"experts per layer (E × (1 − (1 − k/E)^B)), so the step reads those experts' weights, while each "
            f"token computes with its {given['active_params']:,} active parameters.")
    if precision_note:
        notes.append(precision_note)
    if given["weight_bits"] != NOMINAL_BITS[inputs["weights_dtype"]]:
        notes.append(f"{inputs['weights_dtype']} weights are charged {given['weight_bits']:g} bits each, not the "
                     f"nominal {NOMINAL_BITS[inputs['weights_dtype']]}.")
    return notes + kv_notes(cfg) + list(cfg.notes)


def slo_notes(cfg: ModelConfig, gpu: Gpu, inputs: dict[str, Any], given: dict[str, float],
              values: dict[str, float], precision: str, precision_note: str | None) -> tuple[list[str], dict]:
    """The result's notes and its ``extra`` entries (``binding``, ``compute_bound``, ``weights_read_ms``,
    ``compute_precision``), from the cleaned inputs, the given numbers and the step values."""
    batch = int(values["max_batch"])
    binding, binding_note = _binding_note(inputs, given, values)
    reading, computing = _step_parts_ms(given, values["bytes_per_step_gib"], batch)
    compute_bound = computing > reading
    demand = inputs["request_rate"] * inputs["output_tokens"]
    notes = [
        gpu.memory_note,
        *fp4_cache_note(inputs["kv_dtype"], gpu),
        _step_model_note(cfg, gpu, inputs, given, precision),
        binding_note,
        f"At {batch:,} sequences the step is {'compute' if compute_bound else 'memory-bandwidth'}-bound: "
        f"{format_number(values['bytes_per_step_gib'], 'GiB')} read take {reading:.3g} ms, the FLOPs "
        f"{computing:.3g} ms.",
        f"Replicas: {format_number(inputs['request_rate'], '1')} req/s × {inputs['output_tokens']:,} output tokens "
        f"= {demand:,.0f} tok/s of decode, over {format_number(values['tokens_per_s'], 'tok/s')} per replica. "
        f"That is Little's law at full occupancy with prefill and queueing left out; size the headroom and "
        f"spares with the fleet calculator.",
        *_model_notes(cfg, inputs, given, batch, precision_note),
    ]
    extra = {"binding": binding, "compute_bound": compute_bound,
             "weights_read_ms": weights_read_ms(given, values["weights_gib"]), "compute_precision": precision}
    return notes, extra

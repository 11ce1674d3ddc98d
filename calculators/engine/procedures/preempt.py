"""The ``preempt`` family: what evicting a running sequence costs — recompute or swap (docs/architecture.md §12).

When the KV cache runs out, an engine preempts a sequence and later brings its
cache back, either by recomputing it (a prefill of every token it held) or by
swapping its blocks to CPU memory over PCIe and back. Steps, in order:

``kv_bytes_per_token`` (formula 1), ``kv_replication`` (copies across the
replica), ``recompute_flops_per_token`` (2 × active parameters + attention over
the context, the prefill convention: 4 × layers × q_heads × head_dim × c, no
causal halving), ``recompute_ms_per_token`` (÷ replica peak × prefill MFU),
``swap_ms_per_token`` (each card moves its share, KV per token × replication ÷
cards, over its PCIe link per direction: one way), ``recompute_to_swap_ratio``,
``recompute_ms_per_request`` (the prefill of the ``context`` tokens:
context × per token, exact under this convention) and
``swap_ms_per_request`` (out and back in: 2 × context × per token).

On the reference stack swapping a token one way is about 20× cheaper than
recomputing it; a note says what recompute costs when it rides in a
memory-bound decode step instead (its marginal step time, from the step model).
Offload to CPU memory uses the same host link as swap on every catalog card.
"""

from __future__ import annotations

import random
from typing import Any

from ..catalog import Catalog
from ..errors import InputError
from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig, param_breakdown
from ..step_model import Replica, attention_head_dim, compute_precision, step_ms
from .base import (
    DEGREE_RULE_AFTER_GIVEN,
    KV_DTYPES_DRAWN,
    Family,
    Offline,
    Plan,
    Result,
    StepSpec,
    format_number,
    gpu_supports,
)
from .compute import draw_served_model, replication_step
from .inputs import (
    GPU,
    GPUS,
    KV_DTYPE,
    MODEL,
    PREFILL_MFU,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    input_or_default,
    resolve_model,
    with_aliases,
)
from .kv import kv_given, kv_per_token_spec

# Tokens the sequence has cached, not a context limit: its own key (issue 29); ``context`` is still read.
CACHED_TOKENS = InputSpec("cached_tokens", "int", 2300, "tokens the preempted sequence holds", minimum=1,
                          maximum=10_000_000, unit="tok", label="Tokens in the sequence", older_names=("context",))
DECODE_BATCH = InputSpec("decode_batch", "int", 64, "sequences in the decode step a recompute could ride in",
                         minimum=1, maximum=100_000, label="Decode batch it rides in")
INPUTS = (MODEL, GPU, GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, CACHED_TOKENS, PREFILL_MFU, DECODE_BATCH)
STEP_KEYS = ("kv_bytes_per_token", "kv_replication", "recompute_flops_per_token", "recompute_ms_per_token",
             "swap_ms_per_token", "recompute_to_swap_ratio", "recompute_ms_per_request", "swap_ms_per_request")

_T = Var("gpus", "GPUs", "cards in the replica")
RECOMPUTE_FLOPS_PER_TOKEN = Formula(
    "recompute_flops_per_token",
    (Var("active_params", "1", "parameters one token uses"), Var("layers", "1", "layers"),
     Var("heads", "1", "query heads"), Var("attention_head_dim", "1", "values per query head (MLA: absorbed)"),
     Var("context", "tok", "tokens in the sequence")),
    lambda s: total(product(2, s["active_params"]),
                    product(4, s["layers"], s["heads"], s["attention_head_dim"], s["context"])),
    label="FLOPs to recompute one token of the cache",
)
RECOMPUTE_MS_PER_TOKEN = Formula(
    "recompute_ms_per_token",
    (Var("recompute_flops_per_token", "FLOP", "FLOPs per token"), _T,
     Var("peak_tflops", "TFLOP/s", "dense peak per card"), Var("prefill_mfu", "1", "prefill MFU")),
    lambda s: ratio(s["recompute_flops_per_token"], product(s["gpus"], s["peak_tflops"], s["prefill_mfu"])),
    label="Recompute time per token",
)
SWAP_MS_PER_TOKEN = Formula(
    "swap_ms_per_token",
    (Var("kv_bytes_per_token", "B", "KV cache per token"), Var("kv_replication", "1", "copies across the replica"),
     _T, Var("pcie_gb_s", "GB/s", "PCIe per card, per direction")),
    lambda s: ratio(product(s["kv_bytes_per_token"], s["kv_replication"]), product(s["gpus"], s["pcie_gb_s"])),
    label="Swap time per token, one way",
)
RATIO = Formula(
    "recompute_to_swap_ratio",
    (Var("recompute_ms_per_token", "ms", "recompute per token"), Var("swap_ms_per_token", "ms", "swap per token")),
    lambda s: ratio(s["recompute_ms_per_token"], s["swap_ms_per_token"]),
)
RECOMPUTE_MS_PER_REQUEST = Formula(
    "recompute_ms_per_request",
    (Var("context", "tok", "tokens in the sequence"), Var("recompute_ms_per_token", "ms", "recompute per token")),
    lambda s: product(s["context"], s["recompute_ms_per_token"]),
    label="Recompute time for the whole sequence",
)
SWAP_MS_PER_REQUEST = Formula(
    "swap_ms_per_request",
    (Var("context", "tok", "tokens in the sequence"), Var("swap_ms_per_token", "ms", "swap per token, one way")),
    lambda s: product(2, s["context"], s["swap_ms_per_token"]),
    label="Swap time for the whole sequence, out and back",
)
PREEMPT_FORMULAS = (RECOMPUTE_FLOPS_PER_TOKEN, RECOMPUTE_MS_PER_TOKEN, SWAP_MS_PER_TOKEN, RATIO,
                    RECOMPUTE_MS_PER_REQUEST, SWAP_MS_PER_REQUEST)


def preempt_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The eight steps (the KV formula follows the model's attention)."""
    per_token = {"recompute_ms_per_token": "recompute_ms_per_token"}
    return [
        kv_per_token_spec(cfg),
        replication_step(cfg),
        StepSpec(RECOMPUTE_FLOPS_PER_TOKEN,
                 label="FLOPs to recompute one token (2N + attention over the context)"),
        StepSpec(RECOMPUTE_MS_PER_TOKEN, {"recompute_flops_per_token": "recompute_flops_per_token"},
                 label="Recompute per token (÷ replica peak × prefill MFU)"),
        StepSpec(SWAP_MS_PER_TOKEN, {"kv_bytes_per_token": "kv_bytes_per_token", "kv_replication": "kv_replication"},
                 label="Swap per token, one way (each card's share over its PCIe link)"),
        StepSpec(RATIO,
                 {"recompute_ms_per_token": "recompute_ms_per_token", "swap_ms_per_token": "swap_ms_per_token"}),
        StepSpec(RECOMPUTE_MS_PER_REQUEST, per_token, label="Recompute the whole sequence"),
        StepSpec(SWAP_MS_PER_REQUEST,
                 {"swap_ms_per_token": "swap_ms_per_token"},
                 label="Swap the whole sequence out and back in"),
    ]


# --- the procedure -------------------------------------------------------------------------------------

def plan_preempt(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Recompute versus swap for one preempted sequence on a replica.

    ``raw`` holds ``model`` or ``config``, ``gpu``, ``gpus`` (a degree the heads
    accept), ``weights_dtype``/``weights_bits`` (the compute precision follows
    them), ``kv_dtype``, ``cached_tokens`` (tokens the sequence holds, ``context`` before),
    ``prefill_mfu`` (its quantity's default when missing) and ``decode_batch`` (64: the step a recompute could
    ride in, for the note). PCIe is ``gpus.json``'s per-direction figure. Raises
    :class:`~..errors.EngineError` subclasses on bad input, and
    :class:`~..errors.InputError` (field ``gpu``) for a card with no PCIe or dense
    bf16 figure on record.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    if not gpu.pcie_gb_s_per_direction:
        raise InputError(f"No per-direction PCIe figure is on record for the {gpu.name}, so a swap cannot be "
                         f"costed.", field="gpu")
    counts = param_breakdown(cfg)
    given = {
        **kv_given(cfg, inputs["kv_dtype"], inputs["gpus"]),
        "active_params": counts.active,
        "total_params": counts.total,  # read by no step: the total-for-active mistake (calculators.engine.mistakes)
        "attention_head_dim": attention_head_dim(cfg),
        "context": inputs["cached_tokens"],
        "peak_tflops": float(gpu.dense_tflops[compute_precision(inputs["weights_dtype"], gpu)]),
        "prefill_mfu": inputs["prefill_mfu"],
        "pcie_gb_s": gpu.pcie_gb_s_per_direction,
    }

    def finish(result: Result) -> None:
        result.notes = preempt_notes(cfg, gpu, inputs, result.values) + list(cfg.notes)

    return Plan("preempt", inputs, preempt_specs(cfg), given, [], {"model_name": model_name}, finish=finish)


def preempt_notes(cfg: ModelConfig, gpu, inputs: dict[str, Any], v: dict) -> list[str]:
    """The verdict per token and per request, and what recompute costs inside a memory-bound step."""
    notes = [
        f"Per token, swapping one way takes {v['swap_ms_per_token'] * 1e3:.3f} µs over {gpu.name}'s "
        f"{format_number(gpu.pcie_gb_s_per_direction, 'GB/s')} PCIe per direction and recomputing takes "
        f"{v['recompute_ms_per_token'] * 1e3:.3f} µs at a prefill MFU of {inputs['prefill_mfu']:g}: swap is "
        f"{v['recompute_to_swap_ratio']:.1f}× cheaper, and {v['recompute_to_swap_ratio'] / 2:.1f}× for the round "
        f"trip. Offload to CPU memory crosses the same host link, so it costs the same per byte.",
        f"For the whole {inputs['cached_tokens']:,}-token sequence: recompute "
        f"{v['recompute_ms_per_request']:.2f} ms of prefill (no causal halving), swap "
        f"{v['swap_ms_per_request']:.2f} ms out and back.",
    ]
    try:
        replica = Replica(cfg, gpu, inputs["gpus"], inputs["weights_dtype"], inputs["kv_dtype"],
                          inputs["weights_bits"], prefill_mfu=inputs["prefill_mfu"])
    except InputError:
        return notes
    batch = inputs["decode_batch"]
    alone = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * inputs["cached_tokens"])
    chunk = min(inputs["cached_tokens"], 512)
    folded = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * inputs["cached_tokens"],
                     prefill_chunks=((chunk, inputs["cached_tokens"] - chunk),))
    notes.append(
        f"Recompute folded into a memory-bound step costs only its marginal step time: a decode step of {batch:,} "
        f"sequences at {inputs['cached_tokens']:,} tokens takes {alone.step_ms:.3f} ms (memory {alone.memory_ms:.3f}, "
        f"compute {alone.compute_ms:.3f}); with the last {chunk:,} tokens recomputed in it, {folded.step_ms:.3f} ms "
        f"— {folded.step_ms - alone.step_ms:.3f} ms more, against {chunk * v['recompute_ms_per_token']:.3f} ms "
        f"standing alone. While the step is memory-bound, about {_free_tokens(alone, v):,} recomputed tokens fit "
        f"in the gap between its memory and compute times at no cost.")
    return notes


def _free_tokens(cost, v: dict) -> int:
    """Tokens whose recompute fits in a memory-bound step's idle compute (at the per-token cost)."""
    gap = cost.memory_ms - cost.compute_ms
    return max(0, int(gap / v["recompute_ms_per_token"])) if gap > 0 else 0


# --- problems -------------------------------------------------------------------------------------------

CONTEXTS = (512, 1024, 2300, 4096, 8192, 16384)


def generate_preempt(rng: random.Random, catalog: Catalog) -> dict:
    """A preemption problem: a served model on the smallest degree that holds it, a card with a PCIe
    figure, a sequence length the model supports.

    Deterministic for a given ``rng``; raises ``RuntimeError`` when 200 draws give no problem the
    calculator accepts."""
    for _ in range(200):
        inputs = draw_served_model(rng, catalog)
        gpu = catalog.gpu(inputs["gpu"])
        if not gpu.pcie_gb_s_per_direction:
            continue
        limit = catalog.model(inputs["model"]).config.max_position_embeddings or 8192
        inputs["kv_dtype"] = rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, inputs["gpu"], "fp8") else "bf16"
        inputs["cached_tokens"] = rng.choice([c for c in CONTEXTS if c <= limit] or [512])
        return inputs
    raise RuntimeError("No preemption problem could be drawn from the catalog.")


def describe_preempt(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in an interviewer's words."""
    held = with_aliases(INPUTS, inputs).get("cached_tokens", 2300)  # a stored problem may say context
    gpu = catalog.gpu(inputs["gpu"])
    cards = f"one {gpu.name}" if inputs.get("gpus", 1) == 1 else f"{inputs['gpus']} × {gpu.name} (tensor parallel)"
    return (f"{inputs['model']} with {inputs.get('weights_dtype', 'bf16')} weights and a "
            f"{inputs.get('kv_dtype', 'bf16')} KV cache runs on {cards}. The cache is full and the engine preempts a "
            f"sequence holding {held:,} tokens. Per token and for the whole sequence, what "
            f"does it cost to bring it back by recomputing it (prefill at an MFU of "
            f"{input_or_default(inputs, 'prefill_mfu'):g}) versus swapping it to CPU memory over PCIe and back? "
            f"How many "
            f"copies of the cache does the replica keep, and what is the ratio?")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
PREEMPT_RUBRIC = (
    "Computes swap per token from the cache bytes over one direction of the host link",
    "Computes recompute per token from the FLOPs at a prefill MFU, attention included",
    "Gets the direction right: swap is cheaper per token",
    "Explains when recompute still wins: folded into a memory-bound decode step",
)


FAMILIES = (
    Family("preempt", "Preemption: recompute or swap",
           "What bringing back a preempted sequence costs: recompute (a prefill) against a swap over PCIe, per "
           "token and per request, and the ratio.",
           INPUTS, plan_preempt, generate=generate_preempt, order=75, describe=describe_preempt,
           rubric=PREEMPT_RUBRIC,
           offline=Offline(checks=(DEGREE_RULE_AFTER_GIVEN,))),
)

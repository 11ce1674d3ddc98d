"""The lab: what a candidate measured serving a model on a real card, beside what the engine predicts.

:func:`predict` takes the run's setup (model, card, cards, precisions, engine
flags) and its measurements, runs the calculator families on the same inputs
(``ladder``, ``decode``, ``roofline``, ``kv``, ``prefill``) and returns one
:class:`Comparison` per measurement: the engine's figures, the measured value,
the derived efficiency (MBU, MFU, share of the cache pool), a one-line verdict
and the usual reasons for a gap. No Django here; the view and the stored
:class:`~drills.lab.models.LabRun` use it alike.

Engine flags are free text; a few are read to set the inputs they decide
(:func:`read_engine_flags`), and the page says which were read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calculators.engine.catalog import GIB, default_catalog
from calculators.families import FAMILIES
from drills.lab.comparison import Comparison, Figure
from drills.lab.comparison import fmt as _fmt
from drills.lab.flags import read_engine_flags
from drills.lab.vllm_log import log_comparison, read_startup_log

# The reference stack's settings where the flags say nothing (docs/architecture.md §2).
DEFAULT_UTILIZATION = 0.90
DEFAULT_CONTEXT = 8192
DEFAULT_BLOCK = 16
# The tokens each sequence holds during a batch sweep when no prompt length is given.
DEFAULT_SWEEP_TOKENS = 2300
# MFU bounds prefill kernels usually reach (the prefill family's notes), for the predicted time range.
PREFILL_MFU_RANGE = (0.35, 0.50)
# A start-up reading within this many GiB of the prediction counts as matching.
MEMORY_SLACK_GIB = 1.5

@dataclass
class Prediction:
    """Everything the lab shows for one run."""

    comparisons: list[Comparison]
    flags_read: list[str]
    notes: list[str]
    summary: dict[str, float | None]


def compute_precision(weights_dtype: str, gpu) -> str:
    """The precision whose dense peak bounds the matmuls: fp8/fp16 weights run in theirs, the rest in bf16."""
    if weights_dtype in ("fp8", "fp16") and gpu.dense_tflops.get(weights_dtype):
        return weights_dtype
    return "bf16"


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f} %"


def predict(setup: dict[str, Any], measured: dict[str, Any]) -> Prediction:
    """The engine's predictions for ``setup`` beside ``measured``.

    ``setup``: model, gpu, gpus, weights_dtype, kv_dtype, engine_flags.
    ``measured`` (any may be ``None``): startup_gib (per card), decode_tok_s,
    knee_batch, preempt_pct, prefill_ms with prompt_tokens, startup_log (a pasted vLLM
    start-up log, read into the ladder's steps by :mod:`drills.lab.vllm_log`).
    Raises the engine's :class:`~calculators.engine.errors.EngineError` for an
    impossible setup (e.g. fp8 on a card with no fp8 throughput).
    """
    catalog = default_catalog()
    gpu = catalog.gpu(setup["gpu"])
    flags, flags_read = read_engine_flags(setup.get("engine_flags", ""))
    gpus = int(setup.get("gpus") or 1)
    base = {"model": setup["model"], "gpu": setup["gpu"], "gpus": gpus,
            "weights_dtype": setup["weights_dtype"], "kv_dtype": setup["kv_dtype"]}
    utilization = flags.get("utilization", DEFAULT_UTILIZATION)
    context = flags.get("context", DEFAULT_CONTEXT)
    block = flags.get("block_size", DEFAULT_BLOCK)
    prompt_tokens = measured.get("prompt_tokens")
    sweep_tokens = int(prompt_tokens or DEFAULT_SWEEP_TOKENS)
    notes = []
    if "utilization" not in flags:
        notes.append(f"No memory-fraction flag was read, so the ladder uses {DEFAULT_UTILIZATION:g}, "
                     "vLLM's default.")
    if "context" not in flags:
        notes.append(f"No context-limit flag was read, so the worst case is sized at {DEFAULT_CONTEXT:,} tokens.")
    if flags.get("kv_dtype") and flags["kv_dtype"] != setup["kv_dtype"]:
        notes.append(f"Your flags ask for a {flags['kv_dtype']} cache but the form says {setup['kv_dtype']}; "
                     "the predictions follow the form.")
    if flags.get("tp") and flags["tp"] != gpus:
        notes.append(f"Your flags set tensor parallelism {flags['tp']} but the form says {gpus} "
                     f"card{'s' if gpus != 1 else ''}; the predictions follow the form.")

    ladder = FAMILIES["ladder"].run({**base, "utilization": utilization, "context": context,
                                     "avg_tokens": sweep_tokens, "block_size": block})
    lv = ladder.values
    comparisons = [
        _memory(ladder, lv, gpus, utilization, flags, measured.get("startup_gib")),
        _decode(base, measured.get("decode_tok_s"), flags),
        _knee(base, gpu, lv, sweep_tokens, flags, measured.get("knee_batch")),
        _preemption(lv, block, sweep_tokens, measured.get("preempt_pct")),
    ]
    prefill = _prefill(base, gpu, gpus, measured.get("prefill_ms"), prompt_tokens)
    if prefill is not None:
        comparisons.append(prefill)
    if measured.get("startup_log"):
        comparisons.append(log_comparison(read_startup_log(measured["startup_log"]), lv, gpus, context, block))
    summary = {c.key: next((f.value for f in c.derived if f.value is not None), None) for c in comparisons}
    return Prediction(comparisons, flags_read, notes, summary)


def _memory(ladder, lv, gpus, utilization, flags, startup_gib) -> Comparison:
    per_card = lv["usable_gib"] / gpus
    predicted = [
        Figure("Card, as the driver reports it", _fmt(lv["card_gib"] / gpus, "GiB"), lv["card_gib"] / gpus),
        Figure(f"Engine's share at {utilization:g} (predicted start-up use)", _fmt(per_card, "GiB"), per_card),
        Figure("Weights" + (" (all cards)" if gpus > 1 else ""), _fmt(lv["weights_gib"], "GiB"), lv["weights_gib"]),
        Figure("KV budget" + (" (all cards)" if gpus > 1 else ""), _fmt(lv["kv_budget_gib"], "GiB"),
               lv["kv_budget_gib"]),
        Figure("Users at the context limit (worst case)", _fmt(lv["users_worst_case"], "users"),
               lv["users_worst_case"]),
        Figure("Users at the sweep's length (paged)", _fmt(lv["users_paged"], "users"), lv["users_paged"]),
    ]
    reasons = [
        "The CUDA context and the communication library's buffers sit outside the engine's fraction: a few "
        "hundred MiB per process on top of the share you set.",
        "CUDA graphs are captured after the memory profile, for a ladder of batch sizes; they hold their own "
        "buffers, which is why --enforce-eager starts smaller (and decodes slower at small batches).",
        "PyTorch's caching allocator keeps freed blocks reserved rather than returning them, so nvidia-smi "
        "shows what it reserved, not what tensors use.",
        "The activation peak measured in the engine's profiling run replaces the ladder's flat reserve; long "
        "prefill chunks and large vocabularies make it bigger than 3 GiB.",
    ]
    comparison = Comparison("memory", "Memory at start-up (per card)", None, predicted, reasons=reasons)
    if startup_gib is None:
        comparison.verdict = "Not measured."
        return comparison
    comparison.measured = Figure("You measured", _fmt(startup_gib, "GiB"), startup_gib)
    gap = startup_gib - per_card
    comparison.derived = [Figure("Measured − predicted", f"{gap:+.2f} GiB", gap)]
    if startup_gib < lv["weights_gib"] / gpus:
        comparison.verdict = ("Less than the weights alone: check the model, the weight precision and the "
                              "number of cards.")
        comparison.tone = "danger"
    elif abs(gap) <= MEMORY_SLACK_GIB:
        comparison.verdict = "Matches the engine's share of the card: the fraction decides start-up memory."
        comparison.tone = "success"
    elif gap > 0:
        comparison.verdict = (f"{gap:.2f} GiB above the engine's share: memory outside the fraction "
                              "(context, graphs, communication buffers).")
        comparison.tone = "warning"
    else:
        comparison.verdict = (f"{-gap:.2f} GiB below the engine's share: a lower fraction than the ladder assumed, "
                              "or a reading taken before the cache pool was allocated.")
        comparison.tone = "warning"
    return comparison


def _decode(base, decode_tok_s, flags) -> Comparison:
    result = FAMILIES["decode"].run({**base, "context": 0, "measured_tok_s": decode_tok_s})
    dv = result.values
    predicted = [
        Figure("Bytes read per token (weights)", _fmt(dv["weight_bytes_per_step"], "B"), dv["weight_bytes_per_step"]),
        Figure("Bandwidth", _fmt(dv["bandwidth_gb_s"], "GB/s"), dv["bandwidth_gb_s"]),
        Figure("Ceiling (empty cache)", _fmt(dv["ceiling_tok_s"], "tok/s"), dv["ceiling_tok_s"]),
        Figure("Realistic range (65–85 % of peak)",
               f"{_fmt(dv['realistic_low_tok_s'], 'tok/s')} to {_fmt(dv['realistic_high_tok_s'], 'tok/s')}",
               None),
    ]
    reasons = [
        "Real kernels reach about 65–85 % of peak bandwidth: matrix shapes, launch gaps between layers and "
        "memory-controller efficiency cost the rest.",
        "Each step also reads the cache of every token so far, so the rate falls as the answer and prompt grow; "
        "the ceiling here is for an empty cache.",
        "Without CUDA graphs (--enforce-eager) the CPU launches every kernel of every layer, and at batch 1 that "
        "overhead can rival the memory time.",
        "Sampling, detokenisation and streaming run between steps; a client-side rate also includes the network.",
    ]
    if flags.get("eager"):
        reasons.insert(0, "Your flags turn CUDA graphs off: at a batch of one, expect launch overhead to show.")
    comparison = Comparison("decode", "Single-stream decode", None, predicted, reasons=reasons)
    if decode_tok_s is None:
        comparison.verdict = "Not measured."
        return comparison
    mbu = dv["mbu"]
    comparison.measured = Figure("You measured", _fmt(decode_tok_s, "tok/s"), decode_tok_s)
    comparison.derived = [Figure("MBU (bandwidth used ÷ peak)", f"{mbu:.4f} ({_pct(mbu)})", mbu)]
    if mbu > 1:
        comparison.verdict = ("Faster than the bandwidth allows for these weights: was the checkpoint quantised, "
                              "speculative decoding on, or the rate counted over more than one stream?")
        comparison.tone = "danger"
    elif mbu >= 0.65:
        comparison.verdict = "Within the range good kernels reach: decode is bandwidth-bound, as predicted."
        comparison.tone = "success"
    elif mbu >= 0.4:
        comparison.verdict = "Below the usual range: look for launch overhead, a long context or a slow client."
        comparison.tone = "warning"
    else:
        comparison.verdict = ("Far below the bound: something other than memory bandwidth is the limit "
                              "(CPU overhead, eager mode, the network, or a batch counted as one stream).")
        comparison.tone = "danger"
    return comparison


def _knee(base, gpu, lv, sweep_tokens, flags, knee_batch) -> Comparison:
    precision = compute_precision(base["weights_dtype"], gpu)
    roofline = FAMILIES["roofline"].run({"model": base["model"], "gpu": base["gpu"], "precision": precision,
                                         "weights_dtype": base["weights_dtype"]})
    rv = roofline.values
    decode = FAMILIES["decode"].run({**base, "context": sweep_tokens})
    dv = decode.values
    # The batch whose cache read equals the weight read: from there each extra sequence adds visibly.
    cache_equal = dv["weight_bytes_per_step"] / dv["kv_bytes_per_step"] if dv["kv_bytes_per_step"] else math.inf
    predicted = [
        Figure(f"Ridge point ({precision}, dense)", _fmt(rv["ridge_flop_per_byte"], "FLOP/byte"),
               rv["ridge_flop_per_byte"]),
        Figure("Batch at the ridge (weights only)", _fmt(rv["batch_at_ridge"], "users"), rv["batch_at_ridge"]),
        Figure(f"Batch whose cache read equals the weights' at {sweep_tokens:,} tokens each",
               f"{cache_equal:,.1f} sequences" if math.isfinite(cache_equal) else "—",
               cache_equal if math.isfinite(cache_equal) else None),
        Figure(f"Users the cache holds at {sweep_tokens:,} tokens (paged)", _fmt(lv["users_paged"], "users"),
               lv["users_paged"]),
    ]
    reasons = [
        "The ridge counts the weights only. Every sequence also reads its own cache each step, and that read "
        "grows with the batch, so per-token latency climbs long before the matmuls become compute-bound.",
        "Attention is bandwidth-bound at any batch: its bytes scale with the tokens cached, not with the weights.",
        "Scheduler limits cap the batch: a maximum number of running sequences, a token budget per step, or a "
        "cache pool that is full (then it is preemption, not a knee).",
        "Matmul kernels reach their best efficiency only at certain batch sizes; between CUDA-graph sizes a batch "
        "is padded up to the next captured one.",
    ]
    comparison = Comparison("knee", "Batch where per-token latency starts to climb", None, predicted,
                            reasons=reasons)
    if knee_batch is None:
        comparison.verdict = "Not measured."
        return comparison
    comparison.measured = Figure("You measured", _fmt(knee_batch, "users"), knee_batch)
    share = knee_batch / rv["batch_at_ridge"] if rv["batch_at_ridge"] else None
    comparison.derived = [Figure("Measured ÷ batch at the ridge", f"{share:.2f}" if share is not None else "—", share)]
    max_seqs = flags.get("max_seqs")
    if max_seqs and abs(knee_batch - max_seqs) <= max(2, 0.05 * max_seqs):
        comparison.verdict = (f"At your --max-num-seqs cap of {max_seqs}: the scheduler stopped the batch, "
                              "not the hardware.")
        comparison.tone = "warning"
    elif knee_batch > lv["users_paged"]:
        comparison.verdict = ("Above the number of sequences the cache can hold at this length: were the "
                              "sequences shorter than the sweep length assumed?")
        comparison.tone = "warning"
    elif share is not None and share > 1.05:
        comparison.verdict = ("Beyond the ridge: check the precision of the weights, or whether the latency "
                              "you read was per request rather than per token.")
        comparison.tone = "danger"
    else:
        comparison.verdict = ("Below the ridge, as expected: the cache read and attention, not the matmuls, "
                              "set where latency starts to climb.")
        comparison.tone = "success"
    return comparison


def _preemption(lv, block, sweep_tokens, preempt_pct) -> Comparison:
    block_bytes = lv["kv_bytes_per_token"] * block
    blocks = math.floor(lv["kv_budget_gib"] * GIB / block_bytes) if block_bytes else 0
    predicted = [
        Figure(f"Cache pool in blocks of {block} tokens", f"{blocks:,}", blocks),
        Figure("Preemption predicted at (a running sequence needs a block and none is free)", "100 % of the pool",
               1.0),
        Figure(f"Sequences in flight then, at {sweep_tokens:,} tokens each", _fmt(lv["users_paged"], "users"),
               lv["users_paged"]),
    ]
    reasons = [
        "Schedulers keep a small watermark of free blocks so running sequences can grow, and preempt before the "
        "pool is literally full.",
        "Blocks pinned by the prefix cache, or reserved for speculative tokens, count as used but are not free "
        "for new work.",
        "The engine sizes its pool from a profiling run, not from the ladder's flat reserve, so the 100 % it "
        "reports is a different number of blocks from the one predicted here.",
        "A burst of admissions can reserve blocks for prompts that have not started, so preemption can show "
        "while the utilisation metric, sampled between steps, reads lower.",
    ]
    comparison = Comparison("preemption", "Cache utilisation when preemption began", None, predicted,
                            reasons=reasons)
    if preempt_pct is None:
        comparison.verdict = "Not measured."
        return comparison
    fraction = preempt_pct / 100
    comparison.measured = Figure("You measured", f"{preempt_pct:g} %", preempt_pct)
    lost = (1 - fraction) * lv["kv_budget_gib"]
    comparison.derived = [Figure("Share of the pool in use", _pct(fraction), fraction),
                          Figure("Pool never used before preemption", _fmt(max(lost, 0), "GiB"), max(lost, 0))]
    if fraction >= 0.95:
        comparison.verdict = "As predicted: the pool filled before the scheduler preempted."
        comparison.tone = "success"
    elif fraction >= 0.8:
        comparison.verdict = ("Somewhat early: a watermark, pinned prefix blocks or reserved speculative slots "
                              "took part of the pool.")
        comparison.tone = "warning"
    else:
        comparison.verdict = ("Well before the pool filled: look for a scheduler limit, long prompts admitted "
                              "in a burst, or a metric sampled at a different moment from the preemption.")
        comparison.tone = "danger"
    return comparison


def _prefill(base, gpu, gpus, prefill_ms, prompt_tokens) -> Comparison | None:
    if not prompt_tokens:
        return None
    precision = compute_precision(base["weights_dtype"], gpu)
    inputs = {"model": base["model"], "gpu": base["gpu"], "gpus": gpus, "precision": precision,
              "prompt_tokens": int(prompt_tokens)}
    low_mfu, high_mfu = PREFILL_MFU_RANGE
    usual = f"{low_mfu * 100:g}–{high_mfu * 100:g} % MFU"
    slow = FAMILIES["prefill"].run({**inputs, "prefill_mfu": low_mfu}).values
    fast = FAMILIES["prefill"].run({**inputs, "prefill_mfu": high_mfu}).values
    peak = FAMILIES["prefill"].run({**inputs, "prefill_mfu": 1}).values
    predicted = [
        Figure("Prefill FLOPs (linear + attention, no causal halving)", _fmt(peak["prefill_flops"], "FLOP"),
               peak["prefill_flops"]),
        Figure(f"Dense {precision} peak" + (f" × {gpus} cards" if gpus > 1 else ""),
               f"{peak['effective_flop_s'] / 1e12:,.1f} TFLOP/s", peak["effective_flop_s"]),
        Figure(f"Predicted time at {low_mfu:.0%}–{high_mfu:.0%} MFU",
               f"{_fmt(fast['prefill_ms'], 'ms')} to {_fmt(slow['prefill_ms'], 'ms')}", None),
    ]
    reasons = [
        "Short prompts do not fill the tensor cores; MFU rises with the prompt length.",
        "Attention kernels run below the matmuls' efficiency, and the engine's count lets every query score every "
        "key; with causal masking the work done is smaller, so this MFU reads a little high on long prompts.",
        "Chunked prefill splits a long prompt over several steps shared with decoding sequences, so wall time "
        "includes other work.",
        "A time read from the client (TTFT) includes queueing, tokenisation and the network, not only prefill.",
    ]
    comparison = Comparison("prefill", f"Prefill of {int(prompt_tokens):,} tokens", None, predicted, reasons=reasons)
    if prefill_ms is None:
        comparison.verdict = "Not measured."
        return comparison
    mfu = peak["prefill_flops"] / (prefill_ms / 1000 * peak["effective_flop_s"])
    comparison.measured = Figure("You measured", _fmt(prefill_ms, "ms"), prefill_ms)
    comparison.derived = [Figure("MFU (FLOPs done ÷ peak)", f"{mfu:.4f} ({_pct(mfu)})", mfu)]
    if mfu > 1:
        comparison.verdict = ("Faster than the dense peak allows: was part of the prompt served from the prefix "
                              "cache, or the time taken from a later token?")
        comparison.tone = "danger"
    elif mfu > high_mfu:
        comparison.verdict = (f"Above the {usual} prefill kernels usually reach, though under "
                              "the dense peak: check whether part of the prompt came from the prefix cache or the "
                              "time stopped before the first token; if neither, your kernels beat the usual range.")
        comparison.tone = "warning"
    elif mfu >= low_mfu:
        comparison.verdict = (f"Within the {usual} prefill kernels reach: prefill is "
                              "compute-bound, as predicted.")
        comparison.tone = "success"
    else:
        comparison.verdict = (f"Below the {usual} prefill kernels usually reach: a short "
                              "prompt, chunking, or overhead counted in the time.")
        comparison.tone = "warning"
    return comparison


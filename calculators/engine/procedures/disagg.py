"""The ``disagg`` family: disaggregated prefill and decode (docs/architecture.md §12).

Prefill runs on its own pool of cards, and each request's KV cache crosses the
network to a decode replica. Steps, in order: ``kv_bytes_per_token``,
``kv_transfer_bytes`` (prompt tokens × KV per token, windows applied, once per
request and unreplicated: the decode side re-shards it), ``kv_transfer_ms``
(each of the replica's t cards ships its shard over its own ``network_gb_s`` link:
bytes ÷ (t × link)), ``prefill_flops`` (2 × active parameters × p + the
attention 4 × q_heads × head_dim × p × p per layer, no causal halving),
``prefill_ms`` (on the replica at the prefill MFU), ``ttft_ms`` (prefill
+ transfer, queueing left out), ``transfer_share`` (of the TTFT),
``prefill_gpus`` (⌈rate × prefill FLOPs ÷ (peak × MFU)⌉), ``decode_replicas``
(⌈rate × output tokens ÷ the slo family's tokens per second at the TPOT
target⌉), ``decode_gpus``, ``pool_ratio`` (prefill ÷ decode cards), ``chunk_ms``, ``disagg_pays``, then the
whole-fleet cost:
``prefill_nodes`` and ``decode_nodes`` (each pool ÷ occupancy in whole nodes; the decode pool's is the one
decode sizing the chapters quote), ``fleet_gpus``, ``fleet_usd_per_mtok`` and ``node_usd_per_mtok``.

The rule for ``disagg_pays`` (1/0), stated in a note: colocated, prefill is
chunked (``prefill_chunk_tokens`` a step, 256 by default), and each chunk adds
``chunk_ms`` (its share of the prefill time) to a decode step at the full batch
(the slo family's step at the TPOT target); splitting pays when that chunked step
exceeds the TPOT target — no useful chunk fits the headroom, chapter 15's
criterion — and the KV transfer adds at most a fifth of the prefill time to the
TTFT. Small models and short prompts (fast prefills) and slow networks
(costly transfers) fail it.
"""

from __future__ import annotations

import random
from typing import Any

from sympy import Max, Min, ceiling, floor

from ..catalog import Catalog
from ..formula import Formula, Var
from ..formulas import memory as F
from ..formulas import product, ratio, total
from ..formulas import serving as S
from ..hf_config import ModelConfig, param_breakdown
from ..step_model import attention_head_dim, compute_precision
from .base import KV_DTYPES_DRAWN, Family, Plan, Result, StepSpec, evaluate, format_number, gpu_supports
from .compute import draw_served_model
from .cost import USD_PER_GPU_HOUR
from .fleet import GPUS_PER_NODE, OCCUPANCY
from .inputs import (
    GPU,
    KV_DTYPE,
    PREFILL_MFU,
    WEIGHTS_BITS,
    WEIGHTS_DTYPE,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    resolve_model,
)
from .kv import kv_given, kv_per_token_spec
from .slo import SLO_GPUS, SLO_MODEL, TPOT_TARGET_MS, plan_slo

# --- Whole-fleet cost for the ``disagg`` family (docs/architecture.md §12): both pools, occupancy and spares.

SPARE_GPUS = InputSpec("spare_gpus", "int", 8, "spare cards kept for failures and rollouts (a node)", minimum=0,
                       maximum=100_000, unit="GPUs", label="Spare GPUs")
COST_INPUTS = (USD_PER_GPU_HOUR, OCCUPANCY, GPUS_PER_NODE, SPARE_GPUS)

# Nodes are bought whole and a pool's node holds only that pool's cards, so each pool rounds up to whole
# nodes on its own (docs/architecture.md §12): ⌈GPUs ÷ occupancy ÷ GPUs per node⌉ nodes per pool, + spares.
# The decode pool's nodes are the chapter's one decode sizing (headroom included): the redundancy section and
# the whole-fleet cost quote the same step.
def _pool_nodes(key: str, label: str, pool: str) -> Formula:
    return Formula(
        key,
        (Var(pool, "GPUs", pool.replace("_gpus", " pool")),
         Var("occupancy", "1", "average fraction of each card busy"), Var("gpus_per_node", "GPUs", "cards per node")),
        lambda s: ceiling(ratio(s[pool], product(s["occupancy"], s["gpus_per_node"]))),
        label=label,
    )


PREFILL_NODES = _pool_nodes("prefill_nodes", "Prefill pool in whole nodes at the planned occupancy", "prefill_gpus")
DECODE_NODES = _pool_nodes("decode_nodes", "Decode pool in whole nodes at the planned occupancy", "decode_gpus")
FLEET_GPUS = Formula(
    "fleet_gpus",
    (Var("prefill_nodes", "nodes", "prefill pool's nodes"), Var("decode_nodes", "nodes", "decode pool's nodes"),
     Var("gpus_per_node", "GPUs", "cards per node"), Var("spare_gpus", "GPUs", "spare cards")),
    lambda s: total(product(s["gpus_per_node"], total(s["prefill_nodes"], s["decode_nodes"])), s["spare_gpus"]),
    label="Cards billed for the whole fleet (whole nodes per pool)",
)
FLEET_USD_PER_MTOK = Formula(
    "fleet_usd_per_mtok",
    (Var("fleet_gpus", "GPUs", "cards billed"), Var("usd_per_gpu_hour", "USD/h", "price per GPU-hour"),
     Var("rate", "req/s", "arrival rate"), Var("output_tokens", "tok", "output tokens per request")),
    lambda s: ratio(product(s["fleet_gpus"], s["usd_per_gpu_hour"]), product(s["rate"], s["output_tokens"])),
)
NODE_USD_PER_MTOK = Formula(
    "node_usd_per_mtok",
    (Var("gpus", "GPUs", "cards per replica"), Var("usd_per_gpu_hour", "USD/h", "price per GPU-hour"),
     Var("decode_tok_s", "tok/s", "tokens per second of one decode replica")),
    lambda s: ratio(product(s["gpus"], s["usd_per_gpu_hour"]), s["decode_tok_s"]),
    label="Single-node figure: one decode replica at full occupancy",
)
COST_FORMULAS = (PREFILL_NODES, DECODE_NODES, FLEET_GPUS, FLEET_USD_PER_MTOK, NODE_USD_PER_MTOK)

COST_SPECS = [
    StepSpec(PREFILL_NODES,
             {"prefill_gpus": "prefill_gpus"}, rounding="ceil",
             label="Prefill pool ÷ occupancy, in whole nodes"),
    StepSpec(DECODE_NODES,
             {"decode_gpus": "decode_gpus"}, rounding="ceil",
             label="Decode pool ÷ occupancy, in whole nodes"),
    StepSpec(FLEET_GPUS,
             {"prefill_nodes": "prefill_nodes", "decode_nodes": "decode_nodes"},
             label="Cards billed: both pools' whole nodes, + spares"),
    StepSpec(FLEET_USD_PER_MTOK,
             {"fleet_gpus": "fleet_gpus"}),
    StepSpec(NODE_USD_PER_MTOK, label="Single-node figure (one decode replica, full occupancy)"),
]


PROMPT = InputSpec("prompt_tokens", "int", 4096, "prompt length, tokens", minimum=1, maximum=1_000_000, unit="tok",
                   label="Prompt length")
OUTPUT = InputSpec("output_tokens", "int", 256, "mean output tokens per request", minimum=1, maximum=1_000_000,
                   unit="tok", label="Mean output length")
RATE = InputSpec("rate", "float", 10.0, "mean arrival rate, requests per second", minimum=0, exclusive_minimum=True,
                 maximum=1_000_000, unit="req/s", label="Request rate")
NETWORK = InputSpec("network_gb_s", "float", 50.0, "network between the prefill and decode pools, GB/s per "
                    "card and direction (400 Gb/s = 50 GB/s)", minimum=0, exclusive_minimum=True, maximum=100_000,
                    unit="GB/s", label="Network between pools")
# Colocated, a chunked prefill schedules one chunk of this many prompt tokens per step beside the decode batch
# (chapter 15 recommends 256 on the reference stack; engines expose it as the per-step token budget).
CHUNK = InputSpec("prefill_chunk_tokens", "int", 256, "prompt tokens per chunk when prefill stays colocated",
                  minimum=1, maximum=1_000_000, unit="tok", label="Prefill chunk")
INPUTS = (SLO_MODEL, GPU, SLO_GPUS, WEIGHTS_DTYPE, WEIGHTS_BITS, KV_DTYPE, PROMPT, OUTPUT, RATE, NETWORK,
          TPOT_TARGET_MS, PREFILL_MFU, CHUNK, *COST_INPUTS)
STEP_KEYS = ("kv_bytes_per_token", "kv_transfer_bytes", "kv_transfer_ms", "prefill_flops", "prefill_ms", "ttft_ms",
             "transfer_share", "prefill_gpus", "decode_replicas", "decode_gpus", "pool_ratio", "chunk_ms",
             "disagg_pays",
             "prefill_nodes", "decode_nodes", "fleet_gpus", "fleet_usd_per_mtok", "node_usd_per_mtok")
# A transfer adding at most this share of the prefill time to the TTFT is cheap (the rule above).
TRANSFER_BUDGET = 0.2

KV_TRANSFER_BYTES = Formula(
    "kv_transfer_bytes",
    (Var("kv_bytes_per_token", "B", "KV cache per token, every layer full"),
     Var("prompt_tokens", "tok", "prompt tokens"), *F.WINDOW_VARS),
    lambda s: F.windowed_cache(s, s["prompt_tokens"]),
)
# Each of the replica's cards holds its shard of the cache and ships it over its own network interface
# (docs/architecture.md §12), so the replica's t links carry the request's cache in parallel.
KV_TRANSFER_MS = Formula(
    "kv_transfer_ms",
    (Var("kv_transfer_bytes", "B", "bytes sent"), Var("gpus", "GPUs", "cards in the replica, one link each"),
     Var("network_gb_s", "GB/s", "network per card, per direction")),
    lambda s: ratio(s["kv_transfer_bytes"], product(s["gpus"], s["network_gb_s"])),
    label="KV transfer time (each card's shard over its own link)",
)
PREFILL_MS = Formula(
    "prefill_ms",
    (Var("prefill_flops", "FLOP", "prefill FLOPs"), Var("gpus", "GPUs", "cards in the replica"),
     Var("peak_tflops", "TFLOP/s", "dense peak per card"), Var("prefill_mfu", "1", "prefill MFU")),
    lambda s: ratio(s["prefill_flops"], product(s["gpus"], s["peak_tflops"], s["prefill_mfu"])),
)
TTFT_MS = Formula(
    "ttft_ms",
    (Var("prefill_ms", "ms", "prefill"), Var("kv_transfer_ms", "ms", "transfer")),
    lambda s: total(s["prefill_ms"], s["kv_transfer_ms"]),
    label="TTFT (prefill + transfer)",
)
TRANSFER_SHARE = Formula(
    "transfer_share",
    (Var("kv_transfer_ms", "ms", "transfer"), Var("ttft_ms", "ms", "TTFT")),
    lambda s: ratio(s["kv_transfer_ms"], s["ttft_ms"]),
)
PREFILL_GPUS = Formula(
    "prefill_gpus",
    (Var("rate", "req/s", "arrival rate"), Var("prefill_flops", "FLOP", "FLOPs per prefill"),
     Var("peak_tflops", "TFLOP/s", "dense peak per card"), Var("prefill_mfu", "1", "prefill MFU")),
    lambda s: ceiling(ratio(product(s["rate"], s["prefill_flops"]), product(s["peak_tflops"], s["prefill_mfu"]))),
)
DECODE_REPLICAS = Formula(
    "decode_replicas",
    (Var("rate", "req/s", "arrival rate"), Var("output_tokens", "tok", "output tokens per request"),
     Var("decode_tok_s", "tok/s", "tokens per second per decode replica at the TPOT target")),
    lambda s: ceiling(ratio(product(s["rate"], s["output_tokens"]), s["decode_tok_s"])),
)
DECODE_GPUS = Formula(
    "decode_gpus",
    (Var("decode_replicas", "replicas", "decode replicas"), Var("gpus", "GPUs", "cards per replica")),
    lambda s: product(s["decode_replicas"], s["gpus"]),
)
POOL_RATIO = Formula(
    "pool_ratio",
    (Var("prefill_gpus", "GPUs", "prefill pool"), Var("decode_gpus", "GPUs", "decode pool")),
    lambda s: ratio(s["prefill_gpus"], s["decode_gpus"]),
)
# The stall a colocated chunked prefill adds to a decode step: its chunk's share of the prompt's prefill time.
CHUNK_MS = Formula(
    "chunk_ms",
    (Var("prefill_ms", "ms", "the prompt's prefill"), Var("prefill_chunk_tokens", "tok", "tokens per chunk"),
     Var("prompt_tokens", "tok", "prompt tokens")),
    lambda s: ratio(product(s["prefill_ms"], Min(s["prefill_chunk_tokens"], s["prompt_tokens"])),
                    s["prompt_tokens"]),
    label="Prefill time of one chunk (the stall it adds to a decode step)",
)
# Splitting pays when a chunk no longer fits in the TPOT target's headroom over the full-batch decode step
# (chapter 15's criterion) and the transfer adds at most the budget's share of the prefill time.
DISAGG_PAYS = Formula(
    "disagg_pays",
    (Var("chunk_ms", "ms", "one chunk's prefill"), Var("decode_step_ms", "ms", "full-batch decode step"),
     Var("prefill_ms", "ms", "prefill"), Var("kv_transfer_ms", "ms", "transfer"),
     Var("tpot_target_ms", "ms", "TPOT target"), Var("transfer_budget", "1", "transfer allowed, share of prefill")),
    lambda s: Max(0, Min(1, floor(ratio(product(s["transfer_budget"], s["prefill_ms"]), s["kv_transfer_ms"])),
                         floor(ratio(total(s["chunk_ms"], s["decode_step_ms"]), s["tpot_target_ms"])))),
)
DISAGG_FORMULAS = (KV_TRANSFER_BYTES, KV_TRANSFER_MS, PREFILL_MS, TTFT_MS, TRANSFER_SHARE, PREFILL_GPUS,
                   DECODE_REPLICAS, DECODE_GPUS, POOL_RATIO, CHUNK_MS, DISAGG_PAYS)


def disagg_specs(cfg: ModelConfig) -> list[StepSpec]:
    """The seventeen steps (the KV formula follows the model's attention)."""
    flops = {"prefill_flops": "prefill_flops"}
    return [
        kv_per_token_spec(cfg),
        StepSpec(KV_TRANSFER_BYTES,
                 {"kv_bytes_per_token": "kv_bytes_per_token"},
                 label="KV cache sent per request (prompt × KV per token, once)"),
        StepSpec(KV_TRANSFER_MS,
                 {"kv_transfer_bytes": "kv_transfer_bytes"},
                 label="Transfer time: each card's shard over its own link"),
        StepSpec(S.PREFILL_CHUNK_FLOPS, label="Prefill FLOPs (2N × p + attention, no causal halving)"),
        StepSpec(PREFILL_MS, flops, label="Prefill time on the replica (at the prefill MFU)"),
        StepSpec(TTFT_MS,
                 {"prefill_ms": "prefill_ms", "kv_transfer_ms": "kv_transfer_ms"},
                 label="TTFT: prefill + transfer"),
        StepSpec(TRANSFER_SHARE,
                 {"kv_transfer_ms": "kv_transfer_ms", "ttft_ms": "ttft_ms"}),
        StepSpec(PREFILL_GPUS, flops, rounding="ceil", label="Prefill pool (cards, rounded up)"),
        StepSpec(DECODE_REPLICAS,
                 rounding="ceil",
                 label="Decode replicas at the TPOT target (rounded up)"),
        StepSpec(DECODE_GPUS, {"decode_replicas": "decode_replicas"}, label="Decode pool (cards)"),
        StepSpec(POOL_RATIO,
                 {"prefill_gpus": "prefill_gpus", "decode_gpus": "decode_gpus"}),
        StepSpec(CHUNK_MS,
                 {"prefill_ms": "prefill_ms"},
                 label="One chunk's prefill time, the stall it adds to a colocated step"),
        StepSpec(DISAGG_PAYS,
                 {"chunk_ms": "chunk_ms", "prefill_ms": "prefill_ms", "kv_transfer_ms": "kv_transfer_ms"},
                 rounding="floor"),
        *COST_SPECS,
    ]


def plan_disagg(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Disaggregated prefill and decode for a load: transfer, TTFT, both pools and whether it pays.

    ``raw`` holds ``model`` or ``config``, ``gpu``, ``gpus`` (per replica, prefill and decode alike),
    ``weights_dtype``/``weights_bits``, ``kv_dtype``, ``prompt_tokens``, ``output_tokens``, ``rate``
    (req/s), ``network_gb_s`` (GB/s per direction), ``tpot_target_ms`` and ``prefill_mfu``. The decode
    replicas come from the slo family at the TPOT target, every sequence at prompt + output tokens.
    Raises :class:`~..errors.EngineError` subclasses on bad input (those slo raises included).
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    slo_inputs = {k: raw[k] for k in ("config",) if k in raw}
    slo = evaluate(plan_slo({**slo_inputs,
                             **{k: inputs[k] for k in ("model", "gpu", "gpus", "weights_dtype", "weights_bits",
                                                       "kv_dtype", "tpot_target_ms") if inputs.get(k) is not None},
                             "context": inputs["prompt_tokens"] + inputs["output_tokens"]}, catalog))
    counts = param_breakdown(cfg)
    given = {
        **kv_given(cfg, inputs["kv_dtype"], inputs["gpus"]),
        "prompt_tokens": inputs["prompt_tokens"], "chunk_tokens": inputs["prompt_tokens"], "cached_tokens": 0,
        "active_params": counts.active, "attention_head_dim": attention_head_dim(cfg),
        "peak_tflops": float(gpu.dense_tflops[compute_precision(inputs["weights_dtype"], gpu)]),
        "prefill_mfu": inputs["prefill_mfu"], "network_gb_s": inputs["network_gb_s"], "rate": inputs["rate"],
        "output_tokens": inputs["output_tokens"], "decode_tok_s": slo.values["tokens_per_s"],
        "tpot_target_ms": inputs["tpot_target_ms"], "transfer_budget": TRANSFER_BUDGET,
        "prefill_chunk_tokens": inputs["prefill_chunk_tokens"], "decode_step_ms": slo.values["tpot_ms"],
        "usd_per_gpu_hour": inputs["usd_per_gpu_hour"], "occupancy": inputs["occupancy"],
        "gpus_per_node": inputs["gpus_per_node"],
        "spare_gpus": inputs["spare_gpus"],
    }

    def finish(result: Result) -> None:
        v = result.values
        verdict = "pays" if v["disagg_pays"] else "does not pay"
        result.notes = [
            f"Rule: colocated and chunked, each {min(inputs['prefill_chunk_tokens'], inputs['prompt_tokens']):,}-token "
            f"chunk of prefill adds {v['chunk_ms']:.1f} ms to a decode step of {slo.values['tpot_ms']:.1f} ms at the "
            f"full batch; splitting the pools pays when that chunked step "
            f"({v['chunk_ms'] + slo.values['tpot_ms']:.1f} ms) breaks the {inputs['tpot_target_ms']:g} ms TPOT "
            f"target and the transfer adds at most {TRANSFER_BUDGET:.0%} of the prefill time "
            f"({v['kv_transfer_ms']:.2f} ms here). Disaggregation {verdict}.",
            f"The transfer sends one copy of the prompt's cache ({format_number(v['kv_transfer_bytes'], 'B')}), "
            f"each of the {inputs['gpus']} cards its own shard over its own "
            f"{format_number(inputs['network_gb_s'], 'GB/s')} link per direction: {v['transfer_share']:.1%} of a "
            f"{v['ttft_ms']:.1f} ms TTFT (queueing left out; prefill at all N with no causal halving).",
            f"Decode replicas use the slo family at the {inputs['tpot_target_ms']:g} ms target with every sequence "
            f"at {inputs['prompt_tokens'] + inputs['output_tokens']:,} tokens: {int(slo.values['max_batch']):,} "
            f"sequences, "
            f"{format_number(slo.values['tokens_per_s'], 'tok/s')} per replica.",
            f"Whole fleet: {int(v['fleet_gpus']):,} cards ({int(v['prefill_gpus']):,} prefill + "
            f"{int(v['decode_gpus']):,} decode at {inputs['occupancy']:g} occupancy, each pool rounded up to whole "
            f"{inputs['gpus_per_node']}-card nodes, + {inputs['spare_gpus']:,} spares) "
            f"cost {format_number(v['fleet_usd_per_mtok'], 'USD/Mtok')}; one decode replica at full occupancy, the "
            f"single-node figure, would have quoted {format_number(v['node_usd_per_mtok'], 'USD/Mtok')}.",
        ] + list(cfg.notes)

    return Plan("disagg", inputs, disagg_specs(cfg), given, [], {"model_name": model_name}, finish=finish)


PROMPTS = (256, 1024, 4096, 8192, 32768)


def generate_disagg(rng: random.Random, catalog: Catalog) -> dict:
    """A disaggregation problem: a served model, a prompt it supports, a load and a network.

    Deterministic for a given ``rng``; raises ``RuntimeError`` when 200 draws give no problem the
    calculator accepts."""
    # Slower TPOT targets only when none of the usual ones suits (a catalog pinned to a slow stack, such as
    # Llama-3.1-70B on L4s: reading its weights alone takes ~78 ms); the whole catalog never gets there.
    for targets in ((30.0, 50.0, 80.0), (120.0, 200.0, 300.0)):
        for _ in range(200):
            inputs = draw_served_model(rng, catalog, dtypes=("bf16", "bf16", "fp8"))
            limit = catalog.model(inputs["model"]).config.max_position_embeddings or 8192
            inputs["kv_dtype"] = rng.choice(KV_DTYPES_DRAWN) if gpu_supports(catalog, inputs["gpu"], "fp8") else "bf16"
            inputs["prompt_tokens"] = rng.choice([p for p in PROMPTS if p < limit] or [256])
            inputs.update(output_tokens=rng.choice((128, 256, 512)), rate=float(rng.randint(1, 50)),
                          network_gb_s=rng.choice((12.5, 25.0, 50.0, 100.0)), tpot_target_ms=rng.choice(targets))
            try:
                evaluate(plan_disagg(inputs, catalog))
            except Exception:
                continue
            return inputs
    raise RuntimeError("No disaggregation problem could be drawn from the catalog.")


def describe_disagg(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in an interviewer's words."""
    gpu = catalog.gpu(inputs["gpu"]).name
    return (f"{inputs['model']} serves {inputs['rate']:g} requests per second of {inputs['prompt_tokens']:,}-token "
            f"prompts and {inputs['output_tokens']:,}-token answers on replicas of {inputs['gpus']} × {gpu}, with a "
            f"{inputs['tpot_target_ms']:g} ms TPOT target. You consider separate prefill and decode pools joined "
            f"by {inputs['network_gb_s']:g} GB/s. How many bytes of KV cache cross per request and how long does "
            f"that take? What is the TTFT and the transfer's share of it, how many prefill cards and decode "
            f"replicas does the load need, and does disaggregation pay?")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
DISAGG_RUBRIC = (
    "Sizes the transfer as prompt tokens × cache per token, one copy, in bytes",
    "Converts it to time on the stated link and relates it to the TTFT",
    "Sizes the prefill pool by FLOPs and the decode pool by the TPOT target",
    "Prices the whole fleet with occupancy and spares, not one decode node",
    "States whether disaggregation pays by the stall and transfer rule",
)


FAMILIES = (
    Family("disagg", "Disaggregated prefill and decode",
           "KV transfer per request, TTFT with the transfer, prefill and decode pool sizes and whether "
           "splitting them pays.",
           INPUTS, plan_disagg, generate=generate_disagg, order=78, describe=describe_disagg,
           headlines=("fleet_usd_per_mtok", "fleet_gpus", "node_usd_per_mtok"), rubric=DISAGG_RUBRIC),
)

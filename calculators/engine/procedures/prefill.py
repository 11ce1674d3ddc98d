"""The ``prefill`` family: prefill FLOPs, time at an MFU, TTFT and the crossover (formula 5).

Steps, in order: ``linear_flops`` (2 × N × L, N the parameters a token uses:
all 8,030,261,248 for Llama-3.1-8B), ``attention_flops`` (4 × layers × d_model
× L², every query against every key: no causal halving, docs/architecture.md §2),
``prefill_flops`` (their sum), ``crossover_tokens`` (the prompt length where
the two are equal, L* = 2N ÷ (4 × layers × d_model): 30,633 for Llama-3.1-8B),
``effective_flop_s`` (cards × dense peak × MFU), ``prefill_ms`` and ``ttft_ms``
(queue wait + prefill).
"""

from __future__ import annotations

import random
from typing import Any

from ..catalog import Catalog
from ..formula import Formula, Var
from ..formulas import product, ratio, total
from ..hf_config import ModelConfig
from .base import Family, Plan, Result, StepSpec, format_number
from .compute import (
    MFU,
    PRECISION,
    PROMPT_TOKENS,
    compute_peak_note,
    datasheet_phrase,
    draw_served_model,
    gpu_phrase,
    model_phrase,
    moe_note,
    params_used,
    peak_tflops,
)
from .inputs import (
    GPU,
    GPUS,
    MODEL,
    InputSpec,
    catalog_or_default,
    clean_inputs,
    input_or_default,
    resolve_model,
    with_aliases,
)

QUEUE_MS = InputSpec("queue_ms", "float", 0.0, "time the request waits before its prefill starts, ms",
                     minimum=0, maximum=3_600_000, unit="ms", label="Queue wait")

INPUTS = (MODEL, GPU, GPUS, PRECISION, PROMPT_TOKENS, MFU, QUEUE_MS)

STEP_KEYS = ("linear_flops", "attention_flops", "prefill_flops", "crossover_tokens", "effective_flop_s",
             "prefill_ms", "ttft_ms", "causal_prefill_ms")

# --- formulas --------------------------------------------------------------------------------

def linear_term(s, tokens):
    """2 × parameters × tokens: every token through every weight (a multiply-add is 2 FLOPs)."""
    return product(2, s["params"], tokens)


def attention_term(s, tokens):
    """4 × layers × d_model × tokens²: every query scores every key, no causal halving (docs/architecture.md §2)."""
    return product(4, s["layers"], s["hidden_size"], tokens, tokens)


LINEAR_FLOPS = Formula(
    "linear_flops",
    (Var("params", "1", "parameters a token multiplies through"), Var("prompt_tokens", "tok", "prompt length")),
    lambda s: linear_term(s, s["prompt_tokens"]),
    label="Prefill FLOPs, linear term",
)

ATTENTION_FLOPS = Formula(
    "attention_flops",
    (Var("layers", "1", "layers (num_hidden_layers)"),
     Var("hidden_size", "1", "model width d_model (hidden_size)"),
     Var("prompt_tokens", "tok", "prompt length")),
    lambda s: attention_term(s, s["prompt_tokens"]),
    label="Prefill FLOPs, attention term",
)

PREFILL_FLOPS = Formula(
    "prefill_flops",
    (Var("linear_flops", "FLOP", "linear term"), Var("attention_flops", "FLOP", "attention term")),
    lambda s: total(s["linear_flops"], s["attention_flops"]),
)

CROSSOVER = Formula(
    "crossover_tokens",
    (Var("params", "1", "parameters a token multiplies through"),
     Var("layers", "1", "layers (num_hidden_layers)"),
     Var("hidden_size", "1", "model width d_model (hidden_size)")),
    lambda s: ratio(product(2, s["params"]), product(4, s["layers"], s["hidden_size"])),
    label="Crossover prompt length",
)

EFFECTIVE_FLOP_S = Formula(
    "effective_flop_s",
    (Var("gpus", "GPUs", "cards in the replica"),
     Var("peak_tflops", "TFLOP/s", "dense peak per card"),
     Var("mfu", "1", "model FLOPs utilisation")),
    lambda s: product(s["gpus"], s["peak_tflops"], s["mfu"]),
    label="Compute actually delivered",
)

PREFILL_MS = Formula(
    "prefill_ms",
    (Var("prefill_flops", "FLOP", "prefill FLOPs"), Var("effective_flop_s", "FLOP/s", "compute delivered")),
    lambda s: ratio(s["prefill_flops"], s["effective_flop_s"]),
)

TTFT_MS = Formula(
    "ttft_ms",
    (Var("queue_ms", "ms", "queue wait"), Var("prefill_ms", "ms", "prefill time")),
    lambda s: total(s["queue_ms"], s["prefill_ms"]),
)

# The same prefill with causal masking: each query scores only the keys before it, so the attention term halves.
# The stated convention above stays the upper bound; a long prompt's TTFT quotes this first (DESIGN §12).
CAUSAL_PREFILL_MS = Formula(
    "causal_prefill_ms",
    (Var("linear_flops", "FLOP", "linear term"), Var("attention_flops", "FLOP", "attention term, no halving"),
     Var("effective_flop_s", "FLOP/s", "compute delivered")),
    lambda s: ratio(total(s["linear_flops"], ratio(s["attention_flops"], 2)), s["effective_flop_s"]),
    label="Prefill time with causal masking (attention term halved)",
)

PREFILL_FORMULAS = (LINEAR_FLOPS, ATTENTION_FLOPS, PREFILL_FLOPS, CROSSOVER, EFFECTIVE_FLOP_S, PREFILL_MS, TTFT_MS,
                    CAUSAL_PREFILL_MS)

EFFECTIVE_SPEC = StepSpec(EFFECTIVE_FLOP_S, label="Compute delivered (cards × dense peak × MFU)")

SPECS = [
    StepSpec(LINEAR_FLOPS, label="Linear term (2 × parameters × prompt tokens)"),
    StepSpec(ATTENTION_FLOPS,
             label="Attention term (4 × layers × d_model × prompt tokens², no causal halving)"),
    StepSpec(PREFILL_FLOPS,
             {"linear_flops": "linear_flops", "attention_flops": "attention_flops"}),
    StepSpec(CROSSOVER, label="Crossover (prompt length where attention equals the linear term)"),
    EFFECTIVE_SPEC,
    StepSpec(PREFILL_MS,
             {"prefill_flops": "prefill_flops", "effective_flop_s": "effective_flop_s"}),
    StepSpec(TTFT_MS, {"prefill_ms": "prefill_ms"}, label="Time to first token (queue wait + prefill)"),
    StepSpec(CAUSAL_PREFILL_MS,
             {"linear_flops": "linear_flops", "attention_flops": "attention_flops",
              "effective_flop_s": "effective_flop_s"},
             label="Prefill time with causal masking (attention term halved)"),
]

# --- misconceptions --------------------------------------------------------------------------

def delivered(g, peak_key: str = "peak_tflops", mfu: bool = True) -> float | None:
    """FLOP/s a replica delivers at the given peak (``sparse_tflops`` for the trap),
    at the MFU or (``mfu=False``) at the whole peak; ``None`` when that peak is unknown."""
    if not g[peak_key]:
        return None
    return EFFECTIVE_FLOP_S({"gpus": g["gpus"], "peak_tflops": g[peak_key], "mfu": g["mfu"] if mfu else 1})


def time_ms(flops: float, flop_s: float | None) -> float | None:
    """Milliseconds for ``flops`` at ``flop_s`` (``None`` passes through)."""
    return None if flop_s is None else PREFILL_MS({"prefill_flops": flops, "effective_flop_s": flop_s})


# --- the procedure ---------------------------------------------------------------------------


def flops_given(cfg: ModelConfig) -> dict[str, float]:
    """The config numbers the FLOP formulas read: ``params`` (those a token uses),
    ``layers`` and ``hidden_size`` (d_model)."""
    _, active = params_used(cfg)
    return {"params": active, "layers": cfg.layers, "hidden_size": cfg.hidden_size}


def attention_width_notes(cfg: ModelConfig, name: str) -> list[str]:
    """Where the 4 × layers × d_model × L² convention departs from what the model computes."""
    notes = []
    width = cfg.heads * cfg.head_dim
    if cfg.kv_lora_rank:
        qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
        notes.append(f"{name} uses latent attention: its scores are {cfg.heads} heads × {qk} wide and its values "
                     f"{cfg.heads} × {cfg.v_head_dim}, not d_model; the convention keeps d_model = "
                     f"{cfg.hidden_size:,}.")
    elif width != cfg.hidden_size:
        notes.append(f"{name}: query heads × head_dim = {width:,}, not hidden_size {cfg.hidden_size:,}; the kernels "
                     f"work at {width:,}, the convention at d_model.")
    if cfg.window_layers:
        notes.append(f"{cfg.window_layers} of {cfg.layers} layers only attend within {cfg.sliding_window:,} "
                     f"tokens, so past that length their attention grows linearly; the convention counts every "
                     f"layer as full.")
    return notes


def convention_notes(cfg: ModelConfig, crossover: float) -> list[str]:
    """The FLOP convention, and what causal masking or leaving out the embeddings changes."""
    total_params, active = params_used(cfg)
    embeddings = cfg.vocab_size * cfg.hidden_size
    what = "all" if active == total_params else "the used"
    causal = (f"With causal masking each query sees only the keys before it, which halves the attention term and "
              f"doubles the crossover to {tokens(2 * crossover)}.")
    if cfg.tie_word_embeddings:
        embedding = ("The embedding table is tied to the output head, so it is counted once and multiplied once "
                     "(as the head): there is nothing to leave out.")
    else:
        without = (2 * (active - embeddings)) / (4 * cfg.layers * cfg.hidden_size)
        embedding = (f"Leaving out the input embedding table ({embeddings:,} parameters, a lookup rather than a "
                     f"product) lowers N to {active - embeddings:,} and the crossover to {tokens(without)}.")
    return [
        f"Convention: N is {what} {active:,} parameters, the embedding table included, and the attention term "
        f"4 × layers × d_model × L² lets every query score every key (no causal halving).",
        f"{causal} {embedding}",
    ]


def tokens(value: float) -> str:
    """A token count for prose: ``30,633 tokens``."""
    return f"{value:,.0f} tokens"


def plan_prefill(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Prefill FLOPs of a prompt, its time at an MFU, TTFT with the queue wait, and the crossover.

    ``raw`` holds ``model`` or ``config``, ``gpu``, ``gpus``, ``precision`` (the
    dense TFLOP/s of ``gpus.json`` at it), ``prompt_tokens``, ``prefill_mfu`` (``mfu``
    before; 35–50 % is realistic) and ``queue_ms``. The reference stack at 2,048
    tokens: 2 × 8,030,261,248 × 2,048 + 4 × 32 × 4,096 × 2,048² FLOPs at 0.4 ×
    989.4 TFLOP/s; crossover 30,633 tokens. Raises
    :class:`~..errors.EngineError` subclasses on bad input (a precision the card
    lacks: field ``precision``).
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, model_name = resolve_model(inputs, catalog)
    gpu = catalog.gpu(inputs["gpu"])
    dense, sparse = peak_tflops(gpu, inputs["precision"])
    given = {
        **flops_given(cfg),
        "prompt_tokens": inputs["prompt_tokens"],
        "gpus": inputs["gpus"],
        "peak_tflops": dense,
        "sparse_tflops": sparse,
        "mfu": inputs["prefill_mfu"],
        "queue_ms": inputs["queue_ms"],
    }

    def finish(result: Result) -> None:
        v = result.values
        name = model_name if "config" not in inputs else "The pasted model"
        share = v["attention_flops"] / v["linear_flops"]
        beyond = ("past the crossover, so attention is the larger term" if share > 1
                  else f"{share * 100:.1f} % of the linear term")
        notes = convention_notes(cfg, v["crossover_tokens"])
        notes.append(f"At {inputs['prompt_tokens']:,} tokens the attention term is {beyond}; it grows with the square "
                     f"of the prompt, so a prompt 25 times longer costs more than 25 times as much.")
        notes.append(compute_peak_note(gpu, inputs["precision"], dense, sparse, inputs["gpus"]))
        notes.append(f"Time at {inputs['prefill_mfu'] * 100:g} % MFU: prefill kernels reach about 35–50 % of the dense "
                     f"peak, never all of it; at the full peak it would take "
                     f"{format_number(v['prefill_ms'] * inputs['prefill_mfu'], 'ms')}.")
        notes.append("TTFT = queue wait + prefill: the first token is sampled from the logits of the prompt's last "
                     "position, so no decode step is added; tokenisation and the network are left out.")
        notes += attention_width_notes(cfg, name)
        notes += moe_note(cfg, *params_used(cfg), "prefill FLOPs count the used ones.")
        result.notes = notes + list(cfg.notes)

    return Plan("prefill", inputs, SPECS, given, [], {"model_name": model_name}, finish=finish)


# --- problems --------------------------------------------------------------------------------

PROMPTS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
MFUS = (0.35, 0.4, 0.4, 0.45, 0.5)
QUEUES = (0, 0, 20, 50, 120, 250, 800)


def generate_prefill(rng: random.Random, catalog: Catalog) -> dict:
    """A prefill problem: a model on the smallest TP degree that holds it at its weight
    precision (computing in that precision, or bf16 for int4 weights), a prompt the
    model supports, a realistic MFU and a queue wait."""
    drawn = draw_served_model(rng, catalog, precision=True)
    limit = catalog.model(drawn["model"]).config.max_position_embeddings or 8192
    return {"model": drawn["model"], "gpu": drawn["gpu"], "gpus": drawn["gpus"], "precision": drawn["precision"],
            "prompt_tokens": rng.choice([p for p in PROMPTS if p <= limit]), "prefill_mfu": rng.choice(MFUS),
            "queue_ms": float(rng.choice(QUEUES))}


def describe_prefill(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    queue = inputs.get("queue_ms", 0.0)
    wait = (f"The request waited {queue:g} ms in the queue first." if queue
            else "The request did not wait in any queue.")
    return (
        f"A {inputs.get('prompt_tokens', 2048):,}-token prompt reaches {model_phrase(inputs)} on "
        f"{gpu_phrase(inputs, catalog)}, computing in {inputs.get('precision', 'bf16')} at "
        f"{input_or_default(with_aliases(INPUTS, inputs), 'prefill_mfu') * 100:g} % MFU. "
        f"{datasheet_phrase(catalog.gpu(inputs['gpu']), inputs.get('precision', 'bf16'))} "
        f"Count its prefill FLOPs: the linear term 2 × N × L with N the "
        f"parameters a token uses, then the attention term 4 × layers × d_model × L² without causal halving. At "
        f"what prompt length would the two terms be equal? How much compute does the replica deliver, how long "
        f"does the prefill take, and what is the time to first token? {wait}"
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
PREFILL_RUBRIC = (
    "Computes the linear term as 2 × parameters × prompt tokens",
    "Adds the attention term, growing with the square of the prompt, and states its convention "
    "(no causal halving here)",
    "Converts FLOPs to time over the cards' dense peak × a realistic MFU",
    "Adds the queue wait to get TTFT",
    "Finds the crossover where attention equals the linear term and says how causal masking moves it",
)


FAMILIES = (
    Family("prefill", "Prefill and TTFT",
           "Prefill FLOPs with the attention term, time at an MFU, time to first token and the crossover length.",
           INPUTS, plan_prefill, generate=generate_prefill,
           order=54, describe=describe_prefill,
           headlines=("ttft_ms", "crossover_tokens"), chapter="05-prefill-and-decode", rubric=PREFILL_RUBRIC),
)

"""The bank's curated topics: every item's free-written topic is filed under one of a short list at load time.

Question files name a topic in their own words ("RoPE frequency bands", "rope frequency bands", "cache-aware
routing", "cache-aware-routing"): the bank's topic filter would list each spelling. :func:`curated_topic`
files a written topic under one of :data:`TOPICS` by the first rule whose words it contains (lower-cased,
hyphens read as spaces), so the filter offers one entry per subject. Order matters: the more specific rules
come first ("time to first token" is latency, not tokenisation; "cost of constrained decoding" is decoding).
A topic no rule matches is kept as written (the loader warns), never dropped.
"""

from __future__ import annotations

TOPICS: list[tuple[str, tuple[str, ...]]] = [
    ("Design reviews", ("critique",)),
    ("Speculative and constrained decoding", ("speculative", "draft", "constrained")),
    ("RoPE and long context", ("rope", "long context", "long prompts", "context extension", "sparse attention")),
    ("Attention variants", ("attention variant", "grouped query", "latent attention", "mla ", "sliding",
                            "hybrid models", "why k and v")),
    ("Mixture of experts", ("mixture of experts", "moe", "expert")),
    ("Prefix caching and routing", ("prefix", "cache aware")),
    ("Number formats and quantisation", ("quantis", "fp8", "fp4", "int4", "bf16", "number format", "epsilon",
                                         "weight only")),
    ("Model anatomy", ("parameter count", "decoder layer", "the mlp", "reading a config", "weight memory")),
    ("Roofline and hardware", ("roofline", "ridge", "arithmetic intensity", "mfu", "flops", "datasheet", "card",
                               "hardware", "sparsity", "attention/mlp")),
    ("Latency: TTFT and TPOT", ("time to first token", "ttft", "tpot", "streaming", "interactivity", "goodput",
                                "little's law", "prefill interference", "slo")),
    ("Cost", ("cost", "bill", "batch api", "rate limits")),
    ("Multi-GPU parallelism", ("tensor parallel", "pipeline parallel", "multi node", "interconnect")),
    ("LoRA and fine-tunes", ("lora", "fine tunes")),
    ("Prefill and decode", ("prefill", "decode", "batching", "continuous batch", "scheduler loop",
                            "request lifecycle", "disaggregat")),
    ("Tokens and tokenisation", ("token", "vocabulary", "chat template", "tool calls", "prompt boundary",
                                 "embeddings")),
    ("KV cache", ("kv", "cache formula", "paged", "copy on write", "context limit", "activation reserve",
                  "worst case", "preemption")),
    ("Capacity planning", ("capacity", "knee", "fleet sizing", "buyable", "sizing", "does not fit", "budget",
                           "six formulas", "five moves", "the chain", "three way check", "levels", "manager")),
    ("Engines and production", ("engine", "cold start", "metrics", "benchmark", "reproduc", "nondetermin",
                                "quality", "symptom", "reliability", "offload", "agent", "reasoning", "critique")),
]
"""Curated topic → the words that file a written topic under it, most specific first."""

NAMES = [name for name, _ in TOPICS]


def is_curated(topic: str) -> bool:
    """Whether ``topic`` is one of the curated names (or empty)."""
    return not topic or topic in NAMES


def curated_topic(written: str) -> str:
    """The curated topic a written ``topic`` is filed under; the written text itself when no rule matches.

    ``""`` stays ``""`` (an item with no topic).
    """
    text = " ".join(written.lower().replace("-", " ").split())
    if not text:
        return ""
    if written.strip() in NAMES:
        return written.strip()
    return next((name for name, words in TOPICS if any(word in text for word in words)), written.strip())

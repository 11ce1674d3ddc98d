"""A pasted vLLM start-up log, read into the capacity ladder's steps.

vLLM prints what it decided while starting: the weights it loaded, the memory
left for the KV cache, the cache's size in blocks or tokens, and how many
requests of the context limit fit at once. :func:`read_startup_log` finds those
lines (V0 and V1 wordings; ``(VllmWorker rank=…)`` prefixes and thousands
separators are fine):

- ``Model loading took X GiB`` (older releases print ``Loading model weights
  took X GB``, computed as bytes ÷ 2^30, so it is read as GiB): weights per card;
- ``Available KV cache memory: X GiB``: the KV budget per card;
- ``# GPU blocks: N`` (V0; ``# cuda blocks`` in some releases) or ``GPU KV cache
  size: N tokens`` (V1): the replica's cache;
- ``Maximum concurrency for L tokens per request: Xx``: requests of L tokens
  the cache holds at once.

:func:`log_comparison` sets them beside the ladder's steps for the same setup
and names the first step whose value differs by more than
:data:`MATCH_SHARE` (weights, then the KV budget, so the activation reserve,
then the KV bytes per token, then the per-user step), as a lab
:class:`~drills.lab.services.Comparison`. No Django here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from drills.lab.comparison import Comparison, Figure
from drills.lab.comparison import fmt as _fmt

MATCH_SHARE = 0.02
MAX_LOG_CHARS = 200_000

_NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
PATTERNS = {
    "weights_gib": re.compile(r"(?:Model loading|Loading model weights) took " + _NUMBER + r"\s*Gi?B", re.I),
    "available_gib": re.compile(r"Available KV cache memory:\s*" + _NUMBER + r"\s*Gi?B", re.I),
    "blocks": re.compile(r"# (?:GPU|cuda) blocks:\s*" + _NUMBER, re.I),
    "kv_tokens": re.compile(r"GPU KV cache size:\s*" + _NUMBER + r"\s*tokens", re.I),
    "concurrency": re.compile(r"Maximum concurrency for\s*" + _NUMBER + r"\s*tokens per request:\s*" + _NUMBER
                              + r"\s*x", re.I),
}


def _value(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass
class StartupLog:
    """What a start-up log said (None where it said nothing): ``weights_gib`` and ``available_gib``
    per card, the cache in ``blocks`` or ``kv_tokens``, ``concurrency`` (requests) at
    ``concurrency_tokens`` per request; ``lines`` the lines read."""

    weights_gib: float | None = None
    available_gib: float | None = None
    blocks: float | None = None
    kv_tokens: float | None = None
    concurrency_tokens: float | None = None
    concurrency: float | None = None
    lines: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """Whether any figure was read."""
        return bool(self.lines)


def read_startup_log(text: str) -> StartupLog:
    """The figures of a vLLM start-up log (the first occurrence of each line: rank 0's)."""
    log = StartupLog()
    lines = []
    for line in text[:MAX_LOG_CHARS].splitlines():
        for key, pattern in PATTERNS.items():
            match = pattern.search(line)
            if not match or (key != "concurrency" and getattr(log, key) is not None):
                continue
            if key == "concurrency":
                if log.concurrency is not None:
                    continue
                log.concurrency_tokens, log.concurrency = _value(match.group(1)), _value(match.group(2))
            else:
                setattr(log, key, _value(match.group(1)))
            lines.append(match.group(0))
    log.lines = tuple(lines)
    return log


def _off(measured: float, predicted: float) -> bool:
    return predicted <= 0 or abs(measured - predicted) > MATCH_SHARE * predicted


def log_comparison(log: StartupLog, lv: dict, gpus: int, context: int, block: int) -> Comparison:
    """The log's figures beside the ladder's values ``lv`` (replica of ``gpus`` cards, the context
    limit and block size the ladder used), with the step that explains the first difference."""
    bytes_per_token_gib = lv["per_user_gib"] / context  # replica-wide, K/V replication included
    ladder_tokens = lv["kv_budget_gib"] / bytes_per_token_gib
    predicted = [
        Figure("Ladder: weights per card", _fmt(lv["weights_gib"] / gpus, "GiB"), lv["weights_gib"] / gpus),
        Figure("Ladder: KV budget per card", _fmt(lv["kv_budget_gib"] / gpus, "GiB"), lv["kv_budget_gib"] / gpus),
        Figure("Ladder: KV cache, tokens", _fmt(ladder_tokens, "tok"), ladder_tokens),
    ]
    comparison = Comparison("log", "Your start-up log against the ladder", None, predicted, reasons=[
        "Weights: the checkpoint on disk can differ from the config's count (tied embeddings stored once, "
        "a quantised checkpoint, extra heads); the log's figure is per card under tensor parallelism.",
        "KV budget: vLLM measures the activation peak in a profiling run (plus CUDA graphs and memory outside "
        "PyTorch) where the ladder keeps a flat reserve; the difference is the reserve it actually needed.",
        "Tokens: a different cache precision (--kv-cache-dtype) or K/V replication under tensor parallelism "
        "changes the bytes each token takes.",
        "Concurrency: vLLM divides the cache by the requests' blocks at --max-model-len; a different context "
        "limit changes the worst case, not the cache.",
    ])
    if not log.found:
        comparison.verdict = ("No line of a vLLM start-up log was recognised (Model loading took …, Available KV "
                              "cache memory …, # GPU blocks …, GPU KV cache size …, Maximum concurrency …).")
        return comparison
    tokens = log.kv_tokens if log.kv_tokens is not None else (log.blocks * block if log.blocks else None)
    rows, explained = [], None
    if log.weights_gib is not None:
        rows.append(Figure("Log: weights per card", _fmt(log.weights_gib, "GiB"), log.weights_gib))
        if _off(log.weights_gib, lv["weights_gib"] / gpus):
            explained = (f"The weights step: the log loaded {log.weights_gib:,.2f} GiB per card, the ladder "
                         f"{lv['weights_gib'] / gpus:,.2f} GiB; check the checkpoint's precision and parameters.")
    if log.available_gib is not None:
        rows.append(Figure("Log: KV budget per card", _fmt(log.available_gib, "GiB"), log.available_gib))
        if explained is None and _off(log.available_gib * gpus, lv["kv_budget_gib"]):
            weights = log.weights_gib * gpus if log.weights_gib is not None else lv["weights_gib"]
            reserve = (lv["usable_gib"] - weights - log.available_gib * gpus) / gpus
            rows.append(Figure("Implied activation reserve per card", _fmt(reserve, "GiB"), reserve))
            explained = (f"The reserve step: vLLM kept {reserve:,.2f} GiB per card for activations, graphs and "
                         f"memory outside PyTorch, where the ladder keeps a flat reserve.")
    if tokens is not None:
        rows.append(Figure("Log: KV cache, tokens", _fmt(tokens, "tok"), tokens))
        if explained is None and _off(tokens, ladder_tokens):
            if log.available_gib is not None:
                per_token = log.available_gib * gpus / tokens * 2**30
                explained = (f"The KV bytes per token step: the log stores {per_token:,.0f} B per token, the "
                             f"ladder {bytes_per_token_gib * 2**30:,.0f} B; check --kv-cache-dtype and the K/V "
                             f"replication across cards.")
            else:
                explained = ("The KV budget or the bytes per token (the log gives no budget line to tell which): "
                             "the cache holds a different number of tokens than the ladder's.")
    if log.concurrency is not None:
        length = log.concurrency_tokens
        rows.append(Figure(f"Log: requests of {length:,.0f} tokens at once", f"{log.concurrency:,.2f}×",
                           log.concurrency))
        base = tokens if tokens is not None else ladder_tokens
        expected = base / (-(-length // block) * block)
        if explained is None and _off(log.concurrency, expected):
            explained = (f"The per-user step: {base:,.0f} tokens hold {expected:,.2f} requests of {length:,.0f} "
                         f"tokens in whole blocks, the log says {log.concurrency:,.2f}.")
        elif length != context:
            explained = explained or (f"The per-user step's length: the log sized requests at {length:,.0f} tokens, "
                                      f"the ladder at {context:,}; set --max-model-len in your flags to match.")
    comparison.derived = rows
    if explained:
        comparison.verdict, comparison.tone = explained, "warning"
    else:
        comparison.verdict = f"Every figure the log gives matches the ladder within {MATCH_SHARE * 100:g} %."
        comparison.tone = "success"
    return comparison

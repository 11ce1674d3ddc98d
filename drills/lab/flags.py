"""Engine flags typed in the lab (vLLM's and SGLang's): the few that set an input of the predictions."""

from __future__ import annotations

import math
import shlex
from typing import Any

# Flags of vLLM and SGLang that set an input of the predictions.
_FLAG_INPUTS = {
    "--gpu-memory-utilization": "utilization", "--mem-fraction-static": "utilization",
    "--max-model-len": "context", "--context-length": "context",
    "--block-size": "block_size", "--page-size": "block_size",
    "--max-num-seqs": "max_seqs", "--max-running-requests": "max_seqs",
    "--tensor-parallel-size": "tp", "--tp-size": "tp", "--tp": "tp", "-tp": "tp",
    "--kv-cache-dtype": "kv_dtype",
}
_FLAG_SWITCHES = {"--enforce-eager": "eager", "--disable-cuda-graph": "eager"}


def read_engine_flags(text: str) -> tuple[dict[str, Any], list[str]]:
    """Settings found in free-text engine flags, and a sentence for each one read.

    Understands ``--flag value`` and ``--flag=value``; anything unknown or
    unreadable is ignored (the flags stay as typed in the run).
    """
    try:
        tokens = shlex.split(text or "", comments=False)
    except ValueError:
        tokens = (text or "").split()
    found: dict[str, Any] = {}
    read: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name, _, inline = token.partition("=")
        name = name.replace("_", "-")
        if name in _FLAG_SWITCHES:
            found[_FLAG_SWITCHES[name]] = True
            read.append(f"{name}: CUDA graphs off")
        elif name in _FLAG_INPUTS:
            value = inline
            if not inline and index + 1 < len(tokens) and not tokens[index + 1].startswith("-"):
                index += 1
                value = tokens[index]
            key = _FLAG_INPUTS[name]
            parsed = _flag_value(key, value)
            if parsed is not None:
                found[key] = parsed
                read.append(f"{name} {value}")
        index += 1
    return found, read


def _flag_value(key: str, value: str) -> Any:
    if key == "kv_dtype":
        low = value.lower()
        return "fp8" if low.startswith("fp8") else low if low in ("bf16", "fp16", "int8", "fp32") else None
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if key == "utilization":
        return number if 0 < number <= 1 else None
    if number.is_integer() and number >= 1:
        return int(number)
    return None

"""The calculator families: each a procedure with named steps (DESIGN.md §10).

:data:`FAMILIES` maps a family's slug to its :class:`Family` (title, inputs,
procedure). The ``calc`` command, the pages, the grader and the API all go
through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..catalog import Catalog
from . import kv, ladder, params
from .base import Result, Step, StepSpec, evaluate_steps
from .inputs import InputSpec


@dataclass(frozen=True)
class Family:
    """A calculator family: slug, title, one-line summary, inputs and procedure."""

    slug: str
    title: str
    summary: str
    inputs: tuple[InputSpec, ...]
    procedure: Callable[[dict[str, Any], Catalog | None], Result]

    def run(self, raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
        """Run the procedure on snake-case ``raw`` inputs."""
        return self.procedure(raw, catalog)


FAMILIES: dict[str, Family] = {
    "ladder": Family("ladder", "Capacity ladder",
                     "How many users one replica serves: card, utilisation, weights, reserve, KV cache.",
                     ladder.INPUTS, ladder.run_ladder),
    "kv": Family("kv", "KV cache",
                 "Bytes of KV cache per token and per user, for MHA, GQA, MQA, MLA and sliding windows.",
                 kv.INPUTS, kv.run_kv),
    "params": Family("params", "Parameter count",
                     "Total and active parameters derived from a config.json.",
                     params.PARAMS_INPUTS, params.run_params),
    "weights": Family("weights", "Weight memory",
                      "Weight memory at bf16, fp16, fp8, int8 or int4 (at an effective width).",
                      params.WEIGHTS_INPUTS, params.run_weights),
}

__all__ = ["FAMILIES", "Family", "Result", "Step", "StepSpec", "evaluate_steps"]

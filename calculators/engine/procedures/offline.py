"""What a family tells the offline export (``runbook/export/``) beyond the plans it resolves.

The export reads each family's :class:`~.base.Plan` as data over the choices and
numbers its inputs take, and prints the steps' formulas to JavaScript. What a
plan alone cannot show is declared here, on the family's record:

* ``adapters``: given numbers that follow several typed inputs at once, as sympy
  over the inputs' names (the ladder's ``min(avg_tokens, context)``); the export
  refuses a family whose given numbers follow typed inputs in a way it cannot
  infer, rather than ship a calculator that disagrees;
* ``checks``: the refusals the procedure makes in plain Python, before or
  between its steps, by kind (the driver implements each kind with the engine's
  sentence); ``"after"`` names the step (or ``"given"``) after which it applies;
* ``settled``: given numbers a degree loop settles (procedures/tp.py), set by the
  driver's loop rather than tabulated;
* ``alert``, ``extras`` and ``givens``: the page's one hand-written branch, data
  the driver needs besides the steps (a :class:`~..formula.Formula` is shipped as
  its printed JavaScript) and given numbers shipped though no step reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..step_model import DEGREE_SPLITS_NO_HEADS, DEGREE_SPLITS_NO_KV_HEADS

# The sentences of the checks a procedure makes on its typed numbers alone, as str.format templates: the
# procedure raises them filled in, and the export ships them with the check, so the driver words nothing
# ({name} as str() prints it, {name:g} as format(x, "g")).
NOT_ABOVE = "{low} ({low_value:g}) must not be above {high} ({high_value:g})."
PACKING = ("A replica of {replica} GPUs does not pack into nodes of {node}: use a size that divides the node or "
           "fills whole nodes.")
POWER_OF_TWO = "{name} must be a power of two (1, 2, 4, 8, 16 …), not {value}."

# A ring whose link has no bandwidth on record (step_model.link_gb_s is 0).
NO_LINK = ("No bandwidth is on record for the link a ring of {gpus} × {gpu} crosses; choose gpus inside its NVLink "
           "domain of {domain}.")
LINK: Mapping[str, str] = {"kind": "link", "after": "given", "message": NO_LINK}

# The degree rule (step_model.check_degree): before resolving where the procedure checks it first,
# after the given numbers ("given") where a card's refusal comes first.
DEGREE_RULE: Mapping[str, str] = {"kind": "degree_rule", "heads_message": DEGREE_SPLITS_NO_HEADS,
                                  "kv_heads_message": DEGREE_SPLITS_NO_KV_HEADS}
DEGREE_RULE_AFTER_GIVEN: Mapping[str, str] = {**DEGREE_RULE, "after": "given"}


@dataclass(frozen=True)
class Offline:
    """A family's rules for the offline export (see the module docstring)."""

    adapters: Mapping[str, Any] = field(default_factory=dict)
    checks: tuple[Mapping[str, Any], ...] = ()
    settled: tuple[str, ...] = ()
    alert: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    givens: tuple[str, ...] = ()

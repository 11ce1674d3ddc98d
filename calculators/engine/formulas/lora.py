"""The ``lora`` family's formulas and steps, and the matrix shapes they read from a config.

One adapted matrix of shape (d_in, d_out) costs r × (d_in + d_out) parameters
(the A and B factors of Hu et al., 2021); the target presets of :data:`PRESETS`
name the projections adapted in every layer.
"""

from __future__ import annotations

import sympy

from ..formula import Formula, Var
from . import product, ratio, total

# Target presets: q and v; the four attention projections; those and the MLP's matrices.
PRESETS = ("qv", "qkvo", "all")

_ATTENTION_VARS = (
    Var("rank", "1", "adapter rank r"),
    Var("hidden_size", "1", "model width (hidden_size)"),
    Var("q_width", "1", "query width (num_attention_heads × head_dim)"),
    Var("kv_width", "1", "K/V width (num_key_value_heads × head_dim)"),
)
_MLP_VARS = (
    Var("experts", "1", "MLPs per layer (1, or every expert of a mixture)"),
    Var("mlp_matrices", "1", "matrices per MLP (gate, up, down = 3; up, down = 2)"),
    Var("mlp_width", "1", "MLP inner width (intermediate_size, or an expert's)"),
)


def _adapter(s, d_in: str, d_out: str):
    """R × (d_in + d_out): the A and B factors of one adapted matrix."""
    return product(s["rank"], total(s[d_in], s[d_out]))


def _attention_terms(s, preset: str) -> list:
    q = _adapter(s, "hidden_size", "q_width")
    k = _adapter(s, "hidden_size", "kv_width")
    v = _adapter(s, "hidden_size", "kv_width")
    o = _adapter(s, "q_width", "hidden_size")
    return [q, v] if preset == "qv" else [q, k, v, o]


def _per_layer(preset: str):
    def build(s):
        terms = _attention_terms(s, preset)
        if preset == "all":
            terms.append(product(s["experts"], s["mlp_matrices"], _adapter(s, "hidden_size", "mlp_width")))
        return total(*terms)
    return build


PARAMS_PER_LAYER = {
    preset: Formula("params_per_layer",
                    _ATTENTION_VARS + (_MLP_VARS if preset == "all" else ()), _per_layer(preset),
                    label=f"Adapter parameters per layer ({preset})")
    for preset in PRESETS
}

ADAPTER_PARAMS = Formula(
    "adapter_params",
    (Var("params_per_layer", "1", "adapter parameters per layer"), Var("layers", "1", "layers (num_hidden_layers)")),
    lambda s: product(s["params_per_layer"], s["layers"]),
)

ADAPTER_GIB = Formula(
    "adapter_gib",
    (Var("adapter_params", "1", "adapter parameters"), Var("adapter_bits", "bit", "bits per adapter value")),
    lambda s: product(s["adapter_params"], s["adapter_bits"]),
    label="Adapter memory",
)

SPARE_FROM_BUDGET = Formula(
    "spare_gib",
    (Var("budget_gib", "GiB", "memory set aside for adapters"),),
    lambda s: s["budget_gib"],
    label="Memory for adapters (given)",
)

def _spare_from_ladder(moe: bool) -> Formula:
    weights = (Var("total_params", "1", "base model parameters"),
               *((Var("routed_expert_params", "1", "parameters of all routed experts"),
                  Var("weight_bits", "bit", "bits per base weight outside the routed experts"),
                  Var("expert_weight_bits", "bit", "bits per routed-expert parameter")) if moe
                 else (Var("weight_bits", "bit", "bits per base weight"),)))

    def read(s):
        if not moe:
            return product(s["total_params"], s["weight_bits"])
        return total(product(s["total_params"] - s["routed_expert_params"], s["weight_bits"]),
                     product(s["routed_expert_params"], s["expert_weight_bits"]))

    return Formula(
        "spare_gib",
        (Var("gpus", "GPUs", "cards in the replica"),
         Var("card_mib", "MiB", "memory per card"),
         Var("utilization", "1", "utilisation fraction"),
         *weights,
         Var("reserve_gib", "GiB", "activation reserve per card"),
         Var("budget_share", "1", "share of the KV budget for adapters")),
        lambda s: product(total(product(s["gpus"], s["card_mib"], s["utilization"]), -read(s),
                                -product(s["gpus"], s["reserve_gib"])),
                          s["budget_share"]),
        label="Memory for adapters (a share of the KV budget" + (", routed experts at their own width)" if moe
                                                                 else ")"),
    )


SPARE_FROM_LADDER = _spare_from_ladder(False)
# A mixture of experts' base weights: its routed experts a term of their own (gpt-oss's MXFP4 experts).
SPARE_FROM_LADDER_MOE = _spare_from_ladder(True)

ADAPTERS_FIT = Formula(
    "adapters_fit",
    (Var("spare_gib", "GiB", "memory for adapters"), Var("adapter_gib", "GiB", "one adapter")),
    lambda s: sympy.Max(0, sympy.floor(ratio(s["spare_gib"], s["adapter_gib"]))),
)

ALL_FORMULAS = (*PARAMS_PER_LAYER.values(), ADAPTER_PARAMS, ADAPTER_GIB, SPARE_FROM_BUDGET, SPARE_FROM_LADDER,
                SPARE_FROM_LADDER_MOE, ADAPTERS_FIT)

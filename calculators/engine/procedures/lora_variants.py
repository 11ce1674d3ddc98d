"""The ``lora`` family's misconceptions and the wrong answers each produces (:data:`VARIANTS`).

k and v taken as square (hidden × hidden under GQA), the adapter sized as the
full d_in × d_out update, one layer's count taken for the model's, bits for
bytes and GB for GiB.
"""

from __future__ import annotations

from ..formulas.lora import PARAMS_PER_LAYER, PRESETS
from ..misconceptions import GIB, MisconceptionInfo

MISCONCEPTION_INFO = (
    MisconceptionInfo(
        "lora-square-projections", "k and v taken as square",
        "Under GQA or MQA the k and v projections output K/V heads × head_dim, narrower than hidden_size: "
        "read each matrix's shape from the config.", "/runbook/12-engines/#lora-adapters"),
    MisconceptionInfo(
        "lora-full-matrix", "Adapter sized as the full matrix",
        "An adapter stores two thin factors, r × (d_in + d_out) values, not the d_in × d_out update they "
        "multiply out to.", "/runbook/12-engines/#lora-adapters"),
    MisconceptionInfo(
        "lora-one-layer", "One layer's adapter taken for the whole",
        "The targets are adapted in every decoder layer: multiply the per-layer count by num_hidden_layers.",
        "/runbook/12-engines/#lora-adapters"),
)


def _per_layer_square(g, s):
    square = {**g, "q_width": g["hidden_size"], "kv_width": g["hidden_size"]}
    return PARAMS_PER_LAYER[PRESETS[int(g["preset"])]](square)


def _per_layer_full(g, s):
    preset = PRESETS[int(g["preset"])]
    h, q, kv = g["hidden_size"], g["q_width"], g["kv_width"]
    full = h * q + h * kv if preset == "qv" else h * q + 2 * h * kv + q * h
    if preset == "all":
        full += g["experts"] * g["mlp_matrices"] * h * g["mlp_width"]
    return full


def _params_square(g, s):
    return _per_layer_square(g, s) * g["layers"]


def _params_full(g, s):
    return _per_layer_full(g, s) * g["layers"]


def _params_one_layer(g, s):
    return s["params_per_layer"]


def _adapter_bits_for_bytes(g, s):
    return s["adapter_params"] * g["adapter_bits"] / GIB




VARIANTS = {
    "params_per_layer": (
        ("lora-square-projections", _per_layer_square),
        ("lora-full-matrix", _per_layer_full),
    ),
    "adapter_params": (
        ("lora-one-layer", _params_one_layer),
        ("lora-square-projections", _params_square),
        ("lora-full-matrix", _params_full),
    ),
    "adapter_gib": (
        ("bits-for-bytes", _adapter_bits_for_bytes),
    ),
}

"""What a model type implies that its ``config.json`` leaves unsaid (the ``transformers`` classes' defaults).

The model type itself (from ``model_type``, else ``architectures``, else the
naming the config uses), tied embeddings, q/k/v biases, per-head q/k norms,
norms per layer and which layers attend through a sliding window.
"""

from __future__ import annotations

import math

from .errors import ConfigError
from .hf_fields import count

# Transformers' own defaults for ``tie_word_embeddings`` per ``model_type``
# (LlamaConfig, MistralConfig, Qwen2Config … default False; GemmaConfig,
# Gemma2Config and FalconConfig default True).
TIED_BY_DEFAULT = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "qwen2_moe": False,
    "qwen3": False,
    "qwen3_moe": False,
    "deepseek_v2": False,
    "deepseek_v3": False,
    "gemma": True,
    "gemma2": True,
    "gemma3_text": True,
    "falcon": True,
    "RefinedWeb": True,
    "RefinedWebModel": True,
    "phi3": False,
    "gpt_oss": False,
}

# ``architectures[0]`` → ``model_type`` for configs whose copy dropped ``model_type``.
ARCHITECTURE_MODEL_TYPES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "Phi3ForCausalLM": "phi3",
    "GptOssForCausalLM": "gpt_oss",
}

# Model types whose q/k/v projections carry a bias even though the config does
# not say so (Qwen2's attention is hard-wired with ``bias=True`` on q, k and v).
QKV_BIAS_BY_DEFAULT = {"qwen2", "qwen2_moe"}

# Model types with a per-head RMSNorm on queries and keys (Qwen3's q_norm/k_norm).
QK_NORM_TYPES = {"qwen3", "qwen3_moe", "gemma3_text", "gemma3"}

# Model types whose every expert and router carry biases the config does not state (gpt-oss: gate_up and down
# projections with biases, a router Linear with bias; transformers' GptOssExperts and GptOssTopKRouter).
EXPERT_BIAS_TYPES = {"gpt_oss"}

# Model types with attention sinks: one learned logit per query head per layer, added to the softmax's
# denominator (gpt-oss; transformers' GptOssAttention.sinks). Parameters, never cached: the KV cache is unchanged.
ATTENTION_SINK_TYPES = {"gpt_oss"}

# Norms per decoder layer: Gemma-2 wraps both attention and MLP in a pre- and a
# post-norm (four RMSNorms); the Llama family has two.
NORMS_PER_LAYER = {"gemma2": 4, "gemma3_text": 4}

def model_type_of(config: dict, family: str | None) -> str:
    """The config's ``model_type``: its own field, else its first known architecture class, else ``family``,
    else a guess from its naming (llama when nothing says otherwise); raises :class:`~.errors.ConfigError`
    when ``architectures`` is not a list of class names."""
    model_type = config.get("model_type")
    if model_type:
        return str(model_type)
    architectures = config.get("architectures")
    if architectures is not None and not (
            isinstance(architectures, list) and all(isinstance(name, str) for name in architectures)):
        raise ConfigError(f"'architectures' must be a list of class names such as [\"LlamaForCausalLM\"], "
                          f"not {str(architectures)[:40]}.", field="architectures")
    for architecture in architectures or ():
        if architecture in ARCHITECTURE_MODEL_TYPES:
            return ARCHITECTURE_MODEL_TYPES[architecture]
    if family:
        return family
    if "dim" in config and "n_layers" in config and "kv_lora_rank" in config:
        return "deepseek_v2"  # DeepSeek's own inference naming
    if "n_layer" in config and "multi_query" in config:
        return "falcon"
    return "llama"  # the family whose defaults most pasted configs follow


def falcon_norms(config: dict) -> int:
    """LayerNorms per Falcon block: one shared by the parallel attention and MLP
    branches in the original 7B layout, two otherwise (serial blocks, or the new
    decoder architecture's ln_attn and ln_mlp)."""
    if config.get("parallel_attn", True) and not config.get("new_decoder_architecture"):
        return 1
    return 2


def sliding_window(config: dict, model_type: str, layers: int) -> tuple[int, int]:
    """Return (window in tokens, number of windowed layers); (0, 0) when none.

    Understands ``layer_types`` lists, Gemma-2's alternation (even layers local),
    Qwen2's ``use_sliding_window``/``max_window_layers``, Gemma-3's
    ``sliding_window_pattern`` and Mistral's window on every layer. Raises
    :class:`~.errors.ConfigError` when the window is not a positive whole number
    or ``layer_types`` does not list ``layers`` entries.
    """
    window = config.get("sliding_window") or config.get("sliding_window_size")
    if not window:
        return 0, 0
    if (isinstance(window, bool) or not isinstance(window, (int, float)) or not math.isfinite(window)
            or window <= 0 or window != int(window)):
        raise ConfigError(f"'sliding_window' must be a positive whole number, not {window!r}.",
                          field="sliding_window")
    window = int(window)
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != layers:
            raise ConfigError(
                f"'layer_types' lists {len(layer_types)} layers but num_hidden_layers is {layers}.",
                field="layer_types",
            )
        return window, sum(1 for kind in layer_types if "sliding" in str(kind))
    if "use_sliding_window" in config:
        if not config["use_sliding_window"]:
            return 0, 0
        # Qwen2 windows the layers from max_window_layers upwards.
        first = count(config, "max_window_layers")
        return window, max(0, layers - first)
    pattern = config.get("sliding_window_pattern")
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
        # Gemma-3: every pattern-th layer (5, 11, 17 … for a pattern of 6) is global.
        return window, layers - layers // pattern
    if model_type in ("gemma2", "gemma3_text"):
        return window, (layers + 1) // 2  # layers 0, 2, 4 … are local
    return window, layers

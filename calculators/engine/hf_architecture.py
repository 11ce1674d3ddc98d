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
    "llama4_text": False,
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
    "Llama4ForCausalLM": "llama4_text",
}

# Model types whose q/k/v projections carry a bias even though the config does
# not say so (Qwen2's attention is hard-wired with ``bias=True`` on q, k and v).
QKV_BIAS_BY_DEFAULT = {"qwen2", "qwen2_moe"}

# Model types with a per-head RMSNorm on queries and keys (Qwen3's q_norm/k_norm: head_dim weights each).
QK_NORM_TYPES = {"qwen3", "qwen3_moe", "gemma3_text", "gemma3"}
# Model types whose query and key norms span the whole projection (OLMo 2 and OLMoE: q_norm over
# heads × head_dim, k_norm over kv_heads × head_dim; transformers' Olmo2Attention). Cohere's per-head
# LayerNorms, shaped (heads, head_dim) without bias when ``use_qk_norm`` is set, hold as many weights.
QK_NORM_FULL_WIDTH_TYPES = {"olmo2", "olmoe"}

# Model types whose every expert and router carry biases the config does not state (gpt-oss: gate_up and down
# projections with biases, a router Linear with bias; transformers' GptOssExperts and GptOssTopKRouter).
EXPERT_BIAS_TYPES = {"gpt_oss"}

# Model types with attention sinks: one learned logit per query head per layer, added to the softmax's
# denominator (gpt-oss; transformers' GptOssAttention.sinks). Parameters, never cached: the KV cache is unchanged.
ATTENTION_SINK_TYPES = {"gpt_oss"}

# Llama 4's text model: the routed experts' width is ``intermediate_size``, the dense layers' ``intermediate_size_mlp``;
# every MoE layer holds one shared expert of the routed width; MoE layers are every ``interleave_moe_layer_step``-th
# (layers step − 1, 2·step − 1 …, as transformers' Llama4TextConfig lists them in ``moe_layers``).
INTERLEAVED_MOE_TYPES = {"llama4_text"}
# Llama 4's chunked local attention: a layer of ``no_rope_layers`` value 1 attends within its ``attention_chunk_size``
# chunk; every ``no_rope_layer_interval``-th layer (4 by default) is global, without RoPE (NoPE).
NO_ROPE_LAYER_INTERVAL = 4


def interleaved_moe_layers(config: dict, layers: int) -> int:
    """How many of ``layers`` are MoE in a Llama 4 text config: ``moe_layers`` when listed, else every
    ``interleave_moe_layer_step``-th (1: every layer). Raises :class:`~.errors.ConfigError` on a step below 1."""
    listed = config.get("moe_layers")
    if isinstance(listed, list) and listed:
        return len(listed)
    step = config.get("interleave_moe_layer_step", 1)
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ConfigError(f"'interleave_moe_layer_step' must be a whole number of at least 1, not {step!r}.",
                          field="interleave_moe_layer_step")
    return len(range(step - 1, layers, step))


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

    Understands ``layer_types`` lists, Llama 4's chunked attention (``attention_chunk_size``: see
    :func:`_chunked_attention`), Gemma-2's alternation (even layers local),
    Qwen2's ``use_sliding_window``/``max_window_layers``, Gemma-3's
    ``sliding_window_pattern`` and Mistral's window on every layer. Raises
    :class:`~.errors.ConfigError` when the window is not a positive whole number
    or ``layer_types`` does not list ``layers`` entries.
    """
    if config.get("attention_chunk_size"):
        return _chunked_attention(config, layers)
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


def _chunked_attention(config: dict, layers: int) -> tuple[int, int]:
    """(chunk in tokens, chunked layers) of Llama 4's chunked local attention, read as a window.

    A token of a chunked layer attends only to the tokens of its own ``attention_chunk_size`` chunk (positions
    ⌊p / chunk⌋ · chunk … p), so the layer holds and reads at most ``chunk`` tokens of K/V: the engine costs it as
    a window of that length, the most it holds (a token early in a chunk reads fewer). Chunked layers are those
    ``no_rope_layers`` marks 1; without the list, all but every ``no_rope_layer_interval``-th (4) layer, which
    attends globally without RoPE. Raises :class:`~.errors.ConfigError` on a chunk that is not a positive whole
    number or a ``no_rope_layers`` list of the wrong length.
    """
    chunk = config["attention_chunk_size"]
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
        raise ConfigError(f"'attention_chunk_size' must be a positive whole number, not {chunk!r}.",
                          field="attention_chunk_size")
    flags = config.get("no_rope_layers")
    if isinstance(flags, list) and flags:
        if len(flags) != layers:
            raise ConfigError(f"'no_rope_layers' lists {len(flags)} layers but num_hidden_layers is {layers}.",
                              field="no_rope_layers")
        return chunk, sum(1 for flag in flags if flag)
    interval = count(config, "no_rope_layer_interval") or NO_ROPE_LAYER_INTERVAL
    return chunk, layers - layers // interval

"""Read a Hugging Face ``config.json`` into the few numbers serving arithmetic needs, and count its parameters.

The engine never trusts a marketing parameter count: every figure is derived from
the architecture fields of the model's own ``config.json``. This module turns
that file (as a dict or as pasted JSON text) into a :class:`ModelConfig`.

Rules (docs/architecture.md §10):

* extra keys are ignored;
* a missing ``head_dim`` is ``hidden_size / num_attention_heads``;
* Falcon's RW names (``n_layer``, ``n_head``, ``multi_query``) and DeepSeek's
  MLA fields (``kv_lora_rank``, ``qk_rope_head_dim`` …) and DeepSeek-V3.2's indexer
  (``index_n_heads``, ``index_head_dim``, ``index_topk``) are understood, as is
  DeepSeek's own inference naming (``dim``, ``n_layers``, ``inter_dim`` …);
* a required field that is missing or contradictory raises :class:`ConfigError`
  naming it;
* an absent ``tie_word_embeddings`` takes the model type's usual default
  (llama, mistral, mixtral, qwen2, deepseek: untied; gemma, gemma2, falcon:
  tied) and the config records that it was defaulted so outputs can say so.

In order: reading one field (its aliases, the checks a number must pass: a hostile pasted config
fails before any arithmetic), what a model type implies that its config leaves unsaid (the
``transformers`` classes' defaults: the model type itself, tied embeddings, q/k/v biases, q/k norms,
norms per layer, sliding-window layers, interleaved experts), and the :class:`ModelConfig` they build.

*Exact parameter counts* derived from a :class:`ModelConfig`.

The count is the sum of every weight matrix, bias and norm vector the model's
reference implementation (Hugging Face ``transformers``) creates:

* token embeddings ``vocab × hidden`` and, unless tied, an output head of the
  same size;
* attention per layer — q, k, v, o projections (with biases where the model has
  them, q/k norms where it has them, and one sink logit per query head where it
  has attention sinks, gpt-oss); for MLA, DeepSeek's down- and
  up-projections (``q_a``/``q_b`` or a direct ``q_proj``, ``kv_a_proj_with_mqa``,
  ``kv_b_proj``, ``o_proj`` and the two latent RMSNorms), and with DeepSeek-V3.2's
  sparse attention its lightning indexer (:func:`indexer_params_per_layer`);
* MLP per layer — gated (SwiGLU/GeGLU: gate, up, down = 3 matrices) or plain
  (up, down = 2 matrices); mixture-of-experts layers hold a router plus
  ``num_experts`` routed experts and any shared experts, of which a token uses
  ``experts_per_token`` routed ones and every shared one;
* norms (RMSNorm: one vector; LayerNorm: weight and bias).

Llama-3.1-8B gives exactly 8,030,261,248 (model card: 8.03B).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from .errors import ConfigError

# --- reading one field of a pasted config.json --------------------------------------------------------

# Larger than any real layer count, width or vocabulary: a bound that keeps the
# arithmetic finite on a hostile pasted config.
MAX_DIMENSION = 10**9

# No number in a real config.json is this large (rope_theta, the largest, is ~10**7); an integer past it
# is refused before any arithmetic, which would otherwise overflow converting it to a float.
MAX_MAGNITUDE = 10**18

# Alternative spellings, tried in order after the Hugging Face name.
ALIASES = {
    "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("n_head", "num_heads", "n_heads"),
    "hidden_size": ("d_model", "n_embd", "dim"),
    "intermediate_size": ("ffn_hidden_size", "inter_dim"),
    "moe_intermediate_size": ("moe_inter_dim",),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv"),
    "first_k_dense_replace": ("n_dense_layers",),
    "num_experts_per_tok": ("n_activated_experts",),
}


def lookup(config: dict, name: str):
    """Return the first present, non-null value among ``name`` and its aliases."""
    for key in (name, *ALIASES.get(name, ())):
        value = config.get(key)
        if value is not None:
            return key, value
    return name, None


def as_typed(value: object) -> str:
    """A config value as it reads in the pasted JSON (``true``, ``"12"``, ``null``), for an error sentence."""
    return json.dumps(value, ensure_ascii=False)


def positive_int(config: dict, name: str, *, required: bool = True, default: int = 0) -> int:
    """Read an integer field that must be positive; raise :class:`ConfigError` naming it."""
    key, value = lookup(config, name)
    if value is None:
        if required:
            raise ConfigError(f"The config has no '{name}' field, which is required.", field=name)
        return default
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value != int(value)):
        raise ConfigError(f"'{key}' must be a whole number, not {as_typed(value)}.", field=key)
    if int(value) <= 0:
        raise ConfigError(f"'{key}' must be positive, not {as_typed(value)}.", field=key)
    if value > MAX_DIMENSION:
        raise ConfigError(f"'{key}' is {value:,.6g}; no real model has more than {MAX_DIMENSION:,}.", field=key)
    return int(value)


def count(config: dict, name: str) -> int:
    """Read an optional whole number that may be zero (shared experts, dense layers …)."""
    key, value = lookup(config, name)
    if value is None or value == 0:
        return 0
    return positive_int(config, name)


def refuse_huge_integers(value, key: str = "config") -> None:
    """Raise :class:`ConfigError` naming the first integer whose magnitude exceeds :data:`MAX_MAGNITUDE`.

    Walks nested objects and lists (an ``int`` of hundreds of digits would raise
    ``OverflowError`` in any float arithmetic further on).
    """
    stack = [(key, value)]
    while stack:
        name, item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_MAGNITUDE:
            raise ConfigError(f"'{name}' is an integer of {len(str(abs(item)))} digits; no real config holds one.",
                              field=name)
        if isinstance(item, dict):
            stack.extend((str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((name, v) for v in item)


# --- what a model type implies that its config.json leaves unsaid -------------------------------------

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
    "deepseek_v32": False,
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
    "DeepseekV32ForCausalLM": "deepseek_v32",
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
        raise ConfigError(f"'interleave_moe_layer_step' must be a whole number of at least 1, not {as_typed(step)}.",
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
        raise ConfigError(f"'sliding_window' must be a positive whole number, not {as_typed(window)}.",
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
        raise ConfigError(f"'attention_chunk_size' must be a positive whole number, not {as_typed(chunk)}.",
                          field="attention_chunk_size")
    flags = config.get("no_rope_layers")
    if isinstance(flags, list) and flags:
        if len(flags) != layers:
            raise ConfigError(f"'no_rope_layers' lists {len(flags)} layers but num_hidden_layers is {layers}.",
                              field="no_rope_layers")
        return chunk, sum(1 for flag in flags if flag)
    interval = count(config, "no_rope_layer_interval") or NO_ROPE_LAYER_INTERVAL
    return chunk, layers - layers // interval


# --- the config ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ModelConfig:
    """The architecture of one decoder-only transformer, in plain names.

    All counts are integers; widths are in values (not bytes). ``kv_heads`` is
    the number of K/V heads per layer (MHA: equal to ``heads``; MQA: 1; GQA: in
    between; MLA: nominal only, the cache holds ``kv_lora_rank +
    qk_rope_head_dim`` values per token per layer instead).
    """

    model_type: str
    layers: int
    heads: int
    kv_heads: int
    hidden_size: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    tie_defaulted: bool = False
    gated_mlp: bool = True
    qkv_bias: bool = False
    attention_out_bias: bool = False
    mlp_bias: bool = False
    norm_has_bias: bool = False
    norms_per_layer: int = 2
    qk_norm: str = ""  # "head": a norm of head_dim on queries and keys; "width": over the whole projections
    # Attention sinks (gpt-oss): one learned logit per query head per layer; parameters only, nothing cached.
    attention_sinks: bool = False
    # Mixture of experts (0 experts = dense).
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    router_bias: bool = False
    # The format a mixed-precision checkpoint stores its routed experts' weight matrices in ("mxfp4" for gpt-oss),
    # when its quantization_config converts only them: every other tensor is kept in bf16 (:func:`experts_quantized`).
    experts_quantized: str = ""
    # Qwen2-MoE's single shared expert has its own width and a one-output gate.
    shared_expert_intermediate_size: int = 0
    # Multi-head latent attention (DeepSeek).
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # DeepSeek Sparse Attention (DeepSeek-V3.2): a lightning indexer of ``index_n_heads`` heads of
    # ``index_head_dim`` scores every cached token against one cached key per token; attention reads the
    # ``index_topk`` best (0: no indexer, dense attention).
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    # Sliding-window attention: window length in tokens and how many layers use it (Llama 4's chunked local
    # attention is read as a window of its chunk: the most K/V such a layer holds).
    sliding_window: int = 0
    window_layers: int = 0
    # True when the windowed layers attend within fixed chunks (Llama 4's attention_chunk_size), not a sliding window.
    chunked_attention: bool = False
    max_position_embeddings: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def attention_kind(self) -> str:
        """``MLA``, ``MQA``, ``MHA`` or ``GQA`` (sliding windows are reported separately)."""
        if self.kv_lora_rank:
            return "MLA"
        if self.kv_heads == 1:
            return "MQA"
        if self.kv_heads == self.heads:
            return "MHA"
        return "GQA"

    @property
    def sparse_attention(self) -> bool:
        """True when an indexer picks the ``index_topk`` cached tokens each query attends to (DeepSeek-V3.2)."""
        return self.index_topk > 0

    @property
    def is_moe(self) -> bool:
        """True when the MLP of some layers is a mixture of experts."""
        return self.num_experts > 0

    @property
    def full_layers(self) -> int:
        """Layers that attend over the whole context (not windowed)."""
        return self.layers - self.window_layers


def parse_config_text(text: str, family: str | None = None) -> ModelConfig:
    """Parse pasted ``config.json`` text.

    Raises :class:`ConfigError` when the text is not a JSON object or when
    :func:`parse_config` rejects it.
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigError("The config is nested too deeply to be a model's config.json.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"The config is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})."
        ) from exc
    except ValueError:
        # Python refuses to read an integer of more than 4,300 digits (sys.get_int_max_str_digits()).
        raise ConfigError("The config holds an integer thousands of digits long; no real config does.") from None
    if not isinstance(data, dict):
        raise ConfigError("The config must be a JSON object such as a model's config.json.")
    return parse_config(data, family=family)


def _head_dim(config: dict, hidden: int, heads: int) -> int:
    """``head_dim``, or hidden_size ÷ heads when absent (which must then divide evenly)."""
    head_dim = positive_int(config, "head_dim", required=False)
    if not head_dim:
        if hidden % heads:
            raise ConfigError(
                f"'head_dim' is absent and hidden_size {hidden} is not divisible by "
                f"num_attention_heads {heads}.",
                field="head_dim",
            )
        head_dim = hidden // heads
    return head_dim


def _kv_heads(config: dict, heads: int, is_falcon: bool) -> int:
    """K/V heads per layer (``heads`` when absent), which must divide ``heads``."""
    if is_falcon and config.get("multi_query") and not config.get("new_decoder_architecture"):
        # Falcon's multi_query mode has exactly one K/V head whatever num_kv_heads says.
        kv_heads = 1
    else:
        kv_heads = positive_int(config, "num_key_value_heads", required=False, default=heads)
    if kv_heads > heads or heads % kv_heads:
        raise ConfigError(
            f"num_key_value_heads {kv_heads} must divide num_attention_heads {heads}.",
            field="num_key_value_heads",
        )
    return kv_heads


def _tied(config: dict, model_type: str, notes: list[str]) -> tuple[bool, bool]:
    """(tied embeddings, whether that was defaulted); a defaulted value adds a note to ``notes``."""
    tie = config.get("tie_word_embeddings")
    if tie is not None and not isinstance(tie, bool):
        raise ConfigError(f"'tie_word_embeddings' must be true or false, not {as_typed(tie)}.",
                          field="tie_word_embeddings")
    if tie is not None:
        return tie, False
    tie = TIED_BY_DEFAULT.get(model_type, False)
    notes.append(
        f"tie_word_embeddings is absent; a {model_type} model defaults to "
        f"{'tied' if tie else 'untied'} embeddings."
    )
    return tie, True


def _experts(config: dict, layers: int, intermediate: int) -> dict[str, int]:
    """The mixture-of-experts fields of :class:`ModelConfig` (all 0 for a dense model).

    Mixtral's ``num_local_experts``, DeepSeek's ``n_routed_experts`` and Qwen's ``num_experts``.
    """
    num_experts = positive_int(config, "num_local_experts", required=False) or positive_int(
        config, "n_routed_experts", required=False
    ) or positive_int(config, "num_experts", required=False)
    if not num_experts:
        return {"num_experts": 0, "experts_per_token": 0, "moe_intermediate_size": 0, "shared_experts": 0,
                "dense_layers": 0}
    experts_per_token = positive_int(config, "num_experts_per_tok")
    if experts_per_token > num_experts:
        raise ConfigError(
            f"num_experts_per_tok {experts_per_token} exceeds the {num_experts} experts.",
            field="num_experts_per_tok",
        )
    moe_inter = positive_int(config, "moe_intermediate_size", required=False, default=intermediate)
    shared = count(config, "n_shared_experts")
    dense_layers = count(config, "first_k_dense_replace")
    if dense_layers >= layers:
        raise ConfigError(
            f"first_k_dense_replace {dense_layers} leaves no mixture-of-experts layer among the "
            f"{layers} layers.",
            field="first_k_dense_replace",
        )
    return {"num_experts": num_experts, "experts_per_token": experts_per_token, "moe_intermediate_size": moe_inter,
            "shared_experts": shared, "dense_layers": dense_layers}


def _latent_attention(config: dict) -> dict[str, int]:
    """DeepSeek's multi-head latent attention fields (all 0 without ``kv_lora_rank``)."""
    names = ("q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    kv_lora_rank = positive_int(config, "kv_lora_rank", required=False)
    mla = {"kv_lora_rank": kv_lora_rank, **dict.fromkeys(names, 0)}
    if kv_lora_rank:
        for name in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            mla[name] = positive_int(config, name)
        mla["q_lora_rank"] = positive_int(config, "q_lora_rank", required=False)
    return mla


def _indexer(config: dict) -> dict[str, int]:
    """DeepSeek Sparse Attention's indexer fields (all 0 without ``index_topk``); an indexer needs an MLA latent
    and a query low-rank projection (``q_lora_rank``), which its query is projected from."""
    topk = positive_int(config, "index_topk", required=False)
    if not topk:
        return {"index_n_heads": 0, "index_head_dim": 0, "index_topk": 0}
    if not positive_int(config, "kv_lora_rank", required=False) or not positive_int(config, "q_lora_rank",
                                                                                        required=False):
        raise ConfigError("'index_topk' needs a latent attention with kv_lora_rank and q_lora_rank (the indexer's "
                          "query is projected from the q_lora_rank latent).", field="index_topk")
    return {"index_n_heads": positive_int(config, "index_n_heads"),
            "index_head_dim": positive_int(config, "index_head_dim"), "index_topk": topk}


# The modules a checkpoint that quantises only its routed experts leaves unconverted: attention, the router, the
# embeddings and the head (gpt-oss's quantization_config.modules_to_not_convert: "model.layers.*.self_attn",
# "model.layers.*.mlp.router", "model.embed_tokens", "lm_head").
UNCONVERTED_BESIDE_EXPERTS = ("attn", "router", "embed", "lm_head")


def experts_quantized(config: dict, num_experts: int) -> str:
    """The format (``quant_method``, e.g. ``"mxfp4"``) a mixture of experts' checkpoint stores its routed experts
    in when its ``quantization_config`` leaves attention, the router, the embeddings and the head unconverted
    (each of :data:`UNCONVERTED_BESIDE_EXPERTS` named in ``modules_to_not_convert``); ``""`` otherwise (a dense
    model, no quantization_config, or one that converts every linear layer)."""
    quant = config.get("quantization_config")
    if not num_experts or not isinstance(quant, dict):
        return ""
    method, kept = quant.get("quant_method"), quant.get("modules_to_not_convert")
    if not isinstance(method, str) or not isinstance(kept, list):
        return ""
    names = " ".join(str(name) for name in kept)
    return method.lower() if all(part in names for part in UNCONVERTED_BESIDE_EXPERTS) else ""


def parse_config(config: dict, family: str | None = None) -> ModelConfig:
    """Turn a ``config.json`` dict into a :class:`ModelConfig`.

    ``family`` is a fallback ``model_type`` for copies of a config that dropped
    both ``model_type`` and ``architectures`` (the catalog passes its ``family``).
    Raises :class:`ConfigError` naming the field when a required field is
    missing, not a positive whole number, or contradicts another.
    """
    if not isinstance(config, dict):
        raise ConfigError("The config must be a JSON object such as a model's config.json.")
    refuse_huge_integers(config)
    model_type = model_type_of(config, family)
    notes: list[str] = []
    layers = positive_int(config, "num_hidden_layers")
    heads = positive_int(config, "num_attention_heads")
    hidden = positive_int(config, "hidden_size")
    vocab = positive_int(config, "vocab_size")
    head_dim = _head_dim(config, hidden, heads)
    is_falcon = model_type in ("falcon", "RefinedWeb", "RefinedWebModel")
    kv_heads = _kv_heads(config, heads, is_falcon)
    if is_falcon:
        intermediate = positive_int(config, "intermediate_size", required=False, default=4 * hidden)
    else:
        intermediate = positive_int(config, "intermediate_size")
    tie, tie_defaulted = _tied(config, model_type, notes)
    if model_type in INTERLEAVED_MOE_TYPES:  # Llama 4: dense layers are intermediate_size_mlp wide
        expert_width = intermediate
        intermediate = positive_int(config, "intermediate_size_mlp", required=False, default=intermediate)
        experts = _experts(config, layers, expert_width)
        if experts["num_experts"]:
            experts.update(moe_intermediate_size=expert_width, shared_experts=1,
                           dense_layers=layers - interleaved_moe_layers(config, layers))
    else:
        experts = _experts(config, layers, intermediate)
    mla = _latent_attention(config)
    window, window_layers = sliding_window(config, model_type, layers)
    attention_bias = bool(config.get("attention_bias") or config.get("bias"))
    return ModelConfig(
        model_type=model_type, layers=layers, heads=heads, kv_heads=kv_heads, hidden_size=hidden,
        head_dim=head_dim, intermediate_size=intermediate, vocab_size=vocab,
        tie_word_embeddings=bool(tie), tie_defaulted=tie_defaulted,
        gated_mlp=not is_falcon,  # Falcon's MLP is a plain up/down projection, every other family's gated
        qkv_bias=attention_bias or model_type in QKV_BIAS_BY_DEFAULT,
        attention_out_bias=attention_bias,
        mlp_bias=bool(config.get("mlp_bias") or (is_falcon and config.get("bias")) or model_type in EXPERT_BIAS_TYPES),
        norm_has_bias=is_falcon,
        norms_per_layer=falcon_norms(config) if is_falcon else NORMS_PER_LAYER.get(model_type, 2),
        qk_norm=("head" if model_type in QK_NORM_TYPES else
                 "width" if model_type in QK_NORM_FULL_WIDTH_TYPES
                 or (model_type == "cohere" and config.get("use_qk_norm")) else ""),
        attention_sinks=model_type in ATTENTION_SINK_TYPES,
        **experts,
        router_bias=config.get("topk_method") == "noaux_tc" or model_type in EXPERT_BIAS_TYPES,
        experts_quantized=experts_quantized(config, experts["num_experts"]),
        shared_expert_intermediate_size=count(config, "shared_expert_intermediate_size")
        if experts["num_experts"] else 0,
        **mla, **_indexer(config),
        sliding_window=window, window_layers=window_layers,
        chunked_attention=bool(window_layers and config.get("attention_chunk_size")),
        max_position_embeddings=count(config, "max_position_embeddings"),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameter counts (plain integers) by component, for the whole model."""

    embeddings: int
    attention: int
    mlp_dense: int
    mlp_experts_total: int
    mlp_experts_active: int
    routers: int
    norms: int
    lm_head: int

    @property
    def total(self) -> int:
        """Every parameter stored in the checkpoint (the figure that sizes memory)."""
        return (self.embeddings + self.attention + self.mlp_dense + self.mlp_experts_total
                + self.routers + self.norms + self.lm_head)

    @property
    def active(self) -> int:
        """Parameters one token touches in a forward pass (equals ``total`` for a dense model)."""
        return (self.embeddings + self.attention + self.mlp_dense + self.mlp_experts_active
                + self.routers + self.norms + self.lm_head)


def _norm(cfg: ModelConfig, width: int) -> int:
    return 2 * width if cfg.norm_has_bias else width


def indexer_params_per_layer(cfg: ModelConfig) -> int:
    """The lightning indexer of one layer (DeepSeek-V3.2's sparse attention; 0 without one), as DeepSeek's
    reference ``inference/model.py`` builds it: ``wq_b`` q_lora_rank × (index_n_heads × index_head_dim), ``wk``
    hidden × index_head_dim, ``k_norm`` a LayerNorm of index_head_dim (weight and bias), ``weights_proj``
    hidden × index_n_heads (one weight per index head per token); no biases."""
    if not cfg.index_topk:
        return 0
    n, d = cfg.index_n_heads, cfg.index_head_dim
    return cfg.q_lora_rank * n * d + cfg.hidden_size * d + 2 * d + cfg.hidden_size * n


def attention_params_per_layer(cfg: ModelConfig) -> int:
    """Attention weights (and biases, norms inside attention) of one decoder layer."""
    h = cfg.hidden_size
    if cfg.kv_lora_rank:
        qk_head = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
        if cfg.q_lora_rank:
            q = h * cfg.q_lora_rank + cfg.q_lora_rank + cfg.q_lora_rank * cfg.heads * qk_head
        else:
            q = h * cfg.heads * qk_head
        kv_down = h * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) + cfg.kv_lora_rank
        kv_up = cfg.kv_lora_rank * cfg.heads * (cfg.qk_nope_head_dim + cfg.v_head_dim)
        out = cfg.heads * cfg.v_head_dim * h
        return q + kv_down + kv_up + out + indexer_params_per_layer(cfg)
    q_width = cfg.heads * cfg.head_dim
    kv_width = cfg.kv_heads * cfg.head_dim
    weights = h * (q_width + 2 * kv_width) + q_width * h
    biases = (q_width + 2 * kv_width) if cfg.qkv_bias else 0
    biases += h if cfg.attention_out_bias else 0
    # Query and key norms: one head_dim vector each (Qwen3), or the whole projections' widths (OLMo 2).
    qk_norms = {"head": 2 * cfg.head_dim, "width": q_width + kv_width}.get(cfg.qk_norm, 0)
    sinks = cfg.heads if cfg.attention_sinks else 0
    return weights + biases + qk_norms + sinks


def mlp_params(cfg: ModelConfig, width: int) -> int:
    """One MLP (or one expert) of inner width ``width``: 3 matrices gated, 2 plain (:func:`mlp_matrix_params`),
    and their biases when the family has them."""
    matrices = 3 if cfg.gated_mlp else 2
    biases = (width * (matrices - 1) + cfg.hidden_size) if cfg.mlp_bias else 0
    return mlp_matrix_params(cfg, width) + biases


def mlp_matrix_params(cfg: ModelConfig, width: int) -> int:
    """The weight matrices of one MLP (or one expert) of inner width ``width``, biases left out: the tensors a
    checkpoint that quantises its experts stores in the block format (gpt-oss's biases stay bf16)."""
    return (3 if cfg.gated_mlp else 2) * cfg.hidden_size * width


def param_breakdown(cfg: ModelConfig) -> ParamBreakdown:
    """Count every parameter of ``cfg`` by component.

    Returns a :class:`ParamBreakdown` of plain integers; never raises for a
    config that :func:`~.hf_config.parse_config` accepted.
    """
    embeddings = cfg.vocab_size * cfg.hidden_size
    lm_head = 0 if cfg.tie_word_embeddings else embeddings
    attention = cfg.layers * attention_params_per_layer(cfg)
    norms = cfg.layers * cfg.norms_per_layer * _norm(cfg, cfg.hidden_size) + _norm(cfg, cfg.hidden_size)

    if cfg.is_moe:
        moe_layers = cfg.layers - cfg.dense_layers
        mlp_dense = cfg.dense_layers * mlp_params(cfg, cfg.intermediate_size)
        expert = mlp_params(cfg, cfg.moe_intermediate_size)
        shared = cfg.shared_experts * expert
        if cfg.shared_expert_intermediate_size:
            # Qwen2-MoE: one shared expert of its own width, scaled by a hidden → 1 gate.
            shared += mlp_params(cfg, cfg.shared_expert_intermediate_size) + cfg.hidden_size
        experts_total = moe_layers * (cfg.num_experts * expert + shared)
        experts_active = moe_layers * (cfg.experts_per_token * expert + shared)
        router_per_layer = cfg.num_experts * cfg.hidden_size + (cfg.num_experts if cfg.router_bias else 0)
        routers = moe_layers * router_per_layer
    else:
        mlp_dense = cfg.layers * mlp_params(cfg, cfg.intermediate_size)
        experts_total = experts_active = routers = 0

    return ParamBreakdown(
        embeddings=embeddings,
        attention=attention,
        mlp_dense=mlp_dense,
        mlp_experts_total=experts_total,
        mlp_experts_active=experts_active,
        routers=routers,
        norms=norms,
        lm_head=lm_head,
    )

"""Read a Hugging Face ``config.json`` into the few numbers serving arithmetic needs.

The engine never trusts a marketing parameter count: every figure is derived from
the architecture fields of the model's own ``config.json``. This module turns
that file (as a dict or as pasted JSON text) into a :class:`ModelConfig`.

Rules (docs/architecture.md §10):

* extra keys are ignored;
* a missing ``head_dim`` is ``hidden_size / num_attention_heads``;
* Falcon's RW names (``n_layer``, ``n_head``, ``multi_query``) and DeepSeek's
  MLA fields (``kv_lora_rank``, ``qk_rope_head_dim`` …) are understood, as is
  DeepSeek's own inference naming (``dim``, ``n_layers``, ``inter_dim`` …);
* a required field that is missing or contradictory raises :class:`ConfigError`
  naming it;
* an absent ``tie_word_embeddings`` takes the model type's usual default
  (llama, mistral, mixtral, qwen2, deepseek: untied; gemma, gemma2, falcon:
  tied) and the config records that it was defaulted so outputs can say so.

The field readers are in :mod:`.hf_fields`, the per-model-type defaults in
:mod:`.hf_architecture`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .errors import ConfigError
from .hf_architecture import (
    ATTENTION_SINK_TYPES,
    EXPERT_BIAS_TYPES,
    INTERLEAVED_MOE_TYPES,
    NORMS_PER_LAYER,
    QK_NORM_FULL_WIDTH_TYPES,
    QK_NORM_TYPES,
    QKV_BIAS_BY_DEFAULT,
    TIED_BY_DEFAULT,
    falcon_norms,
    interleaved_moe_layers,
    model_type_of,
    sliding_window,
)
from .hf_fields import count, positive_int, refuse_huge_integers


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
    # Qwen2-MoE's single shared expert has its own width and a one-output gate.
    shared_expert_intermediate_size: int = 0
    # Multi-head latent attention (DeepSeek).
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
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
        raise ConfigError(f"'tie_word_embeddings' must be true or false, not {tie!r}.",
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
        shared_expert_intermediate_size=count(config, "shared_expert_intermediate_size")
        if experts["num_experts"] else 0,
        **mla,
        sliding_window=window, window_layers=window_layers,
        chunked_attention=bool(window_layers and config.get("attention_chunk_size")),
        max_position_embeddings=count(config, "max_position_embeddings"),
        notes=tuple(notes),
    )

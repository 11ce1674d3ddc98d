"""Exact parameter counts derived from a :class:`~.hf_config.ModelConfig`.

The count is the sum of every weight matrix, bias and norm vector the model's
reference implementation (Hugging Face ``transformers``) creates:

* token embeddings ``vocab × hidden`` and, unless tied, an output head of the
  same size;
* attention per layer — q, k, v, o projections (with biases where the model has
  them, q/k norms where it has them, and one sink logit per query head where it
  has attention sinks, gpt-oss); for MLA, DeepSeek's down- and
  up-projections (``q_a``/``q_b`` or a direct ``q_proj``, ``kv_a_proj_with_mqa``,
  ``kv_b_proj``, ``o_proj`` and the two latent RMSNorms);
* MLP per layer — gated (SwiGLU/GeGLU: gate, up, down = 3 matrices) or plain
  (up, down = 2 matrices); mixture-of-experts layers hold a router plus
  ``num_experts`` routed experts and any shared experts, of which a token uses
  ``experts_per_token`` routed ones and every shared one;
* norms (RMSNorm: one vector; LayerNorm: weight and bias).

Llama-3.1-8B gives exactly 8,030,261,248 (model card: 8.03B).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hf_config import ModelConfig


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
        return q + kv_down + kv_up + out
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
    """One MLP (or one expert) of inner width ``width``: 3 matrices gated, 2 plain."""
    matrices = 3 if cfg.gated_mlp else 2
    biases = (width * (matrices - 1) + cfg.hidden_size) if cfg.mlp_bias else 0
    return matrices * cfg.hidden_size * width + biases


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

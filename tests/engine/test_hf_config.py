"""Reading a Hugging Face ``config.json`` into a ModelConfig (docs/architecture.md §10, "Configs").

Every expectation is read off the config by hand; the raw configs come straight
from ``fixtures/catalog/models.json`` (data, not engine code).
"""

import json
from pathlib import Path

import pytest

from calculators.engine.errors import ConfigError
from calculators.engine.hf_config import parse_config, parse_config_text

MODELS_JSON = Path(__file__).resolve().parents[2] / "fixtures" / "catalog" / "models.json"
RAW = {entry["id"]: entry for entry in json.loads(MODELS_JSON.read_text())}


def raw_config(model_id: str) -> dict:
    """A fresh copy of one catalog model's config.json fields."""
    return json.loads(json.dumps(RAW[model_id]["config"]))


def llama_8b(**changes) -> dict:
    """Llama-3.1-8B's config with some keys changed; ``...`` as a value deletes the key."""
    config = raw_config("llama-3.1-8b")
    for key, value in changes.items():
        if value is ...:
            config.pop(key, None)
        else:
            config[key] = value
    return config


# --- the plain case ----------------------------------------------------------

def test_pasted_llama_config_with_extra_keys_reads_its_architecture():
    config = llama_8b(my_own_key="ignored", quantization_config={"bits": 4}, auto_map={"x": "y"})
    cfg = parse_config(config)
    # Llama-3.1-8B config.json: 32 layers, 32 query heads, 8 K/V heads, d_model 4096,
    # MLP 14336, vocabulary 128256, untied head.
    assert (cfg.layers, cfg.heads, cfg.kv_heads) == (32, 32, 8)
    assert (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size) == (4096, 14336, 128256)
    assert cfg.tie_word_embeddings is False
    assert cfg.tie_defaulted is False
    assert cfg.model_type == "llama"  # from architectures[0] = LlamaForCausalLM
    assert cfg.gated_mlp is True  # SwiGLU: gate, up, down
    assert cfg.attention_kind == "GQA"  # 1 < 8 K/V heads < 32 query heads
    assert cfg.sliding_window == 0 and cfg.window_layers == 0  # sliding_window: null
    assert cfg.notes == ()


def test_pasted_text_parses_like_the_dict():
    cfg = parse_config_text(json.dumps(llama_8b()))
    assert (cfg.layers, cfg.kv_heads, cfg.head_dim) == (32, 8, 128)


@pytest.mark.parametrize("head_dim", [..., None])
def test_missing_head_dim_is_hidden_size_over_heads(head_dim):
    # Key absent, or present as null: 4096 / 32 heads = 128.
    cfg = parse_config(llama_8b(head_dim=head_dim))
    assert cfg.head_dim == 128


def test_stated_head_dim_wins_over_the_ratio_for_gemma_2():
    cfg = parse_config(raw_config("gemma-2-9b"))
    # Gemma-2-9B states head_dim 256, while 3584 / 16 = 224.
    assert cfg.head_dim == 256
    assert cfg.hidden_size // cfg.heads == 224


def test_whole_number_written_as_float_is_accepted():
    cfg = parse_config(llama_8b(num_hidden_layers=32.0))
    assert cfg.layers == 32 and isinstance(cfg.layers, int)


# --- required fields ------------------------------------------------------------

def test_missing_num_hidden_layers_names_the_field():
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(num_hidden_layers=...))
    assert info.value.field == "num_hidden_layers"
    assert "num_hidden_layers" in str(info.value)


@pytest.mark.parametrize("field", ["num_attention_heads", "hidden_size", "vocab_size", "intermediate_size"])
def test_each_missing_required_field_is_named(field):
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(**{field: ...}))
    assert info.value.field == field
    assert field in str(info.value)


@pytest.mark.parametrize("kv_heads", [12, 5])
def test_kv_heads_that_do_not_divide_the_heads_are_a_contradiction(kv_heads):
    # 32 query heads cannot be split into groups over 12 (or 5) K/V heads.
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(num_key_value_heads=kv_heads))
    assert info.value.field == "num_key_value_heads"
    assert str(kv_heads) in str(info.value) and "32" in str(info.value)


def test_more_kv_heads_than_query_heads_is_a_contradiction():
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(num_key_value_heads=64))
    assert info.value.field == "num_key_value_heads"
    assert "64" in str(info.value)


def test_hidden_size_not_divisible_by_heads_without_head_dim_names_head_dim():
    # 4100 / 32 = 128.125: no head width can be derived.
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(hidden_size=4100))
    assert info.value.field == "head_dim"
    assert "4100" in str(info.value)


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("num_hidden_layers", 32.5, "whole number"),
        ("num_hidden_layers", "32", "whole number"),
        ("num_hidden_layers", True, "whole number"),
        ("num_hidden_layers", -32, "positive"),
        ("num_hidden_layers", 0, "positive"),
        ("num_attention_heads", -1, "positive"),
        ("hidden_size", 4096.5, "whole number"),
        ("num_key_value_heads", 0, "positive"),
        ("vocab_size", [128256], "whole number"),
        ("intermediate_size", -14336, "positive"),
        ("head_dim", 127.5, "whole number"),
    ],
)
def test_non_integer_or_non_positive_values_are_rejected_naming_the_field(field, value, words):
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(**{field: value}))
    assert info.value.field == field
    assert field in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize("text", ["NaN", "Infinity"])
def test_nan_or_infinite_layer_count_is_a_config_error(text):
    pasted = json.dumps(llama_8b()).replace('"num_hidden_layers": 32', f'"num_hidden_layers": {text}')
    with pytest.raises(ConfigError) as info:
        parse_config_text(pasted)
    assert info.value.field == "num_hidden_layers"


def test_absurdly_large_dimension_is_rejected_naming_the_field():
    # 10^12 layers: no real model; the bound keeps the arithmetic finite.
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(num_hidden_layers=10**12))
    assert info.value.field == "num_hidden_layers"


def test_config_that_is_not_an_object_is_rejected():
    with pytest.raises(ConfigError):
        parse_config([1, 2, 3])
    with pytest.raises(ConfigError) as info:
        parse_config_text("[32, 32, 8]")
    assert "JSON object" in str(info.value)


@pytest.mark.parametrize(
    "text, line, column",
    [
        ('{\n  "num_hidden_layers": 32,\n  "num_attention_heads": 32,\n}', 4, 1),  # trailing comma
        ('{\n  "num_hidden_layers": 32\n  "hidden_size": 4096\n}', 3, 3),  # missing comma
        ("", 1, 1),
    ],
)
def test_invalid_json_text_says_line_and_column(text, line, column):
    with pytest.raises(ConfigError) as info:
        parse_config_text(text)
    assert f"line {line}, column {column}" in str(info.value)
    assert "not valid JSON" in str(info.value)


# --- tie_word_embeddings defaults (docs/architecture.md §10) -------------------------------------------

@pytest.mark.parametrize(
    "model_type, tied, word",
    [
        ("llama", False, "untied"),   # LlamaConfig(tie_word_embeddings=False)
        ("mistral", False, "untied"),
        ("qwen2", False, "untied"),
        ("gemma", True, "tied"),      # GemmaConfig(tie_word_embeddings=True)
        ("gemma2", True, "tied"),
        ("falcon", True, "tied"),     # FalconConfig(tie_word_embeddings=True)
    ],
)
def test_absent_tie_word_embeddings_takes_the_model_types_default_and_says_so(model_type, tied, word):
    config = llama_8b(tie_word_embeddings=..., model_type=model_type, architectures=...)
    cfg = parse_config(config)
    assert cfg.tie_word_embeddings is tied
    assert cfg.tie_defaulted is True
    assert len(cfg.notes) == 1
    note = cfg.notes[0]
    assert "tie_word_embeddings" in note and model_type in note
    assert f" {word} " in f" {note} "  # "tied" must not be read inside "untied"


def test_stated_tie_word_embeddings_is_kept_without_a_note():
    cfg = parse_config(llama_8b(tie_word_embeddings=True))
    assert cfg.tie_word_embeddings is True and cfg.tie_defaulted is False and cfg.notes == ()


def test_tie_word_embeddings_given_as_a_string_is_rejected():
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(tie_word_embeddings="false"))
    assert info.value.field == "tie_word_embeddings"
    assert str(info.value) == "'tie_word_embeddings' must be true or false, not \"false\"."


def test_a_value_is_echoed_as_it_was_pasted_in_json_not_as_python_reads_it():
    with pytest.raises(ConfigError) as info:
        parse_config_text(json.dumps(llama_8b()).replace('"num_hidden_layers": 32', '"num_hidden_layers": true'))
    assert str(info.value) == "'num_hidden_layers' must be a whole number, not true."


def test_model_type_comes_from_architectures_when_absent():
    cfg = parse_config(raw_config("gemma-2-9b"))  # architectures: Gemma2ForCausalLM, no model_type
    assert cfg.model_type == "gemma2"
    assert cfg.norms_per_layer == 4  # pre/post attention and pre/post MLP RMSNorms


# --- Falcon's RW names ------------------------------------------------------------

def test_falcon_rw_names_are_understood():
    cfg = parse_config(raw_config("falcon-7b"))
    # RW file: n_layer 32, n_head 71, hidden_size 4544, multi_query true.
    assert cfg.model_type == "falcon"  # from architectures RWForCausalLM
    assert (cfg.layers, cfg.heads, cfg.hidden_size) == (32, 71, 4544)
    assert cfg.head_dim == 64  # 4544 / 71
    assert cfg.kv_heads == 1  # multi_query: one shared K/V head
    assert cfg.attention_kind == "MQA"
    assert cfg.intermediate_size == 18176  # 4 × 4544, plain GELU MLP
    assert cfg.gated_mlp is False
    assert cfg.norm_has_bias is True  # LayerNorm: weight and bias
    assert cfg.norms_per_layer == 1  # parallel attention and MLP share input_layernorm
    assert cfg.tie_word_embeddings is True and cfg.tie_defaulted is True  # absent in the RW file


def test_falcon_multi_query_ignores_a_stated_kv_head_count():
    config = raw_config("falcon-7b") | {"num_kv_heads": 71}
    assert parse_config(config).kv_heads == 1


def test_falcon_new_decoder_architecture_reads_its_kv_heads_and_two_norms():
    # Falcon-40B in the library naming: 128 heads over 8 K/V groups, ln_attn + ln_mlp.
    config = {"model_type": "falcon", "num_hidden_layers": 60, "num_attention_heads": 128, "num_kv_heads": 8,
              "hidden_size": 8192, "vocab_size": 65024, "new_decoder_architecture": True,
              "multi_query": True, "parallel_attn": True, "bias": False}
    cfg = parse_config(config)
    assert (cfg.kv_heads, cfg.head_dim, cfg.norms_per_layer) == (8, 64, 2)  # 8192 / 128 = 64


# --- DeepSeek: MLA fields and the inference naming ---------------------------------------------

def test_deepseek_v2_inference_naming_is_understood():
    config = RAW["deepseek-v2"]["config_inference_format"]
    assert not RAW["deepseek-v2"].get("config")  # the catalog entry has only this format
    cfg = parse_config(config)
    assert cfg.model_type == "deepseek_v2"  # recognised from dim + n_layers + kv_lora_rank
    # dim 5120, n_layers 60, n_heads 128, inter_dim 12288, moe_inter_dim 1536.
    assert (cfg.hidden_size, cfg.layers, cfg.heads) == (5120, 60, 128)
    assert (cfg.intermediate_size, cfg.moe_intermediate_size) == (12288, 1536)
    # n_routed_experts 160, n_activated_experts 6, n_shared_experts 2, n_dense_layers 1.
    assert (cfg.num_experts, cfg.experts_per_token, cfg.shared_experts, cfg.dense_layers) == (160, 6, 2, 1)
    # MLA: q_lora_rank 1536, kv_lora_rank 512, rope 64, nope 128, v 128.
    assert (cfg.q_lora_rank, cfg.kv_lora_rank, cfg.qk_rope_head_dim) == (1536, 512, 64)
    assert (cfg.qk_nope_head_dim, cfg.v_head_dim) == (128, 128)
    assert cfg.attention_kind == "MLA"
    assert cfg.tie_word_embeddings is False and cfg.tie_defaulted is True


def test_deepseek_v3_hugging_face_config_reads_mla_and_moe_fields():
    cfg = parse_config(raw_config("deepseek-v3"))
    assert cfg.attention_kind == "MLA"
    assert (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.q_lora_rank) == (512, 64, 1536)
    assert (cfg.num_experts, cfg.experts_per_token, cfg.shared_experts, cfg.dense_layers) == (256, 8, 1, 3)
    assert cfg.moe_intermediate_size == 2048
    assert cfg.router_bias is True  # topk_method noaux_tc keeps an e_score_correction_bias per expert


def test_deepseek_v2_lite_without_query_compression():
    cfg = parse_config(raw_config("deepseek-v2-lite"))
    assert cfg.q_lora_rank == 0  # q_lora_rank: null = q_proj direct
    assert cfg.router_bias is False  # topk_method greedy


def test_mla_config_missing_the_rotary_width_names_it():
    config = raw_config("deepseek-v3")
    del config["qk_rope_head_dim"]
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    assert info.value.field == "qk_rope_head_dim"


# --- mixture-of-experts checks -------------------------------------------------------------

def test_mixtral_reads_experts_with_the_dense_width_per_expert():
    cfg = parse_config(raw_config("mixtral-8x7b-v0.1"))
    assert (cfg.num_experts, cfg.experts_per_token, cfg.moe_intermediate_size) == (8, 2, 14336)
    assert cfg.is_moe and cfg.shared_experts == 0 and cfg.dense_layers == 0


def test_experts_without_experts_per_token_names_the_missing_field():
    config = raw_config("mixtral-8x7b-v0.1")
    del config["num_experts_per_tok"]
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    assert info.value.field == "num_experts_per_tok"


def test_more_experts_per_token_than_experts_is_a_contradiction():
    with pytest.raises(ConfigError) as info:
        parse_config(raw_config("mixtral-8x7b-v0.1") | {"num_experts_per_tok": 9})
    assert info.value.field == "num_experts_per_tok"


def test_more_dense_layers_than_layers_is_a_contradiction():
    with pytest.raises(ConfigError) as info:
        parse_config(raw_config("deepseek-v3") | {"first_k_dense_replace": 62})
    assert info.value.field == "first_k_dense_replace"


def test_negative_dense_layer_count_is_rejected():
    with pytest.raises(ConfigError) as info:
        parse_config(raw_config("deepseek-v3") | {"first_k_dense_replace": -1})
    assert info.value.field == "first_k_dense_replace"


@pytest.mark.parametrize("value", ["two", -1, 1.5])
def test_bad_shared_expert_count_is_a_config_error(value):
    with pytest.raises(ConfigError) as info:
        parse_config(raw_config("deepseek-v3") | {"n_shared_experts": value})
    assert info.value.field == "n_shared_experts"


def test_zero_shared_experts_and_dense_layers_are_allowed():
    cfg = parse_config(raw_config("mixtral-8x7b-v0.1") | {"n_shared_experts": 0, "first_k_dense_replace": 0})
    assert (cfg.shared_experts, cfg.dense_layers) == (0, 0)


def test_non_numeric_max_position_embeddings_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(max_position_embeddings="128k"))
    assert info.value.field == "max_position_embeddings"


# --- sliding windows -------------------------------------------------------------------

def test_mistral_windows_every_layer():
    cfg = parse_config(raw_config("mistral-7b-v0.1"))
    assert (cfg.sliding_window, cfg.window_layers, cfg.full_layers) == (4096, 32, 0)


def test_gemma_2_windows_every_other_layer():
    cfg = parse_config(raw_config("gemma-2-9b"))
    # Layers 0, 2, …, 40 are local: 21 of 42; the other 21 attend globally.
    assert (cfg.sliding_window, cfg.window_layers, cfg.full_layers) == (4096, 21, 21)


GEMMA_3_1B = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
              "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4,
              "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144, "sliding_window": 512,
              "sliding_window_pattern": 6, "max_position_embeddings": 32768}


def test_gemma_3_windows_five_of_every_six_layers():
    cfg = parse_config(GEMMA_3_1B)
    # Gemma3TextConfig: layer i is local unless (i + 1) % 6 == 0; global layers 5, 11, 17, 23 → 4 of 26.
    assert (cfg.sliding_window, cfg.window_layers, cfg.full_layers) == (512, 22, 4)


def test_layer_types_list_decides_which_layers_are_windowed():
    kinds = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 8
    cfg = parse_config(llama_8b(sliding_window=1024, layer_types=kinds))
    # 3 of every 4 layers in 32 = 24 windowed, 8 full.
    assert (cfg.sliding_window, cfg.window_layers, cfg.full_layers) == (1024, 24, 8)


def test_layer_types_of_the_wrong_length_names_the_field():
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(sliding_window=1024, layer_types=["sliding_attention", "full_attention"]))
    assert info.value.field == "layer_types"
    assert "2" in str(info.value) and "32" in str(info.value)


def test_qwen2_with_use_sliding_window_false_has_no_windows():
    cfg = parse_config(raw_config("qwen2.5-7b"))  # sliding_window 131072 present, use_sliding_window false
    assert (cfg.sliding_window, cfg.window_layers) == (0, 0)
    assert cfg.full_layers == 28


def test_qwen2_with_use_sliding_window_true_windows_layers_from_max_window_layers():
    config = raw_config("qwen2.5-7b") | {"use_sliding_window": True, "sliding_window": 4096,
                                           "max_window_layers": 20}
    cfg = parse_config(config)
    # Layers 20 … 27 are windowed: 28 − 20 = 8.
    assert (cfg.sliding_window, cfg.window_layers, cfg.full_layers) == (4096, 8, 20)


def test_qwen2_attention_has_qkv_biases_without_saying_so():
    cfg = parse_config(raw_config("qwen2.5-7b"))
    assert cfg.qkv_bias is True and cfg.attention_out_bias is False


@pytest.mark.parametrize("window", [-1, "4096", True, float("inf")])
def test_invalid_sliding_window_names_the_field(window):
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(sliding_window=window))
    assert info.value.field == "sliding_window"


def test_fractional_sliding_window_is_rejected():
    with pytest.raises(ConfigError) as info:
        parse_config(llama_8b(sliding_window=4096.5))
    assert info.value.field == "sliding_window"


def test_attention_kinds_of_the_catalog_configs():
    # Llama-2-7B: 32 K/V heads = 32 heads; Falcon: multi_query; Llama-3.1-8B: 8 of 32; DeepSeek-V3: latent.
    assert parse_config(raw_config("llama-2-7b")).attention_kind == "MHA"
    assert parse_config(raw_config("falcon-7b")).attention_kind == "MQA"
    assert parse_config(raw_config("llama-3.1-8b")).attention_kind == "GQA"
    assert parse_config(raw_config("deepseek-v3")).attention_kind == "MLA"
    assert parse_config(raw_config("llama-2-13b")).attention_kind == "MHA"  # 40 K/V heads = 40 heads

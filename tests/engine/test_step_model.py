"""The serving model's step (docs/architecture.md §12): calculators/engine/step_model.py against hand
derivations from the configs and against the sympy formulas of formulas/serving.py."""


import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import InputError
from calculators.engine.formulas import serving as S
from calculators.engine.hf_config import param_breakdown
from calculators.engine.step_model import (
    Replica,
    attention_head_dim,
    check_degree,
    compute_precision,
    kv_given_parts,
    step_ms,
    tp_link,
)

CATALOG = default_catalog()


def test_reference_stack_batch_one_no_cache_full_bandwidth_is_208_6_tok_s():
    replica = Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb", bandwidth_efficiency=1.0)
    cost = step_ms(replica, decode_batch=1, decode_context_tokens=0)
    # 8,030,261,248 parameters × 2 B = 16,060,522,496 B; 3,350 GB/s ÷ that = 208.586 tok/s.
    assert cost.bytes == 16_060_522_496
    assert cost.memory_ms == pytest.approx(16_060_522_496 / 3350e9 * 1000, rel=1e-12)
    assert cost.comm_ms == 0
    assert round(1000 / cost.step_ms, 1) == 208.6
    # FLOPs 2N at MFU 0.5 of 989.4 TFLOP/s: 0.0325 ms, far under the memory time.
    assert cost.compute_ms == pytest.approx(2 * 8_030_261_248 / (989.4e12 * 0.5) * 1000, rel=1e-12)


def test_default_efficiency_is_three_quarters_of_the_ceiling():
    replica = Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb")
    cost = step_ms(replica, decode_batch=1, decode_context_tokens=0)
    assert 1000 / cost.step_ms == pytest.approx(3350e9 * 0.75 / 16_060_522_496, rel=1e-12)  # 156.4 tok/s


def test_70b_on_16_h100s_replicates_kv_twice_and_holds_12_users_at_131072():
    replica = Replica.from_catalog("llama-3.1-70b", "h100-sxm5-80gb", 16)
    # 8 K/V heads on 16 cards: each head lives on two cards.
    assert replica.kv_replication == 2
    per_token = replica.kv_bytes_per_token  # 2 × 80 × 8 × 128 × 2 = 327,680 B
    assert per_token == 327_680
    per_user_gib = per_token * 131_072 * replica.kv_replication / 2**30
    assert per_user_gib == 80.0
    gpu = CATALOG.gpu("h100-sxm5-80gb")
    weights_gib = param_breakdown(replica.model).total * 2 / 2**30
    budget = 16 * gpu.memory_gib * 0.9 - weights_gib - 16 * 3
    assert int(budget // per_user_gib) == 12  # not the 24 an unreplicated cache suggests
    assert int(budget // (per_user_gib / 2)) == 24


def test_sixteen_h100s_cross_the_scale_out_network():
    gpu = CATALOG.gpu("h100-sxm5-80gb")
    assert tp_link(gpu, 8) == (450.0, "NVLink")
    assert tp_link(gpu, 16) == (50.0, "scale-out network")
    assert tp_link(CATALOG.gpu("l40s"), 4) == (32.0, "PCIe")
    assert tp_link(CATALOG.gpu("h100-pcie-80gb"), 2) == (300.0, "NVLink")  # a bridged pair
    assert tp_link(CATALOG.gpu("h100-pcie-80gb"), 4) == (64.0, "PCIe")


def test_no_scale_out_figure_is_a_clear_error():
    with pytest.raises(InputError, match="scale-out network"):
        Replica.from_catalog("llama-3.1-70b", "mi300x", 16)


def test_degree_rule_names_both_counts():
    qwen = CATALOG.model("qwen2.5-7b").config  # 28 query heads, 4 K/V heads
    with pytest.raises(InputError, match="14 neither divides the 4 K/V heads"):
        check_degree(qwen, 14)
    with pytest.raises(InputError, match="3 does not divide the 32 query heads"):
        Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb", 3)
    check_degree(qwen, 4)
    assert Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb", 16).kv_replication == 2


def test_mixtral_batch_of_four_reads_the_experts_it_touches():
    # Mixtral-8x7B: expert = 3 × 4096 × 14336 = 176,160,768 parameters; 32 MoE layers of 8 experts.
    replica = Replica.from_catalog("mixtral-8x7b-v0.1", "h100-sxm5-80gb", 2)
    expert = 3 * 4096 * 14_336
    total = param_breakdown(replica.model).total
    assert total == 46_702_792_704
    always = total - 32 * 8 * expert  # 1,605,636,096: attention, embeddings, routers, norms
    # Top-2 of 8 at 4 tokens: 8 × (1 − (6/8)^4) = 5.46875 experts per layer.
    assert replica.experts_touched(4) == 5.46875
    assert replica.weight_bytes(4) == (always + 32 * 5.46875 * expert) * 2 == 64_867_540_992
    assert replica.weight_bytes(1) == (always + 32 * 2 * expert) * 2  # batch 1: top-k, today's value
    assert replica.experts_touched(1000) == pytest.approx(8, rel=1e-12)  # a big batch reads all of them
    cost = step_ms(replica, decode_batch=4, decode_context_tokens=4 * 2048)
    kv = 4 * 2048 * (2 * 32 * 8 * 128 * 2)  # unreplicated: 8 K/V heads on 2 cards
    assert cost.bytes == 64_867_540_992 + kv


def test_mla_latent_is_replicated_on_every_card_and_attention_uses_the_absorbed_width():
    replica = Replica.from_catalog("deepseek-v2-lite", "h100-sxm5-80gb", 2)
    cfg = replica.model
    assert (cfg.layers, cfg.heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.hidden_size) == (27, 16, 512, 64,
                                                                                                 2048)
    assert replica.kv_bytes_per_token == 27 * 576 * 2 == 31_104
    assert replica.kv_replication == 2
    assert attention_head_dim(cfg) == 544  # (2 × 512 + 64) ÷ 2
    cost = step_ms(replica, decode_batch=8, decode_context_tokens=8000)
    weights = replica.weight_bytes(8)
    assert cost.bytes == weights + 31_104 * 8000 * 2
    active = param_breakdown(cfg).active
    assert cost.flops == 2 * active * 8 + 4 * 27 * 16 * 544 * 8000
    # Two all-reduces per layer of 8 × 2048 × 2 B over 450 GB/s NVLink, ring factor 2 × 1 ÷ 2, + 10 µs each.
    assert cost.comm_ms == pytest.approx(54 * (8 * 2048 * 2 / 450e9 * 1000 + 0.010), rel=1e-12)
    assert cost.step_ms == max(cost.memory_ms, cost.compute_ms) + cost.comm_ms


def test_prefill_chunk_flops_at_prefill_mfu():
    replica = Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb")
    n = 8_030_261_248
    cost = step_ms(replica, decode_batch=0, decode_context_tokens=0, prefill_chunks=[(512, 1024)])
    flops = 2 * n * 512 + 4 * 32 * 32 * 128 * 512 * (1024 + 512)
    assert cost.flops == flops
    assert cost.compute_ms == pytest.approx(flops / (989.4e12 * 0.4) * 1000, rel=1e-12)
    assert cost.bytes == 2 * n + 1024 * 131_072  # weights once + the chunk's cached tokens
    assert step_ms(replica, decode_batch=0, decode_context_tokens=0).step_ms == 0


def test_fp4_weights_compute_at_fp4_where_the_card_lists_it():
    b200, h100 = CATALOG.gpu("b200"), CATALOG.gpu("h100-sxm5-80gb")
    assert compute_precision("fp8", h100) == "fp8"
    assert compute_precision("int4", h100) == "bf16"
    assert compute_precision("fp8", CATALOG.gpu("a100-sxm4-80gb")) == "bf16"  # no fp8 tensor cores
    assert compute_precision("nvfp4", b200) == "fp4"
    assert compute_precision("mxfp4", h100) == "bf16"


def _formula_cost(replica, batch, context, chunks=()):
    """The same step through the sympy formulas of formulas/serving.py (contexts all equal)."""
    cfg, t = replica.model, replica.tp
    counts = param_breakdown(cfg)
    windows = {"full_layers": cfg.full_layers, "window_layers": cfg.window_layers,
               "window": cfg.sliding_window or 1, "layers": cfg.layers}
    rep = (S.KV_REPLICATION_MLA if cfg.kv_lora_rank else S.KV_REPLICATION)({"gpus": t, "kv_heads": cfg.kv_heads})
    tokens = batch + sum(p for p, _ in chunks)
    if cfg.is_moe:
        moe_layers = cfg.layers - cfg.dense_layers
        expert = (counts.mlp_experts_total - counts.mlp_experts_active) / (
            moe_layers * (cfg.num_experts - cfg.experts_per_token))
        touched = S.EXPERTS_TOUCHED({"experts": cfg.num_experts, "experts_per_token": cfg.experts_per_token,
                                     "step_tokens": tokens})
        weights = S.STEP_WEIGHT_BYTES_MOE({"always_read_params": counts.total - moe_layers * cfg.num_experts * expert,
                                           "moe_layers": moe_layers, "experts_touched": touched,
                                           "expert_params": expert, "weight_bits": replica.bits,
                                           "expert_weight_bits": replica.expert_bits})
    else:
        weights = S.STEP_WEIGHT_BYTES({"params_read": counts.total, "weight_bits": replica.bits})
    common = {"batch": batch, "context": context, "kv_bytes_per_token": replica.kv_bytes_per_token,
              "kv_replication": rep, **windows, **kv_given_parts(cfg, replica.kv_dtype),
              "index_topk": cfg.index_topk, "index_n_heads": cfg.index_n_heads, "index_head_dim": cfg.index_head_dim}
    # Sparse attention (DeepSeek-V3.2) reads and attends to top-k latents and indexes every token; else windows.
    kv_form, flops_form = S.step_forms(cfg.window_layers, cfg.index_topk)
    prefill_form = S.PREFILL_CHUNK_FLOPS_SPARSE if cfg.index_topk else S.PREFILL_CHUNK_FLOPS
    kv = kv_form(common)
    flop_vars = {**common, "active_params": counts.active, "heads": cfg.heads,
                 "attention_head_dim": attention_head_dim(cfg)}
    decode_flops = flops_form(flop_vars)
    prefill_flops = 0.0
    for p, c0 in chunks:
        prefill_flops += prefill_form({**flop_vars, "chunk_tokens": p, "cached_tokens": c0})
        kv += kv_form({**common, "batch": 1, "context": c0})
    total = S.STEP_BYTES({"weight_bytes_per_step": weights, "kv_bytes_per_step": kv})
    memory = S.MEMORY_MS({"bytes_per_step": total, "gpus": t, "card_bandwidth": replica.gpu.bandwidth_gb_s,
                          "bandwidth_efficiency": replica.bandwidth_efficiency})
    compute = S.COMPUTE_MS_WITH_PREFILL({"prefill_flops": prefill_flops, "flops_per_step": decode_flops, "gpus": t,
                                         "peak_tflops": replica.peak_tflops, "prefill_mfu": replica.prefill_mfu,
                                         "mfu": replica.mfu})
    comm = S.COMM_MS({"allreduces": 2 * cfg.layers if t > 1 else 0, "gpus": t, "step_tokens": tokens,
                      "hidden_size": cfg.hidden_size, "activation_bytes": 2, "link_gb_s": replica.link[0] or 1,
                      "allreduce_latency_us": replica.allreduce_latency_us})
    return total, memory, compute, comm, S.STEP_MS({"memory_ms": memory, "compute_ms": compute, "comm_ms": comm})


@pytest.mark.parametrize("model,gpu,t,wd,kd,batch,context,chunks", [
    ("llama-3.1-8b", "h100-sxm5-80gb", 1, "bf16", "bf16", 1, 0, ()),
    ("llama-3.1-70b", "h100-sxm5-80gb", 8, "fp8", "fp8", 64, 4096, ((2048, 0),)),
    ("llama-3.1-70b", "h100-sxm5-80gb", 16, "bf16", "bf16", 12, 131_072, ()),
    ("mixtral-8x7b-v0.1", "a100-sxm4-80gb", 4, "bf16", "bf16", 32, 1500, ((256, 4096),)),
    ("deepseek-v3", "b200", 8, "fp8", "fp8", 128, 8192, ((512, 0), (1024, 2048))),
    ("gemma-2-9b", "l40s", 2, "bf16", "bf16", 16, 6000, ((1000, 5000),)),
    ("mistral-7b-v0.1", "h100-pcie-80gb", 4, "int4", "bf16", 8, 2000, ()),
    ("falcon-7b", "l4", 1, "bf16", "bf16", 4, 1000, ()),
    ("deepseek-v3.2-exp", "b200", 8, "fp8", "bf16", 32, 8192, ((512, 0), (1024, 4096))),
])
def test_fast_path_equals_the_sympy_formulas(model, gpu, t, wd, kd, batch, context, chunks):
    replica = Replica.from_catalog(model, gpu, t, weights_dtype=wd, kv_dtype=kd)
    cost = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * context, prefill_chunks=chunks)
    total, memory, compute, comm, step = _formula_cost(replica, batch, context, chunks)
    assert cost.bytes == pytest.approx(total, rel=1e-12)
    assert cost.memory_ms == pytest.approx(memory, rel=1e-12)
    assert cost.compute_ms == pytest.approx(compute, rel=1e-12)
    assert cost.comm_ms == pytest.approx(comm, rel=1e-12)
    assert cost.step_ms == pytest.approx(step, rel=1e-12)


def _grid():
    """Every catalog model on three cards, at each degree the degree rule and the links allow (1 to 8), over
    batches, contexts and prefill chunks: the dense grid the fast path is checked on."""
    for model in sorted(CATALOG.models):
        cfg = CATALOG.model(model).config
        for gpu in ("h100-sxm5-80gb", "l40s", "b200"):
            for t in (1, 2, 4, 8):
                try:
                    check_degree(cfg, t)
                    replica = Replica(cfg, CATALOG.gpu(gpu), t, weights_dtype="fp8" if t % 4 == 0 else "bf16",
                                      kv_dtype="fp8" if t == 2 else "bf16")
                except InputError:
                    continue
                for batch, context, chunks in ((1, 0, ()), (0, 0, ((512, 0),)), (7, 3000, ((256, 8192),)),
                                               (256, 32_768, ()), (64, 500, ((2048, 0), (100, 100_000)))):
                    yield replica, batch, context, chunks


def test_fast_path_equals_the_sympy_formulas_over_a_dense_grid_of_stacks():
    checked = 0
    for replica, batch, context, chunks in _grid():
        cost = step_ms(replica, decode_batch=batch, decode_context_tokens=batch * context, prefill_chunks=chunks)
        if cost.step_ms == 0:
            continue
        expected = _formula_cost(replica, batch, context, chunks)
        got = (cost.bytes, cost.memory_ms, cost.compute_ms, cost.comm_ms, cost.step_ms)
        assert got == pytest.approx(expected, rel=1e-12), (replica.model.model_type, replica.gpu.id, replica.tp)
        checked += 1
    assert checked > 500


def test_windowed_sum_may_be_given_exactly():
    replica = Replica.from_catalog("mistral-7b-v0.1", "h100-sxm5-80gb")  # every layer windowed at 4,096
    short_and_long = step_ms(replica, decode_batch=2, decode_context_tokens=1000 + 9000,
                             decode_windowed_tokens=1000 + 4096)
    per_token = replica.kv_bytes_per_token
    assert short_and_long.bytes - replica.weight_bytes(2) == pytest.approx(per_token * 5096, rel=1e-12)


"""Formulas written once with units (docs/architecture.md §3 "one source of truth", §9 the six formulas).

Checks: each formula's dimensions reduce to its unit (and a wrong one cannot be
defined); the cached numeric evaluator agrees with exact sympy evaluation over
realistic values, boundaries of floor/ceil/min included; the printed forms.
"""

import itertools
from xml.dom import minidom

import pytest
import sympy

from calculators.engine.errors import InputError
from calculators.engine.formula import UNIT_IN_BASE, Formula, FormulaUnitError, Var
from calculators.engine.formulas import memory as F
from calculators.engine.procedures.base import format_number

# docs/architecture.md §10's unit vocabulary for step results.
STEP_UNITS = {"B", "GiB", "GB", "GB/s", "FLOP", "FLOP/s", "FLOP/byte", "tok", "tok/s", "s", "ms", "users",
              "GPUs", "nodes", "replicas", "USD", "USD/h", "USD/Mtok", "1"}
UNIT_SYMBOLS = {sympy.Symbol("unit_byte", positive=True), sympy.Symbol("unit_second", positive=True),
                sympy.Symbol("unit_usd", positive=True)}


def grid(**pools):
    """Every combination of the given value lists, as dicts."""
    names = list(pools)
    return [dict(zip(names, combo)) for combo in itertools.product(*(pools[n] for n in names))]


def windowed(points, layer_splits):
    """Add consistent (layers, full_layers, window_layers) triples to each point."""
    return [p | {"layers": layers, "full_layers": full, "window_layers": win}
            for p in points for layers, full, win in layer_splits]


# (layers, full, windowed): Mistral all 32 windowed; Gemma-2 21 + 21; Qwen2 20 full + 8; none windowed.
LAYER_SPLITS = [(32, 0, 32), (42, 21, 21), (28, 20, 8), (32, 32, 0)]
KV_PER_TOKEN = [8_192, 31_104, 57_344, 70_272, 131_072, 327_680, 344_064, 524_288]

# Budgets: the reference stack's 53.725…, the 70B-at-fp8 2.974…, the 70B-bf16 deficit, and exact
# dyadic boundaries: 53.71875 = 191 × 0.28125 (one paged user of the reference stack), 55.0 = 110 × 0.5.
BUDGETS = [53.72518768310547, 2.9744552612304687, -62.733804321289064, 0.0, 53.0, 3.0, 0.75, 53.71875, 55.0,
           534.5041915893555]

GRIDS = {
    F.KV_BYTES_PER_TOKEN: grid(layers=[1, 32, 80, 126], kv_heads=[1, 8, 32], head_dim=[64, 128, 256],
                               kv_bytes=[1, 2, 4]),
    F.KV_BYTES_PER_TOKEN_MLA: grid(layers=[27, 60, 61], kv_lora_rank=[256, 512], qk_rope_head_dim=[32, 64],
                                   kv_bytes=[1, 2, 4]),
    # DeepSeek-V3.2's latent and fp8 indexer key (1 + 4/128 B per value) and a latent without an indexer key.
    F.KV_BYTES_PER_TOKEN_SPARSE: grid(layers=[1, 61], kv_lora_rank=[512], qk_rope_head_dim=[64], kv_bytes=[1, 2],
                                      index_head_dim=[0, 128, 256], index_key_bytes=[1.03125, 0]),
    F.PER_USER_GIB: grid(kv_bytes_per_token=KV_PER_TOKEN, context=[1, 2048, 2300, 8192, 131072],
                         kv_replication=[1, 2, 8]),
    # context on both sides of the window: min() boundaries.
    F.PER_USER_GIB_WINDOWED: windowed(grid(kv_bytes_per_token=[131_072, 344_064],
                                           context=[1, 1023, 1024, 1025, 4095, 4096, 4097, 8192, 131072],
                                           window=[1024, 4096], kv_replication=[1, 2]), LAYER_SPLITS),
    # Real component counts (Llama-3.1-8B, Falcon-7B, Mixtral, DeepSeek-V3) and a tiny model.
    F.TOTAL_PARAMS: [
        dict(embedding_copies=2, vocab_size=128_256, hidden_size=4_096, layers=32, attention_per_layer=41_943_040,
             mlp_layers=32, mlp_per_layer=176_160_768, other_params=266_240),
        dict(embedding_copies=1, vocab_size=65_024, hidden_size=4_544, layers=32, attention_per_layer=41_877_504,
             mlp_layers=32, mlp_per_layer=165_183_488, other_params=299_904),
        dict(embedding_copies=2, vocab_size=32_000, hidden_size=4_096, layers=32, attention_per_layer=41_943_040,
             mlp_layers=32, mlp_per_layer=1_409_318_912, other_params=266_240),
        dict(embedding_copies=2, vocab_size=129_280, hidden_size=7_168, layers=61, attention_per_layer=187_107_328,
             mlp_layers=58, mlp_per_layer=11_320_164_608, other_params=1_189_966_848),
        dict(embedding_copies=1, vocab_size=100, hidden_size=64, layers=2, attention_per_layer=16_640,
             mlp_layers=2, mlp_per_layer=33_088, other_params=384),
    ],
    F.ACTIVE_PARAMS: [
        dict(total_params=46_702_792_704, mlp_layers=32, idle_experts=6, expert_params=176_160_768),
        dict(total_params=671_026_419_200, mlp_layers=58, idle_experts=248, expert_params=44_040_192),
        dict(total_params=8_030_261_248, mlp_layers=32, idle_experts=0, expert_params=0),
    ],
    F.WEIGHT_BYTES: grid(total_params=[6_738_415_616, 8_030_261_248, 70_553_706_496, 671_026_419_200],
                         weight_bits=[4, 4.5, 4.8, 8, 16, 32]),
    F.WEIGHT_GIB: grid(weight_bytes=[16_060_522_496, 4_517_021_952, 4_818_156_748.8, 70_553_706_496, 2**30]),
    # The cold start's loaders (1.1 and 35 GB/s, measured) and a PCIe 5 x16 link.
    F.WEIGHTS_LOAD_S: grid(weight_bytes=[16_060_522_496, 141_107_412_992, 2**30], load_gb_s=[1.1, 35, 64]),
    F.CARD_GIB: grid(gpus=[1, 2, 3, 4, 8], card_mib=[81_559, 23_034, 76_293.9453125, 196_592, 143_771]),
    F.USABLE_GIB: grid(card_gib=[79.6474609375, 74.50580596923828, 22.494140625, 637.1796875],
                       utilization=[0.5, 0.8, 0.85, 0.9, 0.95, 1.0]),
    F.WEIGHTS_GIB: grid(total_params=[6_738_415_616, 8_030_261_248, 70_553_706_496, 671_026_419_200],
                        weight_bits=[4, 4.5, 4.8, 8, 16]),
    F.WEIGHTS_GIB_MIXED: grid(total_params=[20_914_757_184, 116_829_156_672, 671_026_419_200],
                              routed_expert_params=[0, 19_116_933_120, 114_701_598_720],
                              weight_bits=[4.5, 8, 16], expert_weight_bits=[4.25, 4.254078444984381, 8, 16]),
    F.WEIGHT_BYTES_MIXED: grid(total_params=[20_914_757_184, 116_829_156_672, 671_026_419_200],
                               routed_expert_params=[0, 19_116_933_120, 114_701_598_720],
                               weight_bits=[4.5, 8, 16], expert_weight_bits=[4.25, 4.254078444984381, 8, 16]),
    F.KV_BUDGET_GIB: grid(usable_gib=[71.68271484375, 143.3654296875, 573.46171875],
                          weights_gib=[14.957527160644531, 65.70825958251953, 131.41651916503906],
                          gpus=[1, 2, 8], reserve_gib=[0, 2.5, 3]),
    F.USERS_WORST_CASE: grid(kv_budget_gib=BUDGETS, per_user_gib=[1.0, 0.5, 0.25, 2.5, 0.28125, 1.96875]),
    # avg_tokens on both sides of a block boundary: ceil() boundaries.
    F.USERS_PAGED: grid(kv_budget_gib=[53.72518768310547, 53.71875, 2.9744552612304687, -1.0],
                        kv_bytes_per_token=[131_072, 327_680], avg_tokens=[1, 16, 2300, 2304, 2305],
                        block_size=[1, 16], kv_replication=[1, 2]),
    F.USERS_PAGED_WINDOWED: windowed(grid(kv_budget_gib=[53.71875, 55.0, 51.46869602203369],
                                          kv_bytes_per_token=[131_072, 344_064],
                                          avg_tokens=[2300, 4096, 4097, 5000], block_size=[16], window=[4096],
                                          kv_replication=[1, 4]),
                                     LAYER_SPLITS[:2]),
    F.PAGED_USER_GIB: grid(kv_bytes_per_token=[131_072, 327_680, 8_192], avg_tokens=[1, 2300, 2304, 2305],
                           block_size=[1, 16, 256], kv_replication=[1, 2]),
}

INTEGER_RESULTS = {F.USERS_WORST_CASE, F.USERS_PAGED, F.USERS_PAGED_WINDOWED, F.KV_BYTES_PER_TOKEN,
                   F.KV_BYTES_PER_TOKEN_MLA, F.KV_BYTES_PER_TOKEN_SPARSE, F.TOTAL_PARAMS, F.ACTIVE_PARAMS}


def test_every_formula_has_a_grid():
    assert set(GRIDS) == set(F.ALL_FORMULAS)


@pytest.mark.parametrize("formula", F.ALL_FORMULAS, ids=lambda f: f"{f.key}:{f.label}")
def test_formula_units_are_in_the_vocabulary_and_reduce_to_plain_numbers(formula):
    assert formula.unit in STEP_UNITS
    assert all(var.unit in UNIT_IN_BASE for var in formula.variables)
    # The numeric expression holds only the formula's own variables: every unit has cancelled.
    assert not (formula.numeric_expr.free_symbols & UNIT_SYMBOLS)
    assert formula.numeric_expr.free_symbols <= set(formula.symbols.values())


@pytest.mark.parametrize("formula", F.ALL_FORMULAS, ids=lambda f: f"{f.key}:{f.label}")
def test_cached_evaluator_agrees_with_exact_evaluation(formula):
    for values in GRIDS[formula]:
        fast = formula(values)
        exact = formula.exact(values)
        if formula in INTEGER_RESULTS:
            assert exact.is_Integer, (values, exact)
            assert fast == int(exact), (values, fast, exact)
        else:
            assert fast == pytest.approx(float(exact), rel=1e-12, abs=1e-12), (values, fast, exact)


# --- hand-checked values at the boundaries --------------------------------------------------

def test_users_worst_case_at_an_exact_multiple_is_that_multiple():
    # 53.71875 GiB ÷ 0.28125 GiB = 191 exactly; 3 ÷ 0.5 = 6 exactly.
    assert F.USERS_WORST_CASE({"kv_budget_gib": 53.71875, "per_user_gib": 0.28125}) == 191
    assert F.USERS_WORST_CASE({"kv_budget_gib": 3.0, "per_user_gib": 0.5}) == 6


def test_users_never_go_negative():
    # −62.73 GiB of budget: max(0, ⌊−25.09⌋) = 0, not −26.
    assert F.USERS_WORST_CASE({"kv_budget_gib": -62.733804321289064, "per_user_gib": 2.5}) == 0


def test_paged_tokens_round_up_to_whole_blocks():
    base = {"kv_bytes_per_token": 131_072, "block_size": 16, "kv_replication": 1}
    # 2,300 tokens → ⌈143.75⌉ = 144 blocks = 2,304 tokens × 131,072 B = 301,989,888 B = 0.28125 GiB.
    assert F.PAGED_USER_GIB(base | {"avg_tokens": 2300}) == 0.28125
    assert F.PAGED_USER_GIB(base | {"avg_tokens": 2304}) == 0.28125
    # 2,305 tokens → 145 blocks = 2,320 tokens × 131,072 B = 0.283203125 GiB.
    assert F.PAGED_USER_GIB(base | {"avg_tokens": 2305}) == 0.283203125


def test_windowed_layers_stop_growing_at_the_window():
    # Gemma-2-9B: 344,064 B per token over 42 layers = 8,192 B per layer per token.
    base = {"kv_bytes_per_token": 344_064, "full_layers": 21, "window_layers": 21, "layers": 42,
            "window": 4096, "kv_replication": 1}
    # At 4,096 every layer holds 4,096 tokens: 344,064 × 4,096 B = 1.3125 GiB.
    assert F.PER_USER_GIB_WINDOWED(base | {"context": 4096}) == 1.3125
    # At 8,192: 21 × 8,192 × 8,192 + 21 × 8,192 × 4,096 = 2,113,929,216 B = 1.96875 GiB.
    assert F.PER_USER_GIB_WINDOWED(base | {"context": 8192}) == 1.96875
    # One token past the window adds only the 21 global layers' 21 × 8,192 B = 172,032 B.
    assert F.PER_USER_GIB_WINDOWED(base | {"context": 4097}) == pytest.approx(1.3125 + 172_032 / 2**30,
                                                                              rel=1e-15)


# --- conversions are derived, and a wrong dimension cannot be defined -------------------------------

def test_conversions_come_from_the_units():
    to_gib = Formula("x", (Var("b", "B", "bytes"),), lambda s: s["b"], label="x", unit="GiB")
    assert to_gib({"b": 2**30}) == 1.0
    bits_to_bytes = Formula("x", (Var("n", "1", "count"), Var("w", "bit", "width")),
                            lambda s: s["n"] * s["w"],
                            label="x", unit="B")
    assert bits_to_bytes({"n": 8_030_261_248, "w": 16}) == 16_060_522_496  # × 16 bits ÷ 8
    gb_to_gib = Formula("x", (Var("g", "GB", "decimal"),), lambda s: s["g"], label="x", unit="GiB")
    assert gb_to_gib({"g": 80}) == pytest.approx(80e9 / 2**30, rel=1e-15)  # 74.5058… GiB
    mib_to_gib = Formula("x", (Var("m", "MiB", "mebibytes"),), lambda s: s["m"], label="x", unit="GiB")
    assert mib_to_gib({"m": 81_559}) == 81_559 / 1024


def test_gib_plus_seconds_cannot_be_defined():
    with pytest.raises(FormulaUnitError) as info:
        Formula("bad", (Var("m", "GiB", "memory"), Var("t", "s", "time")),
                lambda s: s["m"] + s["t"],
                label="bad", unit="GiB")
    assert "second" in str(info.value)


def test_a_count_declared_as_gib_cannot_be_defined():
    # params × "bytes per param" given as a bare number is not a memory size.
    with pytest.raises(FormulaUnitError):
        Formula("bad", (Var("params", "1", "parameters"), Var("bpp", "1", "bytes per parameter")),
                lambda s: s["params"] * s["bpp"],
                label="bad", unit="GiB")


def test_bytes_over_bytes_declared_as_gib_cannot_be_defined():
    with pytest.raises(FormulaUnitError):
        Formula("bad", (Var("a", "GiB", "budget"), Var("b", "B", "per token")),
                lambda s: s["a"] / s["b"],
                label="bad", unit="GiB")


def test_memory_inside_a_floor_declared_as_users_cannot_be_defined():
    with pytest.raises(FormulaUnitError):
        Formula("bad", (Var("a", "GiB", "budget"),), lambda s: sympy.floor(s["a"]), label="bad", unit="users")


def test_bytes_declared_as_bandwidth_cannot_be_defined():
    with pytest.raises(FormulaUnitError):
        Formula("bad", (Var("b", "B", "bytes"),), lambda s: s["b"], label="bad", unit="GB/s")


def test_unknown_unit_cannot_be_defined():
    with pytest.raises(FormulaUnitError):
        Formula("bad", (Var("b", "B", "bytes"),), lambda s: s["b"], label="bad", unit="GiB/s")


def test_missing_value_is_an_input_error():
    with pytest.raises(InputError) as info:
        F.KV_BYTES_PER_TOKEN({"layers": 32, "kv_heads": 8, "head_dim": 128})
    assert "kv_bytes" in str(info.value)


# --- printed forms ---------------------------------------------------------------------------

REFERENCE_KV = {"layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}


def test_kv_formula_reads_in_teaching_order():
    assert F.KV_BYTES_PER_TOKEN.text == "2 × layers × kv_heads × head_dim × kv_bytes"
    assert F.KV_BYTES_PER_TOKEN_MLA.text == "layers × (kv_lora_rank + qk_rope_head_dim) × kv_bytes"
    assert F.KV_BUDGET_GIB.text == "usable_gib − weights_gib − gpus × reserve_gib"
    assert F.USERS_WORST_CASE.text == "max(0, ⌊kv_budget_gib ÷ per_user_gib⌋)"


def test_reference_kv_step_substitutes_its_numbers():
    # 2 × 32 layers × 8 KV heads × 128 head_dim × 2 bytes = 131,072.
    substituted = F.KV_BYTES_PER_TOKEN.substituted(REFERENCE_KV, format_number)
    value = F.KV_BYTES_PER_TOKEN(REFERENCE_KV)
    assert f"{substituted} = {format_number(value, 'B')}" == "2 × 32 × 8 × 128 × 2 B = 131,072 B"


@pytest.mark.parametrize("formula", F.ALL_FORMULAS, ids=lambda f: f"{f.key}:{f.label}")
def test_mathml_is_well_formed_and_free_of_latex(formula):
    document = minidom.parseString(formula.mathml)
    root = document.documentElement
    assert root.tagName == "math"
    text = formula.mathml
    assert "\\" not in text and "$" not in text and "{" not in text
    assert "unit_" not in text
    # Every variable appears spelled out (underscores as spaces).
    identifiers = {node.firstChild.data for node in root.getElementsByTagName("mi")}
    for var in formula.variables:
        assert var.name.replace("_", " ") in identifiers
    # The left-hand side names the step.
    assert formula.key.replace("_", " ") in identifiers


def test_mathml_shows_floor_and_min():
    assert "⌊" in F.USERS_WORST_CASE.mathml and "⌋" in F.USERS_WORST_CASE.mathml
    assert "⌈" in F.USERS_PAGED.mathml
    assert "min" in F.PER_USER_GIB_WINDOWED.mathml


def test_latex_spells_variables_out():
    assert r"\mathrm{kv\_heads}" in F.KV_BYTES_PER_TOKEN.latex
    assert r"\times" in F.KV_BYTES_PER_TOKEN.latex


def test_one_sequences_decode_flops_are_the_step_formula_at_a_batch_of_one():
    """Issue 29 item 3: slo's batch limit and TPOT, the roofline's intensity and the grader's slips read one
    sequence's FLOPs from STEP_FLOPS_WINDOWED (no hand copy). Llama-3.1-8B at 2,048 cached tokens, every layer
    full: 2 × 8,030,261,248 + 4 × 32 heads × 128 × 32 layers × 2,048 = 17,134,264,320 FLOPs; a 4,096-token window
    on 16 of the 32 layers at 8,192 tokens: 2 × N + 4 × 32 × 128 × (16 × 8,192 + 16 × 4,096)."""
    from calculators.engine.formulas import fleet
    from calculators.engine.formulas.serving import STEP_FLOPS_WINDOWED, flops_per_sequence
    from calculators.engine.procedures import roofline
    from calculators.engine.procedures.compute import flops_per_sequence as per_sequence

    g = {"active_params": 8_030_261_248, "heads": 32, "attention_head_dim": 128, "full_layers": 32,
         "window_layers": 0, "window": 0, "context": 2048, "layers": 32}
    assert per_sequence(g) == 17_134_264_320
    assert per_sequence({**g, "full_layers": 16, "window_layers": 16, "window": 4096, "context": 8192}) == (
        2 * 8_030_261_248 + 4 * 32 * 128 * (16 * 8192 + 16 * 4096))
    one = STEP_FLOPS_WINDOWED.expr.subs(STEP_FLOPS_WINDOWED.symbols["batch"], 1)
    assert sympy.simplify(flops_per_sequence(STEP_FLOPS_WINDOWED.symbols) - one) == 0
    for formula in (fleet.TPOT_MS, fleet.BATCH_TPOT_LIMIT, roofline.DECODE_INTENSITY, roofline.RIDGE_REACHABLE):
        assert formula.expr.has(flops_per_sequence(formula.symbols)), formula.key

"""The KV problem's statement asks one question per answer box, in their order, and its words fit the model.

A new user found four questions over three boxes (per token, per user, copies, across the replica: the last two
were one box), "sliding windows applied" on DeepSeek-V2-Lite (which has none) and "a fp8 cache".
"""

from __future__ import annotations

from calculators.engine.catalog import article, default_catalog
from calculators.engine.formulas.memory import weight_bytes
from calculators.engine.procedures.kv import describe_kv, kv_weights_fit
from calculators.families import FAMILIES
from drills.problems.generation import generate_inputs
from drills.templatetags.drills_tags import step_unit

CATALOG = default_catalog()


def test_on_one_card_three_questions_for_the_three_boxes():
    text = describe_kv({"model": "llama-3.1-8b", "kv_dtype": "bf16", "context": 8192, "gpus": 1}, CATALOG)
    assert text == ("How many bytes of KV cache does llama-3.1-8b keep per token with a bf16 cache? It runs on one "
                    "H100 SXM5 80GB card, its weights in bf16: how many copies of each user's cache does it keep, and "
                    "how many GiB does one user take at a context of 8,192 tokens?")
    # Three boxes, three questions: the copies step is 1 on one card, and the question asks it there too.
    assert [s.key for s in FAMILIES["kv"].run({"model": "llama-3.1-8b", "gpus": 1}).specs] == [
        "kv_bytes_per_token", "kv_replication", "per_user_gib"]


def test_in_tensor_parallel_the_copies_and_the_replica_wide_figure_are_the_second_and_third_questions():
    text = describe_kv({"model": "deepseek-v2-lite", "kv_dtype": "fp8", "context": 8192, "gpus": 4}, CATALOG)
    assert "with an fp8 cache" in text and "sliding" not in text
    steps = FAMILIES["kv"].run({"model": "deepseek-v2-lite", "kv_dtype": "fp8", "gpus": 4}).specs
    assert steps[2].label == "KV cache per user, across the replica"  # the box says what the question asks
    assert text.endswith("It is served in tensor parallel over 4 H100 SXM5 80GB cards, its weights in bf16: how many "
                         "copies of each user's cache does the replica keep, and how many GiB does one user at a "
                         "context of 8,192 tokens take across the replica?")


def test_windows_are_named_only_for_a_model_that_has_them():
    assert CATALOG.model("mistral-7b-v0.1").config.window_layers == 32  # every layer windowed (4,096 tokens)
    text = describe_kv({"model": "mistral-7b-v0.1", "kv_dtype": "bf16", "context": 16384, "gpus": 1}, CATALOG)
    assert text.endswith("at a context of 16,384 tokens (its sliding-window layers holding no more than their "
                         "window)?")
    assert "with a bf16 cache, every layer counted as full attention?" in text  # per token: before any window


def test_articles_and_unit_hints():
    assert [article(name) for name in ("fp8", "int4", "nvfp4", "mxfp4", "bf16", "fp16")] == [
        "an", "an", "an", "an", "a", "an"]
    assert (step_unit("GiB"), step_unit("B"), step_unit("1")) == ("in GiB", "in B", "a number")


def test_a_drawn_problem_runs_on_cards_that_hold_the_weights():
    # Llama-3.1-70B: 70,553,706,496 parameters × 2 B = 141.1 GB in bf16; an H100 SXM holds 81,559 MiB = 85.52 GB,
    # 0.8 of it 68.42 GB, so 2 cards (136.8 GB) are too few and 4 (273.7 GB) the fewest drawn.
    assert kv_weights_fit(CATALOG.model("llama-3.1-70b").config, CATALOG) == ("bf16", [4, 8, 16])
    # DeepSeek-V3's bf16 weights (1,342 GB) fit no drawn degree (16 × 68.42 = 1,094.7 GB); in fp8 (671 GB) 16 cards.
    assert kv_weights_fit(CATALOG.model("deepseek-v3").config, CATALOG) == ("fp8", [16])
    for seed in range(60):
        inputs = generate_inputs("kv", seed)
        dtype, degrees = kv_weights_fit(CATALOG.model(inputs["model"]).config, CATALOG)
        assert inputs["gpus"] in degrees, (seed, inputs)
        assert weight_bytes(CATALOG.model(inputs["model"]).config, dtype) <= 0.8 * inputs["gpus"] * 81_559 * 2**20
        assert f"its weights in {dtype}" in describe_kv(inputs, CATALOG)


def test_a_chosen_degree_that_cannot_hold_the_weights_names_no_card():
    text = describe_kv({"model": "llama-3.1-70b", "kv_dtype": "bf16", "context": 8192, "gpus": 1}, CATALOG)
    assert "It runs on one card:" in text and "H100" not in text

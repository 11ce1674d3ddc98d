"""What a problem page says: the statement and the facts the candidate works from, and how a step's answer box
offers a verdict's words and how a verdict is styled and named (the drill page's rows and the templates' filters)."""

from __future__ import annotations

import json

from calculators.engine.answers import parse_answer
from calculators.engine.catalog import NOMINAL_BITS, catalog_from_entries
from calculators.engine.errors import AnswerError
from calculators.engine.procedures import Result
from calculators.engine.quantities import quantity as declared_quantity
from calculators.engine.units import verdict_choices
from calculators.knee_chart import KneeView, knee_view
from drills.models import ProblemInstance

# config.json keys worth showing, in reading order (Hugging Face, Falcon RW and
# DeepSeek inference spellings; DeepSeek-V3.2's sparse-attention indexer, whose key the KV cache holds).
CONFIG_KEYS = (
    "architectures", "model_type", "num_hidden_layers", "n_layer", "n_layers", "num_attention_heads",
    "n_head", "n_heads", "num_key_value_heads", "multi_query", "new_decoder_architecture", "parallel_attn",
    "hidden_size", "dim", "head_dim", "intermediate_size", "inter_dim", "vocab_size", "tie_word_embeddings",
    "attention_bias", "bias", "sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
    "num_local_experts", "n_routed_experts", "num_experts_per_tok", "n_activated_experts", "n_shared_experts",
    "moe_intermediate_size", "moe_inter_dim", "first_k_dense_replace", "n_dense_layers", "q_lora_rank",
    "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "index_n_heads", "index_head_dim",
    "index_topk", "max_position_embeddings",
    "rope_theta", "rope_scaling", "partial_rotary_factor",
)


def statement(problem: ProblemInstance, solution: Result) -> str:
    """The problem in one paragraph, in the words an interviewer would use (``Family.describe``)."""
    family = problem.family_info
    catalog = catalog_from_entries(problem.snapshot.get("models", []), problem.snapshot.get("gpus", []))
    if family.describe is None:
        return f"Work the steps of the {family.title.lower()} for these inputs: {solution.inputs}."
    return family.describe(dict(problem.inputs), catalog)


def problem_facts(problem: ProblemInstance) -> dict:
    """The config fields and card figures shown beside a problem.

    Returns ``{"config": [(key, value)], "raw_config": dict, "gpu": {...} | None,
    "widths": [(precision, bytes per value)]}``.
    """
    entry = problem.snapshot["models"][0] if problem.snapshot.get("models") else {}
    raw = entry.get("config") or entry.get("config_inference_format") or {}
    config = [(key, json.dumps(raw[key])) for key in CONFIG_KEYS if key in raw and raw[key] is not None]
    gpu = None
    if problem.snapshot.get("gpus"):
        card = catalog_from_entries([], problem.snapshot["gpus"]).gpu(problem.inputs["gpu"])
        gpu = {"name": card.name, "memory_note": card.memory_note, "memory_mib": card.memory_mib,
               "from_driver": card.memory_from_driver, "bandwidth_gb_s": card.bandwidth_gb_s,
               "dense_tflops": [(p, v) for p, v in card.dense_tflops.items() if v],
               "sparse_bf16": card.sparse_tflops.get("bf16")}
    widths = sorted({(k, NOMINAL_BITS[k] / 8) for k in ("fp32", "bf16", "fp16", "fp8", "int8")},
                    key=lambda kv: -kv[1])
    return {"config": config, "raw_config": raw, "gpu": gpu, "widths": widths,
            "family_note": entry.get("attention", "")}


def worked_sweep(problem: ProblemInstance, solution: Result) -> KneeView | None:
    """The swept rates behind a knee answer (chart and table, :func:`calculators.knee_chart.knee_view`), for the
    worked solution; ``None`` for a problem whose solution brackets no knee (every other family)."""
    if "bracket" not in solution.extra:
        return None
    gpus = catalog_from_entries([], problem.snapshot.get("gpus", []))
    gpu = gpus.gpu(problem.inputs["gpu"]).name if problem.inputs.get("gpu") in gpus.gpus else problem.inputs["gpu"]
    return knee_view(solution, f"{problem.inputs['model']} on one {gpu}")


# Each verdict's Bootstrap colour and its label (a step's, a follow-up's marks and values).
VERDICT_STYLES = {
    "correct": ("success", "Correct"),
    "carried_forward": ("success", "Carried forward"),
    "close": ("warning", "Close"),
    "misconception": ("danger", "Misconception"),
    "impossible": ("danger", "Impossible"),
    "wrong": ("danger", "Wrong"),
    "unreadable": ("secondary", "Unreadable"),
    # a follow-up's marks and values (calculators.engine.followup)
    "right": ("success", "Right"),
    "left_unmoved": ("danger", "Moved step left unmoved"),
    "moved_when_still": ("danger", "Still step moved"),
    "unanswered": ("secondary", "Not answered"),
}


def verdict_style(verdict):
    """Bootstrap contextual colour for a verdict."""
    return VERDICT_STYLES.get(verdict, ("secondary", verdict))[0]


def verdict_label(verdict):
    """Human label for a verdict."""
    return VERDICT_STYLES.get(verdict, ("secondary", verdict))[1]


def step_choices(spec, typed="") -> list[dict]:
    """The choices of a verdict step's box (``[{"word": "compute-bound", "selected": True}, …]``), the one
    ``typed`` (a word or 1/0) reads as selected; ``[]`` for a step that is not a verdict, which takes a typed
    value. ``spec`` is a ``StepSpec``; its flag quantity names the words (``calculators.engine.units``)."""
    declared = declared_quantity(spec.key)
    if declared is None or not declared.verdict:
        return []
    try:
        chosen = parse_answer(str(typed), spec.unit, declared.verdict).value if str(typed or "").strip() else None
    except AnswerError:
        chosen = None
    return [{"word": word, "selected": value == chosen} for word, value in verdict_choices(declared.verdict)]

"""The ``kv`` family: KV cache bytes per token and per user (formula 1).

Steps: ``kv_bytes_per_token`` (one token through every layer as if every layer
attended over the whole context: 2 × layers × K/V heads × head dim × bytes, or
for MLA layers × (kv_lora_rank + qk_rope_head_dim) × bytes) and ``per_user_gib``
(at ``context`` tokens, each sliding-window layer holding at most its window).
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog, article, default_catalog, kv_bytes_per_value
from ..errors import CatalogError, InputError
from ..formulas import memory as F
from ..formulas import serving as S
from ..formulas.memory import weight_bytes
from ..hf_config import ModelConfig
from ..step_model import check_degree, kv_given_parts, kv_replication
from .base import DEGREE_RULE, FIT_FRACTION, KV_DTYPES_DRAWN, Family, Offline, Plan, StepSpec, draw_context
from .inputs import CONTEXT, GPUS, KV_DTYPE, MODEL, REFERENCE_GPU, catalog_or_default, clean_inputs, resolve_model

INPUTS = (MODEL, KV_DTYPE, CONTEXT, GPUS)


def kv_given(cfg: ModelConfig, kv_dtype: str, gpus: int = 1) -> dict[str, float]:
    """The config's numbers that the KV formulas read, keyed by variable name, for a replica of
    ``gpus`` cards in tensor parallel (``kv_replication``: docs/architecture.md §12). Raises
    :class:`~..errors.InputError` when ``gpus`` breaks the degree rule (it must divide the query
    heads, and divide the K/V heads or be a multiple of them)."""
    check_degree(cfg, gpus)
    return {
        "gpus": gpus,
        "kv_replication": kv_replication(cfg, gpus),
        "layers": cfg.layers,
        "heads": cfg.heads,
        "hidden_size": cfg.hidden_size,
        "kv_heads": cfg.kv_heads,
        "head_dim": cfg.head_dim,
        "kv_bytes": kv_bytes_per_value(kv_dtype),
        "kv_lora_rank": cfg.kv_lora_rank,
        "qk_rope_head_dim": cfg.qk_rope_head_dim,
        "qk_nope_head_dim": cfg.qk_nope_head_dim,
        "v_head_dim": cfg.v_head_dim,
        "full_layers": cfg.full_layers,
        "window_layers": cfg.window_layers,
        "window": cfg.sliding_window,
        **indexer_given(cfg, kv_dtype),
    }


def indexer_given(cfg: ModelConfig, kv_dtype: str) -> dict[str, float]:
    """Sparse attention's numbers (DeepSeek-V3.2; zeros without an indexer): the indexer's heads, width and top-k,
    the bytes of one cached indexer value, and what one token caches in every layer as MLA latent and as indexer
    key (:func:`~..step_model.kv_given_parts`)."""
    return {"index_n_heads": cfg.index_n_heads, "index_head_dim": cfg.index_head_dim, "index_topk": cfg.index_topk,
            "index_key_bytes": float(F.INDEX_KEY_BYTES), **kv_given_parts(cfg, kv_dtype)}


def kv_per_token_spec(cfg: ModelConfig) -> StepSpec:
    """The ``kv_bytes_per_token`` step for this attention kind."""
    return StepSpec(F.kv_per_token_form(cfg.kv_lora_rank, cfg.index_topk))


def replication_spec(cfg: ModelConfig) -> StepSpec:
    """The ``kv_replication`` step: ``max(1, gpus ÷ kv_heads)``, or ``gpus`` for an MLA latent."""
    formula = S.KV_REPLICATION_MLA if cfg.kv_lora_rank else S.KV_REPLICATION
    return StepSpec(formula, label="Copies of each user's KV cache across the replica")


def per_user_spec(cfg: ModelConfig, label: str = "KV cache per user", replication_step: bool = False) -> StepSpec:
    """The ``per_user_gib`` step (replica-wide: × ``kv_replication``), windows applied when the model
    has them; ``replication_step`` when the family shows ``kv_replication`` as a step of its own."""
    formula = F.PER_USER_GIB_WINDOWED if cfg.window_layers else F.PER_USER_GIB
    from_steps = {"kv_bytes_per_token": "kv_bytes_per_token"}
    if replication_step:
        from_steps["kv_replication"] = "kv_replication"
    return StepSpec(formula, from_steps=from_steps, label=label)


def fp4_cache_note(kv_dtype: str, gpu) -> list[str]:
    """A sentence when an FP4 KV cache is chosen on a card without FP4 tensor cores (engines offer
    nvfp4/mxfp4 caches on Blackwell-class cards only), or none."""
    if kv_dtype not in ("nvfp4", "mxfp4") or gpu.dense_tflops.get("fp4"):
        return []
    return [f"The {gpu.name} lists no FP4 tensor cores, and engines offer {kv_dtype} KV caches only on cards "
            f"that have them (Blackwell and later): the cache sizes here are what the format would take, not a "
            f"deployment this card runs."]


def window_note(cfg: ModelConfig, tokens: int, what: str = "The context limit") -> list[str]:
    """A sentence when ``tokens`` (a context, a prefix) is beyond the model's ``max_position_embeddings``.

    The memory arithmetic still holds for any length; the model was not trained to attend that far, so the
    quality would not. ``what`` names the length in the sentence. No sentence when the config states no window
    or the length is within it.
    """
    window = cfg.max_position_embeddings
    if not window or tokens <= window:
        return []
    return [f"{what} ({tokens:,} tokens) is beyond the model's own window (max_position_embeddings = "
            f"{window:,}): the memory figures hold, the quality would not."]


def kv_notes(cfg: ModelConfig) -> list[str]:
    """Sentences about the attention kind that change the cache arithmetic."""
    notes = []
    if cfg.kv_lora_rank:
        notes.append(
            f"Multi-head latent attention: each layer caches one latent of {cfg.kv_lora_rank} values plus "
            f"a shared rotary key of {cfg.qk_rope_head_dim}, not K and V per head "
            f"(num_key_value_heads {cfg.kv_heads} is nominal)."
        )
    elif cfg.attention_kind == "MQA":
        notes.append("Multi-query attention: one K/V head is shared by every query head.")
    elif cfg.attention_kind == "GQA":
        notes.append(f"Grouped-query attention: {cfg.heads} query heads share {cfg.kv_heads} K/V heads "
                     f"({cfg.heads // cfg.kv_heads} per group).")
    if cfg.chunked_attention:
        notes.append(
            f"{cfg.window_layers} of {cfg.layers} layers attend within {cfg.sliding_window:,}-token chunks (chunked "
            f"local attention; the other {cfg.full_layers} attend globally), so they never hold more than "
            f"{cfg.sliding_window:,} tokens, counted here as a window of the chunk (a token early in its chunk reads "
            f"fewer); kv_bytes_per_token counts every layer as full."
        )
    elif cfg.window_layers:
        notes.append(
            f"{cfg.window_layers} of {cfg.layers} layers use a {cfg.sliding_window:,}-token sliding window, "
            f"so they never hold more than {cfg.sliding_window:,} tokens; kv_bytes_per_token counts every "
            f"layer as full."
        )
    if cfg.sparse_attention:
        indexer = cfg.index_head_dim * float(F.INDEX_KEY_BYTES)
        notes.append(
            f"Sparse attention (DeepSeek Sparse Attention): each layer also caches a {cfg.index_head_dim}-value "
            f"indexer key per token in fp8 with an fp32 scale per 128 values ({indexer:g} B); the indexer of "
            f"{cfg.index_n_heads} heads scores every cached token and attention reads the latent of the "
            f"{cfg.index_topk:,} best. Nothing is dropped: the cache per user grows with the whole context, and a "
            f"decode step reads min(context, {cfg.index_topk:,}) latents plus every indexer key.")
    if cfg.attention_sinks:
        notes.append("Attention sinks: one learned logit per query head per layer joins each softmax; they are "
                     "parameters, not cache, and add nothing per token.")
    return notes


def sparse_limit_note(cfg: ModelConfig, what: str) -> list[str]:
    """A sentence when ``what`` (a batch limit, an intensity) still reads a sparse-attention model's whole cache and
    attends densely: an upper bound on its read and FLOPs past the top-k, which the step itself does not use."""
    if not cfg.sparse_attention:
        return []
    return [f"{what} counts each sequence's whole cache as read and attended, as for dense attention; a step of this "
            f"model's sparse attention reads and attends to at most {cfg.index_topk:,} latents per sequence (plus "
            f"every indexer key), so past {cfg.index_topk:,} tokens this is conservative (the decode calculator and "
            f"the simulator cost the sparse read)."]


def plan_kv(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """KV cache per token (B) and per user (GiB) for a model at a KV precision and context.

    ``raw`` holds ``model`` (catalog id) or ``config`` (a config.json dict or
    text), ``kv_dtype`` and ``context`` (tokens); missing ones take the
    reference stack's values. Raises :class:`~..errors.EngineError` subclasses on
    bad input.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    cfg, _ = resolve_model(inputs, catalog)
    given = {**kv_given(cfg, inputs["kv_dtype"], inputs["gpus"]), "context": inputs["context"]}
    per_user_label = "KV cache per user, across the replica" if inputs["gpus"] > 1 else "KV cache per user"
    specs = [kv_per_token_spec(cfg), replication_spec(cfg), per_user_spec(cfg, per_user_label, replication_step=True)]
    notes = (window_note(cfg, inputs["context"]) + kv_notes(cfg) + replication_notes(cfg, inputs["gpus"])
             + list(cfg.notes))
    return Plan("kv", inputs, specs, given, notes)


def replication_notes(cfg: ModelConfig, gpus: int) -> list[str]:
    """One sentence on how ``gpus`` cards keep each user's cache (none on one card)."""
    if gpus <= 1:
        return []
    copies = kv_replication(cfg, gpus)
    if cfg.kv_lora_rank:
        return [f"Tensor parallel over {gpus} cards: the MLA latent is shared by every head, so each card keeps "
                f"it whole and the replica holds {copies:g} copies of each user's cache (per_user_gib counts "
                f"them all)."]
    if copies > 1:
        return [f"Tensor parallel over {gpus} cards with {cfg.kv_heads} K/V heads: a head cannot be split, so "
                f"each is kept on {copies:g} cards and per_user_gib is {copies:g} × the one-copy cache."]
    return [f"Tensor parallel over {gpus} cards: the {cfg.kv_heads} K/V heads split evenly "
            f"({cfg.kv_heads // gpus} per card), so each user's cache is stored once across the replica."]


def generate_kv(rng, catalog: Catalog) -> dict:
    """A KV problem: every attention kind (MHA, GQA, MQA, MLA, windows) comes up, on a number of cards that holds
    the model's weights (:func:`kv_weights_fit`): Llama-3.1-70B never "runs on one card". A model that fits no
    drawn degree is left out of the draw."""
    kinds: dict[str, list[str]] = {}
    for model in catalog.models.values():
        if kv_weights_fit(model.config, catalog) is None:
            continue
        kind = "window" if model.config.window_layers else model.config.attention_kind
        kinds.setdefault(kind, []).append(model.id)
    kind = rng.choice(sorted(kinds))
    model = rng.choice(kinds[kind])
    fit = kv_weights_fit(catalog.model(model).config, catalog)
    assert fit is not None  # the pool holds only models that fit
    return {"model": model, "kv_dtype": rng.choice(KV_DTYPES_DRAWN), "context": draw_context(rng, catalog, model),
            "gpus": rng.choice(fit[1])}


# One card half the time; otherwise degrees that split, replicate (past the K/V heads) or copy a latent.
KV_DEGREES_DRAWN = (1, 1, 1, 2, 4, 8, 16)
# The precisions a KV problem's weights are served in, tried in order: bf16, or fp8 for a model whose bf16 weights
# fit no drawn degree (DeepSeek-V3, Kimi K2: checkpoints published in fp8).
KV_WEIGHTS_DTYPES = ("bf16", "fp8")


def _reference_card(catalog: Catalog):
    """The reference card from ``catalog``, or from the full catalog where ``catalog`` is a problem's snapshot
    that holds only its model."""
    try:
        return catalog.gpu(REFERENCE_GPU)
    except CatalogError:
        return default_catalog().gpu(REFERENCE_GPU)


def kv_weights_fit(cfg: ModelConfig, catalog: Catalog) -> tuple[str, list[int]] | None:
    """The weights' precision and the drawn degrees (:data:`KV_DEGREES_DRAWN`, repeats kept) at which ``cfg``'s
    weights fit in :data:`~.base.FIT_FRACTION` of that many reference cards (:data:`~.inputs.REFERENCE_GPU`, the
    H100 SXM's 81,559 MiB) and which obey the degree rule: the first precision of :data:`KV_WEIGHTS_DTYPES` with any
    such degree, or ``None`` when none has. Llama-3.1-70B's 141.1 GB of bf16 weights need 4 cards (2 × 68.4 GB
    hold 136.8 GB). Raises nothing."""
    card = _reference_card(catalog).memory_bytes
    for dtype in KV_WEIGHTS_DTYPES:
        weights = weight_bytes(cfg, dtype)
        degrees = [d for d in KV_DEGREES_DRAWN if valid_degree(cfg, d) and weights <= FIT_FRACTION * d * card]
        if degrees:
            return dtype, degrees
    return None


def valid_degree(cfg: ModelConfig, degree: int) -> bool:
    """True when ``degree`` obeys the degree rule for ``cfg`` (see :func:`~..step_model.check_degree`)."""
    try:
        check_degree(cfg, degree)
    except InputError:
        return False
    return True


def describe_kv(inputs: dict, catalog: Catalog) -> str:
    """A KV problem in the words an interviewer would use, one question per answer box, in their order:
    bytes per token; the copies of a user's cache (1 on one card, more when tensor parallelism replicates K/V
    heads or an MLA latent); GiB per user (across the replica). Windows are named only for a model with them, the
    sparse-attention indexer's cached key (its width and bytes) only for a model with one; the card and the weights'
    precision only where that many cards hold the weights (:func:`kv_weights_fit`)."""
    gpus = inputs.get("gpus", 1)
    context = f"{inputs['context']:,}"
    cfg = catalog.model(inputs["model"]).config
    windows = " (its sliding-window layers holding no more than their window)" if cfg.window_layers else ""
    full = ", every layer counted as full attention" if windows else ""
    first = (f"How many bytes of KV cache does {inputs['model']} keep per token with {article(inputs['kv_dtype'])} "
             f"{inputs['kv_dtype']} cache{full}?")
    if cfg.sparse_attention:
        indexer = cfg.index_head_dim * float(F.INDEX_KEY_BYTES)
        first += (f" Its sparse attention's indexer keeps, beside each layer's MLA latent (in {inputs['kv_dtype']}), "
                  f"one {cfg.index_head_dim}-value key per token (index_head_dim) in fp8 with an fp32 scale per 128 "
                  f"values, {indexer:g} B per layer whatever the cache's dtype, and that key is part of the KV "
                  f"cache.")
    fit = kv_weights_fit(cfg, catalog)
    # The cards and the weights' precision, where they hold the weights (a drawn problem's always do).
    cards = (f" {_reference_card(catalog).name}" if fit and gpus in fit[1] else "")
    weights = f", its weights in {fit[0]}" if cards and fit else ""
    if gpus > 1:
        return (f"{first} It is served in tensor parallel over {gpus}{cards} cards{weights}: how many copies of each "
                f"user's cache does the replica keep, and how many GiB does one user at a context of {context} "
                f"tokens take across the replica{windows}?")
    return (f"{first} It runs on one{cards} card{weights}: how many copies of each user's cache does it keep, and how "
            f"many GiB does one user take at a context of {context} tokens{windows}?")


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
KV_RUBRIC = (
    "Keeps the factor 2 for keys and values",
    "Reads layers and K/V heads from the config, and the head dimension as hidden size ÷ query heads "
    "unless the config gives it",
    "Takes bytes per value from the cache's dtype, in bytes, not bits",
    "Multiplies by the context, capping only the windowed layers at their window",
    "Multiplies by the copies a tensor-parallel split keeps when the degree exceeds the K/V heads, or on "
    "every card for an MLA latent",
    "Reports the per-user figure in GiB (2^30 bytes)",
)


FAMILIES = (
    Family("kv", "KV cache",
           "Bytes of KV cache per token and per user, for MHA, GQA, MQA, MLA and sliding windows.",
           INPUTS, plan_kv, generate=generate_kv, order=20, describe=describe_kv,
           headlines=("kv_bytes_per_token", "per_user_gib"), chapter="06-kv-cache", difficulty=1, rubric=KV_RUBRIC,
           offline=Offline(checks=(DEGREE_RULE,))),
)

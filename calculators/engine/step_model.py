"""The serving model's step (docs/architecture.md §12) in plain Python, for callers that need it fast.

The relations are :mod:`.formulas.serving` (sympy, with units), which the
families show and grade; nothing here writes them again. The step's times are
one function generated from those formulas (:data:`STEP_TERMS`: bytes, memory,
compute and communication time, and the step, composed and lambdified once at
import), and a replica's per-token costs (KV bytes per cached token, FLOPs per
token and per cached token) are the formulas evaluated once per replica, so the
serving simulator can call :func:`step_ms` ~100,000 times a run.
``tests/engine/test_step_model.py`` checks both against the formulas over a
grid of stacks.

A :class:`Replica` is ``t`` cards in tensor parallel holding one copy of a
model. :func:`step_ms` costs one engine step of it: ``decode_batch`` sequences
each producing one token, plus optional prefill chunks, as

    step = max(memory time, compute time) + communication time + overhead

with memory time = bytes read ÷ (t × card bandwidth × bandwidth efficiency),
compute time = decode FLOPs ÷ (t × peak × MFU) + prefill FLOPs ÷ (t × peak ×
prefill MFU), and communication = two ring all-reduces of the step's
activations per layer when ``t > 1``, and the overhead the replica's fixed cost per
step (:attr:`Replica.step_overhead_ms`; none unless calibrated). A calibrated replica
(:meth:`Replica.calibrated`) reads its efficiencies from the calibration table
(:mod:`.calibration`), the memory's efficiency moving from its batch-1 to its
large-batch value with the step's sequences.

Example (the reference stack, Llama-3.1-8B bf16 on one H100 SXM)::

    >>> from calculators.engine.step_model import Replica, step_ms
    >>> replica = Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb", bandwidth_efficiency=1.0)
    >>> round(1000 / step_ms(replica, decode_batch=1, decode_context_tokens=0).step_ms, 1)
    208.6
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import sympy

from .calibration import KEYS, allreduce_latency_at, bandwidth_efficiency_at
from .catalog import Catalog, Gpu, WeightWidths, default_catalog, kv_bytes_per_value, weight_widths
from .errors import InputError
from .formula import Formula, FormulaUnitError
from .formulas import serving as S
from .formulas.memory import INDEX_KEY_BYTES, kv_per_token_form
from .hf_config import ModelConfig, mlp_params, param_breakdown
from .quantities import default

# Activations cross the all-reduce in bf16 (2 bytes per value), as engines run them.
ACTIVATION_BYTES = 2
# Cards of one node joined by PCIe when the card has no (or a smaller) NVLink domain:
# the eight-card server both vendors' sizing files assume (aiconfigurator's num_gpus_per_node).
PCIE_NODE_GPUS = 8

# The per-direction GB/s the communication formula (:data:`.formulas.serving.COMM_MS`) divides by, declared
# once as sympy over the card's link fields (0 where a figure is not on record): the engine evaluates it
# (:func:`link_gb_s`) and the offline export prints it (runbook/export/tables.py DERIVED). A ring of
# ``gpus`` cards crosses NVLink inside the NVLink domain, PCIe inside an eight-card node, else the scale-out
# network (0 when that figure is not on record, which the families refuse). One card sends nothing (the
# formula multiplies by zero all-reduces) but divides by the link all the same, so it reads its own link, or
# 1 GB/s when it has none on record, and the formula stays finite.
_GPUS = sympy.Symbol("gpus")
_DOMAIN, _NVLINK = sympy.Symbol("nvlink_domain_gpus"), sympy.Symbol("nvlink_gb_s_per_direction")
_PCIE, _SCALE_OUT = sympy.Symbol("pcie_gb_s_per_direction"), sympy.Symbol("scale_out_gb_s")
LINK_GB_S_ARGS = ("gpus", "nvlink_domain_gpus", "nvlink_gb_s_per_direction", "pcie_gb_s_per_direction",
                  "scale_out_gb_s")
LINK_GB_S_RULE: sympy.Expr = sympy.Piecewise(
    (sympy.Piecewise((_NVLINK, sympy.StrictGreaterThan(_NVLINK, 0)), (_PCIE, sympy.StrictGreaterThan(_PCIE, 0)),
                     (1, True)), sympy.LessThan(_GPUS, 1)),
    (_NVLINK, sympy.And(sympy.LessThan(_GPUS, _DOMAIN), sympy.StrictGreaterThan(_NVLINK, 0))),
    (_PCIE, sympy.LessThan(_GPUS, PCIE_NODE_GPUS)),
    (_SCALE_OUT, True))
_link_rule = sympy.lambdify([sympy.Symbol(name) for name in LINK_GB_S_ARGS], LINK_GB_S_RULE, modules="math")


def link_gb_s(gpu: Gpu, gpus: int) -> float:
    """GB/s per card per direction that a ring of ``gpus`` × ``gpu`` is costed at (:data:`LINK_GB_S_RULE`):
    the ring's slowest link; 0 when that figure is not on record; on one card its own link (1 GB/s when
    none is on record), which zero all-reduces multiply away."""
    return float(_link_rule(gpus, gpu.nvlink_domain_gpus, gpu.nvlink_gb_s_per_direction or 0.0,
                            gpu.pcie_gb_s_per_direction or 0.0, gpu.scale_out_gb_s or 0.0))

# The tensor-core precision each weight format computes in (docs/architecture.md §12). A
# format the card cannot compute in falls back to bf16 (weight-only: the weights
# are widened on the fly).
COMPUTE_PRECISION = {
    "fp32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "bf16",
    "nvfp4": "fp4", "mxfp4": "fp4",
}


def compute_precision(weights_dtype: str, gpu: Gpu) -> str:
    """The precision whose dense TFLOP/s bounds a step for ``weights_dtype`` weights on ``gpu``.

    bf16 → bf16, fp8 → fp8, nvfp4/mxfp4 → fp4 where the card lists a dense
    figure for it; otherwise bf16 (weight-only quantisation). Raises
    :class:`InputError` when the card lists no bf16 figure either.
    """
    wanted = COMPUTE_PRECISION.get(weights_dtype, "bf16")
    if gpu.dense_tflops.get(wanted):
        return wanted
    if gpu.dense_tflops.get("bf16"):
        return "bf16"
    raise InputError(f"The {gpu.name} has no dense bf16 throughput on record.", field="gpu")


# The degree rule's two refusals, as str.format templates (the offline export ships them to its driver).
DEGREE_SPLITS_NO_HEADS = ("gpus = {degree}: a tensor-parallel degree of {degree} does not divide the {heads} query "
                          "heads (num_attention_heads); choose a divisor of {heads}.")
DEGREE_SPLITS_NO_KV_HEADS = ("gpus = {degree}: a tensor-parallel degree of {degree} neither divides the {kv_heads} "
                             "K/V heads (num_key_value_heads) nor is a multiple of them, so the heads cannot be "
                             "spread evenly.")


def check_degree(cfg: ModelConfig, degree: int) -> None:
    """The degree rule: ``degree`` divides the query heads, and divides the K/V heads or is a
    multiple of them. Raises :class:`InputError` (field ``gpus``) naming both counts otherwise."""
    if degree < 1:
        raise InputError(f"gpus (the tensor-parallel degree) must be at least 1, not {degree}.", field="gpus")
    if cfg.heads % degree:
        raise InputError(DEGREE_SPLITS_NO_HEADS.format(degree=degree, heads=cfg.heads), field="gpus")
    if not cfg.kv_lora_rank and cfg.kv_heads % degree and degree % cfg.kv_heads:
        raise InputError(DEGREE_SPLITS_NO_KV_HEADS.format(degree=degree, kv_heads=cfg.kv_heads), field="gpus")


def kv_replication(cfg: ModelConfig, degree: int) -> float:
    """Copies of each K/V head across ``degree`` cards: ``max(1, degree ÷ kv_heads)``, or
    ``degree`` for an MLA latent (every card of a tensor-parallel attention keeps it whole)
    (:data:`.formulas.serving.KV_REPLICATION`, :data:`.formulas.serving.KV_REPLICATION_MLA`)."""
    if cfg.kv_lora_rank:
        return S.KV_REPLICATION_MLA({"gpus": degree})
    return S.KV_REPLICATION({"gpus": degree, "kv_heads": cfg.kv_heads})


def attention_head_dim(cfg: ModelConfig) -> float:
    """Values per query head in the attention products: ``head_dim``, or for MLA in its absorbed
    form ``(2 × kv_lora_rank + qk_rope_head_dim) ÷ 2`` (scores over rank + rope, output over rank)."""
    if cfg.kv_lora_rank:
        return (2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim) / 2
    return float(cfg.head_dim)


def tp_link(gpu: Gpu, degree: int) -> tuple[float | None, str]:
    """(GB/s per card per direction, which link) of the slowest link a ring of ``degree`` cards
    crosses (:func:`link_gb_s`): NVLink inside the NVLink domain, PCIe inside an eight-card node, else the
    scale-out network. ``(None, why)`` when that figure is not on record; ``(0, "none")`` for one card."""
    if degree <= 1:
        return 0.0, "none"
    if degree <= gpu.nvlink_domain_gpus and gpu.nvlink_gb_s_per_direction:
        kind = "NVLink"
    else:
        kind = "PCIe" if degree <= PCIE_NODE_GPUS else "scale-out network"
    return link_gb_s(gpu, degree) or None, kind


def check_stages(cfg: ModelConfig, pp: int) -> None:
    """Raise :class:`InputError` (field ``pp``) unless ``pp`` pipeline stages split ``cfg``'s layers evenly
    (docs/architecture.md §12: a stage holds layers ÷ pp)."""
    if pp < 1 or cfg.layers % pp:
        raise InputError(f"pp ({pp}) must divide the model's {cfg.layers} layers into equal stages.", field="pp")


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str) -> float:
    """KV bytes one token adds, every layer full: 2 × layers × kv_heads × head_dim × bytes, or
    layers × (kv_lora_rank + qk_rope_head_dim) × bytes for an MLA latent, plus layers × index_head_dim × (1 + 4/128)
    for sparse attention's fp8 indexer keys and their scales (:func:`.formulas.memory.kv_per_token_form`)."""
    return kv_per_token_form(cfg.kv_lora_rank, cfg.index_topk)({
        "layers": cfg.layers, "kv_heads": cfg.kv_heads, "head_dim": cfg.head_dim, "kv_lora_rank": cfg.kv_lora_rank,
        "qk_rope_head_dim": cfg.qk_rope_head_dim, "kv_bytes": kv_bytes_per_value(kv_dtype),
        "index_head_dim": cfg.index_head_dim, "index_key_bytes": float(INDEX_KEY_BYTES)})


def kv_given_parts(cfg: ModelConfig, kv_dtype: str) -> dict[str, float]:
    """What one token caches in every layer, split for sparse attention's read: the MLA latent
    (``latent_bytes_per_token``) and the indexer keys with their scales (``indexer_bytes_per_token``), each
    :data:`.formulas.memory.KV_BYTES_PER_TOKEN_SPARSE` with the other part at zero bytes (both 0 for a model
    without an indexer)."""
    if not cfg.sparse_attention:
        return {"latent_bytes_per_token": 0.0, "indexer_bytes_per_token": 0.0}
    form = kv_per_token_form(cfg.kv_lora_rank, cfg.index_topk)
    parts = {"layers": cfg.layers, "kv_lora_rank": cfg.kv_lora_rank, "qk_rope_head_dim": cfg.qk_rope_head_dim,
             "kv_bytes": kv_bytes_per_value(kv_dtype), "index_head_dim": cfg.index_head_dim,
             "index_key_bytes": float(INDEX_KEY_BYTES)}
    return {"latent_bytes_per_token": form({**parts, "index_key_bytes": 0}),
            "indexer_bytes_per_token": form({**parts, "kv_bytes": 0})}


def _composed(outer: Formula, **inner: sympy.Expr) -> sympy.Expr:
    """``outer``'s numeric expression with each named input replaced by ``inner``'s expression (itself a
    numeric expression in that input's unit: see :func:`_numeric`)."""
    return outer.numeric_expr.subs({outer.symbols[name]: expr for name, expr in inner.items()})


def _numeric(formula: Formula, unit: str) -> sympy.Expr:
    """``formula``'s numeric expression, checked to give ``unit`` (the unit of the input it feeds)."""
    if formula.unit != unit:
        raise FormulaUnitError(f"{formula.key} gives {formula.unit}, not the {unit} its use needs.")
    return formula.numeric_expr


_BYTES = _numeric(S.STEP_BYTES, S.MEMORY_MS.units["bytes_per_step"])
_MEMORY = _composed(S.MEMORY_MS, bytes_per_step=_BYTES)
_COMPUTE = _numeric(S.COMPUTE_MS_WITH_PREFILL, "ms")
_COMM = _numeric(S.COMM_MS, "ms")
# What one step costs: bytes read, memory, compute and communication time, and the step, in ms.
STEP_TERMS = (_BYTES, _MEMORY, _COMPUTE, _COMM, _composed(S.STEP_MS, memory_ms=_MEMORY, compute_ms=_COMPUTE,
                                                           comm_ms=_COMM))
# The step's own arguments, then its replica's (:attr:`_Constants.replica_args`).
STEP_ARGS = ("weight_bytes_per_step", "kv_bytes_per_step", "flops_per_step", "prefill_flops", "step_tokens")
REPLICA_ARGS = ("gpus", "card_bandwidth", "bandwidth_efficiency", "peak_tflops", "mfu", "prefill_mfu", "allreduces",
                "hidden_size", "activation_bytes", "link_gb_s", "allreduce_latency_us")


def _split_linear(terms: tuple[sympy.Expr, ...], step_args: tuple[str, ...]):
    """``terms`` (each linear in the symbols ``step_args``) as the same terms over coefficient symbols, and
    the coefficients: ``(terms', coefficient symbols, coefficient expressions)``. The coefficients hold only
    what a replica fixes, so they are evaluated once per replica and a step multiplies and adds."""
    step_symbols = [sympy.Symbol(name, real=True) for name in step_args]
    at_zero = {symbol: 0 for symbol in step_symbols}
    found: dict[sympy.Expr, sympy.Symbol] = {}

    def coefficient(expr: sympy.Expr) -> sympy.Expr:
        if expr == 0 or expr.is_number:
            return expr
        if expr not in found:
            found[expr] = sympy.Symbol(f"k{len(found)}", real=True)
        return found[expr]

    split = []
    for term in terms:
        parts = [coefficient(term.subs(at_zero))]
        for symbol in step_symbols:
            slope = sympy.diff(term, symbol)
            if slope.free_symbols & set(step_symbols):
                raise ValueError(f"The step term {term} is not linear in {symbol}.")
            parts.append(coefficient(slope) * symbol)
        split.append(sympy.Add(*parts))
    return tuple(split), tuple(found.values()), tuple(found)


_LINEAR, _COEFFICIENT_SYMBOLS, _COEFFICIENTS = _split_linear((_BYTES, _MEMORY, _COMPUTE, _COMM), STEP_ARGS)
_step_terms = sympy.lambdify(
    [*(sympy.Symbol(name, real=True) for name in STEP_ARGS), *_COEFFICIENT_SYMBOLS],
    (*_LINEAR, sympy.Max(_LINEAR[1], _LINEAR[2]) + _LINEAR[3]), modules="math", cse=True)
_replica_coefficients = sympy.lambdify([sympy.Symbol(name, real=True) for name in REPLICA_ARGS], _COEFFICIENTS,
                                       modules="math")
if _composed(S.STEP_MS, memory_ms=_LINEAR[1], compute_ms=_LINEAR[2], comm_ms=_LINEAR[3]) != (
        sympy.Max(_LINEAR[1], _LINEAR[2]) + _LINEAR[3]):
    raise ValueError("The fast step no longer composes formulas.serving.STEP_MS.")


# A mixture of experts' weights read by a step of ``step_tokens`` tokens (the experts they touch).
_MOE_ARGS = ("step_tokens", "always_read_params", "moe_layers", "expert_params", "weight_bits",
             "expert_weight_bits", "experts", "experts_per_token")
_moe_weights = sympy.lambdify(
    [sympy.Symbol(name, real=True) for name in _MOE_ARGS],
    _composed(S.STEP_WEIGHT_BYTES_MOE, experts_touched=_numeric(S.EXPERTS_TOUCHED, "1")), modules="math")


@dataclass(frozen=True)
class StepCost:
    """One step's cost: ``bytes`` read (replica-wide), ``flops`` (decode + prefill), and the times
    in milliseconds; ``step_ms = max(memory_ms, compute_ms) + comm_ms``."""

    bytes: float
    flops: float
    memory_ms: float
    compute_ms: float
    comm_ms: float
    step_ms: float


@dataclass(frozen=True)
class _Constants:
    """A replica's costs per token, each a serving formula evaluated once (bytes, FLOPs)."""

    always_read_bytes: float  # weights every step reads (all but the routed experts), B
    always_read_params: float
    expert_params: float  # one routed expert
    moe_layers: int
    experts: int
    experts_per_token: int
    kv_full: float  # B per cached token in the full layers, replicated
    kv_windowed: float  # B per cached token in the windowed layers, replicated
    window: int
    flop_per_token: float  # 2 × active parameters
    attention_full: float  # 4 × q_heads × head_dim × full layers, FLOP per cached token per sequence
    attention_windowed: float
    coefficients: tuple  # the fast step's per-replica coefficients (:func:`_split_linear`)


@dataclass(frozen=True)
class Replica:
    """One replica: ``model`` on ``tp`` cards of ``gpu`` in tensor parallel.

    ``weights_dtype``/``weights_bits`` as everywhere (int4 charged 4.5 bits by
    default; a checkpoint with MXFP4 experts at its native mxfp4 charges its experts and the rest their own
    widths, :attr:`widths`); ``kv_dtype`` the cache's precision. ``bandwidth_efficiency``
    (fraction of peak bandwidth reached), ``mfu`` and ``prefill_mfu``
    (fractions of the dense peak) and ``allreduce_latency_us`` (fixed cost of
    one collective, µs) default to their quantities' defaults
    (:data:`.quantities.INPUTS`). Raises :class:`InputError` when the degree breaks
    the degree rule, a fraction is outside (0, 1], or the link a ring of
    ``tp`` cards needs has no figure on record.
    """

    model: ModelConfig
    gpu: Gpu
    tp: int = 1
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    weights_bits: float | None = None
    bandwidth_efficiency: float = default("bandwidth_efficiency")
    mfu: float = default("mfu")
    prefill_mfu: float = default("prefill_mfu")
    allreduce_latency_us: float = default("allreduce_latency_us")
    # The calibration's terms (docs/architecture.md §12): the bandwidth efficiency at large batch (unset: the
    # batch-1 one, :attr:`bandwidth_efficiency`), a step's fixed cost, and what each doubling of the TP degree
    # adds to an all-reduce's fixed cost (:func:`.calibration.allreduce_latency_at`).
    bandwidth_efficiency_large_batch: float | None = None
    step_overhead_ms: float = default("step_overhead_ms")
    allreduce_latency_per_tp_doubling_us: float = default("allreduce_latency_per_tp_doubling_us")
    # Pipeline parallelism (docs/architecture.md §12): ``pp`` stages of ``tp`` cards, each holding layers ÷ pp; a
    # step's batch goes through them in ``microbatches`` parts (:func:`step_ms`).
    pp: int = 1
    microbatches: int = 1
    _k: _Constants = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        check_degree(self.model, self.tp)
        for name in ("bandwidth_efficiency", "mfu", "prefill_mfu"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise InputError(f"{name} must be a fraction in (0, 1], not {value:g}.", field=name)
        large = self.bandwidth_efficiency_large_batch
        if large is not None and not 0 < large <= 1:
            raise InputError(f"bandwidth_efficiency_large_batch must be a fraction in (0, 1], not {large:g}.",
                             field="bandwidth_efficiency_large_batch")
        for name in ("allreduce_latency_us", "step_overhead_ms", "allreduce_latency_per_tp_doubling_us"):
            if getattr(self, name) < 0:
                raise InputError(f"{name} must not be negative.", field=name)
        check_stages(self.model, self.pp)
        if self.microbatches < 1:
            raise InputError(f"microbatches must be at least 1, not {self.microbatches}.", field="microbatches")
        object.__setattr__(self, "_k", self._constants())
        if self.pp > 1 and not self.pp_link_gb_s:
            raise InputError(f"No link between {self.pp} pipeline stages of {self.tp} × {self.gpu.name} is on "
                             f"record, so their activations cannot be costed.", field="pp")

    @classmethod
    def from_catalog(cls, model: str, gpu: str, tp: int = 1, *, catalog: Catalog | None = None,
                     **options) -> "Replica":
        """A replica of catalog ids (``"llama-3.1-8b"``, ``"h100-sxm5-80gb"``); ``options`` as the fields."""
        catalog = catalog or default_catalog()
        return cls(catalog.model(model).config, catalog.gpu(gpu), tp, **options)

    @classmethod
    def calibrated(cls, model: str, gpu: str, tp: int = 1, *, weights_dtype: str = "bf16", engine: str = "",
                   end: str = "value", catalog: Catalog | None = None, **options) -> "Replica":
        """A replica of catalog ids whose efficiencies, overhead and all-reduce latency come from the
        calibration table's row for ``gpu`` × ``weights_dtype`` (× ``engine``), read through the quantities
        (:func:`.quantities.default`; a card without a row gets the quantities' defaults); ``end`` picks the
        central value or the band's ``"low"``/``"high"`` end; ``options`` override any field."""
        found = {key: default(key, gpu=gpu, precision=weights_dtype, engine=engine, end=end) for key in KEYS}
        return cls.from_catalog(model, gpu, tp, catalog=catalog, weights_dtype=weights_dtype,
                                **{**found, **options})

    def memory_efficiency(self, batch: int) -> float:
        """The bandwidth efficiency of a step of ``batch`` sequences
        (:func:`.calibration.bandwidth_efficiency_at`)."""
        large = self.bandwidth_efficiency_large_batch
        if large is None:
            return self.bandwidth_efficiency
        return bandwidth_efficiency_at(batch, self.bandwidth_efficiency, large)

    @property
    def widths(self) -> WeightWidths:
        """Bits charged per weight: the routed experts' and the rest's (:func:`.catalog.weight_widths`)."""
        return weight_widths(self.model, self.weights_dtype, self.weights_bits)

    @property
    def bits(self) -> float:
        """Bits charged per weight outside the routed experts (every weight of a dense model)."""
        return self.widths.weight_bits

    @property
    def expert_bits(self) -> float:
        """Bits charged per routed-expert parameter (:attr:`bits` unless the checkpoint is mixed)."""
        return self.widths.expert_weight_bits

    @property
    def precision(self) -> str:
        """The compute precision of the peak (:func:`compute_precision`)."""
        return compute_precision(self.weights_dtype, self.gpu)

    @property
    def peak_tflops(self) -> float:
        """Dense TFLOP/s per card at :attr:`precision`."""
        return float(self.gpu.dense_tflops[self.precision])

    @property
    def kv_replication(self) -> float:
        """K/V copies across the replica (:func:`kv_replication`)."""
        return kv_replication(self.model, self.tp)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes per token, every layer full, unreplicated."""
        return kv_bytes_per_token(self.model, self.kv_dtype)

    @property
    def link(self) -> tuple[float | None, str]:
        """(GB/s per direction, kind) of the ring's slowest link (:func:`tp_link`)."""
        return tp_link(self.gpu, self.tp)

    @property
    def pp_link_gb_s(self) -> float:
        """GB/s per direction between two pipeline stages: the slowest link of a ring of all ``tp × pp`` cards
        (:func:`tp_link`: NVLink inside the NVLink domain, else PCIe or the scale-out network); 0 for one stage."""
        if self.pp == 1:
            return 0.0
        return tp_link(self.gpu, self.tp * self.pp)[0] or 0.0

    @property
    def window(self) -> int:
        """The most cached tokens a capped read covers, tokens (0 without): the sliding window of the windowed
        layers, or sparse attention's ``index_topk`` (its latent read; the indexer keys are read whole)."""
        if self.model.sparse_attention:
            return self.model.index_topk
        return self.model.sliding_window if self.model.window_layers else 0

    def _constants(self) -> _Constants:
        cfg, t = self.model, self.tp
        counts = param_breakdown(cfg)
        moe_layers = cfg.layers - cfg.dense_layers if cfg.is_moe else 0
        expert = mlp_params(cfg, cfg.moe_intermediate_size) if cfg.is_moe else 0
        link, kind = self.link
        if t > 1 and not link:
            raise InputError(f"No {kind} bandwidth is on record for the {self.gpu.name}, so a ring of {t} cards "
                             f"cannot be costed; choose a degree inside its NVLink domain of "
                             f"{self.gpu.nvlink_domain_gpus}.", field="gpus")
        always_read = counts.total - moe_layers * cfg.num_experts * expert
        if cfg.sparse_attention:
            return self._sparse_constants(counts.active, always_read, expert, moe_layers, link)
        # The KV and FLOP relations are linear in the cached tokens: each coefficient is the formula at one
        # token (one sequence) of one kind of layer.
        one = {"batch": 1, "context": 1, "kv_bytes_per_token": self.kv_bytes_per_token,
               "kv_replication": self.kv_replication, "layers": cfg.layers, "window": max(1, self.window),
               "active_params": 0, "heads": cfg.heads, "attention_head_dim": attention_head_dim(cfg)}
        full = {**one, "full_layers": cfg.full_layers, "window_layers": 0}
        windowed = {**one, "full_layers": 0, "window_layers": cfg.window_layers}
        return _Constants(
            always_read_bytes=S.STEP_WEIGHT_BYTES({"params_read": always_read, "weight_bits": self.bits}),
            always_read_params=always_read, expert_params=expert,
            moe_layers=moe_layers, experts=cfg.num_experts, experts_per_token=cfg.experts_per_token,
            kv_full=S.STEP_KV_BYTES_WINDOWED(full), kv_windowed=S.STEP_KV_BYTES_WINDOWED(windowed),
            window=self.window,
            flop_per_token=S.STEP_FLOPS_WINDOWED({**full, "context": 0, "active_params": counts.active}),
            attention_full=S.STEP_FLOPS_WINDOWED(full), attention_windowed=S.STEP_FLOPS_WINDOWED(windowed),
            coefficients=self._coefficients(link),
        )

    def _coefficients(self, link: float | None) -> tuple:
        t = self.tp
        return _replica_coefficients(
            t, self.gpu.bandwidth_gb_s, self.bandwidth_efficiency, self.peak_tflops, self.mfu, self.prefill_mfu,
            2 * self.model.layers if t > 1 else 0, self.model.hidden_size, ACTIVATION_BYTES,
            link if t > 1 and link else 1.0,
            allreduce_latency_at(t, self.allreduce_latency_us, self.allreduce_latency_per_tp_doubling_us))

    def _sparse_constants(self, active: int, always_read: int, expert: int, moe_layers: int,
                          link: float | None) -> _Constants:
        """Sparse attention's costs per cached token (:data:`.formulas.serving.STEP_KV_BYTES_SPARSE`,
        :data:`.formulas.serving.STEP_FLOPS_SPARSE` at one token of one sequence): the indexer keys are read and
        scored for every cached token ("full"), the latent read and attended for at most ``index_topk`` ("windowed",
        the window being the top-k), so :func:`step_ms` costs them as it costs sliding windows."""
        cfg = self.model
        per_token = {"batch": 1, "context": 1, "index_topk": cfg.index_topk, "layers": cfg.layers,
                     "kv_replication": self.kv_replication, "heads": cfg.heads,
                     "attention_head_dim": attention_head_dim(cfg), "index_n_heads": cfg.index_n_heads,
                     "index_head_dim": cfg.index_head_dim, "active_params": 0,
                     **kv_given_parts(cfg, self.kv_dtype)}
        indexer = {**per_token, "latent_bytes_per_token": 0, "heads": 0}
        latent = {**per_token, "indexer_bytes_per_token": 0, "index_n_heads": 0}
        return _Constants(
            always_read_bytes=S.STEP_WEIGHT_BYTES({"params_read": always_read, "weight_bits": self.bits}),
            always_read_params=always_read, expert_params=expert,
            moe_layers=moe_layers, experts=cfg.num_experts, experts_per_token=cfg.experts_per_token,
            kv_full=S.STEP_KV_BYTES_SPARSE(indexer), kv_windowed=S.STEP_KV_BYTES_SPARSE(latent),
            window=cfg.index_topk,
            flop_per_token=S.STEP_FLOPS_SPARSE({**per_token, "context": 0, "active_params": active}),
            attention_full=S.STEP_FLOPS_SPARSE(indexer), attention_windowed=S.STEP_FLOPS_SPARSE(latent),
            coefficients=self._coefficients(link),
        )

    def experts_touched(self, tokens: int) -> float:
        """Experts per MoE layer a step of ``tokens`` tokens reads: E × (1 − (1 − k/E)^tokens)
        (:data:`.formulas.serving.EXPERTS_TOUCHED`)."""
        k = self._k
        if not k.experts:
            return 0.0
        return S.EXPERTS_TOUCHED({"experts": k.experts, "experts_per_token": k.experts_per_token,
                                  "step_tokens": tokens})

    def weight_bytes(self, tokens: int) -> float:
        """Weight bytes a step of ``tokens`` tokens reads (all of a dense model; a MoE's touched experts)."""
        k = self._k
        if not k.moe_layers:
            return k.always_read_bytes
        return _moe_weights(tokens, k.always_read_params, k.moe_layers, k.expert_params, self.bits,
                            self.expert_bits, k.experts, k.experts_per_token)


def step_ms(replica: Replica, *, decode_batch: int, decode_context_tokens: int,
            prefill_chunks: Sequence[tuple[int, int]] = (),
            decode_windowed_tokens: int | None = None) -> StepCost:
    """Cost one engine step of ``replica``.

    ``decode_batch``: sequences producing one token each (≥ 0).
    ``decode_context_tokens``: the SUM over those sequences of the tokens in
    their caches (bytes read and attention FLOPs are linear in it).
    ``prefill_chunks``: ``(p, c0)`` pairs, ``p`` new prompt tokens after ``c0``
    cached ones; each reads its ``c0`` cached tokens and costs
    ``2·N·p + 4·layers·q_heads·head_dim·p·(c0 + p)`` FLOPs at ``prefill_mfu``.
    ``decode_windowed_tokens``: for a model with sliding windows, the sum of
    ``min(context, window)`` over the decoders; by default
    ``min(decode_context_tokens, decode_batch × window)`` (exact when every
    context is on the same side of the window).

    Returns a :class:`StepCost` (bytes, FLOPs, times in ms); a step with no
    token costs nothing. Raises :class:`InputError` on a negative count.
    """
    if decode_batch < 0 or decode_context_tokens < 0:
        raise InputError("A step's batch and context tokens must not be negative.", field="decode_batch")
    k = replica._k
    tokens = decode_batch
    windowed = 0
    if k.window:
        windowed = (min(decode_context_tokens, decode_batch * k.window) if decode_windowed_tokens is None
                    else decode_windowed_tokens)
    kv = k.kv_full * decode_context_tokens + k.kv_windowed * windowed
    decode_flops = k.flop_per_token * decode_batch + k.attention_full * decode_context_tokens \
        + k.attention_windowed * windowed
    prefill_flops = 0.0
    for p, c0 in prefill_chunks:
        if p < 0 or c0 < 0:
            raise InputError("A prefill chunk's tokens must not be negative.", field="prefill_chunks")
        tokens += p
        seen = c0 + p
        kv += k.kv_full * c0 + (k.kv_windowed * min(c0, k.window) if k.window else 0.0)
        prefill_flops += k.flop_per_token * p + p * (k.attention_full * seen
                                                     + (k.attention_windowed * min(seen, k.window) if k.window
                                                        else 0.0))
    if tokens == 0:
        return StepCost(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if replica.pp > 1 or replica.microbatches > 1:
        return _pipelined(replica, tokens, kv, decode_flops, prefill_flops, decode_batch + len(prefill_chunks))
    total_bytes, memory, compute, comm, step = _step_terms(replica.weight_bytes(tokens), kv, decode_flops,
                                                           prefill_flops, tokens, *k.coefficients)
    efficiency = replica.memory_efficiency(max(1, decode_batch + len(prefill_chunks)))
    overhead = replica.step_overhead_ms
    if efficiency != replica.bandwidth_efficiency or overhead:
        memory *= replica.bandwidth_efficiency / efficiency
        step = max(memory, compute) + comm + overhead
    return StepCost(total_bytes, decode_flops + prefill_flops, memory, compute, comm, step)


def _pipelined(replica: Replica, tokens: int, kv: float, decode_flops: float, prefill_flops: float,
               sequences: int) -> StepCost:
    """A step on ``pp`` pipeline stages in ``m`` microbatches (docs/architecture.md §12).

    One microbatch on one stage (a slot) reads the stage's weights (``weights ÷ pp``) and its share of the
    cache (``KV ÷ (pp × m)``), computes ``FLOPs ÷ (pp × m)``, runs the stage's ``2 × layers ÷ pp`` all-reduces
    of ``tokens ÷ m`` tokens and sends its activations (``tokens ÷ m × d_model × 2`` bytes) over the link to the
    next stage (:attr:`Replica.pp_link_gb_s`; none after the last, none with one stage). The step is ``m + pp −
    1`` slots, the last microbatch leaving the last stage: ``(pp − 1) ÷ (m + pp − 1)`` of it is the pipeline's
    bubble. The returned memory, compute and communication times are per slot × slots, so the step is still
    max(memory, compute) + communication + the step's overhead (once), and bytes and FLOPs are the whole step's
    (the weights read once per microbatch)."""
    p, m = replica.pp, replica.microbatches
    weights = replica.weight_bytes(tokens)
    _, memory, compute, comm, _ = _step_terms(weights / p, kv / (p * m), decode_flops / (p * m),
                                              prefill_flops / (p * m), tokens / m, *replica._k.coefficients)
    efficiency = replica.memory_efficiency(max(1, sequences // m))
    memory *= replica.bandwidth_efficiency / efficiency
    comm /= p  # the stage's layers' all-reduces, of the whole model's
    if p > 1:
        comm += tokens / m * replica.model.hidden_size * ACTIVATION_BYTES / (replica.pp_link_gb_s * 1e9) * 1e3
    slots = m + p - 1
    memory, compute, comm = memory * slots, compute * slots, comm * slots
    return StepCost(weights * m + kv, decode_flops + prefill_flops, memory, compute, comm,
                    max(memory, compute) + comm + replica.step_overhead_ms)

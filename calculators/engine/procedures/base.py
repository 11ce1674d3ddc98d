"""What every calculator family shares: named steps, their evaluation and their JSON, the :class:`Family`
record, what it tells the offline export, and its generators' helpers.

A family's ``plan()`` resolves its inputs (a model config, a GPU, precisions …)
into ``given``: plain numbers keyed by formula variable name. It then lists its
:class:`StepSpec` s in order. A step's formula takes some variables from
``given`` and the rest from earlier steps (``from_steps``); that is what lets
the grader re-evaluate a step on a candidate's own earlier values (error carried
forward) with exactly the code that computed the right answer.

The two halves are separate (docs/architecture.md §11): ``plan()`` returns a
:class:`Plan` (inputs, steps, given numbers, notes: data, no arithmetic yet),
and :func:`evaluate` turns a plan into a :class:`Result`, evaluating each step once.
:meth:`Family.plan` gives the plan alone, which is how the offline export
reads every family's resolution as data.

*The record.* A family module (``procedures/<name>.py``) defines ``FAMILIES``, a tuple of
:class:`Family`; :mod:`calculators.engine.procedures` discovers them, so adding
a family touches no shared file.

*The offline export* (``runbook/export/``) reads each family's :class:`Plan` as data over the choices and
numbers its inputs take, and prints the steps' formulas to JavaScript. What a
plan alone cannot show is declared on the family's record (:class:`Offline`):

* ``adapters``: given numbers that follow several typed inputs at once, as sympy
  over the inputs' names (the ladder's ``min(avg_tokens, context)``); the export
  refuses a family whose given numbers follow typed inputs in a way it cannot
  infer, rather than ship a calculator that disagrees;
* ``checks``: the refusals the procedure makes in plain Python, before or
  between its steps, by kind (the driver implements each kind with the engine's
  sentence); ``"after"`` names the step (or ``"given"``) after which it applies;
* ``settled``: given numbers a degree loop settles (procedures/tp.py), set by the
  driver's loop rather than tabulated;
* ``alert``, ``extras`` and ``givens``: the page's one hand-written branch, data
  the driver needs besides the steps (a :class:`~..formula.Formula` is shipped as
  its printed JavaScript) and given numbers shipped though no step reads them.

*Drawing* (the generators take a seeded ``random.Random``): :func:`pinned_catalog` is how a coach's fixed
model or card reaches a draw (docs/architecture.md §11): the
family's own generator runs on a catalog holding only that model and card, so every value it draws from
them (the tensor-parallel degree that holds the weights, a context the model supports, a "measured" rate
below the stack's ceiling, a batch its KV budget holds) is drawn for that stack and no other.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from ..catalog import Catalog
from ..errors import InputError
from ..formula import Formula
from ..quantities import canonical_key, quantity
from ..step_model import DEGREE_SPLITS_NO_HEADS, DEGREE_SPLITS_NO_KV_HEADS
from ..units import BARE_OPERAND_UNITS, RECORDS, WHOLE_UNITS
from .inputs import InputSpec

# Integer steps: how a fractional count is rounded (users floor, GPUs and nodes ceil).
FLOOR = "floor"
CEIL = "ceil"


@dataclass(frozen=True)
class StepSpec:
    """One named step of a procedure: the quantity its ``formula`` computes.

    The step's key and unit are its formula's, which are its quantity's (:data:`..quantities.QUANTITIES`,
    declared once); its ``label`` is the quantity's unless the step gives a more descriptive one (the
    label is the only thing a step may override). ``from_steps`` maps formula variables to the keys of
    earlier steps whose values feed them; the others come from ``given``. ``rounding`` marks an
    integer step (its formula already floors or ceils; the grader then wants
    the whole number exactly). ``tolerance`` is the relative tolerance for a
    correct answer. Named misconceptions attach by the quantities they need (:mod:`..mistakes`).
    """

    formula: Formula
    from_steps: Mapping[str, str] = field(default_factory=dict)
    rounding: str | None = None
    tolerance: float = 0.005
    label: str = ""
    key: str = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.formula, Formula):
            raise TypeError("A StepSpec takes its formula first: key, unit and label come from the formula's quantity.")
        object.__setattr__(self, "key", self.formula.key)
        if not self.label:
            declared = quantity(self.formula.key)
            object.__setattr__(self, "label", declared.label if declared else self.formula.label)

    @property
    def unit(self) -> str:
        """The step's unit (the formula's result unit)."""
        return self.formula.unit

    def values(self, given: Mapping[str, float], steps: Mapping[str, float]) -> dict[str, float]:
        """The formula's variables bound from ``given`` and earlier ``steps``."""
        bound = {}
        for var in self.formula.variables:
            source = self.from_steps.get(var.name)
            bound[var.name] = steps[source] if source else given[var.name]
        return bound

    def evaluate(self, given: Mapping[str, float], steps: Mapping[str, float]) -> float:
        """The step's value from ``given`` and the (possibly candidate's) earlier ``steps``."""
        return self.formula(self.values(given, steps))


@dataclass
class Step:
    """A computed step: value in ``unit`` (full precision) and its worked substitution."""

    key: str
    label: str
    value: float
    unit: str
    formula: Formula
    substituted: str

    def to_json(self) -> dict[str, Any]:
        """The step in the ``calc --json`` shape of docs/architecture.md §10."""
        value = self.value
        if self.unit in WHOLE_UNITS and float(value).is_integer():
            value = int(value)
        return {
            "key": self.key,
            "label": self.label,
            "value": value,
            "unit": self.unit,
            "formula": f"{self.key} = {self.formula.text}",
            "substituted": self.substituted,
        }


class StepValues(dict):
    """Step values by canonical key; reading an alias of a key (docs/architecture.md §11) gives its value.
    Iteration and ``keys()`` list the canonical keys only."""

    def __init__(self, family: str, values: Mapping[str, float]):
        super().__init__(values)
        self.family = family

    def __missing__(self, key: str) -> float:
        canonical = canonical_key(key, self.family)
        if canonical != key and dict.__contains__(self, canonical):
            return dict.__getitem__(self, canonical)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (
            isinstance(key, str) and dict.__contains__(self, canonical_key(key, self.family)))

    def get(self, key: str, default=None):
        """Like ``dict.get``, aliases included."""
        return self[key] if key in self else default


@dataclass
class Result:
    """The outcome of a procedure: its inputs as given, its steps in order, and notes."""

    family: str
    inputs: dict[str, Any]
    steps: list[Step]
    notes: list[str]
    specs: list[StepSpec]
    given: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)

    def step(self, key: str) -> Step:
        """The step with this key (canonical, or an older alias such as ``weight_gib``);
        ``KeyError`` if the family has none."""
        key = canonical_key(key, self.family)
        for step in self.steps:
            if step.key == key:
                return step
        raise KeyError(key)

    @property
    def values(self) -> "StepValues":
        """Step values by canonical key (an older alias reads too: ``values["weight_gib"]``)."""
        return StepValues(self.family, {step.key: step.value for step in self.steps})

    def to_json(self) -> dict[str, Any]:
        """``{"family", "inputs", "steps", "notes"}`` as docs/architecture.md §10 specifies."""
        return {
            "family": self.family,
            "inputs": self.inputs,
            "steps": [step.to_json() for step in self.steps],
            "notes": list(self.notes),
        }




#: How a bare number shows (the ``plain`` and ``tokens`` styles, bare operands): e-notation from
#: ``scientific_from`` (fp32's 3.403e38, not 39 digits), no decimals from ``whole_from``, and four
#: significant figures (``digits``) unless up to ``exact_digits`` show a value below one exactly
#: (2^−7 = 0.0078125). The offline calculator reads the same rule (runbook/export).
PLAIN_RULE = {"scientific_from": 1e15, "whole_from": 1000, "digits": 4, "exact_digits": 6}


def _plain_number(value: float) -> str:
    rule = PLAIN_RULE
    if abs(value) >= rule["scientific_from"]:
        return f"{value:.{rule['digits']}g}".replace("e+", "e")
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= rule["whole_from"]:
        return f"{value:,.0f}"
    exact = f"{value:.{rule['exact_digits']}g}"
    return exact if abs(value) < 1 and float(exact) == value else f"{value:.{rule['digits']}g}"


def format_operand(value: float, unit: str) -> str:
    """A formula operand in a worked substitution: counts bare, quantities with their unit."""
    if unit in BARE_OPERAND_UNITS:
        return _plain_number(value)
    return format_number(value, unit)


def format_number(value: float, unit: str) -> str:
    """A value with its unit, rounded for display by the unit's rule in :mod:`..units`
    (docs/architecture.md §10); full precision stays in JSON. A unit outside the table falls back to
    :func:`..units.format_quantity`."""
    from ..units import format_quantity  # imported late: units is a sibling module

    record = RECORDS.get(unit)
    if record is None:
        return format_quantity(value, unit)
    if record.style == "plain":
        return _plain_number(value)
    if record.singular and value == 1:
        return f"1 {record.singular}"
    if record.style == "tokens":
        return f"{_plain_number(value)} {unit}"
    if record.style == "bit":
        return f"{value:g} {unit}"
    if record.small_below and 0 < abs(value) < record.small_below and (
            not record.small_if_hidden
            or abs(round(value, record.decimals) - value) > 0.001 * abs(value)):
        # Below the threshold, fixed decimals can hide the value (0.28125 GiB → 0.28, an intensity of
        # 0.276 → 0.3): show significant figures so it can be typed back.
        return f"{value:.{record.small_digits}g} {unit}"
    if record.style == "mib":
        return f"{value:,.0f} {unit}" if float(value).is_integer() else f"{value:,.1f} {unit}"
    return format_quantity(value, unit)


def evaluate_steps(specs: list[StepSpec], given: Mapping[str, float],
                   overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """Evaluate ``specs`` in order; ``overrides`` replaces a step's value for the
    steps after it (the grader passes a candidate's own values here)."""
    values: dict[str, float] = {}
    for spec in specs:
        values[spec.key] = spec.evaluate(given, values)
        if overrides and spec.key in overrides and overrides[spec.key] is not None:
            values[spec.key] = overrides[spec.key]
    return values


@dataclass
class Plan:
    """What a family's ``plan()`` resolves its inputs into, before any step is evaluated.

    ``inputs`` are the cleaned inputs; ``specs`` the steps in order; ``given``
    the plain numbers the formulas read, keyed by variable name (in each
    variable's unit); ``notes`` the sentences known before evaluation;
    ``extra`` anything the pages read besides the steps. ``finish``, when set,
    writes what reads the evaluated steps (notes, page extras) into the
    :class:`Result`, once, after :func:`evaluate` has evaluated every step.
    ``checks`` maps a step key to a refusal :func:`evaluate` makes right after that
    step (it reads the values so far and raises :class:`InputError` for a stack
    that cannot serve, before a later step divides by what it found); the offline
    export states the same refusals on the family's record (``Offline.checks``).
    """

    family: str
    inputs: dict[str, Any]
    specs: list[StepSpec]
    given: dict[str, float]
    notes: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    finish: Callable[["Result"], None] | None = None
    checks: Mapping[str, Callable[[Mapping[str, float]], None]] = field(default_factory=dict)


def evaluate(plan: Plan) -> Result:
    """Evaluate every step of ``plan`` once, build the :class:`Result` with worked substitutions, then let
    the plan's ``finish`` write its notes from that one evaluation.

    Raises :class:`InputError` when a step overflows (inputs far outside any real stack) or one of the
    plan's ``checks`` refuses the values so far, and what the plan's ``finish`` raises."""
    values: dict[str, float] = {}
    steps = []
    for spec in plan.specs:
        bound = spec.values(plan.given, values)
        value = spec.formula(bound)
        if math.isnan(value) or math.isinf(value):
            raise InputError(f"These inputs make {spec.label.lower()} overflow; use realistic sizes.")
        values[spec.key] = value
        if spec.key in plan.checks:
            plan.checks[spec.key](values)
        substituted = (f"{spec.formula.substituted(bound, format_operand)} = "
                       f"{format_number(value, spec.unit)}")
        steps.append(Step(spec.key, spec.label, value, spec.unit, spec.formula, substituted))
    result = Result(plan.family, plan.inputs, steps, list(plan.notes), plan.specs, dict(plan.given),
                    dict(plan.extra))
    if plan.finish is not None:
        plan.finish(result)
    return result


# The sentences of the checks a procedure makes on its typed numbers alone, as str.format templates: the
# procedure raises them filled in, and the export ships them with the check, so the driver words nothing
# ({name} as str() prints it, {name:g} as format(x, "g")).
NOT_ABOVE = "{low} ({low_value:g}) must not be above {high} ({high_value:g})."
PACKING = ("A replica of {replica} GPUs does not pack into nodes of {node}: use a size that divides the node or "
           "fills whole nodes.")
POWER_OF_TWO = "{name} must be a power of two (1, 2, 4, 8, 16 …), not {value}."

# A ring whose link has no bandwidth on record (step_model.link_gb_s is 0).
NO_LINK = ("No bandwidth is on record for the link a ring of {gpus} × {gpu} crosses; choose gpus inside its NVLink "
           "domain of {domain}.")
LINK: Mapping[str, str] = {"kind": "link", "after": "given", "message": NO_LINK}

# The degree rule (step_model.check_degree): before resolving where the procedure checks it first,
# after the given numbers ("given") where a card's refusal comes first.
DEGREE_RULE: Mapping[str, str] = {"kind": "degree_rule", "heads_message": DEGREE_SPLITS_NO_HEADS,
                                  "kv_heads_message": DEGREE_SPLITS_NO_KV_HEADS}
DEGREE_RULE_AFTER_GIVEN: Mapping[str, str] = {**DEGREE_RULE, "after": "given"}


@dataclass(frozen=True)
class Offline:
    """A family's rules for the offline export (see the module docstring)."""

    adapters: Mapping[str, Any] = field(default_factory=dict)
    checks: tuple[Mapping[str, Any], ...] = ()
    settled: tuple[str, ...] = ()
    alert: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    givens: tuple[str, ...] = ()
    #: A derived given number this family resolves its own way (sympy over given numbers and typed inputs),
    #: replacing the export's shared rule for it (the ladder's K/V replication, which reads the tensor-parallel
    #: degree, ``gpus ÷ pp`` of its replica's cards).
    derived: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """A calculator family.

    ``plan(raw_inputs, catalog)`` resolves snake-case inputs into a
    :class:`Plan` (data: no step evaluated; the offline export reads it), which
    :meth:`run` evaluates; ``generate(rng, catalog)``
    draws the inputs of a seeded problem (``None``: no drill for it);
    the mistakes its steps are graded against are the one registry's
    (:mod:`..mistakes`), by the quantities it computes; ``order`` sorts the families on the pages;
    ``describe(inputs, catalog)`` states a drawn problem in one paragraph, in
    the words an interviewer would use (the drill page shows it).

    What the pages, the bank and the offline export show of it is on the record
    too, so a new family is one module (docs/architecture.md §11): ``headlines``
    are the step keys shown large above the worked steps (the last step when
    empty); ``chapter`` is the slug of the chapter that teaches it (linked once
    that chapter is written); ``difficulty`` (1 to 3), ``roles`` and ``rubric``
    (what a strong worked answer does at each stage, never a value: every review
    draws fresh numbers; its step labels when empty) are its bank template's;
    each input's form label and help are on its :class:`InputSpec`; ``offline``
    holds what the offline export needs beyond the family's plans
    (:class:`~.base.Offline`), or is ``None`` for a family the export leaves
    out because its numbers come from the serving simulator (the simulated
    drills: a page cannot run the simulation); ``prepare(inputs, catalog, runner)`` completes drawn
    (or coach-fixed) inputs with what a problem must store beside them (the
    simulated drills: their sweep, run through the sweep ``runner`` passed in,
    ``calculators/sim/scenario.py``), ``None`` when the inputs are all a problem needs.
    """

    slug: str
    title: str
    summary: str
    inputs: tuple[InputSpec, ...]
    plan: Callable[[dict[str, Any], Catalog | None], Plan]
    generate: Callable[[random.Random, Catalog], dict] | None = None
    order: int = 100
    describe: Callable[[dict[str, Any], Catalog], str] | None = None
    headlines: tuple[str, ...] = ()
    chapter: str = ""
    difficulty: int = 2
    roles: tuple[str, ...] = ("architect", "engineer")
    rubric: tuple[str, ...] = ()
    offline: Offline | None = field(default_factory=Offline)
    prepare: Callable[..., dict] | None = None

    def run(self, raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
        """The family's plan for snake-case ``raw`` inputs, evaluated (:func:`~.base.evaluate`); raises
        what :attr:`plan` and the evaluation raise for bad inputs."""
        return evaluate(self.plan(raw, catalog))

    def headline_keys(self, result: Result) -> tuple[str, ...]:
        """The step keys ``result``'s page shows large: the record's, else its last step."""
        return self.headlines or (result.steps[-1].key,)


def discover(found: Iterable[Family]) -> dict[str, Family]:
    """``found`` records by slug, in page order (``order``, then slug). Raises ``ValueError`` for two families
    of one slug."""
    families: dict[str, Family] = {}
    for family in sorted(found, key=lambda f: (f.order, f.slug)):
        if family.slug in families:
            raise ValueError(f"Two calculator families are called '{family.slug}'.")
        families[family.slug] = family
    return families


CONTEXTS = (2048, 4096, 8192, 16384, 32768)
# Weight precisions drawn for problems (bf16 twice as often: it is the default answer).
WEIGHT_DTYPES_DRAWN = ("bf16", "bf16", "fp8", "int8", "int4")
KV_DTYPES_DRAWN = ("bf16", "bf16", "fp8")
# Fraction of card memory the weights may take in a drawn problem (our choice: room left for a cache).
FIT_FRACTION = 0.8


def gpu_supports(catalog: Catalog, gpu_id: str, dtype: str) -> bool:
    """True unless ``dtype`` needs tensor cores the card lacks (fp8 on the A100s)."""
    return bool(catalog.gpu(gpu_id).dense_tflops.get(dtype)) if dtype in ("fp8", "fp4") else True


def draw_context(rng: random.Random, catalog: Catalog, model_id: str) -> int:
    """A context limit from :data:`CONTEXTS` that the model supports."""
    limit = catalog.model(model_id).config.max_position_embeddings or 8192
    return rng.choice([c for c in CONTEXTS if c <= limit] or [min(CONTEXTS)])


def draw_model(rng: random.Random, catalog: Catalog) -> str:
    """Any catalog model id."""
    return rng.choice(list(catalog.models))


def computing_gpus(catalog: Catalog) -> list[str]:
    """Catalog GPU ids with a dense bf16 figure on record (a card quoted only at fp8/fp4, such as Rubin or the
    MI455X, is left out of drawn problems rather than given a guessed bf16 peak). In a catalog
    pinned to one such card (:func:`pinned_catalog`) that card: a memory problem needs no compute figure,
    and a family that does need one says so when it runs."""
    computing = [gpu_id for gpu_id, gpu in catalog.gpus.items() if gpu.dense_tflops.get("bf16")]
    return computing or list(catalog.gpus)


#: The inputs that pin the catalog a problem is drawn from: the model and the card.
STACK_INPUTS = ("model", "gpu")


def pinned_catalog(catalog: Catalog, fixed: dict) -> Catalog:
    """``catalog`` narrowed to the model and card ``fixed`` names (either or both; ``catalog`` itself when
    it names neither), for a generator to draw everything else for that stack.

    ``fixed`` maps input names to values, e.g. ``{"model": "llama-3.1-70b", "gpu": "l4-24gb"}``. Raises
    :class:`.errors.CatalogError` for an id the catalog lacks and :class:`.errors.InputError` for an id
    that is not text.
    """
    models, gpus = catalog.models, catalog.gpus
    for name in STACK_INPUTS:
        if name in fixed and not isinstance(fixed[name], str):
            raise InputError(f"A fixed {name} must be a catalog id, not {fixed[name]!r}.", field=name)
    if "model" in fixed:
        models = {fixed["model"]: catalog.model(fixed["model"])}
    if "gpu" in fixed:
        gpus = {fixed["gpu"]: catalog.gpu(fixed["gpu"])}
    if models is catalog.models and gpus is catalog.gpus:
        return catalog
    return Catalog(models=models, gpus=gpus)


def draw_gpu(rng: random.Random, catalog: Catalog) -> str:
    """A catalog GPU id with a dense bf16 figure on record (:func:`computing_gpus`)."""
    return rng.choice(computing_gpus(catalog))


def weights_phrase(inputs: dict) -> str:
    """"bf16 weights", or for a widened format "int4 weights (charged 4.5 bits each …)"."""
    from ..catalog import DEFAULT_WEIGHT_BITS, NOMINAL_BITS

    dtype = inputs.get("weights_dtype", "bf16")
    bits = inputs.get("weights_bits") or DEFAULT_WEIGHT_BITS[dtype]
    if bits != NOMINAL_BITS[dtype]:
        return f"{dtype} weights (charged {bits:g} bits each: scales and higher-precision tensors included)"
    return f"{dtype} weights"


def widths_given(cfg, inputs: dict) -> dict[str, float]:
    """The widths a family's steps read for ``inputs``' ``weights_dtype``/``weights_bits`` on ``cfg``
    (:func:`~..catalog.weight_widths`): ``weight_bits``, ``expert_weight_bits`` and the format's nominal width
    ``weights_dtype_bits_nominal`` (the ``nominal-4bit`` misconception's). :class:`InputError` if unknown."""
    from ..catalog import NOMINAL_BITS, weight_widths

    dtype = inputs.get("weights_dtype", "bf16")
    widths = weight_widths(cfg, dtype, inputs.get("weights_bits"))
    return {"weight_bits": widths.weight_bits, "expert_weight_bits": widths.expert_weight_bits,
            "weights_dtype_bits_nominal": NOMINAL_BITS[dtype]}


def widths_phrase(inputs: dict, catalog: Catalog) -> str:
    """"fp8 weights", "int4 weights (charged 4.5 bits each)", or for a checkpoint that keeps only its routed
    experts in the format "mxfp4 routed experts beside bf16 attention, router, embeddings and head":
    how a drawn problem states the weights' widths (:func:`~..catalog.weight_widths`)."""
    from ..catalog import NOMINAL_BITS, weight_bits, weight_widths

    dtype = inputs.get("weights_dtype", "bf16")
    model = catalog.models.get(inputs.get("model") or "")
    bits = inputs.get("weights_bits")
    if model is not None and weight_widths(model.config, dtype, bits).mixed:
        return f"{dtype} routed experts beside bf16 attention, router, embeddings and head"
    width = weight_bits(dtype, bits)
    return f"{dtype} weights" + (f" (charged {width:g} bits each)" if width != NOMINAL_BITS[dtype] else "")


def widths_notes(cfg, inputs: dict) -> list[str]:
    """The sentence saying which width each weight is charged when the checkpoint keeps only its routed experts
    in the format (gpt-oss's MXFP4 experts, everything else bf16); ``[]`` for one width (a family states a
    widened format's width in its own words)."""
    from ..catalog import UNCONVERTED_BITS, weight_widths

    dtype = inputs.get("weights_dtype", "bf16")
    widths = weight_widths(cfg, dtype, inputs.get("weights_bits"))
    if not widths.mixed:
        return []
    return [f"The checkpoint stores only the routed experts' weight matrices in {dtype} "
            f"({widths.expert_matrix_bits:g} bits each, block scales included); attention, the router, the "
            f"embeddings, the head and the experts' biases stay bf16 ({UNCONVERTED_BITS:g} bits), so a "
            f"routed-expert parameter is charged {widths.expert_weight_bits:.4g} bits on average and every "
            f"other parameter {widths.weight_bits:g}."]


def draw_weights_dtype(rng: random.Random, catalog: Catalog, gpu_id: str) -> str:
    """A weight precision for a problem on this card (int8 where the card has no fp8)."""
    weights = rng.choice(WEIGHT_DTYPES_DRAWN)
    return weights if gpu_supports(catalog, gpu_id, weights) else "int8"

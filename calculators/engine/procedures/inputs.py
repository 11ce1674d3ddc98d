"""Declared inputs of the calculator families, their defaults and their checks.

One :class:`InputSpec` per input serves the command line (``--kebab-case``
flags), the ``--inputs`` JSON of ``grade`` (snake case), the API and the forms.
Defaults are the reference stack of docs/architecture.md §2 (Llama-3.1-8B at bf16 on one
H100 SXM); an input that is a quantity with a default (utilisation, reserve,
block size, bandwidth efficiency, MFU …) takes it, its unit, label and bounds
from :data:`..quantities.INPUTS` through :meth:`InputSpec.of`, never typed here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..answers import read_input
from ..calibration import KEYS as CALIBRATED
from ..catalog import KV_DTYPES, WEIGHT_DTYPES, Catalog, default_catalog
from ..errors import AnswerError, ConfigError, InputError
from ..hf_config import ModelConfig, parse_config, parse_config_text
from ..quantities import INPUTS as INPUT_QUANTITIES
from ..quantities import default

REFERENCE_MODEL = "llama-3.1-8b"
REFERENCE_GPU = "h100-sxm5-80gb"


@dataclass(frozen=True)
class InputSpec:
    """One input: its snake-case name, kind, default, bounds and help text.

    ``kind`` is one of ``model``, ``gpu``, ``int``, ``float``, ``choice``.
    ``minimum``/``maximum`` are inclusive; ``exclusive_minimum`` excludes the minimum.
    ``older_names`` are names this family's input had before (prefill's ``mfu``, now ``prefill_mfu``),
    still read in stored problems, links and flags beside its quantity's aliases.
    """

    name: str
    kind: str
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    unit: str = ""
    label: str = ""  # the form's label (every family input has one; tests/calculators/test_family_records.py)
    hint: str = ""  # the form's help where ``help`` (the command line's) would only repeat the label
    older_names: tuple[str, ...] = ()
    quantity: str = ""  # the input quantity it reads (:meth:`of`), which may differ from ``name`` (prefill's mfu)

    @classmethod
    def of(cls, key: str, kind: str, help: str, **fields: Any) -> "InputSpec":
        """The input of the quantity ``key`` (:data:`..quantities.INPUTS`): its name, default, unit, label and
        bounds come from the quantity; ``fields`` add the form's hint (or another name, for a family that
        still reads the quantity under an older name). Raises ``KeyError`` for a key that is no input quantity."""
        quantity = INPUT_QUANTITIES[key]
        declared = {"name": key, "kind": kind, "default": quantity.default, "help": help,
                    "minimum": quantity.minimum, "maximum": quantity.maximum,
                    "exclusive_minimum": quantity.exclusive_minimum,
                    "unit": "" if quantity.unit == "1" else quantity.unit, "label": quantity.label,
                    "quantity": key}
        return cls(**{**declared, **fields})

    @property
    def aliases(self) -> tuple[str, ...]:
        """Older names of this input: its quantity's (:data:`..quantities.INPUTS`), then its own."""
        quantity = INPUT_QUANTITIES.get(self.name)
        return (quantity.aliases if quantity is not None else ()) + self.older_names

    @property
    def flag(self) -> str:
        """The command-line flag, e.g. ``--reserve-gib``."""
        return "--" + self.name.replace("_", "-")

    @property
    def default_text(self) -> str:
        """The default as the text an input shows: ``0.9``, ``8192``; ``''`` for none."""
        if self.default is None:
            return ""
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)

    @property
    def messages(self) -> dict[str, str]:
        """What a number input says when it is left blank (``required``), unreadable (``invalid``) or out of
        bounds (``min``, ``max``, present when the spec has that bound). The web form's fields and the offline
        calculator (runbook/export, static/js/offline-calculator.js) both read these, so they cannot drift."""
        messages = {"required": f"Enter a value (the reference stack uses {self.default_text or 'the default'}).",
                    "invalid": "Enter a whole number." if self.kind == "int" else "Enter a number."}
        if self.minimum is not None:
            messages["min"] = (f"Must be above {bound_text(self.minimum)}." if self.exclusive_minimum
                               else f"Must be at least {bound_text(self.minimum)}.")
        if self.maximum is not None:
            messages["max"] = f"Must be at most {bound_text(self.maximum)}."
        return messages


def bound_text(value: float) -> str:
    """A bound as people write it: ``10,000,000`` and ``0.5``, not ``1e+07``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


MODEL_HINT = "From the catalog; a pasted config.json below replaces it."
MODEL = InputSpec("model", "model", REFERENCE_MODEL, "model id from the catalog", label="Model", hint=MODEL_HINT)
GPU = InputSpec("gpu", "gpu", REFERENCE_GPU, "GPU id from the catalog", label="GPU",
                hint=("Memory is the total the driver reports where a capture is on record; otherwise the marketed "
                      "figure in decimal GB, and the notes say so."))
GPUS = InputSpec("gpus", "int", 1, "cards per replica (tensor-parallel degree)", minimum=1, maximum=1024,
                 unit="GPUs", label="GPUs per replica")
PP = InputSpec("pp", "int", 1, "pipeline-parallel degree: stages of --gpus cards each (gpus × pp cards in "
               "all), each holding layers ÷ pp; must divide the layers", minimum=1, maximum=64,
               label="Pipeline stages")
WEIGHTS_DTYPE = InputSpec("weights_dtype", "choice", "bf16", "weight precision", choices=WEIGHT_DTYPES,
                          label="Weight precision", hint="The format the weights are stored in.")
WEIGHTS_BITS = InputSpec("weights_bits", "float", None, "bits per weight (default: the precision's; "
                         "int4 is charged 4.5)", minimum=1, maximum=32, unit="bit", label="Bits per weight")
KV_DTYPE = InputSpec("kv_dtype", "choice", "bf16", "KV cache precision", choices=KV_DTYPES, label="KV cache precision",
                     hint=("The format of each cached K and V value; nvfp4 and mxfp4 are charged their block scales "
                           "(FP4 KV caches run on Blackwell-class cards)."))
CONTEXT = InputSpec("context", "int", 8192, "context limit per user, tokens", minimum=1, maximum=10_000_000,
                    unit="tok", label="Context limit")
UTILIZATION = InputSpec.of("utilization", "float", "fraction of card memory the engine may use")
RESERVE_GIB = InputSpec.of("reserve_gib", "float", "activation reserve per card, GiB")
AVG_TOKENS = InputSpec.of("avg_tokens", "int", "average conversation length, tokens")
BLOCK_SIZE = InputSpec.of("block_size", "int", "tokens per KV block (paged attention)")
BANDWIDTH_EFFICIENCY = InputSpec.of("bandwidth_efficiency", "float",
                                    "fraction of peak memory bandwidth a decode step achieves")
MFU = InputSpec.of("mfu", "float", "fraction of the dense peak FLOP/s a decode step achieves (MFU)")
PREFILL_MFU = InputSpec.of("prefill_mfu", "float", "fraction of the dense peak a prefill reaches (MFU)")
ALLREDUCE_LATENCY_US = InputSpec.of("allreduce_latency_us", "float", "fixed cost of one all-reduce, µs")


def _plain(bound: float) -> str:
    """A bound as people write it: 10,000,000 rather than 1e+07."""
    return f"{bound:,.0f}" if float(bound).is_integer() else f"{bound:g}"


def _read_text(spec: InputSpec, raw: Any) -> float:
    """Text ``float`` cannot read (``90%``, ``2^13``, ``3 GiB``, ``1,024``), read as a typed answer is."""
    if not isinstance(raw, str) or not any(ch.isdigit() for ch in raw):
        raise InputError(f"{spec.name} must be a number, not {raw!r}.", field=spec.name)
    try:
        return read_input(raw, spec.unit)
    except AnswerError as exc:
        raise InputError(f"{spec.name}: {exc}", field=spec.name) from None


def _coerce_number(spec: InputSpec, raw: Any) -> int | float:
    if isinstance(raw, bool):  # JSON's true/false, named as they were sent
        raise InputError(f"{spec.name} must be a number, not {str(raw).lower()}.", field=spec.name)
    try:
        number = float(raw)
    except OverflowError:
        raise InputError(f"{spec.name} is far too large.", field=spec.name) from None
    except (TypeError, ValueError):
        number = _read_text(spec, raw)
    if number != number or number in (float("inf"), float("-inf")):
        raise InputError(f"{spec.name} must be a finite number.", field=spec.name)
    if spec.kind == "int":
        if not number.is_integer():
            raise InputError(f"{spec.name} must be a whole number, not {raw!r}.", field=spec.name)
        number = int(number)
    low, high = spec.minimum, spec.maximum
    if low is not None and (number < low or (spec.exclusive_minimum and number == low)):
        bound = f"above {_plain(low)}" if spec.exclusive_minimum else f"at least {_plain(low)}"
        raise InputError(f"{spec.name} must be {bound}, not {raw!r}.", field=spec.name)
    if high is not None and number > high:
        raise InputError(f"{spec.name} must be at most {_plain(high)}, not {raw!r}.", field=spec.name)
    return number


def clean_inputs(specs: tuple[InputSpec, ...], raw: dict[str, Any], catalog: Catalog) -> dict[str, Any]:
    """Apply defaults, coerce types and check bounds.

    ``raw`` uses snake-case names (an input's older name, :func:`with_aliases`, is read as it); unknown
    names raise :class:`InputError`, as
    does any value out of bounds. A ``config`` (dict or JSON text) may stand in
    for ``model``; it is parsed here so a bad one fails before any arithmetic.
    """
    raw = with_aliases(specs, raw)
    names = {spec.name for spec in specs}
    allowed = names | ({"config"} if "model" in names else set())
    unknown = set(raw) - allowed
    if unknown:
        raise InputError(f"Unknown input {', '.join(sorted(unknown))}; expected some of "
                         f"{', '.join(sorted(allowed))}.", field=sorted(unknown)[0])
    cleaned: dict[str, Any] = {}
    for spec in specs:
        value = raw.get(spec.name)
        if value is None or value == "":
            cleaned[spec.name] = spec.default
            continue
        if spec.kind == "model":
            catalog.model(str(value))
            cleaned[spec.name] = str(value)
        elif spec.kind == "gpu":
            catalog.gpu(str(value))
            cleaned[spec.name] = str(value)
        elif spec.kind == "choice":
            if value not in spec.choices:
                raise InputError(f"{spec.name} must be one of {', '.join(spec.choices)}, not {value!r}.",
                                 field=spec.name)
            cleaned[spec.name] = value
        else:
            cleaned[spec.name] = _coerce_number(spec, value)
    if "model" in names and raw.get("config") not in (None, ""):
        config = raw["config"]
        if isinstance(config, str):
            try:
                config = json.loads(config)
            except RecursionError:
                raise ConfigError("The config is nested too deeply to be a model's config.json.",
                                  field="config") from None
            except json.JSONDecodeError as exc:
                raise ConfigError(f"The config is not valid JSON (line {exc.lineno}, column "
                                  f"{exc.colno}: {exc.msg}).", field="config") from exc
            except ValueError:  # an integer past Python's 4,300-digit limit on reading one
                raise ConfigError("The config holds an integer thousands of digits long; no real config does.",
                                  field="config") from None
        if not isinstance(config, dict):
            raise ConfigError("The config must be a JSON object such as a model's config.json.",
                              field="config")
        try:
            parse_config(config)
        except ConfigError as exc:  # reported against the pasted config; the message names the key
            raise ConfigError(str(exc), field="config") from exc
        cleaned["config"] = config
        cleaned.pop("model", None)
    return cleaned


def with_aliases(specs: tuple[InputSpec, ...], raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with each input given under an older name (:attr:`InputSpec.aliases`: its quantity's, such as
    ``utilization`` for cost's ``busy_fraction``, or the family's own, prefill's ``mfu``) renamed to the
    input's name, where no input of ``specs`` has that older name itself and the input's own name is not
    given too."""
    names = {spec.name for spec in specs}
    renamed = dict(raw)
    for spec in specs:
        for old in spec.aliases:
            if old in renamed and old not in names and spec.name not in renamed:
                renamed[spec.name] = renamed.pop(old)
    return renamed


def resolve_model(inputs: dict[str, Any], catalog: Catalog) -> tuple[ModelConfig, str]:
    """The :class:`ModelConfig` and a display name for cleaned ``inputs``."""
    if "config" in inputs:
        return parse_config(inputs["config"]), "the pasted config"
    entry = catalog.model(inputs["model"])
    return entry.config, entry.id


def parse_pasted_config(text: str) -> dict:
    """Validate pasted ``config.json`` text and return it as a dict (for forms)."""
    parse_config_text(text)
    return json.loads(text)


def catalog_or_default(catalog: Catalog | None) -> Catalog:
    """The given catalog, or the repository's."""
    return catalog if catalog is not None else default_catalog()


def input_or_default(inputs: dict[str, Any], key: str, quantity: str | None = None) -> Any:
    """``inputs[key]``, or the default of its quantity (``quantity``, else ``key``) where ``inputs`` leave it
    out (a drawn problem's inputs hold only what was drawn). Raises ``KeyError`` for a quantity without one."""
    return inputs[key] if key in inputs else default(quantity or key)


def calibrated_defaults(specs: tuple[InputSpec, ...], inputs: dict[str, Any]) -> dict[str, float]:
    """The calibration table's values (docs/architecture.md §12) for the calibrated inputs of ``specs`` that
    ``inputs`` leave out: each input whose quantity is a calibrated key (bandwidth efficiency, MFU, prefill MFU,
    all-reduce latency, step overhead) read through :func:`..quantities.default` for the stack's card
    (``inputs["gpu"]``, else the reference card) and precision (``weights_dtype``, else ``precision``, else
    bf16), for no named engine. A card without a row gets the quantities' own defaults. ``{}`` for a family
    without a card input.

    What a drawn problem stores beside its draw (``drills.problems.generation``), so its numbers never move
    when the table is refitted, and what the simulator reads for an efficiency it is not given.
    """
    names = {spec.name for spec in specs}
    if "gpu" not in names:
        return {}
    gpu = inputs.get("gpu") or GPU.default
    precision = inputs.get("weights_dtype") or inputs.get("precision") or "bf16"
    return {spec.name: default(spec.quantity, gpu=str(gpu), precision=str(precision))
            for spec in specs if spec.quantity in CALIBRATED and inputs.get(spec.name) in (None, "")}

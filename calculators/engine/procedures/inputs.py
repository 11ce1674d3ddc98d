"""Declared inputs of the calculator families, their defaults and their checks.

One :class:`InputSpec` per input serves the command line (``--kebab-case``
flags), the ``--inputs`` JSON of ``grade`` (snake case), the API and the forms.
Defaults are the reference stack of docs/architecture.md §2: Llama-3.1-8B at bf16 on one
H100 SXM, 8,192-token context limit, utilisation 0.90, 3 GiB activation
reserve, 2,300-token average conversation, 16-token KV blocks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..answers import read_input
from ..catalog import Catalog, default_catalog
from ..dtypes import KV_DTYPES, WEIGHT_DTYPES
from ..errors import AnswerError, ConfigError, InputError
from ..hf_config import ModelConfig, parse_config, parse_config_text

REFERENCE_MODEL = "llama-3.1-8b"
REFERENCE_GPU = "h100-sxm5-80gb"


@dataclass(frozen=True)
class InputSpec:
    """One input: its snake-case name, kind, default, bounds and help text.

    ``kind`` is one of ``model``, ``gpu``, ``int``, ``float``, ``choice``.
    ``minimum``/``maximum`` are inclusive; ``exclusive_minimum`` excludes the minimum.
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
    label: str = ""  # the form's label (every family input has one; tests/test_family_records.py)
    hint: str = ""  # the form's help where ``help`` (the command line's) would only repeat the label

    @property
    def flag(self) -> str:
        """The command-line flag, e.g. ``--reserve-gib``."""
        return "--" + self.name.replace("_", "-")


MODEL_HINT = "From the catalog; a pasted config.json below replaces it."
MODEL = InputSpec("model", "model", REFERENCE_MODEL, "model id from the catalog", label="Model", hint=MODEL_HINT)
GPU = InputSpec("gpu", "gpu", REFERENCE_GPU, "GPU id from the catalog", label="GPU",
                hint=("Memory is the total the driver reports where a capture is on record; otherwise the marketed "
                      "figure in decimal GB, and the notes say so."))
GPUS = InputSpec("gpus", "int", 1, "cards per replica (tensor-parallel degree)", minimum=1, maximum=1024,
                 unit="GPUs", label="GPUs per replica")
WEIGHTS_DTYPE = InputSpec("weights_dtype", "choice", "bf16", "weight precision", choices=WEIGHT_DTYPES,
                          label="Weight precision", hint="The format the weights are stored in.")
WEIGHTS_BITS = InputSpec("weights_bits", "float", None, "bits per weight (default: the precision's; "
                         "int4 is charged 4.5)", minimum=1, maximum=32, unit="bit", label="Bits per weight")
KV_DTYPE = InputSpec("kv_dtype", "choice", "bf16", "KV cache precision", choices=KV_DTYPES, label="KV cache precision",
                     hint=("The format of each cached K and V value; nvfp4 and mxfp4 are charged their block scales "
                           "(FP4 KV caches run on Blackwell-class cards)."))
CONTEXT = InputSpec("context", "int", 8192, "context limit per user, tokens", minimum=1, maximum=10_000_000,
                    unit="tok", label="Context limit")
UTILIZATION = InputSpec("utilization", "float", 0.90, "fraction of card memory the engine may use",
                        minimum=0, maximum=1, exclusive_minimum=True, label="Memory utilisation")
RESERVE_GIB = InputSpec("reserve_gib", "float", 3.0, "activation reserve per card, GiB", minimum=0,
                        maximum=10_000, unit="GiB", label="Activation reserve")
AVG_TOKENS = InputSpec("avg_tokens", "int", 2300, "average conversation length, tokens", minimum=1,
                       maximum=10_000_000, unit="tok", label="Average conversation")
BLOCK_SIZE = InputSpec("block_size", "int", 16, "tokens per KV block (paged attention)", minimum=1,
                       maximum=4096, unit="tok", label="KV block size")


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
    if isinstance(raw, bool):
        raise InputError(f"{spec.name} must be a number, not {raw!r}.", field=spec.name)
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

    ``raw`` uses snake-case names; unknown names raise :class:`InputError`, as
    does any value out of bounds. A ``config`` (dict or JSON text) may stand in
    for ``model``; it is parsed here so a bad one fails before any arithmetic.
    """
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

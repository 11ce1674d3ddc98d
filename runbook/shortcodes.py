"""Live numbers in the runbook's Markdown: shortcodes resolved by the formula engine.

A derived number is never typed into prose. The Markdown names it instead and
the engine fills it in when the page renders::

    {{value ladder.users_worst_case}}                               → 53 users
    {{value ladder.users_worst_case model=llama-3.1-70b weights_dtype=fp8}}  → 1 user
    {{value kv.kv_bytes_per_token model=llama-3.1-70b as=number}}  → 327,680
    {{worked kv.kv_bytes_per_token}}           → 2 × 32 × 8 × 128 × 2 B = 131,072 B
    {{formula kv.kv_bytes_per_token}}          → the formula as MathML
    {{note ladder.0}}                          → the first of the family's notes
    {{convert 52 GB GiB}}                      → 48.43 GiB
    {{gpu h100-sxm5-80gb.bandwidth_gb_s}}      → 3,350 GB/s (datasheet fields)
    {{default prefill_mfu}}                    → the default, as a percentage (from the input quantity)
    {{default prefill_mfu gpu=a100-sxm4-80gb}} → the calibration table's value for that card (precision=bf16
                                                 unless given; the quantity's default without a row)
    {{config llama-3.1-8b.num_hidden_layers}}  → 32 (a config.json field)
    {{calculator ladder model=llama-3.1-70b}}  → an embedded calculator (own line)
    {{figure paged-blocks}}                    → a step-through figure (own line)

``FAMILY.STEP`` names a step of a calculator family (``calc FAMILY --json``
lists them); ``key=value`` pairs are the family's inputs in snake case, the
rest defaulting to the reference stack. An input may be another run's step,
``FAMILY.STEP(key=value,…)``, which enters at the engine's full precision, so a
number one derivation produced is never pasted into the next::

    {{value cost.usd_per_million_tokens gpus=8 tokens_per_s=slo.tokens_per_s(context=2300)}}

The reference's own inputs are plain values (no reference inside a reference). ``as=number`` drops the unit,
``as=raw`` prints full precision, ``as=percent`` a fraction as a percentage (12.0 %). Every shortcode is checked by
``load_content``: an unknown one fails with the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from calculators.engine.answers import parse_quantity
from calculators.engine.catalog import default_catalog
from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import Step, format_number
from calculators.engine.units import convert, format_quantity
from calculators.families import FAMILIES

SHORTCODE = re.compile(r"\{\{\s*(?P<kind>[a-z]+)\s+(?P<body>[^{}]*?)\s*\}\}")
KINDS = ("value", "worked", "formula", "note", "convert", "gpu", "config", "calculator", "figure", "default")

# Datasheet fields a ``gpu`` shortcode may read, with their unit.
GPU_FIELDS = {
    "memory_mib": "MiB", "memory_gib": "GiB", "bandwidth_gb_s": "GB/s", "marketed_gb": "GB",
    "name": None, "memory_marketed": None,
    # Links (docs/architecture.md §12): cards in one NVLink domain, and per-direction link rates.
    "nvlink_domain_gpus": "GPUs", "nvlink_gb_s_per_direction": "GB/s", "pcie_gb_s_per_direction": "GB/s",
    "scale_out_gb_s": "GB/s",
}


# Extra quantities (``result.extra``) a value shortcode may quote, by name suffix.
EXTRA_UNITS_BY_SUFFIX = {"_gib": "GiB", "_tok_s": "tok/s", "_ms": "ms", "_tokens": "tok", "_gb_s": "GB/s"}
EXTRA_UNITS = tuple(EXTRA_UNITS_BY_SUFFIX)


class ShortcodeError(ValueError):
    """A shortcode that names an unknown kind, family, step, input or field."""


@dataclass(frozen=True)
class Resolved:
    """A resolved shortcode: ``text`` for inline numbers, or ``html`` (MathML,
    an embedded calculator) to insert after sanitising; ``calculator`` holds
    (family, inputs) for the page to render the widget."""

    text: str = ""
    html: str = ""
    calculator: tuple[str, dict] | None = None
    figure: bool = False


# An input given as another run's step: ``slo.tokens_per_s(context=2300,gpus=8)``.
REFERENCE = re.compile(r"(?P<target>[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\((?P<args>[^()]*)\)")


def _parse_pairs(tokens: list[str]) -> dict[str, str]:
    """``key=value`` tokens as a dict of strings, each reference (:data:`REFERENCE`) replaced by the
    ``repr`` of the step it names. Raises :class:`ShortcodeError` for a token without ``=`` or a
    reference that does not resolve to a number."""
    pairs = {}
    for token in tokens:
        if "=" not in token:
            raise ShortcodeError(f"'{token}' should be key=value.")
        key, value = token.split("=", 1)
        pairs[key.strip()] = _referenced(value.strip())
    return pairs


def _referenced(value: str) -> str:
    """``value`` itself, or the full-precision value of the step a reference names."""
    match = REFERENCE.fullmatch(value)
    if match is None:
        if "(" in value or ")" in value:
            raise ShortcodeError(f"'{value}' should be a value or FAMILY.STEP(key=value,…).")
        return value
    args = [arg for arg in match["args"].split(",") if arg.strip()]  # no parentheses inside: plain values
    _, step = _step(match["target"], _parse_pairs(args))
    if isinstance(step, int):
        raise ShortcodeError(f"'{value}' names a note, not a number.")
    return repr(float(step.value))


@lru_cache(maxsize=1024)
def _run(family: str, frozen_inputs: tuple):
    if family not in FAMILIES:
        raise ShortcodeError(f"Unknown calculator family '{family}'; known: {', '.join(FAMILIES)}.")
    try:
        return FAMILIES[family].run(dict(frozen_inputs))
    except EngineError as exc:
        raise ShortcodeError(f"{family}: {exc}") from exc


def _step(target: str, pairs: dict[str, str]):
    if "." not in target:
        raise ShortcodeError(f"'{target}' should be FAMILY.STEP, e.g. ladder.users_worst_case.")
    family, key = target.split(".", 1)
    result = _run(family, tuple(sorted(pairs.items())))
    if key.isdigit():
        return result, int(key)
    try:
        return result, result.step(key)
    except KeyError:
        extra = result.extra.get(key)
        if isinstance(extra, (int, float)) and not isinstance(extra, bool) and key.endswith(EXTRA_UNITS):
            # A quantity the procedure reports beside its steps (the ladder's paged_user_gib).
            unit = next(u for suffix, u in EXTRA_UNITS_BY_SUFFIX.items() if key.endswith(suffix))
            return result, Step(key, key, float(extra), unit, None, "")
        keys = ", ".join(step.key for step in result.steps)
        raise ShortcodeError(f"The {family} family has no step '{key}'; its steps: {keys}.") from None


def _shown(value: float, unit: str, style: str) -> str:
    if style == "raw":
        return repr(value)
    if style == "percent":  # a fraction read as a share: 0.1202 → 12.0 %
        return f"{value * 100:.1f} %"
    text = format_number(value, unit)
    if style == "number":
        return text.replace("$", "").rsplit(" ", 1)[0] if " " in text else text
    return text


def resolve(kind: str, body: str) -> Resolved:
    """Resolve one shortcode (``kind`` and the text after it). Raises :class:`ShortcodeError`."""
    tokens = body.split()
    if kind not in KINDS:
        raise ShortcodeError(f"Unknown shortcode '{kind}'; known: {', '.join(KINDS)}.")
    if not tokens:
        raise ShortcodeError(f"The '{kind}' shortcode needs an argument.")
    if kind == "convert":
        if len(tokens) != 3:
            raise ShortcodeError("convert takes VALUE FROM TO, e.g. {{convert 52 GB GiB}}.")
        try:
            value, _ = parse_quantity(tokens[0])
            return Resolved(text=format_quantity(convert(value, tokens[1], tokens[2]), tokens[2]))
        except EngineError as exc:
            raise ShortcodeError(str(exc)) from exc
    if kind in ("gpu", "config"):
        return _catalog_field(kind, tokens[0])
    if kind == "default":
        return _default(tokens[0], _parse_pairs(tokens[1:]))
    if kind == "figure":
        from .figures import FIGURES  # the figure modules render SVG with the engine's numbers

        name, options = tokens[0], _parse_pairs(tokens[1:])
        if name not in FIGURES:
            raise ShortcodeError(f"Unknown figure '{name}'; known: {', '.join(sorted(FIGURES)) or 'none yet'}.")
        try:
            return Resolved(html=FIGURES[name](options), figure=True)
        except (ValueError, EngineError) as exc:
            raise ShortcodeError(f"figure {name}: {exc}") from exc
    if kind == "calculator":
        family = tokens[0]
        pairs = _parse_pairs(tokens[1:])
        _run(family, tuple(sorted(pairs.items())))  # validates the preset
        return Resolved(calculator=(family, pairs))
    pairs = _parse_pairs(tokens[1:])
    style = pairs.pop("as", "unit")
    if style not in ("unit", "number", "raw", "percent"):
        raise ShortcodeError(f"as= takes unit, number, raw or percent, not '{style}'.")
    result, step = _step(tokens[0], pairs)
    if kind == "note":
        if not isinstance(step, int) or step >= len(result.notes):
            raise ShortcodeError(f"note takes FAMILY.N with N below {len(result.notes)}.")
        return Resolved(text=result.notes[step])
    if isinstance(step, int):
        raise ShortcodeError(f"'{tokens[0]}' names a note; use {{{{note {tokens[0]}}}}}.")
    if kind == "value":
        return Resolved(text=_shown(step.value, step.unit, style))
    if step.formula is None:
        raise ShortcodeError(f"'{tokens[0]}' is reported beside the steps and has no formula of its own.")
    if kind == "worked":
        return Resolved(text=step.substituted)
    return Resolved(html=step.formula.mathml)


def _default(key: str, pairs: dict[str, str]) -> Resolved:
    """An input quantity's default as prose quotes it: a fraction as a percentage, else with its unit. With
    ``gpu=`` (and ``precision=``, bf16 unless given), the calibration table's value for that card
    (:func:`calculators.engine.quantities.default`; the quantity's own default for a card without a row)."""
    from calculators.engine.quantities import INPUTS, default

    if key not in INPUTS or INPUTS[key].default is None:
        known = ", ".join(k for k, q in INPUTS.items() if q.default is not None)
        raise ShortcodeError(f"'{key}' is not an input with a default; known: {known}.")
    unknown = sorted(set(pairs) - {"gpu", "precision"})
    if unknown or ("precision" in pairs and "gpu" not in pairs):
        raise ShortcodeError(f"default takes KEY and optionally gpu=ID precision=FORMAT, not "
                             f"{', '.join(f'{k}=' for k in unknown) or 'precision= without gpu='}.")
    q = INPUTS[key]
    value = q.default
    if "gpu" in pairs:
        try:
            default_catalog().gpu(pairs["gpu"])
        except EngineError as exc:
            raise ShortcodeError(str(exc)) from exc
        value = default(key, gpu=pairs["gpu"], precision=pairs.get("precision", "bf16"))
    if q.unit == "1":
        return Resolved(text=f"{value * 100:g} %")
    return Resolved(text=format_number(value, q.unit))


def _catalog_field(kind: str, target: str) -> Resolved:
    if "." not in target:
        raise ShortcodeError(f"'{target}' should be ID.FIELD.")
    # Model ids contain dots (llama-3.1-8b) and config fields do not; GPU fields may (dense_tflops.bf16).
    item_id, field = target.rsplit(".", 1) if kind == "config" else target.split(".", 1)
    catalog = default_catalog()
    try:
        item = catalog.gpu(item_id) if kind == "gpu" else catalog.model(item_id)
    except EngineError as exc:
        raise ShortcodeError(str(exc)) from exc
    if kind == "config":
        if field not in item.raw_config:
            raise ShortcodeError(f"{item_id}'s config has no field '{field}'.")
        value = item.raw_config[field]
        return Resolved(text=f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value))
    if field.startswith("dense_tflops.") or field.startswith("sparse_tflops."):
        table, precision = field.split(".", 1)
        value = getattr(item, table).get(precision)
        if value is None:
            raise ShortcodeError(f"{item_id} has no {table} figure for {precision}.")
        return Resolved(text=f"{value:,g} TFLOP/s")
    if field not in GPU_FIELDS:
        raise ShortcodeError(f"Unknown GPU field '{field}'; known: {', '.join(GPU_FIELDS)}, "
                             f"dense_tflops.<precision>, sparse_tflops.<precision>.")
    value, unit = getattr(item, field), GPU_FIELDS[field]
    if value is None:
        raise ShortcodeError(f"{item_id} has no {field} on record.")
    if unit == "GPUs":
        return Resolved(text=f"{value:,} GPU{'s' if value != 1 else ''}")
    if unit is None:
        return Resolved(text=str(value))
    if unit == "MiB":
        return Resolved(text=f"{value:,.0f} MiB")
    return Resolved(text=format_number(value, unit) if unit != "GB/s" else f"{value:,.0f} GB/s")


def find_errors(markdown: str) -> list[tuple[int, str, str]]:
    """Every unresolvable shortcode as (line number, shortcode text, reason)."""
    errors = []
    for number, line in enumerate(markdown.splitlines(), start=1):
        for match in SHORTCODE.finditer(line):
            try:
                resolve(match["kind"], match["body"])
            except ShortcodeError as exc:
                errors.append((number, match.group(0), str(exc)))
        if "{{" in SHORTCODE.sub("", line):
            errors.append((number, line.strip()[:60], "An unclosed or malformed {{ shortcode."))
    return errors

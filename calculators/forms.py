"""The calculator form, built from a family's declared inputs, and the report it renders.

:class:`CalculatorForm` turns each :class:`~calculators.engine.procedures.inputs.InputSpec`
of a :class:`~calculators.engine.procedures.Family` into a field (selects for the
catalog and the precisions, number inputs with the spec's bounds), adds the
optional pasted ``config`` where the family takes a model, and in ``clean()`` runs
the family: an :class:`~calculators.engine.errors.EngineError` lands beside the
input it names, or above the results when it names none.

:class:`Report` is what the results show: the steps in order with their formatted
values, which of them changed since the previous request (whose step values
come back in the hidden ``previous`` input), the headline numbers and notes.
"""

from __future__ import annotations

import copy
import json
import math
from functools import cached_property, lru_cache
from typing import Any, Callable, Mapping
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError

from calculators import simulation
from calculators.engine.answers import read_input
from calculators.engine.catalog import BLOCK_FORMATS, DEFAULT_WEIGHT_BITS, NOMINAL_BITS, default_catalog
from calculators.engine.errors import AnswerError, ConfigError, EngineError
from calculators.engine.procedures import Family, Result
from calculators.engine.procedures.base import Plan, evaluate
from calculators.engine.procedures.compute import opening_precisions
from calculators.engine.procedures.inputs import InputSpec, bound_text, with_aliases
from calculators.engine.units import quote
from calculators.report import InputRow, Report, build_report, parse_previous

# How a spec's unit reads beside its input.
UNIT_LABELS = {"tok": "tokens", "bit": "bits", "GPUs": "GPUs", "GiB": "GiB"}


CONFIG_MAX_CHARS = 100_000
CONFIG_LABEL = "config.json"

CONFIG_HELP = ("Paste a model's config.json (Hugging Face format); when filled it replaces the model "
               f"chosen above. Clear it to go back to the catalog. Up to {CONFIG_MAX_CHARS:,} characters. The "
               "page's address keeps it when it is short enough for an address (most configs are); a longer one "
               "is left out, and the results say so.")
# The longest query string the page's address carries: a pasted config that makes it longer is left out.
# gunicorn refuses a request line over 4,094 bytes (its limit_request_line), and the path and the
# method take their share; compact JSON of a dense model's config.json is 600-900 characters, about twice
# that once percent-encoded.
SHAREABLE_QUERY_MAX = 3_000
CONFIG_PLACEHOLDER = '{\n  "num_hidden_layers": 32,\n  "hidden_size": 4096,\n  …\n}'


def _bound_validators(spec: InputSpec) -> list:
    """Validators for the spec's minimum (inclusive or not) and maximum, in the words of the spec's messages."""
    checks = []
    messages = spec.messages
    if spec.minimum is not None:
        def at_least(value, low=spec.minimum, exclusive=spec.exclusive_minimum, message=messages["min"]):
            if value < low or (exclusive and value == low):
                raise ValidationError(message, code="min_value")
        checks.append(at_least)
    if spec.maximum is not None:
        def at_most(value, high=spec.maximum, message=messages["max"]):
            if value > high:
                raise ValidationError(message, code="max_value")
        checks.append(at_most)
    return checks


def _choice_label(spec: InputSpec, choice: str) -> str:
    """``bf16 · 16 bits``; int4 weights and the FP4 block formats show their effective width."""
    if spec.name in ("weights_dtype", "kv_dtype", "adapter_dtype") and choice in DEFAULT_WEIGHT_BITS \
            and (spec.name == "weights_dtype" or choice in BLOCK_FORMATS):
        bits = DEFAULT_WEIGHT_BITS[choice]
        suffix = " effective" if bits != NOMINAL_BITS[choice] else ""
        return f"{choice} · {bits:g} bits{suffix}"
    if choice in NOMINAL_BITS:
        return f"{choice} · {NOMINAL_BITS[choice]} bits"
    return choice


def apply_user_calibration(defaults: dict[str, str], data: Mapping[str, Any] | None, calibration) -> bool:
    """Put an applied calibration's constants (:class:`calculators.models.Calibration`) into ``defaults`` (the
    texts the fields start from) for the inputs ``defaults`` has, when the page's card and weight format
    (``data``'s, else the defaults') are the calibration's; return whether they were. A value the visitor sent
    is theirs: only ``defaults`` change."""
    if calibration is None:
        return False
    data = data or {}
    gpu = data.get("gpu", defaults.get("gpu"))
    weights = data.get("weights_dtype", defaults.get("weights_dtype")) or data.get("precision",
                                                                                 defaults.get("precision"))
    if not calibration.applies_to(gpu, weights):
        return False
    for key, value in calibration.values.items():
        if key in defaults:
            defaults[key] = f"{value:.4g}"
    return True


def opening_defaults(defaults: dict[str, str], data: Mapping[str, Any]) -> None:
    """A card quoted only at fp8/fp4 (no dense bf16 figure on record) opens on its first quoted precision
    (:func:`~calculators.engine.procedures.compute_shared.opening_precisions`) instead of the bf16 default it would
    refuse: ``defaults`` change for the precision inputs the page has and the visitor did not send."""
    gpu_id = data.get("gpu") or defaults.get("gpu")
    if not gpu_id or gpu_id not in default_catalog().gpus:
        return
    for name, value in opening_precisions(default_catalog().gpu(gpu_id)).items():
        if name in defaults and not data.get(name):
            defaults[name] = value


def without_carried_calibration(data: Mapping[str, Any] | None, calibration, applies: bool) -> Mapping[str, Any] | None:
    """``data`` (a page's query) without the constants an applied calibration put in its fields, once the page's
    card or precision is no longer the calibration's (``applies`` false): a field still holding exactly what the
    page printed from the calibration (``:.4g``) was carried over from the previous card, not typed, so it goes
    back to its default (the calibration table's row on the simulator). Any other value is the visitor's."""
    if data is None or calibration is None or applies:
        return data
    carried = {key for key, value in calibration.values.items()
               if str(data.get(key) or "").strip() == f"{value:.4g}"}
    if not carried:
        return data
    return {key: data.get(key) for key in data if key not in carried}


def field_for(spec: InputSpec) -> forms.Field:
    """The form field for one input: its widget, bounds, help text and label."""
    label = spec.label or spec.name.replace("_", " ").capitalize()
    help_text = spec.hint or spec.help[:1].upper() + spec.help[1:] + "."
    if spec.kind in ("model", "gpu", "choice"):
        catalog = default_catalog()
        if spec.kind == "model":
            choices = catalog.model_choices
        elif spec.kind == "gpu":
            choices = catalog.gpu_choices
        else:
            choices = [(choice, _choice_label(spec, choice)) for choice in spec.choices]
        return forms.ChoiceField(label=label, choices=choices, required=spec.kind != "model",
                                 help_text=help_text, widget=forms.Select(attrs={"class": "form-select"}))
    attrs = {"class": "form-control text-end tabular-nums"}
    if spec.minimum is not None:
        attrs["min"] = bound_text(spec.minimum).replace(",", "")
    if spec.maximum is not None:
        attrs["max"] = bound_text(spec.maximum).replace(",", "")
    messages = {key: text for key, text in spec.messages.items() if key in ("required", "invalid")}
    if spec.kind == "int":
        attrs.update(step="1", inputmode="numeric")
        field_class: type[forms.Field] = TypedIntegerField
    else:
        attrs.update(step="any", inputmode="decimal")
        field_class = TypedFloatField
    if spec.default is None:
        attrs["placeholder"] = "default"
    # A text box, not <input type=number>: a number box sends "" for what it cannot hold ("1e309", "2^13",
    # "90%"), so the server said "Enter a value" to a field that had one; as text, what was typed arrives and
    # the message names it. The bounds are the server's (InputSpec.messages), inputmode keeps a phone's keypad.
    widget: forms.Widget = forms.TextInput(attrs={key: value for key, value in attrs.items()
                                                  if key not in ("min", "max", "step")})
    return field_class(label=label, required=spec.default is not None, help_text=help_text, unit=spec.unit,
                       validators=_bound_validators(spec), error_messages=messages, widget=widget)


def config_length(value: str) -> None:
    """Refuse a pasted config of more than ``CONFIG_MAX_CHARS`` characters, saying how many were read.

    The field's validator, so it runs before the config is parsed: a config cut short reads as broken JSON.
    The textarea has no ``maxlength`` (a browser cuts a longer paste silently); the help text gives the limit.
    Raises :class:`~django.core.exceptions.ValidationError`.
    """
    if len(value) > CONFIG_MAX_CHARS:
        raise ValidationError(
            "The pasted config is %(read)s characters long; the calculators read configs of up to %(limit)s. "
            "Leave out what a config.json does not need (a tokenizer's vocabulary, label maps) and paste it again.",
            code="max_length", params={"read": f"{len(value):,}", "limit": f"{CONFIG_MAX_CHARS:,}"})


def _config_field() -> forms.CharField:
    """The optional pasted ``config.json`` of a family that takes a model (:func:`config_length` bounds it)."""
    return forms.CharField(
        label=CONFIG_LABEL, required=False, validators=[config_length], help_text=CONFIG_HELP,
        widget=forms.Textarea(attrs={"class": "form-control font-monospace calc-config-text", "rows": 8,
                                     "spellcheck": "false", "placeholder": CONFIG_PLACEHOLDER}))


# The fields of a family, built once per process (building them, the catalog's choices normalised by Django
# for every select, was a third of a recompute's form work), keyed by the family's inputs: a family registered
# for a test only has inputs of its own. Each form works on deep copies, as a Django form does of its class's fields.
@lru_cache(maxsize=64)
def _prototype_fields(specs: tuple[InputSpec, ...]) -> dict[str, forms.Field]:
    fields: dict[str, forms.Field] = {}
    for spec in specs:
        fields[spec.name] = field_for(spec)
        if spec.kind == "model":
            fields["config"] = _config_field()
    for name, field in fields.items():
        field.widget.attrs["aria-describedby"] = f"error-{name} help-{name}"
    return fields


# Results per process by their inputs: the engine is pure (docs/architecture.md §3), so a recompute of a stack
# already shown (the reference stack, a shared link, an input changed back) skips it. Bounded; a pasted
# config.json (up to 100 kB) is never a key. Callers only read a result (build_report copies its notes).
RESULT_MEMO_SIZE = 256


@lru_cache(maxsize=RESULT_MEMO_SIZE)
def _memoised_run(plan: Callable[..., Plan], inputs: tuple[tuple[str, type, Any], ...]) -> Result:
    return evaluate(plan({name: value for name, _, value in inputs}, None))


def run_family(family: Family, raw: Mapping[str, Any]) -> Result:
    """``family.run(raw)`` on the default catalog, memoised per process by the family's ``plan`` and the inputs
    (each value's type is part of the key: 4096 and 4096.0 show differently).

    ``raw`` holds cleaned inputs (strings and numbers); with a pasted ``config`` the family is run directly.
    The result is shared with later callers of the same inputs: read it, never change it. Raises what the
    family raises (:class:`~calculators.engine.errors.EngineError` and the like); errors are not memoised.
    """
    if family.prepare is not None:  # a simulated drill: its sweep through the cached, budgeted runner
        return simulation.run_drill(family, dict(raw))
    if "config" in raw:
        return family.run(dict(raw))
    key = tuple((name, type(value), value) for name, value in sorted(raw.items()))
    return _memoised_run(family.plan, key)


def _is_fraction(spec: InputSpec) -> bool:
    """A plain number between 0 and 1 (utilisation, hit rate, MFU): one a candidate may type as 90%."""
    return spec.kind == "float" and not spec.unit and spec.maximum is not None and spec.maximum <= 1


def _read_typed(unit: str, value: str) -> float:
    """Text a number field cannot read ("90%", "2^13", "3 GiB"), read by the engine as a typed answer."""
    try:
        return read_input(value, unit)
    except AnswerError as exc:
        raise ValidationError(str(exc).replace("this input", "this field"), code="invalid") from None


def reading_text(value: float, unit: str) -> str:
    """``value`` (in ``unit``, an engine unit such as ``"tok"`` or ``"GiB"``; ``""`` for a plain number) as a
    number field's echo writes it: a whole number in full with its thousands grouped (``8,000 tokens``), any
    other to four significant figures (``74.51 GiB``, ``0.0009313 GiB``, ``0.9``), so a small value never shows
    as 0; the unit as the box's label spells it (:data:`UNIT_LABELS`), ``%`` after the number."""
    number = f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"
    if not unit or unit == "1":
        return number
    if unit == "%":
        return number + "%"
    return f"{number} {UNIT_LABELS.get(unit, unit)}"


def _plainly(typed: str, value: float) -> bool:
    """Whether ``typed`` is ``value`` written as a plain number (``8192``, ``0.9``), so an echo would repeat it."""
    return typed in (str(value), f"{value:g}", repr(value))


class TypedBoundField(forms.BoundField):
    """A typed number field bound to its form: :attr:`reading` says what the text in the box was read as."""

    @property
    def reading(self) -> str:
        """``Read '8k' as 8,000 tokens.`` when the box holds text that is not the number itself written plainly
        (a scale word, a unit, an expression, a percentage, grouped thousands), so whoever meant 8,192 sees what
        was taken; ``""`` when the box is empty, holds the plain number, has an error, or the form is not
        cleaned yet."""
        cleaned = getattr(self.form, "cleaned_data", None)
        if not self.form.is_bound or cleaned is None or self.errors or cleaned.get(self.name) is None:
            return ""
        return self.field.reading_of(self.data, cleaned[self.name])  # type: ignore[attr-defined]


class _TypedNumber:
    """What the typed number fields share: the input's engine ``unit``, the echo of what a box was read as, and
    bound messages that say it."""

    unit: str

    def reading_of(self, text: object, value: float) -> str:
        """``Read '8k' as 8,000 tokens.``: ``text`` (the box's text) read as ``value`` (in :attr:`unit`), or ``""``
        when the text is that number written plainly."""
        typed = str(text if text is not None else "").strip()
        if not typed or _plainly(typed, value):
            return ""
        return f"Read {quote(typed)} as {reading_text(value, self.unit)}."

    def get_bound_field(self, form, field_name):
        return TypedBoundField(form, self, field_name)  # type: ignore[arg-type]

    def clean(self, value):
        """The number in ``value``, checked; a bound's message says what the text was read as when that is not
        the plain number (``Must be at most 64. Read '0.5k' as 500 GPUs.``)."""
        number = self.to_python(value)  # type: ignore[attr-defined]
        self.validate(number)  # type: ignore[attr-defined]
        try:
            self.run_validators(number)  # type: ignore[attr-defined]
        except ValidationError as exc:
            said = self.reading_of(value, number)
            if not said:
                raise
            raise ValidationError([ValidationError(f"{message} {said}", code=error.code)
                                   for error in exc.error_list for message in error]) from None
        return number


class TypedFloatField(_TypedNumber, forms.FloatField):
    """A FloatField that also reads what candidates type in answers (calculators.engine.answers.read_input),
    in the input's ``unit`` (an engine unit: ``"GiB"``, ``"tok"``; ``""`` for a plain number). Bound, it says what
    it read (:class:`TypedBoundField`). The calculators, the simulator and the lab build theirs with
    :func:`field_for`."""

    def __init__(self, *, unit: str = "", **kwargs):
        self.unit = unit
        super().__init__(**kwargs)

    def to_python(self, value):
        try:
            number = super().to_python(value)
        except ValidationError:
            if isinstance(value, str) and value.strip():  # "8k", "90%", "3 GiB", "fast": the engine reads it
                return _read_typed(self.unit, value)
            raise
        if number is not None and not math.isfinite(number):
            raise ValidationError(f"Could not work out '{value}': a number in it is too large.", code="invalid")
        return number


class TypedIntegerField(_TypedNumber, forms.IntegerField):
    """An IntegerField that also reads typed expressions ("2^13", "8k", "8,192 tok"); the result must be whole.
    Bound, it says what it read (:class:`TypedBoundField`)."""

    def __init__(self, *, unit: str = "", **kwargs):
        self.unit = unit
        super().__init__(**kwargs)

    def to_python(self, value):
        try:
            return super().to_python(value)
        except ValidationError:
            if not (isinstance(value, str) and value.strip()):
                raise
            if not any(ch.isdigit() for ch in value):  # "abc": the sentence says a whole number, not "0.9 or 90%"
                raise ValidationError(f"{quote(value.strip())} is not a number; this field takes a whole number.",
                                      code="invalid") from None
            number = _read_typed(self.unit, value)
            if not float(number).is_integer():
                if _plainly(value.strip(), number):  # "1.5": the box already shows what was read
                    raise ValidationError(self.error_messages["invalid"], code="invalid") from None
                raise ValidationError(f"Read {quote(value.strip())} as {reading_text(number, self.unit)}; this field "
                                      "takes a whole number.", code="invalid") from None
            return int(number)


class CalculatorForm(forms.Form):
    """The inputs of one calculator family; ``clean()`` runs the family.

    Bind it to the query string: inputs missing from ``data`` take the family's
    defaults (the reference stack), so ``?model=llama-3.1-70b`` alone is a valid
    link; an input sent blank is an error unless it is optional. After
    ``is_valid()``, :attr:`result` holds the engine's result and :meth:`report`
    what the page shows.
    """

    def __init__(self, family: Family, data: Mapping[str, Any] | None = None, *, calibration=None, **kwargs):
        self.family = family
        self.specs = {spec.name: spec for spec in family.inputs}
        defaults = {spec.name: spec.default_text for spec in family.inputs}
        #: The user's applied calibration (:class:`calculators.models.Calibration`), and whether this page's card
        #: and precision are its own (then its constants are the defaults of the inputs it has).
        self.calibration = calibration
        self.calibration_applies = apply_user_calibration(defaults, data, calibration)
        data = without_carried_calibration(data, calibration, self.calibration_applies)
        if "model" in self.specs:
            defaults["config"] = ""
        data = data if data is not None else {}
        opening_defaults(defaults, data)
        named = with_aliases(tuple(family.inputs), {name: data.get(name) for name in data})  # older input names
        merged = {name: named.get(name, default) for name, default in defaults.items()}
        super().__init__(merged, **kwargs)
        self.previous = parse_previous(data.get("previous"))
        self.result: Result | None = None
        for name, field in _prototype_fields(tuple(family.inputs)).items():
            self.fields[name] = copy.deepcopy(field)
        if "model" in self.fields and str(merged.get("config") or "").strip():
            # The pasted config replaces the catalog model: the dropdown says so instead of showing a model
            # that is not the one computed (static/js/calculator.js keeps this in step while typing).
            attrs = self.fields["model"].widget.attrs
            attrs.update({"disabled": True, "aria-describedby": attrs["aria-describedby"] + " model-replaced"})

    @property
    def input_rows(self) -> list[InputRow]:
        """The inputs in the family's order, the pasted config right after the model."""
        rows = []
        for name in self.fields:
            spec = self.specs.get(name)
            kind = spec.kind if spec else "config"
            unit = UNIT_LABELS.get(spec.unit, spec.unit) if spec else ""
            rows.append(InputRow(self[name], kind, unit))
        return rows

    def clean(self) -> dict[str, Any]:
        """Run the family on the typed inputs; attach any engine error to the input it names."""
        cleaned = super().clean()
        if self.errors:
            return cleaned
        config = cleaned.get("config") or ""
        if "model" in self.specs and not config.strip() and not cleaned.get("model"):
            self.add_error("model", "Choose a model, or paste a config.json below.")
            return cleaned
        raw = {name: value for name, value in cleaned.items()
               if name in self.specs and value not in (None, "")}
        if config.strip():
            raw["config"] = config
        try:
            self.result = run_family(self.family, raw)
        except ConfigError as exc:
            self._attach(str(exc), "config")
        except EngineError as exc:
            self._attach(str(exc), getattr(exc, "field", None))
        except (ArithmeticError, ValueError, TypeError, RecursionError):
            # The engine's checks let something through that its arithmetic cannot
            # take (a config nested too deep, a count too large for a float).
            self._attach("These inputs give no finite result; check the config's sizes and counts.",
                         "config" if config.strip() else None)
        return cleaned

    def _attach(self, message: str, name: str | None) -> None:
        self.add_error(name if name in self.fields else None, message)

    @property
    def config_pasted(self) -> bool:
        """Whether a pasted config.json replaces the catalog model."""
        return bool(str(self.data.get("config") or "").strip())

    def state_query(self) -> str:
        """The inputs as typed, as a query string for the page's address (a reload or a shared link shows
        the same calculation). A pasted config is in it, as compact JSON, unless that makes the query longer
        than ``SHAREABLE_QUERY_MAX`` characters; then it is left out (:attr:`config_left_out`)."""
        return self._state[0]

    @property
    def config_left_out(self) -> bool:
        """Whether a config was pasted that the page's address cannot carry (too long)."""
        return self._state[1]

    @cached_property
    def _state(self) -> tuple[str, bool]:
        pairs = [(name, str(self.data.get(name, ""))) for name in self.fields if name != "config"]
        config = str(self.data.get("config", "") or "").strip() if "config" in self.fields else ""
        if not config:
            return urlencode(pairs), False
        try:  # the same config in fewer characters; text that is not JSON goes as typed (the form says why)
            config = json.dumps(json.loads(config), separators=(",", ":"), ensure_ascii=False)
        except (ValueError, RecursionError):
            pass
        with_config = urlencode([*pairs, ("config", config)])
        if len(with_config) <= SHAREABLE_QUERY_MAX:
            return with_config, False
        return urlencode(pairs), True

    @property
    def previous_json(self) -> str:
        """The previous step values, carried on unchanged while the inputs are wrong."""
        return json.dumps(self.previous, separators=(",", ":")) if self.previous else ""

    def report(self) -> Report | None:
        """What the results show, or ``None`` if the inputs did not compute."""
        if self.result is None:
            return None
        return build_report(self.result, self.previous)

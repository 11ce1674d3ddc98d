"""The lab's form: a run's setup and what was measured, checked field by field."""

from __future__ import annotations

from django import forms

from calculators.engine.catalog import KV_DTYPES, WEIGHT_DTYPES, default_catalog
from calculators.engine.errors import EngineError
from calculators.engine.procedures.inputs import InputSpec
from calculators.forms import field_for
from drills.lab.services import predict

# Engine inputs that come from another field of the form (flags read as text, the sweep length).
ENGINE_FIELDS = {"context": "engine_flags", "utilization": "engine_flags", "block_size": "engine_flags",
                 "avg_tokens": "prompt_tokens", "measured_tok_s": "decode_tok_s", "precision": "weights_dtype"}
MEASUREMENTS = ("startup_gib", "decode_tok_s", "knee_batch", "preempt_pct", "prefill_ms")


def _number(name: str, kind: str, label: str, hint: str, *, unit: str = "", minimum: float, maximum: float,
            default: int | None = None) -> forms.Field:
    """A number box of the lab: the calculators' field (:func:`calculators.forms.field_for`), so it reads what they
    read (``80 GB`` in a GiB box, ``8k``, ``2^13``, ``90%``), says what it read, and words its errors as they do.
    ``unit`` is the engine's (``"GiB"``, ``"tok/s"``, ``"ms"``; ``""`` for a plain count); a box with no
    ``default`` is optional."""
    field = field_for(InputSpec(name=name, kind=kind, default=default, help="", hint=hint, label=label, unit=unit,
                                minimum=minimum, maximum=maximum))
    field.widget.attrs.pop("placeholder", None)  # an empty measurement is one not taken, not a default
    if default is not None:
        field.initial = default
    return field


class LabFormBase(forms.Form):
    """A lab form: its ``model`` and ``gpu`` choose from the catalog (the reference stack first chosen), and its
    fields with an error are marked for the page (``is-invalid``, ``aria-invalid``) and point at their message
    (``id_<name>-error``, which templates/drills/_lab_field.html writes)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        catalog = default_catalog()
        self.fields["model"].choices = catalog.model_choices
        self.fields["gpu"].choices = catalog.gpu_choices
        self.fields["model"].initial = "llama-3.1-8b"
        self.fields["gpu"].initial = "h100-sxm5-80gb"

    def full_clean(self):
        """Validate, then mark each field with an error on its widget."""
        super().full_clean()
        for name in self.errors:
            if name in self.fields:
                attrs = self.fields[name].widget.attrs
                attrs["class"] = f"{attrs.get('class', '')} is-invalid".strip()
                attrs["aria-invalid"] = "true"
                attrs["aria-describedby"] = f"id_{name}-error"


class LabForm(LabFormBase):
    """One lab run. Setup fields are required; each measurement is optional, but at least one is needed."""

    model = forms.ChoiceField(label="Model", widget=forms.Select(attrs={"class": "form-select"}))
    gpu = forms.ChoiceField(label="Card", widget=forms.Select(attrs={"class": "form-select"}))
    gpus = _number("gpus", "int", "Cards", "Tensor-parallel degree.", unit="GPUs", minimum=1, maximum=64,
                   default=1)
    weights_dtype = forms.ChoiceField(label="Weight precision", choices=[(d, d) for d in WEIGHT_DTYPES],
                                      initial="bf16", widget=forms.Select(attrs={"class": "form-select"}))
    kv_dtype = forms.ChoiceField(label="KV-cache precision", choices=[(d, d) for d in KV_DTYPES], initial="bf16",
                                 widget=forms.Select(attrs={"class": "form-select"}))
    engine_flags = forms.CharField(
        label="Engine and flags", required=False, max_length=2000,
        help_text="As you typed them, e.g. vllm serve … --gpu-memory-utilization 0.9 --max-model-len 8192. "
                  "The memory fraction, context limit, block size, sequence cap and eager mode are read from them.",
        widget=forms.Textarea(attrs={"class": "form-control font-monospace", "rows": 3, "spellcheck": "false"}))
    startup_gib = _number("startup_gib", "float", "Memory in use after start-up, GiB per card",
                          "nvidia-smi's MiB ÷ 1,024, once the engine reports it is ready.", unit="GiB",
                          minimum=0.01, maximum=10_000)
    decode_tok_s = _number("decode_tok_s", "float", "Single-stream decode, tok/s",
                           "One request alone, output tokens ÷ decode time (not counting the first token).",
                           unit="tok/s", minimum=0.01, maximum=1_000_000)
    knee_batch = _number("knee_batch", "int", "Batch where per-token latency starts to climb",
                         "From a sweep of concurrent streams: the last batch before TPOT rises clearly.",
                         minimum=1, maximum=1_000_000)
    preempt_pct = _number("preempt_pct", "float", "Cache utilisation when preemption began, %",
                          "The engine's KV-cache usage metric at the first preemption.", unit="%", minimum=0,
                          maximum=100)
    prefill_ms = _number("prefill_ms", "float", "Prefill time, ms (optional)",
                         "For the prompt length beside it; the engine's own timing, not the client's TTFT.",
                         unit="ms", minimum=0.001, maximum=10_000_000)
    startup_log = forms.CharField(
        label="vLLM start-up log (optional)", required=False, max_length=200_000,
        help_text="Paste the engine's start-up output: the weights it loaded, the KV cache memory, blocks or "
                  "tokens, and the maximum concurrency are read into the ladder's steps, and kept with the run.",
        widget=forms.Textarea(attrs={"class": "form-control font-monospace", "rows": 4, "spellcheck": "false"}))
    prompt_tokens = _number("prompt_tokens", "int", "Prompt length, tokens",
                            "Also the length each sequence held during your batch sweep.", unit="tok", minimum=1,
                            maximum=10_000_000)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.prediction = None


    def setup(self) -> dict:
        data = self.cleaned_data
        return {key: data.get(key) for key in ("model", "gpu", "gpus", "weights_dtype", "kv_dtype")} | {
            "engine_flags": data.get("engine_flags", "")}

    def measured(self) -> dict:
        data = self.cleaned_data
        return {key: data.get(key) for key in (*MEASUREMENTS, "prompt_tokens", "startup_log")}

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if all(data.get(key) is None for key in MEASUREMENTS) and not data.get("startup_log"):
            raise forms.ValidationError("Enter at least one measurement: start-up memory, decode rate, the batch "
                                        "where latency climbs, the cache utilisation at preemption, a prefill "
                                        "time, or a start-up log.")
        if data.get("prefill_ms") is not None and not data.get("prompt_tokens"):
            self.add_error("prompt_tokens", "Give the prompt length the prefill time was measured for.")
        catalog = default_catalog()
        card = catalog.gpu(data["gpu"])
        if data.get("startup_gib") is not None and data["startup_gib"] > card.memory_gib * 1.001:
            self.add_error("startup_gib", f"More than the card holds: the {card.name} has "
                                          f"{card.memory_gib:,.2f} GiB as its driver reports it.")
        if self.errors:
            return data
        try:
            self.prediction = predict(self.setup(), self.measured())
        except EngineError as exc:
            name = ENGINE_FIELDS.get(getattr(exc, "field", None), getattr(exc, "field", None))
            if name in self.fields:
                self.add_error(name, str(exc))
            else:
                raise forms.ValidationError(str(exc)) from exc
        return data

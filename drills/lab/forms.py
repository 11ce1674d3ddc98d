"""The lab's form: a run's setup and what was measured, checked field by field."""

from __future__ import annotations

from django import forms

from calculators.engine.catalog import KV_DTYPES, WEIGHT_DTYPES, default_catalog
from calculators.engine.errors import EngineError
from drills.lab.services import predict

# Engine inputs that come from another field of the form (flags read as text, the sweep length).
ENGINE_FIELDS = {"context": "engine_flags", "utilization": "engine_flags", "block_size": "engine_flags",
                 "avg_tokens": "prompt_tokens", "measured_tok_s": "decode_tok_s", "precision": "weights_dtype"}
MEASUREMENTS = ("startup_gib", "decode_tok_s", "knee_batch", "preempt_pct", "prefill_ms")


def _number(**attrs) -> forms.NumberInput:
    return forms.NumberInput(attrs={"class": "form-control", "step": "any", "inputmode": "decimal", **attrs})


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
    gpus = forms.IntegerField(label="Cards", min_value=1, max_value=64, initial=1,
                              help_text="Tensor-parallel degree.",
                              widget=_number(step="1", inputmode="numeric"))
    weights_dtype = forms.ChoiceField(label="Weight precision", choices=[(d, d) for d in WEIGHT_DTYPES],
                                      initial="bf16", widget=forms.Select(attrs={"class": "form-select"}))
    kv_dtype = forms.ChoiceField(label="KV-cache precision", choices=[(d, d) for d in KV_DTYPES], initial="bf16",
                                 widget=forms.Select(attrs={"class": "form-select"}))
    engine_flags = forms.CharField(
        label="Engine and flags", required=False, max_length=2000,
        help_text="As you typed them, e.g. vllm serve … --gpu-memory-utilization 0.9 --max-model-len 8192. "
                  "The memory fraction, context limit, block size, sequence cap and eager mode are read from them.",
        widget=forms.Textarea(attrs={"class": "form-control font-monospace", "rows": 3, "spellcheck": "false"}))
    startup_gib = forms.FloatField(
        label="Memory in use after start-up, GiB per card", required=False, min_value=0.01, max_value=10_000,
        help_text="nvidia-smi's MiB ÷ 1,024, once the engine reports it is ready.", widget=_number())
    decode_tok_s = forms.FloatField(
        label="Single-stream decode, tok/s", required=False, min_value=0.01, max_value=1_000_000,
        help_text="One request alone, output tokens ÷ decode time (not counting the first token).",
        widget=_number())
    knee_batch = forms.IntegerField(
        label="Batch where per-token latency starts to climb", required=False, min_value=1, max_value=1_000_000,
        help_text="From a sweep of concurrent streams: the last batch before TPOT rises clearly.",
        widget=_number(step="1", inputmode="numeric"))
    preempt_pct = forms.FloatField(
        label="Cache utilisation when preemption began, %", required=False, min_value=0, max_value=100,
        help_text="The engine's KV-cache usage metric at the first preemption.", widget=_number())
    prefill_ms = forms.FloatField(
        label="Prefill time, ms (optional)", required=False, min_value=0.001, max_value=10_000_000,
        help_text="For the prompt length beside it; the engine's own timing, not the client's TTFT.",
        widget=_number())
    startup_log = forms.CharField(
        label="vLLM start-up log (optional)", required=False, max_length=200_000,
        help_text="Paste the engine's start-up output: the weights it loaded, the KV cache memory, blocks or "
                  "tokens, and the maximum concurrency are read into the ladder's steps, and kept with the run.",
        widget=forms.Textarea(attrs={"class": "form-control font-monospace", "rows": 4, "spellcheck": "false"}))
    prompt_tokens = forms.IntegerField(
        label="Prompt length, tokens", required=False, min_value=1, max_value=10_000_000,
        help_text="Also the length each sequence held during your batch sweep.",
        widget=_number(step="1", inputmode="numeric"))

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

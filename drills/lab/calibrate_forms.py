"""The lab's calibration form: the stack a benchmark ran on and its output, read, checked against each other and
fitted (issue 32). What was pasted is kept on every error."""

from __future__ import annotations

from django import forms

from calculators.engine.calibration import precision_of
from calculators.engine.catalog import KV_DTYPES, WEIGHT_DTYPES, default_catalog
from calculators.engine.errors import EngineError
from calculators.models import Calibration
from core.forms import CheckedLengthField
from drills.lab.bench_output import MAX_CHARS, Reading, read_benchmark
from drills.lab.fit import Fit, FitRefused, Stack, fit
from drills.lab.forms import LabFormBase

ENGINES = (("vllm", "vLLM"), ("tensorrt-llm", "TensorRT-LLM"), ("sglang", "SGLang"), ("other", "Other"))


def _select() -> forms.Select:
    return forms.Select(attrs={"class": "form-select"})


class CalibrateForm(LabFormBase):
    """The stack (model, card, TP degree, precisions, engine) and the pasted output; ``name`` only to save.

    After ``is_valid()``: :attr:`reading` (what was read), :attr:`stack` and :attr:`fit` (the fitted constants).
    A line that cannot be read, numbers that contradict each other, a setup the output names differently from
    the form, or a fit that cannot be made each add one sentence to ``output``.
    """

    model = forms.ChoiceField(label="Model", widget=_select())
    gpu = forms.ChoiceField(label="Card", widget=_select())
    gpus = forms.IntegerField(label="Cards (TP)", min_value=1, max_value=64, initial=1,
                              widget=forms.NumberInput(attrs={"class": "form-control", "inputmode": "numeric"}))
    weights_dtype = forms.ChoiceField(label="Weight precision", choices=[(d, d) for d in WEIGHT_DTYPES],
                                      initial="bf16", widget=_select())
    kv_dtype = forms.ChoiceField(label="KV-cache precision", choices=[(d, d) for d in KV_DTYPES], initial="bf16",
                                 widget=_select())
    engine = forms.ChoiceField(label="Engine", choices=ENGINES, initial="vllm", widget=_select())
    output = forms.CharField(
        label="Benchmark output", max_length=MAX_CHARS, strip=False,
        help_text="Paste what vllm bench serve printed (one block or a sweep of several) or its --save-result JSON, "
                  "a trtllm-bench report, a genai-perf or AIPerf table with its command, or type one point a line: "
                  "input=1024 output=128 concurrency=8 ttft=45 tpot=12 (ms).",
        widget=forms.Textarea(attrs={"class": "form-control font-monospace", "rows": 10, "spellcheck": "false",
                                     "autocomplete": "off"}))
    name = CheckedLengthField(label="Name", required=False, max_length=80,
                           help_text="To save the fit, e.g. “H100 vLLM 0.11, my cluster”.",
                           widget=forms.TextInput(attrs={"class": "form-control", "autocomplete": "off"}))

    def __init__(self, *args, owner=None, saving: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.saving = saving
        self.reading: Reading | None = None
        self.stack: Stack | None = None
        self.fit: Fit | None = None


    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if self.saving:
            name = (data.get("name") or "").strip()
            if not name:
                self.add_error("name", "Name the calibration to save it.")
            elif Calibration.objects.filter(owner=self.owner, name=name).exists():
                self.add_error("name", f"You already have a calibration named “{name}”; choose another name.")
        reading = self.reading = read_benchmark(data["output"])
        for problem in reading.problems:
            self.add_error("output", problem)
        if reading.problems:
            return data
        for problem in self._setup_conflicts(reading, data):
            self.add_error("output", problem)
        if self.errors:
            return data
        self.stack = Stack(data["model"], data["gpu"], data["gpus"], data["weights_dtype"], data["kv_dtype"],
                           data["engine"] if data["engine"] != "other" else "")
        try:
            self.fit = fit(self.stack, reading.points)
        except FitRefused as exc:
            self.add_error("output", str(exc))
        except EngineError as exc:
            field = getattr(exc, "field", None)
            self.add_error(field if field in self.fields else None, str(exc))
        return data

    @staticmethod
    def _setup_conflicts(reading: Reading, data: dict) -> list[str]:
        """One sentence per setup field the output names differently from the form."""
        setup, found = reading.setup, []
        catalog = default_catalog()
        where = f"The {reading.format_label}"
        if setup.model and setup.model != data["model"]:
            found.append(f"{where} names {setup.model_named} ({setup.model}), but the form says {data['model']}: "
                         "choose the model it ran.")
        if setup.gpu and setup.gpu != data["gpu"]:
            found.append(f"{where} ran on {setup.gpu_named} ({catalog.gpu(setup.gpu).name}), but the form says "
                         f"{catalog.gpu(data['gpu']).name}.")
        if setup.tp and setup.tp != data["gpus"]:
            found.append(f"{where} says TP {setup.tp}, but the form says {data['gpus']} "
                         f"card{'s' if data['gpus'] != 1 else ''}.")
        if setup.weights_dtype and precision_of(setup.weights_dtype) != precision_of(data["weights_dtype"]):
            found.append(f"{where} says the weights are {setup.weights_dtype}, but the form says "
                         f"{data['weights_dtype']}.")
        return found

    def save(self) -> Calibration:
        """Store the fit with its source (call after ``is_valid()`` with ``saving``)."""
        data = self.cleaned_data
        return Calibration.objects.create(
            owner=self.owner, name=data["name"].strip(), model=data["model"], gpu=data["gpu"], gpus=data["gpus"],
            weights_dtype=data["weights_dtype"], kv_dtype=data["kv_dtype"], engine=self.stack.engine,
            values=self.fit.values, fit=self.fit.as_dict(), source_format=self.reading.format,
            source_text=data["output"])

"""The simulator page's form and what its charts and tables show.

:class:`SimulatorForm` has one field per simulator input the page offers (the
calculators' :func:`~calculators.forms.field_for` builds each from its
:class:`InputSpec`) plus the rates to sweep; ``clean()`` runs the simulator's
own checks (:func:`~calculators.sim.config.clean_sim_inputs`), so an error lands
beside the input it names. The sweep runs along one axis (``sweep_axis``): arrival rates (open loop, ``sweep``)
or closed-loop concurrencies (``concurrency_sweep``, each a loop of that many clients with the think time).
A trace or a pasted config go through the API or ``manage.py simulate``.

:func:`sweep_view` turns a finished :class:`~calculators.simulation.SweepStatus`
into rows for the tables and the JSON the charts read.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from django import forms

from calculators.engine.errors import EngineError
from calculators.forms import apply_user_calibration, field_for, without_carried_calibration
from calculators.sim import config as C
from calculators.sim.results import KNEE_SHARE, knee_text, queue_growing
from calculators.sim.run import BAND_UTILISATION

PAGE_INPUTS = (C.MODEL, C.GPU, C.GPUS, C.WEIGHTS_DTYPE, C.KV_DTYPE, C.PROMPT_TOKENS, C.PROMPT_DIST, C.OUTPUT_TOKENS,
               C.OUTPUT_DIST, C.PREFIX_FRACTION, C.ARRIVAL, C.CV, C.DURATION_S, C.TTFT_SLO_MS, C.TPOT_SLO_MS,
               C.REPLICAS, C.ROUTER, C.MAX_BATCHED_TOKENS, C.MAX_NUM_SEQS, C.BANDWIDTH_EFFICIENCY, C.MFU,
               C.PREFILL_MFU, C.ALLREDUCE_LATENCY_US, C.STEP_OVERHEAD_MS, C.CAPACITY_POLICY, C.SEED,
               C.THINK_TIME_S, C.PP, C.MICROBATCHES)
# The rates an empty field sweeps. They bracket the default stack's knee (Llama-3.1-8B on one H100 SXM, the
# calibration table's efficiencies, 60 s): 40 req/s holds its targets and 45 and 50 end with a growing queue, so
# the page names a knee (40 req/s) instead of "at least 40", as it did when the sweep stopped at 40.
DEFAULT_SWEEP = "5,10,15,20,25,30,35,40,45,50"
DEFAULT_CONCURRENCY_SWEEP = "1,2,4,8,16,32,64,128"
SWEEP_AXES = (("rate", "Arrival rates (open loop)"), ("concurrency", "Concurrent clients (closed loop)"))
TABLE_ROWS = 24  # the over-time table shows the series in this many slices


class SimulatorForm(forms.Form):
    """The page's inputs; after ``is_valid()``, ``inputs`` holds the simulator's cleaned inputs."""

    def __init__(self, data=None, calibration=None):
        # An efficiency left blank is the calibration table's for the card (clean_sim_inputs); a user's applied
        # calibration (the lab) starts those fields from its own constants instead.
        defaults = {spec.name: "" if spec.name in C.CALIBRATED_INPUTS else spec.default_text for spec in PAGE_INPUTS}
        defaults.update(duration_s=f"{C.DEFAULT_DURATION_S:g}", sweep=DEFAULT_SWEEP, sweep_axis="rate",
                        concurrency_sweep=DEFAULT_CONCURRENCY_SWEEP)
        #: The user's applied calibration, and whether the page's card and precision are its own (its constants
        #: then start the fields, and the page says so).
        self.calibration = calibration
        self.calibration_applies = apply_user_calibration(defaults, data, calibration)
        data = without_carried_calibration(data, calibration, self.calibration_applies)
        if data is not None:  # a field left out of the query shows (and means) its default
            data = {name: data.get(name, default) for name, default in defaults.items()}
        super().__init__(data)
        for spec in PAGE_INPUTS:
            field = field_for(spec)
            field.required = False
            field.initial = defaults[spec.name]
            if spec.name == "model":  # this page has no paste box: a config goes through the command or the API
                field.help_text = "From the catalog; simulate a pasted config.json with the command or the API."
            if spec.name == "think_time_s":
                field.help_text = "Closed loop only: what each client waits after a response before its next request."
            if spec.name in C.CALIBRATED_INPUTS:  # blank: the calibration table's value for the card
                field.help_text = (f"Blank: the calibration table's value for the card and precision (the "
                                   f"default {spec.default_text} where it has no row).")
                field.widget.attrs["placeholder"] = "from the table"
            self.fields[spec.name] = field
        self.fields["sweep"] = forms.CharField(
            label="Arrival rates to sweep", initial=DEFAULT_SWEEP, required=False, max_length=200,
            help_text=f"Requests per second, comma-separated, at most {C.MAX_SWEEP_POINTS}.",
            widget=forms.TextInput(attrs={"class": "form-control", "inputmode": "decimal"}))
        self.fields["sweep_axis"] = forms.ChoiceField(
            label="Sweep", choices=SWEEP_AXES, initial="rate", required=False,
            help_text="Open loop: requests arrive at each rate whatever the server does. Closed loop: each client "
                      "sends its next request when its last one ends (as vllm bench serve --max-concurrency).",
            widget=forms.Select(attrs={"class": "form-select"}))
        self.fields["concurrency_sweep"] = forms.CharField(
            label="Concurrent clients to sweep", initial=DEFAULT_CONCURRENCY_SWEEP, required=False, max_length=200,
            help_text=f"Closed loop: clients, comma-separated, at most {C.MAX_SWEEP_POINTS}.",
            widget=forms.TextInput(attrs={"class": "form-control", "inputmode": "numeric"}))
        self.inputs: dict[str, Any] | None = None
        #: Whether the rates field was left empty, so the default sweep ran (the page names the rates it used).
        self.default_sweep = False

    def calibration_warnings(self) -> list[str]:
        """Where the simulated workload lies outside what the applied calibration was fitted on."""
        if not self.calibration_applies or self.inputs is None:
            return []
        return self.calibration.outside(prompt_tokens=self.inputs["prompt_tokens"],
                                        output_tokens=self.inputs["output_tokens"], tp=self.inputs["gpus"])

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        raw = {name: value for name, value in cleaned.items() if value not in (None, "")}
        if raw.pop("sweep_axis", "rate") == "concurrency":
            raw.pop("sweep", None)
            raw.setdefault("concurrency_sweep", DEFAULT_CONCURRENCY_SWEEP)
        else:  # an open loop: its cache key keeps no closed-loop input
            raw.pop("concurrency_sweep", None)
            raw.pop("think_time_s", None)
            self.default_sweep = "sweep" not in raw  # an empty field sweeps the default rates; the page says so
            raw.setdefault("sweep", DEFAULT_SWEEP)
        try:
            self.inputs = C.clean_sim_inputs(raw)
        except EngineError as exc:
            name = getattr(exc, "field", None)
            self.add_error(name if name in self.fields else None, self.labelled(str(exc), name))
        return cleaned

    def labelled(self, message: str, name: str | None) -> str:
        """The simulator's ``message`` in the page's words: the inputs' names (``max_num_seqs``, as the command and
        the API call them) become the labels beside the boxes (``sweep: every rate…`` → ``Arrival rates to sweep:
        every rate…``).

        A name with an underscore is replaced wherever it stands (in quotes inside a sentence); ``name`` (the input
        the error is about) also when it opens the message, as ``sweep`` does (elsewhere a plain word like "sweep"
        is prose, or an option such as ``--sweep``, and stays). Raises nothing.
        """
        for field_name, field in self.fields.items():
            if "_" in field_name:
                message = re.sub(rf"(?<![\w-]){re.escape(field_name)}\b", partial(_label_at, str(field.label)), message)
        if name in self.fields and re.match(rf"{re.escape(name)}\b", message):
            message = str(self.fields[name].label) + message[len(name):]
        return message


def _label_at(label: str, match: re.Match) -> str:
    """``label`` for an input's name found at ``match``: as is when it opens the message, else in quotes."""
    return label if match.start() == 0 else f"“{label}”"


def _slices(series: dict, rows: int) -> list[dict]:
    """The series in ``rows`` slices: peak KV use, running and waiting at the slice's end, preemptions in it."""
    count = len(series["t_s"])
    size = max(1, -(-count // rows))
    out = []
    for start in range(0, count, size):
        end = min(count, start + size)
        out.append({"t_s": series["t_s"][end - 1], "kv": max(series["kv_used_fraction"][start:end]),
                    "running": series["running"][end - 1], "waiting": series["waiting"][end - 1],
                    "preemptions": sum(series["preemptions"][start:end])})
    return out


def sweep_view(status, show: str | None) -> dict:
    """Rows and chart data for a finished sweep; ``show`` picks the rate (or concurrency) whose series is drawn
    (default: the highest). Over concurrencies a row's offered load is what its clients sent per second (arrived ÷
    duration), against which its goodput is read."""
    points = [(rate, result) for rate, result in status.points if result and "summary" in result]
    summaries = [result["summary"] for _, result in points]
    rates = [rate for rate, _ in points]
    chosen = len(points) - 1
    for index, rate in enumerate(rates):
        if show is not None and f"{rate:g}" == show:
            chosen = index
    series = points[chosen][1]["series"]
    knee_req_s = status.knee_req_s()
    closed = status.by_concurrency
    offered = [s["arrived"] / s["duration_s"] if closed else rate for rate, s in zip(rates, summaries)]
    rows = [{"rate": rate, "s": s, "offered": load, "meets": s["goodput_req_s"] >= KNEE_SHARE * load,
             "growing": queue_growing(s), "is_knee": knee_req_s is not None and rate == knee_req_s}
            for rate, s, load in zip(rates, summaries, offered)]
    # Over rates, the knee in words from the one rule (results.knee_text: "at least" the highest rate swept);
    # over concurrencies, the number of clients.
    if closed:
        knee_words = "none" if knee_req_s is None else f"{knee_req_s:g} clients"
    else:
        knee_words = knee_text(summaries)

    def pick(metric, key):
        return [s[metric][key] for s in summaries]

    chart = {
        "rates": rates,
        "ttft": {"p50": pick("ttft_ms", "p50"), "p90": pick("ttft_ms", "p90"), "p99": pick("ttft_ms", "p99")},
        "tpot": {"p50": pick("tpot_ms", "p50"), "p90": pick("tpot_ms", "p90"), "p99": pick("tpot_ms", "p99")},
        "targets": {"ttft_ms": status.inputs["ttft_slo_ms"], "tpot_ms": status.inputs["tpot_slo_ms"]},
        "goodput": [s["goodput_req_s"] for s in summaries],
        "throughput": [s["throughput_req_s"] for s in summaries],
        "knee": knee_req_s,
        "offered": [round(load, 6) for load in offered],
        "x_label": "concurrent clients" if closed else "arrival rate, req/s",
        "offered_label": "requests sent" if closed else "arrival rate",
        "series": {"t_s": series["t_s"], "kv": [round(100 * v, 2) for v in series["kv_used_fraction"]],
                   "preemptions": series["preemptions"], "running": series["running"],
                   "waiting": series["waiting"]},
    }
    return {"rows": rows, "chart": chart, "shown_rate": rates[chosen], "rates": rates,
            "banded": any("band" in s for s in summaries), "band_utilisation": BAND_UTILISATION,
            "slices": _slices(series, TABLE_ROWS), "knee": knee_req_s, "knee_text": knee_words,
            "at_sweep_top": not closed and knee_req_s is not None and knee_req_s == max(rates),
            "rates_text": ", ".join(f"{rate:g}" for rate in rates), "share": KNEE_SHARE, "closed": closed,
            "axis": "Clients" if closed else "Rate, req/s", "axis_words": "the concurrency" if closed else
            "the arrival rate", "unit": "clients" if closed else "req/s"}

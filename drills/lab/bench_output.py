"""Benchmark tools' outputs read into a setup and measured points (the lab's calibration, issue 32).

:func:`read_benchmark` takes what a user pasted and recognises one of these formats (the versions whose
output was checked against the tools' sources):

- ``vllm-summary``: the block ``vllm bench serve`` prints (``============ Serving Benchmark Result
  ============``), as vLLM 0.6–0.11 print it (``benchmarks/benchmark_serving.py`` before 0.10, ``vllm bench
  serve`` since; 0.10 added the peak lines, which are read and ignored). A paste may hold several blocks (a
  sweep); each is one point. The lines ``Maximum request concurrency:`` and ``Traffic request rate:`` (printed
  before the progress bar) and a pasted ``vllm bench serve …`` command line give the load when the block does
  not;
- ``vllm-json``: the file ``--save-result`` writes (vLLM 0.6–0.11: ``model_id``, ``request_rate``,
  ``max_concurrency``, ``duration``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``output_throughput``, ``total_token_throughput``, ``mean_ttft_ms``, ``p99_ttft_ms``,
  ``mean_tpot_ms``, ``p99_tpot_ms``, ``mean_itl_ms``, ``p99_itl_ms``; one object or a list of them);
- ``trtllm-bench``: the report ``trtllm-bench … throughput`` prints (TensorRT-LLM 0.20–1.0, PyTorch back end:
  ``= PYTORCH BACKEND``, ``= MACHINE DETAILS``, ``= WORLD + RUNTIME INFORMATION``, ``= REQUEST DETAILS``,
  ``= PERFORMANCE OVERVIEW`` with the streaming lines ``[TTFT] P99`` and ``[TPOT] P99``);
- ``genai-perf`` / ``aiperf``: the ``LLM Metrics`` table genai-perf (Triton 24.x–25.x) and AIPerf (0.1–0.3)
  print, with the ``genai-perf profile …`` / ``aiperf profile …`` command line for the load;
- ``typed``: one point a line, ``key=value`` pairs (:data:`TYPED_KEYS`), ``#`` starting a comment.

Nothing is evaluated: numbers are read with ``float`` after a pattern. A line that cannot be read gives one
sentence naming the line and what was expected (:attr:`Reading.problems`); inconsistent numbers (a request
throughput that is not the requests over the duration, a p99 below the median) give one sentence each too.
Pure Python, no Django.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field

from calculators.engine.catalog import Catalog, default_catalog

FORMATS = {
    "vllm-summary": "vllm bench serve summary (vLLM 0.6–0.11)",
    "vllm-json": "vllm bench serve --save-result JSON (vLLM 0.6–0.11)",
    "trtllm-bench": "trtllm-bench throughput report (TensorRT-LLM 0.20–1.0)",
    "genai-perf": "genai-perf LLM Metrics table (Triton 24.x–25.x)",
    "aiperf": "AIPerf LLM Metrics table (AIPerf 0.1–0.3)",
    "typed": "typed points (key=value)",
}
#: Two figures that should agree (a throughput and the counts over the duration) may differ by this share:
#: the tools print two decimals and count the duration slightly differently.
CONSISTENCY_SHARE = 0.05
MAX_CHARS = 200_000

#: The metrics of a point (all in ms or per second), in the order the comparison shows them.
METRICS = ("ttft_mean_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_p99_ms", "itl_mean_ms", "itl_p99_ms",
           "request_throughput", "output_throughput")


@dataclass
class Point:
    """One measured load: the workload (mean input and output tokens, a rate in req/s or a concurrency; both
    ``None`` when the output does not say), and what was measured (ms, req/s, tok/s; ``None`` when absent)."""

    label: str
    input_tokens: float | None = None
    output_tokens: float | None = None
    rate: float | None = None
    concurrency: int | None = None
    requests: int | None = None
    duration_s: float | None = None
    ttft_mean_ms: float | None = None
    ttft_median_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_mean_ms: float | None = None
    tpot_median_ms: float | None = None
    tpot_p99_ms: float | None = None
    itl_mean_ms: float | None = None
    itl_median_ms: float | None = None
    itl_p99_ms: float | None = None
    e2e_mean_ms: float | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    total_input_tokens: float | None = None
    total_output_tokens: float | None = None

    @property
    def load(self) -> str:
        """``"closed"`` (a concurrency), ``"open"`` (a rate) or ``""`` (not said)."""
        if self.concurrency:
            return "closed"
        return "open" if self.rate else ""

    def as_dict(self) -> dict:
        """The point as JSON-ready data."""
        return dict(self.__dict__)


@dataclass
class Setup:
    """The setup an output names (each ``None`` when it does not): catalog ids where the name maps to one, and
    the names as printed."""

    model: str | None = None
    model_named: str = ""
    gpu: str | None = None
    gpu_named: str = ""
    tp: int | None = None
    weights_dtype: str | None = None
    kv_dtype: str | None = None
    engine: str = ""
    flags: str = ""

    def as_dict(self) -> dict:
        """The setup as JSON-ready data."""
        return dict(self.__dict__)


@dataclass
class Reading:
    """What was read: the ``format`` (a key of :data:`FORMATS`), the setup, the points, and one sentence per
    line that could not be read or number that contradicts another (``problems``)."""

    format: str
    setup: Setup = field(default_factory=Setup)
    points: list[Point] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def format_label(self) -> str:
        return FORMATS[self.format]


# --- names to catalog ids ---------------------------------------------------------------------------------

#: Card names as tools and nvidia-smi print them → catalog ids (longest match first).
GPU_NAMES = (
    ("h100 pcie", "h100-pcie-80gb"), ("h100 nvl", "h100-pcie-80gb"), ("h100", "h100-sxm5-80gb"),
    ("h200", "h200-sxm-141gb"), ("a100-sxm4-80gb", "a100-sxm4-80gb"), ("a100 80gb", "a100-sxm4-80gb"),
    ("a100-pcie-80gb", "a100-sxm4-80gb"), ("a100", "a100-40gb"), ("l40s", "l40s"), ("l4", "l4"),
    ("b300", "b300"), ("b200", "b200"), ("mi300x", "mi300x"),
)
#: Precision names as engines print them → the catalog's weight formats.
DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16", "fp8": "fp8",
          "float8": "fp8", "fp8_e4m3": "fp8", "nvfp4": "nvfp4", "fp4": "nvfp4", "mxfp4": "mxfp4", "int8": "int8",
          "w8a8": "int8", "int4": "int4", "w4a16": "int4", "int4_awq": "int4"}


def _model_key(text: str) -> str:
    name = text.strip().rstrip("/").split("/")[-1].lower()
    name = re.sub(r"^meta-", "", name)
    return re.sub(r"-(instruct|chat|hf|it|base)$", "", name)


def catalog_model(name: str, catalog: Catalog | None = None) -> str | None:
    """The catalog id of a model named as a Hugging Face repository or a path
    (``meta-llama/Meta-Llama-3.1-8B-Instruct`` → ``llama-3.1-8b``), or ``None``."""
    catalog = catalog or default_catalog()
    key = _model_key(name)
    if not key:
        return None
    for model in catalog.models.values():
        repos = [model.name.split(" ")[0]] + re.findall(r"as ([\w./-]+)\)", model.name)
        if key == model.id or any(_model_key(repo) == key for repo in repos):
            return model.id
    return None


def catalog_gpu(name: str) -> str | None:
    """The catalog id of a card as a tool prints it (``NVIDIA H100 80GB HBM3`` → ``h100-sxm5-80gb``), or None."""
    text = name.lower()
    for pattern, gpu in GPU_NAMES:
        if re.search(rf"\b{re.escape(pattern)}\b", text):
            return gpu
    return None


def dtype_of(name: str) -> str | None:
    """A weight format from an engine's name for it (``bfloat16`` → ``bf16``), or None (``None``, ``auto``)."""
    return DTYPES.get(name.strip().lower())


# --- numbers ----------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _number(text: str) -> float | None:
    """A finite number, or None; ``inf`` is read as ``math.inf`` (a rate vLLM prints so)."""
    text = text.strip().replace(",", "")
    if text.lower() in ("inf", "infinity"):
        return math.inf
    if not _NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _line_problem(number: int, line: str, expected: str) -> str:
    shown = line.strip()
    shown = shown if len(shown) <= 80 else shown[:77] + "…"
    return f"Line {number}, “{shown}”: expected {expected}."


# --- vllm bench serve: the printed summary ----------------------------------------------------------------

#: The block's labels → the point's fields.
VLLM_LABELS = {
    "successful requests": "requests", "maximum request concurrency": "concurrency",
    "request rate configured (rps)": "rate", "benchmark duration (s)": "duration_s",
    "total input tokens": "total_input_tokens", "total generated tokens": "total_output_tokens",
    "request throughput (req/s)": "request_throughput", "output token throughput (tok/s)": "output_throughput",
    "total token throughput (tok/s)": "total_token_throughput",
    "mean ttft (ms)": "ttft_mean_ms", "median ttft (ms)": "ttft_median_ms", "p99 ttft (ms)": "ttft_p99_ms",
    "mean tpot (ms)": "tpot_mean_ms", "median tpot (ms)": "tpot_median_ms", "p99 tpot (ms)": "tpot_p99_ms",
    "mean itl (ms)": "itl_mean_ms", "median itl (ms)": "itl_median_ms", "p99 itl (ms)": "itl_p99_ms",
    "mean e2el (ms)": "e2e_mean_ms",
}
#: Labels of the block that are read past (other percentiles, goodput, newer versions' peaks, accuracy).
VLLM_SKIPPED = re.compile(r"^(p\d+(\.\d+)?|std|median) (ttft|tpot|itl|e2el)|^(median|p\d+) e2el|peak |request goodput|"
                          r"failed requests|accuracy|invalid response|total token throughput|"
                          r"max(imum)? (output|concurrent)", re.I)
_VLLM_HEADER = re.compile(r"^=+ ?Serving Benchmark Result ?=+$")
_RULE = re.compile(r"^[-=]{3,}[^:]*[-=]{3,}$|^=+$")
_LABELLED = re.compile(r"^([^:]+):\s*(.*?)\s*$")


def _command_flags(line: str) -> dict[str, str]:
    """``--flag value`` pairs of a pasted command line (quotes honoured; ``--flag=value`` and one-letter ``-m
    value`` too)."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    flags: dict[str, str] = {}
    for index, word in enumerate(words):
        if not (word.startswith("--") or re.match(r"^-[A-Za-z]$", word)):
            continue
        name, _, value = word.lstrip("-").partition("=")
        if not value and index + 1 < len(words) and not words[index + 1].startswith("-"):
            value = words[index + 1]
        flags[name.replace("_", "-")] = value
    return flags


def _read_vllm_summary(lines: list[str], reading: Reading, catalog: Catalog) -> None:
    concurrency: int | None = None
    rate: float | None = None
    command: dict[str, str] = {}
    point: Point | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip().lstrip("#").strip()  # pasted from a comment or a notebook, say
        if not line:
            continue
        if re.search(r"\b(vllm bench serve|benchmark_serving\.py)\b", line):
            command = _command_flags(line)
            if command.get("model"):
                reading.setup.model_named = command["model"]
                reading.setup.model = catalog_model(command["model"], catalog)
            reading.setup.engine = "vllm"
            continue
        if _VLLM_HEADER.match(line):
            if point is not None:
                reading.points.append(point)
            point = Point(f"Result {len(reading.points) + 1} (line {number})", rate=rate, concurrency=concurrency)
            continue
        labelled = _LABELLED.match(line)
        if point is None:  # before a block: the load lines vLLM prints before its progress bar
            if labelled and labelled.group(1).lower() == "maximum request concurrency":
                value = _number(labelled.group(2))
                concurrency = int(value) if value and math.isfinite(value) else None
            elif labelled and labelled.group(1).lower() == "traffic request rate":
                value = _number(labelled.group(2))
                rate = value if value and math.isfinite(value) else None
            continue
        if _RULE.match(line):
            if set(line) == {"="}:  # the block's closing rule
                reading.points.append(point)
                point, concurrency, rate = None, None, None
            continue
        if not labelled:
            reading.problems.append(_line_problem(number, raw, "“Label: number” as vllm bench serve prints it"))
            continue
        label, text = labelled.group(1).strip().lower(), labelled.group(2)
        name = VLLM_LABELS.get(label)
        if name is None:
            if not VLLM_SKIPPED.search(label):
                reading.problems.append(_line_problem(
                    number, raw, "one of the labels vllm bench serve prints (Successful requests, Benchmark "
                                 "duration (s), Mean TTFT (ms), P99 TPOT (ms), …)"))
            continue
        if text.lower() in ("none", "") and name in ("concurrency", "rate"):
            continue
        value = _number(text)
        if value is None:
            reading.problems.append(_line_problem(number, raw, f"a number after “{labelled.group(1).strip()}:”"))
            continue
        if name in ("concurrency", "requests"):
            setattr(point, name, int(value))
        elif name == "rate":
            point.rate = value if math.isfinite(value) else None
        else:
            setattr(point, name, value)
    if point is not None:
        reading.points.append(point)
    for point in reading.points:
        if point.concurrency is None and command.get("max-concurrency"):
            value = _number(command["max-concurrency"])
            point.concurrency = int(value) if value and math.isfinite(value) else None
        if point.rate is None and command.get("request-rate"):
            value = _number(command["request-rate"])
            point.rate = value if value and math.isfinite(value) else None
        _per_request_lengths(point)


def _per_request_lengths(point: Point) -> None:
    """Mean lengths from the totals, and a burst without a cap read as that many clients at once."""
    if point.requests:
        if point.total_input_tokens is not None and point.input_tokens is None:
            point.input_tokens = point.total_input_tokens / point.requests
        if point.total_output_tokens is not None and point.output_tokens is None:
            point.output_tokens = point.total_output_tokens / point.requests
        if not point.concurrency and not point.rate:  # rate inf, no cap: every request sent at once
            point.concurrency = point.requests


# --- vllm bench serve --save-result JSON ------------------------------------------------------------------

VLLM_JSON = {"duration": "duration_s", "completed": "requests", "total_input_tokens": "total_input_tokens",
             "total_output_tokens": "total_output_tokens", "request_throughput": "request_throughput",
             "output_throughput": "output_throughput", "total_token_throughput": "total_token_throughput",
             "mean_ttft_ms": "ttft_mean_ms", "median_ttft_ms": "ttft_median_ms", "p99_ttft_ms": "ttft_p99_ms",
             "mean_tpot_ms": "tpot_mean_ms", "median_tpot_ms": "tpot_median_ms", "p99_tpot_ms": "tpot_p99_ms",
             "mean_itl_ms": "itl_mean_ms", "median_itl_ms": "itl_median_ms", "p99_itl_ms": "itl_p99_ms",
             "mean_e2el_ms": "e2e_mean_ms"}


def _read_vllm_json(data, reading: Reading, catalog: Catalog) -> None:
    runs = data if isinstance(data, list) else [data]
    for index, run in enumerate(runs, start=1):
        where = f"Result {index}" if len(runs) > 1 else "The JSON"
        if not isinstance(run, dict) or "request_throughput" not in run:
            reading.problems.append(f"{where} is not a vllm bench serve --save-result object: expected the keys "
                                    "request_throughput, duration, completed, mean_ttft_ms, …")
            continue
        point = Point(f"Result {index}")
        for key, name in VLLM_JSON.items():
            if key not in run or run[key] is None:
                continue
            value = run[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                reading.problems.append(f"{where}, key “{key}”: expected a number, read {str(value)[:40]!r}.")
                continue
            setattr(point, name, int(value) if name == "requests" else float(value))
        rate = run.get("request_rate")
        if isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate):
            point.rate = float(rate)
        cap = run.get("max_concurrency")
        if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
            point.concurrency = cap
        lens = run.get("input_lens")
        if isinstance(lens, list) and lens and all(isinstance(x, (int, float)) for x in lens):
            point.input_tokens = sum(lens) / len(lens)
        lens = run.get("output_lens")
        if isinstance(lens, list) and lens and all(isinstance(x, (int, float)) for x in lens):
            point.output_tokens = sum(lens) / len(lens)
        _per_request_lengths(point)
        reading.points.append(point)
        name = run.get("model_id") or run.get("tokenizer_id")
        if isinstance(name, str) and not reading.setup.model_named:
            reading.setup.model_named = name
            reading.setup.model = catalog_model(name, catalog)
        if run.get("backend"):
            reading.setup.engine = "vllm" if str(run["backend"]).startswith(("vllm", "openai")) else str(run["backend"])


# --- trtllm-bench ------------------------------------------------------------------------------------------

TRTLLM_LABELS = {
    "number of requests": "requests", "average input length (tokens)": "input_tokens",
    "average output length (tokens)": "output_tokens", "number of concurrent requests": "concurrency",
    "request throughput (req/sec)": "request_throughput", "total output throughput (tokens/sec)": "output_throughput",
    "total token throughput (tokens/sec)": "total_token_throughput", "total latency (ms)": "duration_s",
    "average request latency (ms)": "e2e_mean_ms", "average time-to-first-token [ttft] (ms)": "ttft_mean_ms",
    "average time-per-output-token [tpot] (ms)": "tpot_mean_ms",
}
TRTLLM_SETUP = {"model", "model path", "tensorrt llm version", "tensorrt-llm version", "dtype", "kv cache dtype",
                "quantization", "tp size", "pp size", "ep size", "max runtime batch size", "max runtime tokens",
                "scheduling policy", "kv memory percentage", "issue rate (req/sec)", "engine directory",
                "max input length", "max sequence length"}
_TRTLLM_PERCENTILE = re.compile(r"^\[(TTFT|TPOT|GTPS|Latency)\]\s+(\w+)\s*:\s*(.+)$", re.I)


def _read_trtllm(lines: list[str], reading: Reading, catalog: Catalog) -> None:
    point = Point("trtllm-bench report")
    setup = reading.setup
    setup.engine = "tensorrt-llm"
    section = ""
    settings: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or set(line) <= {"=", "-"} or line.startswith("-- "):
            continue
        if line.startswith("= "):
            section = line[2:].strip().upper()
            continue
        if section == "MACHINE DETAILS":
            gpu = catalog_gpu(line.split(",")[0])
            if gpu:
                setup.gpu, setup.gpu_named = gpu, line.split(",")[0].strip()
            continue
        percentile = _TRTLLM_PERCENTILE.match(line)
        if percentile:
            kind, stat, text = percentile.group(1).upper(), percentile.group(2).lower(), percentile.group(3)
            value = _number(text)
            if value is None:
                reading.problems.append(_line_problem(number, raw, f"a number after “[{kind}] {stat.upper()}:”"))
            elif kind in ("TTFT", "TPOT") and stat in ("p50", "p99"):
                setattr(point, f"{kind.lower()}_{'median' if stat == 'p50' else 'p99'}_ms", value)
            continue
        labelled = _LABELLED.match(line)
        if not labelled or section == "":
            if section in ("PERFORMANCE OVERVIEW", "REQUEST DETAILS", "WORLD + RUNTIME INFORMATION"):
                reading.problems.append(_line_problem(number, raw, "“Label: number” as trtllm-bench prints it"))
            continue
        label, text = labelled.group(1).strip().lower(), labelled.group(2).strip()
        if label in TRTLLM_SETUP:
            settings[label] = text
            continue
        name = TRTLLM_LABELS.get(label)
        if name is None:
            continue  # per-user and per-GPU rates, and lines newer versions add
        value = _number(text)
        if value is None:
            reading.problems.append(_line_problem(number, raw, f"a number after “{labelled.group(1).strip()}:”"))
            continue
        if name == "duration_s":
            value /= 1000
        if name in ("requests", "concurrency"):
            value = round(value)
            setattr(point, name, int(value))
        else:
            setattr(point, name, value)
    if settings.get("model"):
        setup.model_named = settings["model"]
        setup.model = catalog_model(settings["model"], catalog)
    tp = _number(settings.get("tp size", ""))
    setup.tp = int(tp) if tp else None
    quant = settings.get("quantization", "")
    setup.weights_dtype = dtype_of(quant) or dtype_of(settings.get("dtype", ""))
    setup.kv_dtype = dtype_of(settings.get("kv cache dtype", "")) or setup.weights_dtype and (
        "bf16" if setup.weights_dtype in ("bf16", "fp16") else None)
    flags = [f"{key}: {settings[key]}" for key in ("max runtime batch size", "max runtime tokens",
                                                    "scheduling policy", "kv memory percentage") if key in settings]
    setup.flags = "; ".join(flags)
    if point.requests and point.total_output_tokens is None and point.output_tokens is not None:
        point.total_output_tokens = point.output_tokens * point.requests
    reading.points.append(point)


# --- genai-perf / AIPerf ------------------------------------------------------------------------------------

GENAI_ROWS = {
    "time to first token (ms)": "ttft", "time to first token": "ttft",
    "inter token latency (ms)": "itl", "inter token latency": "itl",
    "request latency (ms)": "e2e", "output sequence length": "output_tokens",
    "output sequence length (tokens)": "output_tokens", "input sequence length": "input_tokens",
    "input sequence length (tokens)": "input_tokens", "output token throughput (per sec)": "output_throughput",
    "output token throughput (tokens/sec)": "output_throughput", "request throughput (per sec)": "request_throughput",
    "request throughput (requests/sec)": "request_throughput", "request count (requests)": "requests",
}
_TABLE_SPLIT = re.compile(r"[│┃|]")


def _read_genai(lines: list[str], reading: Reading, catalog: Catalog) -> None:
    point = Point(f"{reading.format} table")
    columns: list[str] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if re.search(r"\b(genai-perf|aiperf)\s+profile\b", line):
            flags = _command_flags(line)
            for name in ("concurrency",):
                value = _number(flags.get(name, ""))
                if value and math.isfinite(value):
                    point.concurrency = int(value)
            value = _number(flags.get("request-rate", ""))
            if value and math.isfinite(value):
                point.rate = value
            model = flags.get("model") or flags.get("m")
            if model:
                reading.setup.model_named = model
                reading.setup.model = catalog_model(model, catalog)
            continue
        if not _TABLE_SPLIT.search(line):
            continue
        cells = [cell.strip() for cell in _TABLE_SPLIT.split(line)]
        cells = [cell for cell in cells if cell != ""]
        if not cells:
            continue
        if cells[0].lower() in ("statistic", "metric"):
            columns = [cell.lower() for cell in cells[1:]]
            continue
        row = GENAI_ROWS.get(cells[0].lower())
        if row is None or not columns:
            continue
        values = dict(zip(columns, cells[1:]))
        for stat, text in values.items():
            if text.upper() == "N/A":
                continue
            if _number(text) is None:
                reading.problems.append(_line_problem(number, raw, f"numbers or N/A in the “{cells[0]}” row"))
                break
        avg = _number(values.get("avg", "N/A")) if values.get("avg", "N/A").upper() != "N/A" else None
        p99 = _number(values.get("p99", "N/A")) if values.get("p99", "N/A").upper() != "N/A" else None
        p50 = _number(values.get("p50", "N/A")) if values.get("p50", "N/A").upper() != "N/A" else None
        if row in ("ttft", "itl"):
            setattr(point, f"{row}_mean_ms", avg)
            setattr(point, f"{row}_p99_ms", p99)
            setattr(point, f"{row}_median_ms", p50)
        elif row == "e2e":
            point.e2e_mean_ms = avg
        elif row == "requests":
            point.requests = int(avg) if avg is not None else None
        else:
            setattr(point, row, avg)
    if point.itl_mean_ms is not None:  # genai-perf's inter-token latency is (e2e − TTFT) ÷ (tokens − 1): TPOT
        point.tpot_mean_ms, point.tpot_p99_ms = point.itl_mean_ms, point.itl_p99_ms
    if not columns:
        reading.problems.append(f"No “Statistic” header row was found: expected the {reading.format} LLM Metrics "
                                "table with its header (Statistic │ avg │ min │ max │ p99 …).")
    reading.points.append(point)


# --- typed points -------------------------------------------------------------------------------------------

#: Keys of a typed point → (field, what it is).
TYPED_KEYS = {
    "input": ("input_tokens", "mean prompt tokens"), "output": ("output_tokens", "mean output tokens"),
    "concurrency": ("concurrency", "clients kept busy"), "rate": ("rate", "requests per second sent"),
    "requests": ("requests", "requests completed"), "duration": ("duration_s", "seconds"),
    "ttft": ("ttft_mean_ms", "mean TTFT, ms"), "ttft_p99": ("ttft_p99_ms", "p99 TTFT, ms"),
    "tpot": ("tpot_mean_ms", "mean TPOT, ms"), "tpot_p99": ("tpot_p99_ms", "p99 TPOT, ms"),
    "itl": ("itl_mean_ms", "mean ITL, ms"), "itl_p99": ("itl_p99_ms", "p99 ITL, ms"),
    "req_s": ("request_throughput", "requests per second completed"),
    "tok_s": ("output_throughput", "output tokens per second"),
}


def _read_typed(lines: list[str], reading: Reading) -> None:
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        point = Point(f"Line {number}")
        good = True
        for item in re.split(r"[\s,;]+", line):
            if not item:
                continue
            key, sep, text = item.partition("=")
            key = key.strip().lower()
            if not sep or key not in TYPED_KEYS:
                reading.problems.append(_line_problem(number, raw, f"key=value pairs with keys among "
                                                                   f"{', '.join(TYPED_KEYS)} (not “{item}”)"))
                good = False
                break
            value = _number(text)
            if value is None or not math.isfinite(value) or value <= 0:
                reading.problems.append(_line_problem(number, raw, f"a positive number after “{key}=”"))
                good = False
                break
            name = TYPED_KEYS[key][0]
            setattr(point, name, int(value) if name in ("concurrency", "requests") else value)
        if good:
            reading.points.append(point)


# --- checks and the entry point -----------------------------------------------------------------------------


def _differs(a: float, b: float) -> bool:
    return abs(a - b) > CONSISTENCY_SHARE * max(abs(a), abs(b))


def consistency_problems(point: Point) -> list[str]:
    """One sentence per pair of the point's numbers that contradict each other."""
    problems = []
    if point.requests and point.duration_s and point.request_throughput:
        expected = point.requests / point.duration_s
        if _differs(expected, point.request_throughput):
            problems.append(f"{point.label}: {point.requests:,} requests in {point.duration_s:g} s is "
                            f"{expected:.2f} req/s, but the output says {point.request_throughput:g} req/s.")
    if point.total_output_tokens and point.duration_s and point.output_throughput:
        expected = point.total_output_tokens / point.duration_s
        if _differs(expected, point.output_throughput):
            problems.append(f"{point.label}: {point.total_output_tokens:,.0f} output tokens in {point.duration_s:g} s "
                            f"is {expected:,.1f} tok/s, but the output says {point.output_throughput:g} tok/s.")
    for metric in ("ttft", "tpot", "itl"):
        median, p99 = getattr(point, f"{metric}_median_ms"), getattr(point, f"{metric}_p99_ms")
        if median is not None and p99 is not None and p99 < median:
            problems.append(f"{point.label}: the p99 {metric.upper()} ({p99:g} ms) is below its median "
                            f"({median:g} ms), which no set of requests gives.")
    return problems


def detect(text: str) -> str:
    """The format of pasted ``text`` (a key of :data:`FORMATS`)."""
    if "Serving Benchmark Result" in text:
        return "vllm-summary"
    if "PERFORMANCE OVERVIEW" in text and "= " in text:
        return "trtllm-bench"
    if re.search(r"LLM Metrics", text):
        return "aiperf" if "AIPerf" in text or re.search(r"\baiperf\s+profile\b", text) else "genai-perf"
    if text.lstrip().startswith(("{", "[")):
        return "vllm-json"
    return "typed"


def read_benchmark(text: str, catalog: Catalog | None = None) -> Reading:
    """Read pasted benchmark output (:data:`FORMATS`) into a :class:`Reading`. Never raises for bad text: every
    line that cannot be read, and every contradiction, is a sentence in ``problems``; no points at all is one
    too."""
    catalog = catalog or default_catalog()
    text = (text or "")[:MAX_CHARS]
    fmt = detect(text)
    reading = Reading(fmt)
    lines = text.splitlines()
    if fmt == "vllm-json":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            line = getattr(exc, "lineno", None)
            where = f" (line {line}, column {exc.colno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
            reading.problems.append(f"The paste starts like JSON but is not valid JSON{where}: expected the file "
                                    "vllm bench serve --save-result writes.")
            return reading
        _read_vllm_json(data, reading, catalog)
    elif fmt == "vllm-summary":
        _read_vllm_summary(lines, reading, catalog)
    elif fmt == "trtllm-bench":
        _read_trtllm(lines, reading, catalog)
    elif fmt in ("genai-perf", "aiperf"):
        _read_genai(lines, reading, catalog)
    else:
        _read_typed(lines, reading)
    for point in reading.points:
        reading.problems.extend(consistency_problems(point))
    if not reading.points and not reading.problems:
        reading.problems.append("Nothing was read: paste the summary vllm bench serve prints, its --save-result "
                                "JSON, a trtllm-bench report, a genai-perf or AIPerf table, or typed points such "
                                "as “input=1024 output=128 concurrency=8 ttft=45 tpot=12”.")
    return reading

"""The requests a run serves: arrival times, prompt and output lengths, prefix groups.

Generated workloads are deterministic per seed: each stream (arrivals, prompt
lengths, output lengths, prefix groups) has its own :class:`random.Random`
seeded from a string (hashed with SHA-512, so independent of
``PYTHONHASHSEED``), and changing one stream's settings leaves the others as
they were.

- Arrivals: Poisson (exponential gaps of mean 1 ÷ rate) or gamma gaps with a
  coefficient of variation ``cv`` (shape 1 ÷ cv², scale cv² ÷ rate, the same
  mean; cv > 1 is burstier than Poisson).
- Lengths: ``fixed`` (every request the mean), ``uniform`` (whole numbers from
  ½ to 1½ × the mean, as vLLM's benchmark's range ratio 0.5 draws them) or
  ``lognormal`` (σ = :data:`LOGNORMAL_SIGMA`, μ = ln mean − σ²/2 so the mean is
  kept; rounded, at least 1, at most the input bound).
- Prefix: every request belongs to one of :data:`PREFIX_GROUPS` groups (a
  system prompt each); its first ``round(prefix_fraction × mean prompt)``
  tokens, at most all but one of its prompt, are its group's shared prefix.
- A trace is CSV text with the header ``arrival_s,prompt_tokens,output_tokens``.
"""

from __future__ import annotations

import csv
import io
import math
import random
from dataclasses import dataclass

from calculators.engine.errors import InputError

from .config import DEFAULT_DURATION_S, MAX_DURATION_S, MAX_REQUESTS, MAX_TOKENS, MIN_DURATION_S

PREFIX_GROUPS = 16
LOGNORMAL_SIGMA = 0.5
UNIFORM_RANGE_RATIO = 0.5
TRACE_HEADER = ("arrival_s", "prompt_tokens", "output_tokens")


@dataclass(frozen=True)
class Workload:
    """Requests in arrival order: ``arrival_ms``, ``prompt``, ``output`` (tokens), ``group``
    (prefix group), ``shared`` (tokens of the group's prefix at the prompt's start), over
    ``duration_ms`` of simulated time at a nominal ``rate_req_s`` (None for a trace)."""

    arrival_ms: list
    prompt: list
    output: list
    group: list
    shared: list
    duration_ms: float
    rate_req_s: float | None
    concurrency: int | None = None  # closed loop: this many clients, each sending when its last request ends
    think_ms: float = 0.0
    stagger: tuple = ()  # closed loop: when each client sends its first request, as a share of one cycle

    def __len__(self) -> int:
        return len(self.arrival_ms)


def _lengths(rng: random.Random, mean: int, dist: str, count: int) -> list[int]:
    if dist == "fixed":
        return [mean] * count
    if dist == "uniform":
        low = max(1, math.ceil(mean * (1 - UNIFORM_RANGE_RATIO)))
        high = min(MAX_TOKENS, math.floor(mean * (1 + UNIFORM_RANGE_RATIO)))
        return [rng.randint(low, high) for _ in range(count)]
    mu = math.log(mean) - LOGNORMAL_SIGMA**2 / 2
    return [min(MAX_TOKENS, max(1, round(rng.lognormvariate(mu, LOGNORMAL_SIGMA)))) for _ in range(count)]


def _shared(prompts: list[int], prefix_tokens: int) -> list[int]:
    return [min(prefix_tokens, p - 1) for p in prompts] if prefix_tokens else [0] * len(prompts)


def generate(inputs: dict, rate: float | None = None) -> Workload:
    """A workload drawn from cleaned simulator ``inputs`` (``rate`` overrides ``inputs["rate"]``,
    for a sweep). Arrivals fall in [0, duration). Raises :class:`InputError` if the draw exceeds
    :data:`MAX_REQUESTS` requests."""
    duration_s = inputs["duration_s"] or DEFAULT_DURATION_S
    seed = inputs["seed"]
    if inputs.get("concurrency"):
        return _closed(inputs, duration_s, seed)
    rate = rate or inputs["rate"]
    # Gaps drawn at unit rate and scaled: every rate of a sweep sees the same pattern of arrivals.
    rng = random.Random(f"{seed}:arrivals")
    arrivals = []
    t = 0.0
    if inputs["arrival"] == "gamma":
        shape = 1 / inputs["cv"] ** 2
        scale = inputs["cv"] ** 2
        gap = lambda: rng.gammavariate(shape, scale)  # noqa: E731
    else:
        gap = lambda: rng.expovariate(1.0)  # noqa: E731
    while True:
        t += gap() / rate
        if t >= duration_s:
            break
        if len(arrivals) >= MAX_REQUESTS:
            raise InputError(f"The draw passed {MAX_REQUESTS:,} requests; shorten the duration or lower the rate.",
                             field="duration_s")
        arrivals.append(t * 1000)
    count = len(arrivals)
    prompts = _lengths(random.Random(f"{seed}:prompts"), inputs["prompt_tokens"], inputs["prompt_dist"], count)
    outputs = _lengths(random.Random(f"{seed}:outputs"), inputs["output_tokens"], inputs["output_dist"], count)
    groups_rng = random.Random(f"{seed}:groups")
    groups = [groups_rng.randrange(PREFIX_GROUPS) for _ in range(count)]
    prefix = round(inputs["prefix_fraction"] * inputs["prompt_tokens"])
    return Workload(arrivals, prompts, outputs, groups, _shared(prompts, prefix), duration_s * 1000, rate)


def client_stagger(clients: int, seed: int) -> tuple[float, ...]:
    """When each of ``clients`` closed-loop clients sends its first request, as a share of one cycle (one
    request's service time plus the think time; the run sets the cycle): client ``k`` at ``(k + u_k − u_0) ÷
    clients``, ``u_k`` uniform in [0, 1) drawn from ``seed`` (stream ``{seed}:clients``), so the first sends at 0,
    one client starts in each ``1 ÷ clients`` of the cycle, and the shares rise with ``k`` (docs/architecture.md
    §13: real clients drift apart; a run of fixed lengths started in lock-step would never leave it)."""
    rng = random.Random(f"{seed}:clients")
    draws = [rng.random() for _ in range(clients)]
    return tuple((k + u - draws[0]) / clients for k, u in enumerate(draws))


def _closed(inputs: dict, duration_s: float, seed: int) -> Workload:
    """A closed loop's requests: ``concurrency`` clients, staggered over one cycle (:func:`client_stagger`), each
    sending its next request ``think_time_s`` after its last one ends (the run sets every arrival time, in the
    order requests are sent; the ones never sent keep an infinite arrival). Lengths and groups are drawn as an
    open loop's, for the most requests a run may serve (:data:`MAX_REQUESTS`)."""
    count = MAX_REQUESTS
    clients = min(inputs["concurrency"], count)
    arrivals = [math.inf] * count
    prompts = _lengths(random.Random(f"{seed}:prompts"), inputs["prompt_tokens"], inputs["prompt_dist"], count)
    outputs = _lengths(random.Random(f"{seed}:outputs"), inputs["output_tokens"], inputs["output_dist"], count)
    groups_rng = random.Random(f"{seed}:groups")
    groups = [groups_rng.randrange(PREFIX_GROUPS) for _ in range(count)]
    prefix = round(inputs["prefix_fraction"] * inputs["prompt_tokens"])
    return Workload(arrivals, prompts, outputs, groups, _shared(prompts, prefix), duration_s * 1000, None,
                    concurrency=clients, think_ms=inputs["think_time_s"] * 1000,
                    stagger=client_stagger(clients, seed))


def sent(workload: Workload, count: int) -> Workload:
    """The first ``count`` requests of ``workload`` (a closed loop's, those it sent)."""
    return Workload(workload.arrival_ms[:count], workload.prompt[:count], workload.output[:count],
                    workload.group[:count], workload.shared[:count], workload.duration_ms, workload.rate_req_s,
                    workload.concurrency, workload.think_ms, workload.stagger)


def _trace_number(row: int, name: str, text: str, *, whole: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"Trace row {row}: {name} {text.strip()!r} is not a number.", field="trace") from None
    if not math.isfinite(value) or value < 0 or (whole and (value < 1 or not value.is_integer())):
        need = "a whole number of at least 1" if whole else "a number of seconds, at least 0"
        raise InputError(f"Trace row {row}: {name} must be {need}, not {text.strip()}.", field="trace")
    if whole and value > MAX_TOKENS:
        raise InputError(f"Trace row {row}: {name} must be at most {MAX_TOKENS:,}, not {text.strip()}.",
                         field="trace")
    return value


def parse_trace(text: str, inputs: dict) -> Workload:
    """A workload read from trace CSV ``text`` (header ``arrival_s,prompt_tokens,output_tokens``).

    Rows are sorted by arrival. The duration is ``inputs["duration_s"]`` or, without it, the
    last arrival rounded up to a whole second (at least :data:`MIN_DURATION_S`). Raises
    :class:`InputError` (field ``trace``, naming the row) for a missing header, a malformed row,
    more than :data:`MAX_REQUESTS` rows, or an arrival at or beyond the duration or
    :data:`MAX_DURATION_S`.
    """
    reader = csv.reader(io.StringIO(text.strip()))
    header = tuple(cell.strip().lower() for cell in next(reader, ()))
    if header != TRACE_HEADER:
        raise InputError(f"A trace starts with the header {','.join(TRACE_HEADER)}.", field="trace")
    rows = []
    for number, cells in enumerate(reader, start=2):
        if not cells or all(not cell.strip() for cell in cells):
            continue
        if len(cells) != 3:
            raise InputError(f"Trace row {number} has {len(cells)} fields, not 3.", field="trace")
        if len(rows) >= MAX_REQUESTS:
            raise InputError(f"A trace may hold at most {MAX_REQUESTS:,} requests.", field="trace")
        arrival = _trace_number(number, "arrival_s", cells[0], whole=False)
        if arrival >= MAX_DURATION_S:
            raise InputError(f"Trace row {number}: arrival_s must be below {MAX_DURATION_S:,} s.", field="trace")
        rows.append((arrival, int(_trace_number(number, "prompt_tokens", cells[1], whole=True)),
                     int(_trace_number(number, "output_tokens", cells[2], whole=True))))
    if not rows:
        raise InputError("The trace has no requests.", field="trace")
    rows.sort()
    duration_s = inputs["duration_s"] or max(float(MIN_DURATION_S), float(math.ceil(rows[-1][0] + 1e-9)))
    if rows[-1][0] >= duration_s:
        raise InputError(f"The trace's last arrival ({rows[-1][0]:g} s) is not before the duration "
                         f"({duration_s:g} s).", field="trace")
    prompts = [row[1] for row in rows]
    groups_rng = random.Random(f"{inputs['seed']}:groups")
    groups = [groups_rng.randrange(PREFIX_GROUPS) for _ in rows]
    prefix = round(inputs["prefix_fraction"] * sum(prompts) / len(prompts))
    return Workload([row[0] * 1000 for row in rows], prompts, [row[2] for row in rows], groups,
                    _shared(prompts, prefix), duration_s * 1000, None)


def workload_for(inputs: dict, rate: float | None = None) -> Workload:
    """The trace's workload if ``inputs`` hold one, else a generated one at ``rate``."""
    if inputs.get("trace"):
        return parse_trace(inputs["trace"], inputs)
    return generate(inputs, rate)

"""The ``fleet`` family: from a traffic forecast to whole nodes, by Little's law (formula 6).

Steps, in order: ``concurrency`` (arrival rate × mean time in system: the
requests in flight on average), ``replicas`` (concurrency ÷ (slots per replica
× target occupancy), rounded up, then whole spare replicas added), ``gpus``
(replicas × cards per replica) and ``nodes`` (GPUs ÷ cards per node, rounded
up: nodes are bought whole).

The module also holds what the planning families share: the
``rounded-nodes-down`` misconception, :class:`~..formula.Formula` (ceilings and
floors that agree with exact arithmetic) and :func:`check_packing`.
"""

from __future__ import annotations

from typing import Any

from sympy import ceiling

from ..catalog import Catalog
from ..errors import InputError
from ..formula import Formula, Var, near_whole, whole_ceil
from ..formulas import product, ratio, total
from .base import PACKING, Family, Offline, Plan, Result, StepSpec, format_number
from .inputs import InputSpec, catalog_or_default, clean_inputs

# --- what the planning families share ------------------------------------------------------------



def check_packing(gpus_per_replica: int, gpus_per_node: int, field: str) -> None:
    """Raise :class:`InputError` (on ``field``) unless replicas pack whole into nodes: the
    replica's cards divide a node's (1, 2, 4 or 8 on an 8-GPU node) or fill whole nodes (16, 24 …).
    Only then is ⌈GPUs ÷ GPUs per node⌉ the number of nodes the replicas occupy."""
    if gpus_per_node % gpus_per_replica and gpus_per_replica % gpus_per_node:
        raise InputError(PACKING.format(replica=gpus_per_replica, node=gpus_per_node), field=field)


# --- formulas ------------------------------------------------------------------------------------

CONCURRENCY = Formula(
    "concurrency",
    (Var("rate", "req/s", "mean arrival rate"),
     Var("latency_s", "s", "mean time a request spends in the system")),
    lambda s: product(s["rate"], s["latency_s"]),
    label="Requests in flight (Little's law)",
)

REPLICAS = Formula(
    "replicas",
    (Var("concurrency", "users", "requests in flight"),
     Var("users_per_replica", "users", "requests one replica holds at once"),
     Var("occupancy", "1", "target occupancy"),
     Var("spares", "replicas", "spare replicas")),
    lambda s: total(ceiling(ratio(s["concurrency"], product(s["users_per_replica"], s["occupancy"]))),
                    s["spares"]),
    label="Replicas (rounded up, then spares)",
)

GPUS = Formula(
    "gpus",
    (Var("replicas", "replicas", "replicas"), Var("gpus_per_replica", "GPUs", "cards per replica")),
    lambda s: product(s["replicas"], s["gpus_per_replica"]),
)

NODES = Formula(
    "nodes",
    (Var("gpus", "GPUs", "GPUs"), Var("gpus_per_node", "GPUs", "cards per node")),
    lambda s: ceiling(ratio(s["gpus"], s["gpus_per_node"])),
    label="Nodes (rounded up)",
)

FORMULAS = (CONCURRENCY, REPLICAS, GPUS, NODES)

SPECS = [
    StepSpec(CONCURRENCY, label="Requests in flight (rate × time in system)"),
    StepSpec(REPLICAS,
             {"concurrency": "concurrency"}, rounding="ceil",
             label="Replicas (at the target occupancy, rounded up, plus spares)"),
    StepSpec(GPUS, {"replicas": "replicas"}, rounding="ceil", label="GPUs (replicas × cards per replica)"),
    StepSpec(NODES, {"gpus": "gpus"}, rounding="ceil", label="Nodes (whole nodes, rounded up)"),
]

# --- inputs --------------------------------------------------------------------------------------

RATE = InputSpec("rate", "float", 20.0, "mean arrival rate, requests per second", minimum=0,
                 exclusive_minimum=True, maximum=1_000_000, unit="req/s", label="Request rate")
LATENCY_S = InputSpec("latency_s", "float", 20.0, "mean time a request spends in the system (queue, "
                      "prefill and decode), seconds", minimum=0, exclusive_minimum=True, maximum=86_400, unit="s",
                      label="Mean latency")
USERS_PER_REPLICA = InputSpec("users_per_replica", "int", 53, "requests one replica holds at once (the "
                              "capacity ladder's count: 53 for the reference stack)", minimum=1,
                              maximum=1_000_000, unit="users", label="Users per replica")
GPUS_PER_REPLICA = InputSpec("gpus_per_replica", "int", 1, "cards per replica (tensor-parallel degree)",
                             minimum=1, maximum=1024, unit="GPUs", label="GPUs per replica")
OCCUPANCY = InputSpec("occupancy", "float", 0.8, "target fraction of each replica's slots busy on average",
                      minimum=0, maximum=1, exclusive_minimum=True, label="Target occupancy")
GPUS_PER_NODE = InputSpec("gpus_per_node", "int", 8, "cards per node (nodes are bought whole)", minimum=1,
                          maximum=1024, unit="GPUs", label="GPUs per node")
SPARES = InputSpec("spares", "int", 0, "whole spare replicas added after rounding (N+K)", minimum=0,
                   maximum=10_000, unit="replicas", label="Spare replicas")

INPUTS = (RATE, LATENCY_S, USERS_PER_REPLICA, GPUS_PER_REPLICA, OCCUPANCY, GPUS_PER_NODE, SPARES)
STEP_KEYS = tuple(spec.key for spec in SPECS)


def _plain(value: float) -> str:
    return format_number(value, "1")


def _count(number: float, word: str) -> str:
    """``1 node``, ``2 nodes``: a whole count with its noun."""
    return f"{number:,.0f} {word}{'' if number == 1 else 's'}"


def _notes(inputs: dict[str, Any], values: dict[str, float]) -> list[str]:
    rate, latency, users = inputs["rate"], inputs["latency_s"], inputs["users_per_replica"]
    occupancy, per_node, spares = inputs["occupancy"], inputs["gpus_per_node"], inputs["spares"]
    planned = users * occupancy
    raw_replicas = values["concurrency"] / planned
    rounded = whole_ceil(raw_replicas)
    if near_whole(raw_replicas) is not None:
        replicas = f"{_plain(values['concurrency'])} ÷ {_plain(planned)} is exactly {_count(rounded, 'replica')}"
    else:
        replicas = (f"{_plain(values['concurrency'])} ÷ {_plain(planned)} = {_plain(raw_replicas)} replicas round "
                    f"up to {_count(rounded, 'replica')}")
    notes = [
        f"Little's law: {_plain(rate)} req/s × {_plain(latency)} s = {_plain(values['concurrency'])} requests in "
        f"flight on average. It is a mean: bursts run above it, which is what the occupancy headroom absorbs.",
        f"Each replica holds {users:,} requests; planned at {occupancy:.0%} occupancy it carries "
        f"{_plain(planned)}. Queues grow without bound as occupancy nears 1, so sizing at full capacity "
        f"promises latency you will not see.",
        f"Rounding: {replicas}; {_count(values['gpus'], 'GPU')} take {_count(values['nodes'], 'whole node')} of "
        f"{per_node}. Counts are ceilings, never floors: a fraction of a replica serves no one and nodes are "
        f"bought whole.",
    ]
    idle = values["nodes"] * per_node - values["gpus"]
    if idle:
        notes.append(f"The last node has {_count(idle, 'idle GPU')}: room for a spare or a canary replica.")
    if spares:
        notes.append(f"{_count(spares, 'spare replica')} added after rounding (whole replicas, N+{spares}), so a "
                     f"failed replica or a rolling deploy does not cut capacity below the plan.")
    else:
        notes.append("No spare replicas: losing one (a failure or a rolling deploy) drops capacity below the "
                     "plan; N+1 is the usual minimum.")
    if inputs["gpus_per_replica"] > per_node:
        notes.append(f"A replica of {inputs['gpus_per_replica']} GPUs spans "
                     f"{_count(inputs['gpus_per_replica'] // per_node, 'node')}.")
    return notes


def plan_fleet(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Requests in flight, replicas, GPUs and nodes for a traffic forecast.

    ``raw`` holds ``rate`` (req/s), ``latency_s`` (s), ``users_per_replica``,
    ``gpus_per_replica``, ``occupancy`` (0–1], ``gpus_per_node`` and ``spares``
    (whole replicas added after rounding); missing ones take the defaults (20
    req/s, 20 s, the reference stack's 53 users on one GPU, 0.8, 8, 0). Raises
    :class:`~..errors.InputError` for a value out of bounds or a replica that
    does not pack into whole nodes.
    """
    catalog = catalog_or_default(catalog)
    inputs = clean_inputs(INPUTS, raw, catalog)
    check_packing(inputs["gpus_per_replica"], inputs["gpus_per_node"], "gpus_per_replica")
    given = {name: float(inputs[name]) for name in
             ("rate", "latency_s", "users_per_replica", "gpus_per_replica", "occupancy", "gpus_per_node", "spares")}

    def finish(result: Result) -> None:
        result.notes.extend(_notes(inputs, result.values))

    return Plan("fleet", inputs, SPECS, given, [], finish=finish)


# --- problems ------------------------------------------------------------------------------------

USERS_DRAWN = (8, 12, 16, 24, 32, 48, 53, 64, 96, 128, 191, 256)
GPUS_PER_REPLICA_DRAWN = (1, 1, 2, 4, 8)
OCCUPANCY_DRAWN = (0.6, 0.7, 0.75, 0.8, 0.8, 0.85, 0.9)
SPARES_DRAWN = (0, 0, 1, 1, 2)


def generate_fleet(rng, catalog: Catalog) -> dict:
    """A fleet problem: 1–200 req/s, 2–60 s in the system (whole numbers, so the concurrency is
    whole), a replica of 1–8 GPUs holding 8–256 requests, occupancy 0.6–0.9, 8-GPU nodes, 0–2 spares."""
    return {
        "rate": float(rng.randint(1, 200)),
        "latency_s": float(rng.randint(2, 60)),
        "users_per_replica": rng.choice(USERS_DRAWN),
        "gpus_per_replica": rng.choice(GPUS_PER_REPLICA_DRAWN),
        "occupancy": rng.choice(OCCUPANCY_DRAWN),
        "gpus_per_node": 8,
        "spares": rng.choice(SPARES_DRAWN),
    }


def describe_fleet(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem as an interviewer would put it."""
    i = {spec.name: inputs.get(spec.name, spec.default) for spec in INPUTS}
    cards = "one GPU" if i["gpus_per_replica"] == 1 else f"{i['gpus_per_replica']} GPUs (tensor parallel)"
    spares = (f" Keep {i['spares']} spare replica{'s' if i['spares'] != 1 else ''} on top of the plan."
              if i["spares"] else " Plan no spare replicas.")
    return (
        f"Traffic averages {_plain(i['rate'])} requests per second, and a request spends {_plain(i['latency_s'])} s "
        f"in the system on average (queueing, prefill and decode). A replica runs on {cards} and holds "
        f"{i['users_per_replica']:,} requests at once; you plan to keep replicas {i['occupancy']:.0%} occupied. "
        f"Nodes have {i['gpus_per_node']} GPUs.{spares} How many requests are in flight, and how many "
        f"replicas, GPUs and whole nodes do you buy?"
    )


# What a strong worked answer does at each stage: the bank template's rubric, the moves that earn the
# marks, never a value (every review draws fresh numbers).
FLEET_RUBRIC = (
    "Applies Little's law: concurrency is rate × time in system",
    "Plans each replica below full occupancy",
    "Rounds replicas, GPUs and nodes up, never down",
    "Adds whole spare replicas (N+1) and names the leftover cards",
)


FAMILIES = (
    Family("fleet", "Fleet sizing",
           "Little's law from a traffic forecast to replicas, GPUs and whole nodes, with headroom and spares.",
           INPUTS, plan_fleet, generate=generate_fleet, order=80, describe=describe_fleet,
           headlines=("replicas", "nodes"), chapter="14-capacity-planning", roles=("architect", "manager"),
           rubric=FLEET_RUBRIC,
           offline=Offline(checks=({"kind": "packing", "replica": "gpus_per_replica", "node": "gpus_per_node",
                                    "message": PACKING},))),
)

"""The serving simulator (docs/architecture.md §13): pure Python beside the engine, no Django.

A discrete-event simulation of replicas serving a workload, each step costed by
the engine's step model (:mod:`calculators.engine.step_model`, docs/architecture.md §12).
:func:`~.run.simulate` takes the ``simulate`` command's inputs (snake case) and
returns its JSON; the same seed gives the same result.

Modules: :mod:`.config` (inputs, bounds, the replica and its KV blocks),
:mod:`.workload` (arrivals, lengths, traces), :mod:`.engine` (one replica's
vLLM-like scheduler), :mod:`.run` (router and event loop), :mod:`.results`
(percentiles, goodput, the knee).
"""

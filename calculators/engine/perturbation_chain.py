"""A perturbation applied to one problem (:class:`Chain`) and how a family's steps read each other
(:class:`StepGraph`): the data :mod:`.perturbations` evaluates lazily."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence


class Problem(Protocol):
    """What a chain reads of :class:`.perturbations.Problem` (declared here: that module imports this one)."""

    @property
    def right(self) -> Mapping[str, float]: ...

    @property
    def specs(self) -> Sequence[Any]: ...

    def run(self, index: int, arguments: tuple | None) -> float: ...

    def arguments(self, index: int, given: Mapping[str, float], steps: Mapping[str, float],
                  own: Mapping[str, float] | None = None) -> tuple | None: ...

    def slipped(self, index: int, arguments: tuple | None, factor: float, position: int = -1) -> float: ...


@dataclass(eq=False, slots=True)
class Chain:
    """One perturbation applied to one problem: misconception ``id``, the changed ``given``, the step
    ``start`` index it takes effect at — where a per-step ``variant`` (its ``value_index``-th value) or a
    unit slip (× ``factor``) replaces that step's value, ``start_value`` on the right earlier values;
    neither for a change of inputs — ``reach`` (the step indices whose value it can change), and
    ``values``: the steps re-evaluated on the right earlier values (NaN where undefined), filled lazily in
    step order by :meth:`fill`. Slotted and closure-free: a problem holds dozens, and the cache hundreds
    of problems, so fewer objects for the garbage collector to trace."""

    id: str
    given: Mapping[str, float]
    start: int
    variant: Callable | None = None
    value_index: int = 0
    factor: float | None = None
    slip_input: int = -1
    changed: frozenset = frozenset()
    rank: tuple = ()
    reach: frozenset = frozenset()
    start_value: float = math.nan
    values: dict[str, float] = field(default_factory=dict)

    @property
    def at_step(self) -> bool:
        """Whether it replaces step ``start``'s value (a per-step variant or a unit slip)."""
        return self.variant is not None or self.factor is not None

    def fill(self, index: int, problem: "Problem") -> dict[str, float]:
        """``values`` up to step ``index`` (inclusive); steps out of reach take the right value unevaluated."""
        values, right = self.values, problem.right
        for k in range(len(values), index + 1):
            key = problem.specs[k].key
            if k not in self.reach:
                values[key] = right[key]
            elif k == self.start and self.at_step:
                values[key] = self.start_value
            else:
                values[key] = problem.run(k, problem.arguments(k, self.given, values))
        return values

    def own_value(self, problem: "Problem", own: Mapping[str, float]) -> float:
        """Step ``start``'s replaced value on the candidate's ``own`` earlier values (the chain's elsewhere)."""
        if self.factor is not None:
            return problem.slipped(self.start, problem.arguments(self.start, self.given, self.values, own),
                                   self.factor, self.slip_input)
        variant, mixed = self.variant, {**self.values, **own}
        produced = _safe(lambda: _pick(variant(self.given, mixed), self.value_index))  # type: ignore[misc]
        return produced


def _pick(produced, value_index: int) -> float:
    produced = produced if isinstance(produced, list) else [produced]
    if value_index >= len(produced) or produced[value_index] is None:
        raise ValueError("variant does not apply")
    return produced[value_index]


def _safe(evaluate: Callable[[], float]) -> float:
    try:
        value = float(evaluate())
    except (ZeroDivisionError, OverflowError, ValueError, KeyError, TypeError):
        return math.nan
    except Exception:  # noqa: BLE001 - an InputError from a formula missing a value: undefined here
        return math.nan
    return value if math.isfinite(value) else math.nan


class StepGraph:
    """How a family's steps read each other (the same for every problem with these steps): for each step,
    ``plan`` — its formula's arguments in order, as (variable, the earlier step feeding it or ``None``
    for a given value); ``direct`` — the given keys it reads itself; ``upstream`` — the earlier steps it
    reads, directly or through others; ``given_deps`` — the given keys likewise (``None``: it reads a step
    not in the list, so any); ``downstream`` — itself and the steps that read it."""

    def __init__(self, specs) -> None:
        self.plan = [tuple((var.name, spec.from_steps.get(var.name)) for var in spec.formula.variables)
                     for spec in specs]
        self.direct: list[frozenset] = []
        self.upstream: list[frozenset] = []
        self.given_deps: list[frozenset | None] = []
        index_of = {spec.key: i for i, spec in enumerate(specs)}
        for i, spec in enumerate(specs):
            names = {var.name for var in spec.formula.variables}
            self.direct.append(frozenset(names - set(spec.from_steps)))
            found = [index_of.get(spec.from_steps[name]) for name in names & set(spec.from_steps)]
            sources = [s for s in found if s is not None and s < i]
            if len(sources) < len(found):  # a step read that is not an earlier one: depend on everything
                self.upstream.append(frozenset(range(i)))
                self.given_deps.append(None)
                continue
            upstream: set[int] = set(sources)
            deps: frozenset | None = self.direct[i]
            for s in sources:
                upstream |= self.upstream[s]
                earlier = self.given_deps[s]
                deps = None if deps is None or earlier is None else deps | earlier
            self.upstream.append(frozenset(upstream))
            self.given_deps.append(deps)
        self.downstream = [frozenset(j for j, up in enumerate(self.upstream) if i in up) | {i}
                           for i in range(len(specs))]
        self.own_step = [frozenset({i}) for i in range(len(specs))]
        # Each step's arguments that are earlier steps: (position in ``plan``, that step's unit).
        self.step_inputs = [[(position, specs[index_of[src]].unit) for position, (_, src) in enumerate(row)
                             if src in index_of] for row in self.plan]
        self.reach_of: dict[frozenset, frozenset] = {}  # given keys changed → the steps that read them

    def reaches(self, changed: frozenset) -> frozenset:
        """The steps whose inputs, followed back, include a key of ``changed``."""
        found = self.reach_of.get(changed)
        if found is None:
            found = self.reach_of[changed] = frozenset(
                j for j, deps in enumerate(self.given_deps) if deps is None or not changed.isdisjoint(deps))
        return found

"""Misconceptions as perturbations of a family's own steps (docs/architecture.md §11).

A classic mistake changes one thing — an input (:data:`.perturbation_registry.GIVEN_PERTURBATIONS`),
one step's value (a per-step variant of :mod:`.misconceptions` or of the family) or a unit
(:data:`.perturbation_registry.UNIT_SLIPS`) — and everything computed after it follows. A
:class:`Chain` is that change applied to one problem: the family's own steps re-evaluated in order with
it, so every step downstream of the perturbed variable carries the misconception's name, in every
family whose steps it reaches. :meth:`Problem.candidates` reads, for one step, the value each chain
gives both on the right earlier values and on the candidate's own (a slip carried forward is still
named). Per-step variants in :data:`.perturbation_registry.LOCAL` belong to their step only.

Why it is built this way (bench/bench_grader.py holds it to at most 4× grading without perturbations):

* a :class:`Problem` depends only on the problem (family, given values, steps), never on what a
  candidate typed, so it is kept in a small LRU (:data:`PROBLEMS`) and shared by every submission on
  the same inputs;
* a chain is evaluated lazily, step by step, and only at the steps it can reach (whose inputs,
  followed back through earlier steps, include what it changes); elsewhere it equals the right value
  and is skipped unevaluated. A step's per-step variants run only when a step at or after it needs them;
* candidates are produced one at a time in precedence order, so grading stops at the first match; the
  re-evaluation on the candidate's own values runs the step's compiled formula, and is skipped when its
  arguments equal the carried-forward ones or ones already tried at this step.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import lru_cache
from typing import Iterator, Mapping

from .misconceptions import ADDED_IN_V2, MISCONCEPTIONS
from .perturbation_chain import Chain, StepGraph, _safe
from .perturbation_registry import (
    GIVEN_PERTURBATIONS,
    INPUT_SLIP_UNITS,
    LOCAL,
    STEP_PERTURBATIONS,
    UNIT_SLIPS,
    rederive,
)
from .step_variants import VARIANTS


class Problem:
    """Every perturbation of one problem (``result``'s family, given values and steps), built lazily.

    ``family`` is the problem's family record (:class:`~.procedures.family.Family`, ``None`` for none): its
    ``variants`` add to the shared ones of :data:`.step_variants.VARIANTS`, and its own misconception ids
    come first at equal distance (:func:`_rank`). A variant that raises
    ``KeyError`` on this problem is a bug and is raised, not skipped (one that does not apply returns
    ``None``).
    """

    def __init__(self, result, family=None, graph: "StepGraph | None" = None) -> None:
        self.family = result.family
        self.specs = list(result.specs)
        self.given = result.given
        self.right = result.values
        self._variants = family.variants if family is not None else {}
        self._own_ids = own_ids(family)
        graph = graph or StepGraph(self.specs)
        self._plan, self._direct, self._upstream = graph.plan, graph.direct, graph.upstream
        self._given_deps, self._downstream, self._own_step = graph.given_deps, graph.downstream, graph.own_step
        self._graph = graph
        self._step_inputs = graph.step_inputs
        # Bound now, so a grader that swaps the evaluator (bench/bench_grader.py's naive one) is used throughout.
        self._call = [spec.formula.call_args for spec in self.specs]
        self._given_chains = self._build_given_chains()
        self._step_chains: dict[int, list[Chain]] = {}
        self._local_chains: dict[int, list[Chain]] = {}
        self._relevant: dict[int, list[Chain]] = {}

    def arguments(self, index: int, given: Mapping[str, float], steps: Mapping[str, float],
                  own: Mapping[str, float] | None = None) -> tuple | None:
        """Step ``index``'s formula arguments, in order, from ``given`` and earlier ``steps`` (``own``'s value
        first where it has one); ``None`` when one is missing."""
        try:
            if own:
                return tuple([(own[src] if src in own else steps[src]) if src else given[name]
                              for name, src in self._plan[index]])
            return tuple([steps[src] if src else given[name] for name, src in self._plan[index]])
        except KeyError:
            return None

    def run(self, index: int, arguments: tuple | None) -> float:
        """Step ``index``'s compiled formula on ``arguments``; NaN where undefined (or ``arguments`` is ``None``)."""
        if arguments is None:
            return math.nan
        try:
            value = self._call[index](arguments)
        except Exception:  # noqa: BLE001 - division by zero, overflow, a domain error: undefined here
            return math.nan
        return value if math.isfinite(value) else math.nan

    def slipped(self, index: int, arguments: tuple | None, factor: float, position: int = -1) -> float:
        """Step ``index`` with a unit slip: its value × ``factor`` (``position`` −1), or its value with the
        ``position``-th argument × ``factor`` (an earlier step's GiB read as GB in this step)."""
        if arguments is None:
            return math.nan
        if position < 0:
            return self.run(index, arguments) * factor
        return self.run(index, (*arguments[:position], arguments[position] * factor, *arguments[position + 1:]))

    def _build_given_chains(self) -> list[Chain]:
        given, found = self.given, []
        for perturbation in GIVEN_PERTURBATIONS:
            changed = perturbation.perturb(given)
            for one in changed if isinstance(changed, list) else [changed]:
                if one is None:
                    continue
                derived = rederive(one, given)  # a fresh dict from the perturbation: changed in place
                try:
                    keys = frozenset(key for key, _ in derived.items() - given.items())
                except TypeError:  # an unhashable value
                    keys = frozenset(k for k, v in derived.items() if given.get(k) != v)
                found.append(Chain(perturbation.id, derived, 0, changed=keys, reach=self._graph.reaches(keys),
                                   rank=_rank(self._own_ids, perturbation.id, (1,))))
        return found

    def step_chains(self, index: int, local: bool = False) -> list[Chain]:
        """The chains that start at step ``index`` and carry on downstream: a slip of its unit, then its
        variants (in the order the step lists them, then :data:`.perturbation_registry.STEP_PERTURBATIONS`);
        with ``local``, instead those that belong to the step alone (the variants of
        :data:`.perturbation_registry.LOCAL`, a slip of an input's unit), needed only when it is graded."""
        cache = self._local_chains if local else self._step_chains
        if index in cache:
            return cache[index]
        spec, found = self.specs[index], []
        reach = self._own_step[index] if local else self._downstream[index]
        slip = UNIT_SLIPS.get(spec.unit)
        if slip and not local:
            slip_id, factors = slip
            for place, factor in enumerate(factors):
                # Before the step's variants: a unit slip is the registry's older id at the same distance.
                found.append(Chain(slip_id, self.given, index, factor=factor, reach=reach,
                                   start_value=_safe(lambda: self.right[spec.key] * factor),
                                   rank=_rank(self._own_ids, slip_id, (0, index, -1, place))))
        listed = (*self._variants.get(spec.key, ()), *VARIANTS.get(spec.key, ()),
                  *STEP_PERTURBATIONS.get(spec.key, ()))
        for place, (misconception_id, variant) in enumerate(listed):
            if (misconception_id in LOCAL) != local:
                continue
            try:
                produced = variant(self.given, self.right)
            except (ZeroDivisionError, OverflowError, ValueError):
                continue  # degenerate on this problem (a zero context divides)
            produced = produced if isinstance(produced, list) else [produced]
            for value_index, value in enumerate(produced):
                if value is not None:
                    found.append(Chain(misconception_id, self.given, index, variant, value_index, reach=reach,
                                       start_value=_safe(lambda: value),
                                       rank=_rank(self._own_ids, misconception_id, (0, index, place, value_index))))
        for argument, unit in self._step_inputs[index] if local else ():
            if unit not in INPUT_SLIP_UNITS:
                continue
            slip_id, factors = UNIT_SLIPS[unit]
            arguments = self.arguments(index, self.given, self.right)
            for place, factor in enumerate(factors):
                # An earlier step's value read in its sibling unit here: this step's own slip, after its variants.
                found.append(Chain(slip_id, self.given, index, factor=factor, slip_input=argument, reach=reach,
                                   start_value=self.slipped(index, arguments, factor, argument),
                                   rank=_rank(self._own_ids, slip_id, (0, index, len(listed) + argument, place))))
        cache[index] = found
        return found

    def relevant(self, index: int) -> list[Chain]:
        """The chains that can change step ``index``, in precedence order (:func:`_rank`)."""
        if index not in self._relevant:
            found = [chain for chain in self._given_chains if index in chain.reach]
            for start in sorted(self._upstream[index] | {index}):
                found += [chain for chain in self.step_chains(start) if index in chain.reach]
            found += self.step_chains(index, local=True)
            found.sort(key=lambda chain: chain.rank)
            self._relevant[index] = found
        return self._relevant[index]

    def chains(self) -> list[Chain]:
        """Every chain of the problem, fully evaluated, in precedence order."""
        found = list(self._given_chains)
        for index in range(len(self.specs)):
            found += self.step_chains(index) + self.step_chains(index, local=True)
        found.sort(key=lambda chain: chain.rank)
        for chain in found:
            chain.fill(len(self.specs) - 1, self)
        return found

    def _refuted(self, chain: Chain, index: int, own: Mapping[str, float]) -> bool:
        """Whether the candidate typed the right value at an earlier step this chain changes (so they did
        not make this slip there)."""
        for k in range(chain.start, index):
            if k not in chain.reach:
                continue
            key = self.specs[k].key
            typed, wrong, correct = own.get(key), chain.values[key], self.right[key]
            if typed is None or math.isnan(wrong) or _close(wrong, correct):
                continue
            if _close(typed, correct):
                return True
        return False

    def candidates(self, index: int, own: Mapping[str, float], verdict_step: bool = False
                   ) -> Iterator[tuple[str, float]]:
        """(id, value) pairs a candidate holding each misconception would type at step ``index``, lazily:
        on the right earlier values, then on ``own`` (the candidate's readable earlier values, each in
        place of the chain's). The nearest cause comes first — a slip made at this step, then an input
        this step reads itself, then one carried from upstream (unless the candidate's own right answer
        upstream rules it out, or the step is a yes/no verdict) — then the precedence of :func:`_rank`."""
        spec, direct = self.specs[index], self._direct[index]
        # Ids older than this engine first (docs/architecture.md §11), then the nearest cause.
        buckets: tuple[list[Chain], ...] = ([], [], [], [], [], [])
        for chain in self.relevant(index):
            later = 3 * chain.rank[1]
            if index == chain.start and chain.at_step:
                buckets[later].append(chain)  # a slip made at this very step
            elif not chain.changed.isdisjoint(direct):
                buckets[later + 1].append(chain)  # an input this step reads itself
            elif not verdict_step:  # a yes/no verdict is not explained by a far cause
                buckets[later + 2].append(chain)
        own_earlier = {k: v for k, v in own.items() if k != spec.key}
        tried: set[tuple] = set()
        if own_earlier:
            carried = self.arguments(index, self.given, self.right, own_earlier)
            if carried is not None:
                tried.add(carried)  # the carried-forward value: already not a match
        # Every step this one reads was typed: a chain that changes none of its given inputs gives, on the
        # candidate's values, exactly the carried-forward value (already not a match).
        all_typed = all(src in own_earlier for _, src in self._plan[index] if src)
        for place, bucket in enumerate(buckets):
            near = place % 3
            for chain in bucket:
                values = chain.fill(index, self)
                if near == 2 and self._refuted(chain, index, own):
                    continue  # the candidate's own right answer upstream rules this chain out
                yield chain.id, values[spec.key]
                if not own_earlier or (near == 2 and all_typed):
                    continue
                if near == 0:
                    yield chain.id, chain.own_value(self, own_earlier)
                    continue
                arguments = self.arguments(index, chain.given, values, own_earlier)
                if arguments is None or arguments in tried:
                    continue
                tried.add(arguments)
                yield chain.id, self.run(index, arguments)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.005 * abs(b) if b else abs(a) < 1e-9


def own_ids(family) -> frozenset[str]:
    """The misconception ids ``family`` (a record, or ``None``) declares or lists on its steps."""
    if family is None:
        return frozenset()
    return frozenset({*family.variants, *(info.id for info in family.misconceptions),
                      *(pair[0] for pairs in family.variants.values() for pair in pairs)})


@lru_cache(maxsize=4096)
def _rank(own: frozenset[str], misconception_id: str, position: tuple) -> tuple:
    """Precedence among misconceptions a typed value matches at equal distance (docs/architecture.md §11): the
    family's own ids (``own``, :func:`own_ids`), then the shared ones, then those added with this engine; then
    ``position`` (a per-step variant's step and place, before input changes); then the order of the registry."""
    order = list(MISCONCEPTIONS).index(misconception_id) if misconception_id in MISCONCEPTIONS else len(MISCONCEPTIONS)
    return (0 if misconception_id in own else 1, 1 if misconception_id in ADDED_IN_V2 else 0, position, order)


class ProblemCache:
    """The :class:`Problem` s of recently graded problems, least recently used dropped first, keyed by
    family, given values and steps (never by what a candidate typed). ``enabled = False`` builds every
    problem afresh (bench/bench_grader.py's naive grader has no cache)."""

    def __init__(self, size: int = 1024):
        self.size = size
        self.enabled = True
        self._problems: OrderedDict[tuple, Problem] = OrderedDict()
        self._graphs: dict[tuple, StepGraph] = {}  # one per family's step layout: a handful
        self._graph_specs: list = []

    def get(self, result, family=None) -> Problem:
        """``result``'s problem (its family's record ``family``), built once per distinct problem."""
        if not self.enabled:
            return Problem(result, family)
        try:
            shape = tuple((s.key, id(s.formula), tuple(s.from_steps.items())) for s in result.specs)
            key = (result.family, frozenset(result.given.items()), family is None, shape)
        except TypeError:  # an unhashable given value: not cached
            return Problem(result, family)
        problem = self._problems.get(key)
        if problem is not None:
            self._problems.move_to_end(key)
            return problem
        graph = self._graphs.get(shape)
        if graph is None:
            if len(self._graphs) >= self.size:  # formulas made per problem would otherwise pile up here
                self._graphs.clear()
                self._graph_specs.clear()
            graph = self._graphs[shape] = StepGraph(result.specs)
            self._graph_specs.append(result.specs)  # keeps the formulas alive: the ids in ``shape`` stay theirs
        # The problem keeps its specs (and so their formulas) alive: the ids in the key stay theirs.
        problem = self._problems[key] = Problem(result, family, graph)
        if len(self._problems) > self.size:
            self._problems.popitem(last=False)
        return problem

    def clear(self) -> None:
        """Forget every problem."""
        self._problems.clear()
        self._graphs.clear()
        self._graph_specs.clear()


PROBLEMS = ProblemCache()


def chains(result, family=None) -> list[Chain]:
    """Every perturbation of ``result``'s problem, each re-evaluated through the family's steps, in precedence
    order (the grader reads them lazily through :meth:`Problem.candidates` instead)."""
    return Problem(result, family).chains()

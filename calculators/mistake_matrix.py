"""The matrix of mistakes × families (issue 29): where each mistake is named in each family that computes its
quantities.

For each family, problems are drawn (its default inputs, the same on two cards where it has a degree, and a few
seeded draws; one for a simulated drill, whose draw runs a simulation); for each mistake the registry
(:mod:`calculators.engine.mistakes`) tries on a problem, the perturbed value is typed at the first step it changes,
every earlier step typed right, and graded. A cell says where the mistake was named, or why not: another mistake
declared earlier gives the same value there (``shadowed by``), or the perturbed value equals the right one on every
drawn problem (``no change``; where what the mistake changes is read by no step of the family, the cell names
it). ``manage.py mistakes`` writes it to ``docs/mistakes.md``;
``tests/engine/test_mistake_matrix.py`` keeps that file current and fails on a pair that is neither named nor
explained.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from calculators.engine.catalog import Catalog
from calculators.engine.grader import Problem, grade
from calculators.engine.mistakes import MISTAKES

SEEDS = 3  # seeded draws per engine family, beside its default inputs


@dataclass(frozen=True)
class Cell:
    """One (family, mistake) pair: ``named`` where it was named (a step key), else ``why`` not."""

    family: str
    mistake: str
    named: str = ""
    why: str = ""


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.005 * abs(b) if b else abs(a) < 1e-9


def _draws(family, catalog: Catalog) -> list:
    # The defaults, and for a family with a degree the defaults split over two cards (the reference stack's 8 K/V
    # heads split evenly), so the mistakes of a split replica are tried whatever the seeds draw from the catalog.
    inputs = [{}]
    if any(spec.name == "gpus" for spec in family.inputs):
        inputs.append({"gpus": 2})
    if family.generate is not None and family.prepare is None:
        inputs += [family.generate(random.Random(f"matrix:{family.slug}:{seed}"), catalog) for seed in range(SEEDS)]
    return [family.run(raw, catalog) for raw in inputs]


def _try(result, chain) -> tuple[str, str] | None:
    """Grade ``chain``'s value at the first step it changes: (step key, the id named there or ``""``)."""
    problem = Problem(result)
    values = chain.fill(len(problem.specs) - 1, problem)
    for index, spec in enumerate(problem.specs):
        wrong = values[spec.key]
        if index < chain.start or index not in chain.reach or math.isnan(wrong) \
                or _close(wrong, result.values[spec.key]):
            continue
        answers = {earlier.key: repr(result.values[earlier.key]) for earlier in problem.specs[:index]}
        answers[spec.key] = repr(wrong)
        step = next(s for s in grade(result, answers).steps if s.key == spec.key)
        return spec.key, step.misconception or ""
    return None


def family_cells(family, catalog: Catalog) -> list[Cell]:
    """The cells of one family's row: the mistakes tried on its drawn problems, in registry order."""
    tried: dict[str, list[tuple[str, str]]] = {}
    unread: dict[str, set[str]] = {}  # what a mistake changes that no step of the family reads
    for result in _draws(family, catalog):
        for chain in Problem(result).chains():
            outcome = _try(result, chain)
            tried.setdefault(chain.id, [])
            if outcome is not None:
                tried[chain.id].append(outcome)
            if not chain.reach:
                unread.setdefault(chain.id, set()).update(
                    key for key, value in chain.given.items() if result.given.get(key) != value)
    cells = []
    for mistake in MISTAKES:
        if mistake.id not in tried:
            continue
        outcomes = tried[mistake.id]
        named = sorted({key for key, found in outcomes if found == mistake.id})
        if named:
            cells.append(Cell(family.slug, mistake.id, named=", ".join(named)))
        elif outcomes:
            others = sorted({f"{found or 'nothing'} at {key}" for key, found in outcomes})
            cells.append(Cell(family.slug, mistake.id, why="shadowed by " + "; ".join(others)))
        elif unread.get(mistake.id):
            cells.append(Cell(family.slug, mistake.id,
                              why=f"no change: it changes {', '.join(sorted(unread[mistake.id]))}, which no step "
                                  f"of {family.slug} reads"))
        else:
            cells.append(Cell(family.slug, mistake.id, why="no change: the perturbed value equals the right one"))
    return cells


def matrix(families, catalog: Catalog) -> list[Cell]:
    """Every family's cells, in page order."""
    return [cell for family in families.values() for cell in family_cells(family, catalog)]


def markdown(cells: list[Cell]) -> str:
    """The matrix as docs/mistakes.md: one section per family, one line per mistake tried."""
    lines = ["# Mistakes × families", "",
             "Generated by `manage.py mistakes` (calculators/mistake_matrix.py); tests/engine/test_mistake_matrix.py "
             "keeps it current. For every family and every mistake of the registry (calculators/engine/mistakes) "
             "whose quantities the family computes, on its default and seeded problems: the step where the "
             "mistake's value, typed after right earlier steps, is named — or why it is not.", ""]
    family = None
    for cell in cells:
        if cell.family != family:
            family = cell.family
            lines += ["", f"## {family}", "", "| mistake | named at | or why not |", "| --- | --- | --- |"]
        lines.append(f"| `{cell.mistake}` | {cell.named} | {cell.why} |")
    return "\n".join(lines) + "\n"

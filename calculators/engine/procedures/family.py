"""The :class:`Family` record every calculator family module declares.

A family module (``procedures/<name>.py``) defines ``FAMILIES``, a tuple of
:class:`Family`; :mod:`calculators.engine.procedures` discovers them, so adding
a family touches no shared file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..catalog import Catalog
from .base import Plan, Result, evaluate
from .inputs import InputSpec
from .offline import Offline


@dataclass(frozen=True)
class Family:
    """A calculator family.

    ``plan(raw_inputs, catalog)`` resolves snake-case inputs into a
    :class:`~.base.Plan` (data: no step evaluated; the offline export reads it), which
    :meth:`run` evaluates; ``generate(rng, catalog)``
    draws the inputs of a seeded problem (``None``: no drill for it);
    the mistakes its steps are graded against are the one registry's
    (:mod:`..mistakes`), by the quantities it computes; ``order`` sorts the families on the pages;
    ``describe(inputs, catalog)`` states a drawn problem in one paragraph, in
    the words an interviewer would use (the drill page shows it).

    What the pages, the bank and the offline export show of it is on the record
    too, so a new family is one module (docs/architecture.md §11): ``headlines``
    are the step keys shown large above the worked steps (the last step when
    empty); ``chapter`` is the slug of the chapter that teaches it (linked once
    that chapter is written); ``difficulty`` (1 to 3), ``roles`` and ``rubric``
    (what a strong worked answer does at each stage, never a value: every review
    draws fresh numbers; its step labels when empty) are its bank template's;
    each input's form label and help are on its :class:`InputSpec`; ``offline``
    holds what the offline export needs beyond the family's plans
    (:class:`~.offline.Offline`), or is ``None`` for a family the export leaves
    out because its numbers come from the serving simulator (the simulated
    drills: a page cannot run the simulation); ``prepare(inputs, catalog, runner)`` completes drawn
    (or coach-fixed) inputs with what a problem must store beside them (the
    simulated drills: their sweep, run through the sweep ``runner`` passed in,
    ``calculators/sim/scenario.py``), ``None`` when the inputs are all a problem needs.
    """

    slug: str
    title: str
    summary: str
    inputs: tuple[InputSpec, ...]
    plan: Callable[[dict[str, Any], Catalog | None], Plan]
    generate: Callable[[random.Random, Catalog], dict] | None = None
    order: int = 100
    describe: Callable[[dict[str, Any], Catalog], str] | None = None
    headlines: tuple[str, ...] = ()
    chapter: str = ""
    difficulty: int = 2
    roles: tuple[str, ...] = ("architect", "engineer")
    rubric: tuple[str, ...] = ()
    offline: Offline | None = field(default_factory=Offline)
    prepare: Callable[..., dict] | None = None

    def run(self, raw: dict[str, Any], catalog: Catalog | None = None) -> Result:
        """The family's plan for snake-case ``raw`` inputs, evaluated (:func:`~.base.evaluate`); raises
        what :attr:`plan` and the evaluation raise for bad inputs."""
        return evaluate(self.plan(raw, catalog))

    def headline_keys(self, result: Result) -> tuple[str, ...]:
        """The step keys ``result``'s page shows large: the record's, else its last step."""
        return self.headlines or (result.steps[-1].key,)


def discover(found: Iterable[Family]) -> dict[str, Family]:
    """``found`` records by slug, in page order (``order``, then slug). Raises ``ValueError`` for two families
    of one slug."""
    families: dict[str, Family] = {}
    for family in sorted(found, key=lambda f: (f.order, f.slug)):
        if family.slug in families:
            raise ValueError(f"Two calculator families are called '{family.slug}'.")
        families[family.slug] = family
    return families

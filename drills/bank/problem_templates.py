"""Problem templates in the question bank: one item of kind ``problem`` per drill family.

:func:`sync_problem_templates` makes the bank hold exactly one template per
calculator family that has a problem generator (``FAMILIES`` entries with
``generate``): created or updated by slug (the family's slug, docs/architecture.md §10),
with the family's title, a worked example (the problem of seed 0 as the family states it, answered step by step
with the engine's formulas, values and notes), its rubric, the chapter that teaches it (the family's ``chapter``, when
that chapter is written) and a time box. ``load_content`` runs it with the
content files, in the same transaction (:data:`PROBLEM_TEMPLATES`, a reader of
:mod:`drills.content_readers`); a second run changes nothing. Templates carry ``source_path = "engine:<family>"``
so the content loader leaves them alone.

Reviewing a template draws a fresh seeded variant (:mod:`drills.reviews.services`),
so the candidate rehearses the skill, not a remembered number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calculators.engine.catalog import default_catalog
from drills.bank.topics import curated_topic
from drills.models import BankItem
from drills.problems.generation import drill_families, generate_inputs
from runbook.loading import ContentTree, LoadReport, Reader
from runbook.models import Chapter

SOURCE_PREFIX = "engine:"
SECONDS_PER_STEP = 45
MIN_TIME_BOX_S = 120


@dataclass
class TemplateTally:
    """How many problem templates a sync created, updated and left unchanged."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


def time_box_s(step_count: int) -> int:
    """The time box of a problem of ``step_count`` steps: 45 s a step, at least 2 minutes, in half minutes."""
    return max(MIN_TIME_BOX_S, math.ceil(step_count * SECONDS_PER_STEP / 30) * 30)


def _unit_phrase(unit: str) -> str:
    """How a step's unit reads in prose: "in GiB", or "a plain number" for unit ``1``."""
    return "a plain number" if unit == "1" else f"in {unit}"


def _template_row(family, chapters: dict) -> dict:
    """The bank item's fields for one family: its worked example is the sample problem of seed 0, stated by the
    family's ``describe`` and answered step by step with the engine's substituted formulas and its notes."""
    catalog = default_catalog()
    inputs = generate_inputs(family.slug, 0, catalog)
    result = family.run(inputs, catalog)
    steps = "\n".join(f"{index}. **{spec.label}** ({_unit_phrase(spec.unit)}): `{spec.key} = {spec.formula.text}`"
                      f"; here `{step.substituted}`"
                      for index, (spec, step) in enumerate(zip(result.specs, result.steps), start=1))
    notes = "\n".join(f"- {note}" for note in result.notes)
    example = family.describe(inputs, catalog) if family.describe else family.summary
    chapter = chapters.get(family.chapter)
    box = time_box_s(len(result.specs))
    return {
        "kind": BankItem.PROBLEM,
        "prompt": (f"**{family.title}.** {example}\n\nEach review draws a fresh problem of this kind with new "
                   "numbers; work every step on paper, then type your values."),
        "model_answer": (f"Each step's formula, then its value for the problem above:\n\n{steps}"
                         + (f"\n\nWhat the numbers say:\n\n{notes}" if notes else "")),
        "rubric": list(family.rubric)
        or [f"{spec.label} ({_unit_phrase(spec.unit)})" for spec in result.specs],
        "chapter_id": chapter.pk if chapter else None,
        "track": chapter.track if chapter else "",
        "topic": curated_topic(family.title),
        "difficulty": family.difficulty,
        "roles": list(family.roles),
        "misconceptions": [],
        "family": family.slug,
        "fixed_inputs": {},
        "details": {"time_box_s": box, "steps": len(result.specs)},
        "published": True,
        "position": 900 + family.order,
        "source_path": f"{SOURCE_PREFIX}{family.slug}",
    }


def sync_problem_templates() -> TemplateTally:
    """Create or update the bank's problem templates, one per drill family; idempotent."""
    chapters = {chapter.slug: chapter for chapter in Chapter.objects.all()}
    tally = TemplateTally()
    for family in drill_families():
        row = _template_row(family, chapters)
        item = BankItem.objects.filter(slug=family.slug).first()
        if item is None:
            BankItem.objects.create(slug=family.slug, **row)
            tally.created += 1
            continue
        if item.author_id is not None or not item.source_path.startswith(SOURCE_PREFIX):
            continue  # an item a coach (or a content file) wrote under this slug stays as it is
        changed = [name for name, value in row.items() if getattr(item, name) != value]
        if changed:
            for name in changed:
                setattr(item, name, row[name])
            item.save()
            tally.updated += 1
        else:
            tally.unchanged += 1
    # A family that lost its generator keeps its item (and the decks holding it), unpublished.
    slugs = [family.slug for family in drill_families()]
    BankItem.objects.filter(source_path__startswith=SOURCE_PREFIX, author__isnull=True, published=True).exclude(
        slug__in=slugs).update(published=False)
    return tally


def write_templates(tree: ContentTree, report: LoadReport) -> None:
    """The problem templates' step of ``load_content``: sync them, and note the counts for the command."""
    report.notes.append(f"problem templates  {sync_problem_templates()}")


# No files: the templates come from the engine's families; they run after the questions, so that an item a content
# file wrote under a family's slug keeps it.
PROBLEM_TEMPLATES = Reader("problem templates", write=write_templates, needs=("documents", "questions"))

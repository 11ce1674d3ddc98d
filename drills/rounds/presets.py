"""The built-in round kinds (presets) as data, and their rows: written by ``load_content``, read by the pages."""

from __future__ import annotations

from calculators.families import FAMILIES
from drills.models import RoundTemplate
from runbook.loading import ContentTree, LoadReport, Reader

#: The families the "Follow-ups" preset draws from: every drill family with inputs (issue 33 item 1), the four
#: simulated ones among them (their follow-ups are simulated through the sweep runner). A family whose problems give
#: no chain of two (params has at most its MoE sibling, formats one change) is passed over for another when drawn
#: (drills.rounds.services.add_items).
FOLLOWUP_FAMILIES = sorted(key for key, family in FAMILIES.items() if family.generate is not None and family.inputs)

# The built-in round kinds, as data (synced into RoundTemplate rows with no owner; a coach copies one).
PRESETS: dict[str, dict] = {
    "capacity": {
        "title": "The five-minute capacity question", "duration_s": 5 * 60, "position": 1,
        "description": "One KV-cache ladder, worked against the clock as an interviewer would ask it.",
        "slots": [{"family": "ladder", "box_s": 5 * 60}],
    },
    "phone": {
        "title": "Phone screen", "duration_s": 30 * 60, "position": 2,
        "description": "One ladder, one roofline and two open questions in thirty minutes.",
        "slots": [{"family": "ladder", "box_s": 7 * 60}, {"family": "roofline", "box_s": 7 * 60},
                  {"kind": "open", "count": 2, "box_s": 8 * 60}],
    },
    "architect": {
        "title": "Architect round", "duration_s": 45 * 60, "position": 3,
        "description": "A senior-staff design prompt, then its capacity sub-question (a ladder or an SLO sizing).",
        "slots": [{"kind": "design", "box_s": 30 * 60}, {"families": ["ladder", "slo"], "box_s": 15 * 60}],
    },
    "manager": {
        "title": "Manager round", "duration_s": 30 * 60, "position": 4,
        "description": "What it costs and how many GPUs: a cost problem, a fleet problem and one open question.",
        "slots": [{"family": "cost", "box_s": 9 * 60}, {"family": "fleet", "box_s": 9 * 60},
                  {"kind": "open", "role": "manager", "box_s": 12 * 60}],
    },
    "critique": {
        "title": "Critique round", "duration_s": 20 * 60, "position": 5,
        "description": "One design document with planted errors: flag the lines and say why.",
        "slots": [{"kind": "critique", "box_s": 20 * 60}],
    },
    "weak": {
        "title": "My weak spots", "duration_s": 30 * 60, "position": 6,
        "description": "Items chosen from the misconceptions you make most often and the cards you are "
                       "closest to forgetting.",
        "slots": [{"weak": 4, "box_s": 7 * 60}],
    },
    "followups": {
        "title": "Follow-ups", "duration_s": 20 * 60, "position": 7,
        "description": "One worked problem, then the interviewer's follow-ups on the same stack: one input changes "
                       "each time; say which steps move, then their new values.",
        "slots": [{"families": FOLLOWUP_FAMILIES, "box_s": 8 * 60, "followups": 3, "followup_box_s": 4 * 60}],
    },
}

# --- presets ------------------------------------------------------------------------------


def sync_presets() -> dict[str, RoundTemplate]:
    """The built-in templates, created or brought in line with :data:`PRESETS`."""
    found = {t.kind: t for t in RoundTemplate.objects.filter(owner__isnull=True, slug__in=PRESETS)}
    for kind, data in PRESETS.items():
        row = found.get(kind)
        if row is None:
            found[kind] = RoundTemplate.objects.create(slug=kind, kind=kind, **data)
        elif any(getattr(row, name) != value for name, value in data.items()):
            for name, value in data.items():
                setattr(row, name, value)
            row.save()
    return {kind: found[kind] for kind in PRESETS}


def write_presets(tree: ContentTree, report: LoadReport) -> None:
    """The presets' step of ``load_content``: write them with the content; note the count for the command."""
    report.notes.append(f"round presets      {len(sync_presets())}")


# No files: the presets are the data above, written with the content so that the rounds' pages only read.
ROUND_PRESETS = Reader("round presets", write=write_presets)


def preset(kind: str) -> RoundTemplate:
    """The built-in template of ``kind`` (``KeyError`` for an unknown kind)."""
    return sync_presets()[kind]

"""What the grading fragment shows (``templates/llm_grading/grading.html#grading``), for any page that shows one."""

from __future__ import annotations

from django.urls import reverse

from . import prompt, services
from .models import RATINGS, Grading

#: How the fragment offers the suggested score: inside a review's rate form, a round's form, beside a critique's
#: self-assessment, or on its own (a design prompt's page).
MODES = ("review", "round", "critique", "standalone")
POLL_MS = 1500


def fragment_context(grading: Grading | None, mode: str) -> dict:
    """The context of ``llm_grading/grading.html#grading`` for ``grading`` shown in ``mode``."""
    if grading is None:
        return {"grading": None}
    result = grading.result or {}
    points = []
    for index, point in enumerate(result.get("points", [])):
        text = grading.rubric[index] if index < len(grading.rubric) else ""
        points.append({**point, "text": text})
    counts = {verdict: sum(1 for point in points if point["verdict"] == verdict) for verdict in prompt.VERDICTS}
    labels = dict(RATINGS)
    return {"grading": grading, "mode": mode if mode in MODES else "standalone", "points": points,
            "counts": counts, "follow_ups": result.get("follow_ups", []), "ratings": RATINGS,
            "suggested_label": labels.get(grading.suggested_rating), "kept": services.KEPT,
            # The embedded default's first poll runs the grading itself: at once. A worker's: every POLL_MS.
            "poll_ms": POLL_MS if services.broker_configured() or grading.status != Grading.QUEUED else 100,
            "fragment_url": reverse("llm_grading:grading", args=[grading.pk]) + f"?mode={mode}"}

"""What the lab shows for one measurement: labelled figures and the comparison of measured with predicted."""

from __future__ import annotations

from dataclasses import dataclass, field

from calculators.engine.procedures.base import format_number


@dataclass(frozen=True)
class Figure:
    """One labelled number (already formatted for display) and its raw value."""

    label: str
    text: str
    value: float | None = None


@dataclass
class Comparison:
    """One measurement beside the engine's prediction."""

    key: str
    title: str
    measured: Figure | None
    predicted: list[Figure]
    derived: list[Figure] = field(default_factory=list)
    verdict: str = ""
    tone: str = "secondary"  # success, warning, danger, secondary
    reasons: list[str] = field(default_factory=list)


def fmt(value: float, unit: str) -> str:
    """``value`` in ``unit`` with the engine's display rounding (``format_number``)."""
    return format_number(value, unit)

"""What a content load reports: the per-kind counts, the kinds skipped, warnings, and the error that stops it."""

from __future__ import annotations

from dataclasses import dataclass, field


class ContentError(Exception):
    """The content files have problems (``errors``: one ``path:line: what`` each); nothing was written."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


@dataclass
class Tally:
    """How many rows of one kind a load created, updated, left unchanged and removed."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0

    def __str__(self) -> str:
        return (f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged, "
                f"{self.removed} removed")

    @property
    def changed(self) -> bool:
        """Whether any row was created, updated or removed."""
        return bool(self.created or self.updated or self.removed)


@dataclass
class LoadReport:
    """What a load did: a :class:`Tally` per kind loaded, the kinds skipped, warnings, and notes.

    ``notes`` are the one-line reports of readers that load no files (problem
    templates, round presets), printed after the tallies; they do not count
    towards :attr:`changed`.
    """

    tallies: dict[str, Tally] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def tally(self, kind: str) -> Tally:
        """The tally of ``kind``, started at zero on first use."""
        return self.tallies.setdefault(kind, Tally())

    @property
    def changed(self) -> bool:
        """Whether any kind's rows changed."""
        return any(tally.changed for tally in self.tallies.values())

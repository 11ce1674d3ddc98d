"""Grading a design-doc critique drill: which planted errors were found, which missed, which flags were wrong.

A critique drill is a short design document (numbered lines) with errors planted
on some lines (``BankItem.details``: ``lines`` and ``planted``, written by
``load_content`` from ``fixtures/critiques/``). The candidate flags the lines
they think are wrong and says why for each. The rule:

* a planted error is **found** when its line is flagged;
* a flag on a line holding no planted error is a **false flag** — unless the
  line only repeats the consequence of a planted error (one of its ``carried``
  lines), which counts neither for nor against;
* score = found ÷ planted − :data:`FALSE_FLAG_PENALTY` × false flags, clamped
  to 0–1.

Everything here is plain Python over the details mapping, so a stored attempt
is re-graded from its own snapshot with the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

# What each line flagged wrongly costs, as a fraction of the whole score.
FALSE_FLAG_PENALTY = 0.1
# The longest "why" kept for one line.
MAX_WHY = 2000

RULE = (f"Score = planted errors found ÷ planted errors − {FALSE_FLAG_PENALTY:g} for each line flagged that holds "
        "no planted error, kept between 0 and 1. A line that only repeats the consequence of a planted error "
        "counts neither way.")

SELF_RATINGS = (("got", "Got it"), ("partly", "Partly"), ("no", "No"))


@dataclass(frozen=True)
class Planted:
    """A planted error and whether the candidate found it (with their reason)."""

    line: int
    category: str
    label: str
    erratum: str
    explanation: str
    corrected: str
    carried: tuple[int, ...]
    found: bool
    why: str = ""


@dataclass(frozen=True)
class Flag:
    """A flagged line that holds no planted error: a false flag, or a line carried from one."""

    line: int
    why: str
    carried_from: int | None = None

    @property
    def is_false(self) -> bool:
        return self.carried_from is None


@dataclass
class CritiqueGrade:
    """The grade of one submission: per planted error, the other flags, and the score."""

    planted: list[Planted]
    flags: list[Flag]
    penalty: float = FALSE_FLAG_PENALTY
    lines: list[str] = field(default_factory=list)

    @property
    def found(self) -> list[Planted]:
        return [p for p in self.planted if p.found]

    @property
    def missed(self) -> list[Planted]:
        return [p for p in self.planted if not p.found]

    @property
    def false_flags(self) -> list[Flag]:
        return [f for f in self.flags if f.is_false]

    @property
    def carried_flags(self) -> list[Flag]:
        return [f for f in self.flags if not f.is_false]

    @property
    def raw(self) -> float:
        """Found ÷ planted, before the penalty."""
        return len(self.found) / len(self.planted) if self.planted else 0.0

    @property
    def score(self) -> float:
        return min(1.0, max(0.0, self.raw - self.penalty * len(self.false_flags)))

    @property
    def working(self) -> str:
        """The score's arithmetic, as shown to the candidate."""
        text = f"{len(self.found)} ÷ {len(self.planted)}"
        if self.false_flags:
            text += f" − {self.penalty:g} × {len(self.false_flags)}"
        clamped = self.raw - self.penalty * len(self.false_flags)
        text += f" = {clamped:.2f}"
        if clamped < 0:
            text += ", kept at 0"
        return text

    def status_of(self, line: int) -> str:
        """``found``, ``missed``, ``false_flag``, ``carried`` or ``""`` for a line of the document."""
        for planted in self.planted:
            if planted.line == line:
                return "found" if planted.found else "missed"
        for flag in self.flags:
            if flag.line == line:
                return "false_flag" if flag.is_false else "carried"
        return ""


def read_flags(lines: list[str], flagged: list[str], why: Mapping[str, str]) -> dict[int, str]:
    """The candidate's flags from a form: ``flagged`` line numbers (text) and ``why`` by line number.

    Numbers that are not lines of the document are ignored; reasons are trimmed
    to :data:`MAX_WHY` characters.
    """
    flags: dict[int, str] = {}
    for raw in flagged:
        try:
            number = int(str(raw).strip())
        except ValueError:
            continue
        if 1 <= number <= len(lines):
            flags[number] = str(why.get(str(number), "") or "").strip()[:MAX_WHY]
    return dict(sorted(flags.items()))


def grade_critique(details: Mapping, flags: Mapping[int, str], penalty: float = FALSE_FLAG_PENALTY) -> CritiqueGrade:
    """Grade ``flags`` (line number → reason) against the planted errors of ``details``."""
    flags = {int(line): why for line, why in flags.items()}
    planted_rows = list(details.get("planted", ()))
    carried_by = {n: row["line"] for row in planted_rows for n in row.get("carried", ())}
    planted_lines = {row["line"] for row in planted_rows}
    planted = [
        Planted(line=row["line"], category=row["category"], label=row.get("label", row["category"]),
                erratum=row.get("erratum", ""), explanation=row.get("explanation", ""),
                corrected=row.get("corrected", ""), carried=tuple(row.get("carried", ())),
                found=row["line"] in flags, why=flags.get(row["line"], ""))
        for row in sorted(planted_rows, key=lambda row: row["line"])
    ]
    others = [Flag(line, why, carried_by.get(line)) for line, why in sorted(flags.items())
              if line not in planted_lines]
    return CritiqueGrade(planted, others, penalty, list(details.get("lines", ())))

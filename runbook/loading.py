"""Load the content files of ``fixtures/`` (their formats: ``fixtures/CONTENT.md``) into the database.

:func:`load_content` reads every file first and checks it — front matter and
required fields, types, and every shortcode of every Markdown field with
:func:`runbook.shortcodes.find_errors` — and raises :class:`ContentError`
listing each problem as ``path:line: what`` before anything is written. Then,
in one transaction, it creates or updates every row by slug, removes the
fixture-loaded rows whose file or entry is gone, and reports per kind how many
rows were created, updated, unchanged and removed. A second run over the same
files changes nothing.

A kind whose file (or folder) is absent is skipped, not emptied: content is
written a file at a time, and a mistyped ``--path`` must not wipe the runbook.
Question-bank items written by a coach (``author`` set) are never updated or
removed.

Bank items carry a ``details`` mapping whose strings are Markdown, checked like
any other: a design prompt's numbers, levels, follow-ups and resources
(``questions/design.yaml``), and a critique drill's numbered lines and planted
errors (``critiques/<slug>.yaml``, one drill per file, loaded as bank items of
kind ``critique``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml
from django.db import models, transaction

from runbook.content import heading_anchors, plain_text
from runbook.models import BarTopic, Chapter, Document, ErratumEntry, GlossaryTerm, ReadingPath, Resource, Stage, Track
from runbook.shortcodes import find_errors

# The sixteen documents of the map (CONTENT.md); tracks.yaml lists them with their titles.
DOCUMENT_SLUGS = (
    "00-map", "01-tokenisation", "02-forward-pass", "03-journey-of-a-token", "04-gpu-roofline",
    "05-prefill-and-decode", "06-kv-cache", "07-attention-variants", "08-rope-and-long-context",
    "09-number-formats", "10-paged-memory-and-prefix-caching", "11-multi-gpu", "12-engines",
    "13-speculative-and-constrained", "14-capacity-planning", "15-production",
)
TRACK_LETTERS = ("A", "B", "C", "D", "E")
BANK_KINDS = ("open", "problem", "critique", "design")
# Files of questions/ that hold bank items of no chapter (their stem names no document).
BANK_FILES = ("design",)
DESIGN_LEVELS = ("mid", "senior", "staff")
# The kinds of error a critique drill plants: a label, and the errata entry that explains it (if any).
CRITIQUE_CATEGORIES = {
    "gb-gib-mix": ("GB and GiB mixed", "gb-gib-mix"),
    "sparse-tflops": ("Sparsity TFLOP/s used as compute", "sparse-tflops"),
    "stopped-at-weights": ("Ladder stopped at the weights line", "stopped-at-weights"),
    "gqa-ignored": ("GQA ignored (query heads used for the cache)", "checked-gqa-ratios"),
    "non-buyable-gpu-count": ("A GPU count no one can buy or run", "moe-nine-gpus"),
    "cache-offset-as-hit-rate": ("A cache offset called a hit rate", ""),
    "missing-failure-handling": ("Failure handling missing", ""),
    "roofline-as-expectation": ("The roofline quoted as the expected speed", "roofline-as-expectation"),
    "nominal-4bit": ("4-bit weights sized at exactly four bits", "nominal-4bit"),
    "fits-is-not-serves": ("\"Fits\" taken for \"serves\"", "fits-is-not-serves"),
    "fleet-at-full-occupancy": ("Fleet sized at full occupancy, no headroom", ""),
    # The 2026 serving model's corrections (docs/architecture.md §12), each with its erratum where one exists.
    "bits-for-bytes": ("Bits and bytes confused in a transfer", ""),
    "kv-replication-ignored": ("A K/V head or latent counted once across more cards than it splits over",
                               "kv-replication"),
    "single-node-cost": ("Cost per token priced from one node running flat out", "fleet-cost"),
    "moe-active-memory": ("MoE memory sized from the active parameters", "moe-nine-gpus"),
    "experts-starved": ("Experts fed too few tokens per step to be efficient", ""),
    "batch-free-below-ridge": ("A batch below the ridge taken as free", "batch-reads-every-cache"),
    "floored-twice": ("A count rounded down, then doubled", "floor-once"),
    "swap-recompute-backwards": ("Swap and recompute compared backwards", "swap-versus-recompute"),
    "sla-at-average-capacity": ("A deadline promised on average capacity, no dip allowed for", ""),
}
# A critique document's length in lines (outside it: a warning).
CRITIQUE_LINES = (15, 40)
ROLES = ("architect", "engineer", "manager")

# Kinds in the order they are reported.
KINDS = ("tracks", "documents", "paths", "chapters", "glossary", "errata", "stages", "bar topics", "resources",
         "questions", "critiques")


class ContentError(Exception):
    """The content files have problems; nothing was written."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


@dataclass
class Tally:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0

    def __str__(self) -> str:
        return (f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged, "
                f"{self.removed} removed")

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed)


@dataclass
class LoadReport:
    """What a load did: a :class:`Tally` per kind loaded, the kinds skipped, and warnings."""

    tallies: dict[str, Tally] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(tally.changed for tally in self.tallies.values())


# --- YAML that remembers where each string came from --------------------------------------


class _Marked(str):
    """A string from a YAML file, with the offset and line where its value starts."""

    index: int = 0
    line: int = 1


class _Loader(yaml.SafeLoader):
    pass


def _construct_marked(loader: _Loader, node: yaml.ScalarNode) -> _Marked:
    value = _Marked(loader.construct_scalar(node))
    value.index = node.start_mark.index
    value.line = node.start_mark.line + 1
    return value


_Loader.add_constructor("tag:yaml.org,2002:str", _construct_marked)


def _plain(value: Any) -> Any:
    """Marked strings back to ``str`` (recursively), for the database."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


@dataclass
class _Source:
    """One file being read: its display path, text, and the problems found in it."""

    path: Path
    text: str
    errors: list[str]
    warnings: list[str]

    def error(self, line: int | None, message: str) -> None:
        self.errors.append(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")

    def warn(self, line: int | None, message: str) -> None:
        self.warnings.append(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")

    def line_of(self, value: Any) -> int | None:
        return value.line if isinstance(value, _Marked) else None

    def check_shortcodes(self, value: Any, first_line: int | None = None) -> None:
        """Every unresolvable shortcode of a Markdown field, at its line in the file."""
        if not isinstance(value, str) or "{{" not in value:
            return
        for number, shortcode, reason in find_errors(value):
            self.errors.append(f"{self.path}:{self._locate(value, number, shortcode, first_line)}: "
                               f"{shortcode}: {reason}")

    def _locate(self, value: str, number: int, shortcode: str, first_line: int | None) -> int:
        if first_line is not None:
            return first_line + number - 1
        if isinstance(value, _Marked):
            # The n-th line of the value, found by its text from where the value starts.
            needle = value.splitlines()[number - 1].strip() if number <= len(value.splitlines()) else shortcode
            for probe in (shortcode, needle):
                position = self.text.find(probe, value.index) if probe else -1
                if position >= 0:
                    return self.text.count("\n", 0, position) + 1
            return value.line + number - 1
        return number


def _read(path: Path, errors: list[str], warnings: list[str]) -> _Source | None:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{path}: cannot be read ({exc}).")
        return None
    return _Source(path, text, errors, warnings)


def _yaml(source: _Source) -> Any:
    try:
        return yaml.load(source.text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        source.error(mark.line + 1 if mark else None, f"not valid YAML: {problem}.")
        return None


# --- field checks ---------------------------------------------------------------------


class _Entry:
    """One mapping of a YAML list (or a chapter's front matter), read with checks."""

    def __init__(self, source: _Source, data: Any, where: str, line: int | None = None):
        self.source = source
        self.data = data if isinstance(data, dict) else {}
        self.where = where
        self.line = line
        if not isinstance(data, dict):
            source.error(line, f"{where} should be a mapping of fields.")
            self.ok = False
        else:
            self.ok = True
            if line is None:
                self.line = next((v.line for v in data.values() if isinstance(v, _Marked)), None)

    def _missing(self, name: str) -> None:
        self.ok = False
        self.source.error(self.line, f"{self.where} is missing the field '{name}'.")

    def text(self, name: str, *, required: bool = True, markdown: bool = False) -> str:
        value = self.data.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self._missing(name)
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.ok = False
            self.source.error(self.source.line_of(value) or self.line, f"{self.where}: '{name}' should be text.")
            return ""
        if markdown:
            self.source.check_shortcodes(value)
        return str(value).strip()

    def integer(self, name: str, *, required: bool = True, low: int = 0, high: int = 10_000) -> int | None:
        value = self.data.get(name)
        if value is None or value == "":
            if required:
                self._missing(name)
            return None
        try:
            number = int(str(value).strip())
        except ValueError:
            number = None
        if number is None or isinstance(value, bool) or not low <= number <= high:
            self.ok = False
            self.source.error(self.source.line_of(value) or self.line,
                              f"{self.where}: '{name}' should be a whole number from {low} to {high}, not {value!r}.")
            return None
        return number

    def strings(self, name: str, *, markdown: bool = False) -> list[str]:
        value = self.data.get(name)
        if value in (None, ""):
            return []
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, (str, int)) for item in value):
            self.ok = False
            self.source.error(self.line, f"{self.where}: '{name}' should be a list.")
            return []
        if markdown:
            for item in value:
                self.source.check_shortcodes(item)
        return [str(item).strip() for item in value if str(item).strip()]

    def numbers(self, name: str) -> list[int]:
        items = self.strings(name)
        numbers = []
        for item in items:
            try:
                numbers.append(int(item))
            except ValueError:
                self.ok = False
                self.source.error(self.line, f"{self.where}: '{name}' should list document numbers, not {item!r}.")
        return numbers


def _entries(source: _Source, data: Any, label: str, key: str | None = None) -> list[tuple[int, _Entry]]:
    """The mappings of a YAML list (``data`` itself, or ``data[key]``), each with its position."""
    if key is not None:
        if not isinstance(data, dict):
            source.error(None, f"should be a mapping with the key '{key}'.")
            return []
        data = data.get(key)
        if data is None:
            return []
    if not isinstance(data, list):
        source.error(None, f"'{key or label}' should be a list.")
        return []
    entries = []
    for position, item in enumerate(data, start=1):
        slug = item.get("slug") if isinstance(item, dict) else None
        where = f"{label} '{slug}'" if slug else f"{label} {position}"
        entries.append((position, _Entry(source, item, where)))
    return entries


def _unique(source: _Source, seen: dict, value: Any, what: str, line: int | None) -> bool:
    if value in seen:
        source.error(line, f"the {what} '{value}' is used twice (also {seen[value]}).")
        return False
    seen[value] = f"{source.path}:{line}" if line else str(source.path)
    return True


# --- reading the tree -----------------------------------------------------------------


@dataclass
class _Parsed:
    """Everything read from the tree; ``None`` for a kind whose file is absent."""

    root: Path
    tracks: list[dict] | None = None
    documents: list[dict] | None = None
    paths: list[dict] | None = None
    chapters: list[dict] | None = None
    glossary: list[dict] | None = None
    errata: list[dict] | None = None
    stages: list[dict] | None = None
    bar: list[dict] | None = None
    resources: list[dict] | None = None
    questions: list[dict] | None = None
    critiques: list[dict] | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def read_tree(root: Path) -> _Parsed:
    """Read and check every content file under ``root`` (nothing is written)."""
    parsed = _Parsed(root)
    _read_chapters(parsed)
    _read_tracks(parsed)
    _read_glossary(parsed)
    _read_errata(parsed)
    _read_reading(parsed)
    _read_questions(parsed)
    _read_critiques(parsed)
    return parsed


def _split_front_matter(source: _Source) -> tuple[str, str, int] | None:
    lines = source.text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        source.error(1, "should start with front matter between two '---' lines.")
        return None
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1:]), index + 2
    source.error(1, "the front matter is never closed by a '---' line.")
    return None


def _read_chapters(parsed: _Parsed) -> None:
    folder = parsed.root / "runbook"
    if not folder.is_dir():
        parsed.skipped.append("chapters")
        return
    parsed.chapters = []
    numbers: dict = {}
    slugs: dict = {}
    for path in sorted(folder.glob("*.md")):
        source = _read(path, parsed.errors, parsed.warnings)
        if source is None:
            continue
        split = _split_front_matter(source)
        if split is None:
            continue
        front, body, body_line = split
        try:
            meta = yaml.load(front, Loader=_Loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            source.error(mark.line + 2 if mark else 1, f"the front matter is not valid YAML: "
                                                       f"{getattr(exc, 'problem', None) or exc}.")
            continue
        entry = _Entry(source, meta, "the front matter", line=1)
        if not entry.ok:
            continue
        number = entry.integer("number", high=99)
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", markdown=True)
        minutes = entry.integer("reading_minutes", low=1, high=600)
        track = entry.text("track", required=number not in (0, None)).upper()
        if track and track not in TRACK_LETTERS:
            entry.ok = False
            source.error(1, f"the front matter's track should be one of A–E, not '{track}'.")
        prerequisites = entry.strings("prerequisites")
        source.check_shortcodes(body, first_line=body_line)
        if not entry.ok:
            continue
        if slug != path.stem:
            source.warn(1, f"the slug '{slug}' differs from the file name '{path.stem}'.")
        if slug not in DOCUMENT_SLUGS:
            source.warn(1, f"'{slug}' is not one of the sixteen documents of CONTENT.md.")
        if not (_unique(source, numbers, number, "chapter number", 1) & _unique(source, slugs, slug, "slug", 1)):
            continue
        for prerequisite in prerequisites:
            if prerequisite not in DOCUMENT_SLUGS:
                source.warn(1, f"the prerequisite '{prerequisite}' is not a document slug.")
        parsed.chapters.append({
            "number": number, "slug": slug, "track": track, "title": title, "summary": summary,
            "reading_minutes": minutes, "prerequisites": prerequisites, "body": str(body),
            "source_path": str(path.relative_to(parsed.root)),
            "content_hash": hashlib.sha256(source.text.encode()).hexdigest(),
        })


def _read_yaml_file(parsed: _Parsed, name: str, kinds: Iterable[str]) -> tuple[_Source | None, Any]:
    path = parsed.root / name
    if not path.is_file():
        parsed.skipped.extend(kinds)
        return None, None
    source = _read(path, parsed.errors, parsed.warnings)
    if source is None:
        return None, None
    return source, _yaml(source)


def _read_tracks(parsed: _Parsed) -> None:
    source, data = _read_yaml_file(parsed, "tracks.yaml", ("tracks", "documents", "paths"))
    if source is None:
        return
    parsed.tracks, parsed.documents, parsed.paths = [], [], []
    letters: dict = {}
    track_of: dict[int, str] = {}
    for position, entry in _entries(source, data, "track", "tracks"):
        letter = entry.text("letter").upper()
        title = entry.text("title")
        settles = entry.text("settles", markdown=True)
        skip_cost = entry.text("skip_cost", markdown=True)
        numbers = entry.numbers("documents")
        if letter and letter not in TRACK_LETTERS:
            entry.ok = False
            source.error(entry.line, f"{entry.where}: the letter should be one of A–E, not '{letter}'.")
        if entry.ok and _unique(source, letters, letter, "track letter", entry.line):
            parsed.tracks.append({"letter": letter, "title": title, "settles": settles, "skip_cost": skip_cost})
            for number in numbers:
                track_of[number] = letter
    numbers_seen: dict = {}
    slugs: dict = {}
    for position, entry in _entries(source, data, "document", "documents"):
        number = entry.integer("number", high=99)
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", required=False, markdown=True)
        track = entry.text("track", required=False).upper() or track_of.get(number, "")
        if not entry.ok:
            continue
        if track and track not in letters:
            source.warn(entry.line, f"{entry.where}: no track '{track}' in this file.")
            track = ""
        if _unique(source, numbers_seen, number, "document number", entry.line) and \
                _unique(source, slugs, slug, "document slug", entry.line):
            parsed.documents.append({"number": number, "slug": slug, "title": title, "summary": summary,
                                     "track": track})
    path_slugs: dict = {}
    for position, entry in _entries(source, data, "path", "paths"):
        slug = entry.text("slug")
        title = entry.text("title")
        description = entry.text("description", markdown=True)
        numbers = entry.numbers("documents")
        unknown = [n for n in numbers if n not in numbers_seen]
        if unknown and numbers_seen:
            source.warn(entry.line, f"{entry.where}: no document numbered {', '.join(map(str, unknown))}.")
        if entry.ok and _unique(source, path_slugs, slug, "path slug", entry.line):
            parsed.paths.append({"slug": slug, "title": title, "description": description,
                                 "document_numbers": numbers, "position": position})


def _chapter_anchors(parsed: _Parsed) -> dict[str, list[str] | None]:
    """Heading anchors per chapter slug (parsed chapters; ``None`` for a document not written)."""
    anchors: dict[str, list[str] | None] = {slug: None for slug in DOCUMENT_SLUGS}
    for document in parsed.documents or ():
        anchors.setdefault(document["slug"], None)
    for chapter in parsed.chapters or ():
        try:
            anchors[chapter["slug"]] = heading_anchors(chapter["body"])
        except ValueError:
            anchors[chapter["slug"]] = []
    return anchors


def _read_glossary(parsed: _Parsed) -> None:
    source, data = _read_yaml_file(parsed, "glossary.yaml", ("glossary",))
    if source is None:
        return
    parsed.glossary = []
    slugs: dict = {}
    anchors = _chapter_anchors(parsed)
    for position, entry in _entries(source, data, "term"):
        slug = entry.text("slug")
        term = entry.text("term")
        answer = entry.text("answer", markdown=True)
        aliases = entry.strings("aliases")
        chapter = entry.text("chapter", required=False)
        section = entry.text("section", required=False).lstrip("#")
        if not entry.ok or not _unique(source, slugs, slug, "glossary slug", entry.line):
            continue
        if chapter and chapter not in anchors:
            source.warn(entry.line, f"{entry.where}: no document '{chapter}'.")
        elif chapter and section and anchors.get(chapter) is not None and section not in anchors[chapter]:
            source.warn(entry.line, f"{entry.where}: {chapter} has no section '#{section}'.")
        parsed.glossary.append({"slug": slug, "term": term, "aliases": aliases, "answer": answer,
                                "chapter_slug": chapter, "section": section})


def _read_errata(parsed: _Parsed) -> None:
    source, data = _read_yaml_file(parsed, "errata.yaml", ("errata",))
    if source is None:
        return
    parsed.errata = []
    slugs: dict = {}
    kinds = [kind for kind, _ in ErratumEntry.KINDS]
    for position, entry in _entries(source, data, "entry"):
        slug = entry.text("slug")
        kind = entry.text("kind", required=False) or ErratumEntry.ERRATUM
        title = entry.text("title")
        strict = kind == ErratumEntry.ERRATUM
        claimed = entry.text("claimed", required=strict, markdown=True)
        truth = entry.text("truth", required=strict, markdown=True)
        why = entry.text("why", required=strict, markdown=True)
        proof = entry.text("proof", required=False, markdown=True)
        if kind not in kinds:
            entry.ok = False
            source.error(entry.line, f"{entry.where}: kind should be one of {', '.join(kinds)}, not '{kind}'.")
        if strict and entry.ok and not proof:
            source.warn(entry.line, f"{entry.where} has no proof (an engine computation).")
        if entry.ok and _unique(source, slugs, slug, "errata slug", entry.line):
            parsed.errata.append({"slug": slug, "kind": kind, "title": title, "claimed": claimed, "truth": truth,
                                  "why": why, "proof": proof, "position": position})


def _read_reading(parsed: _Parsed) -> None:
    source, data = _read_yaml_file(parsed, "reading.yaml", ("stages", "bar topics", "resources"))
    if source is None:
        return
    parsed.stages, parsed.bar, parsed.resources = [], [], []
    stage_numbers: dict = {}
    stage_slugs: dict = {}
    for position, entry in _entries(source, data, "stage", "stages"):
        number = entry.integer("number", high=99)
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", required=False, markdown=True)
        if entry.ok and _unique(source, stage_numbers, number, "stage number", entry.line) and \
                _unique(source, stage_slugs, slug, "stage slug", entry.line):
            parsed.stages.append({"number": number, "slug": slug, "title": title, "summary": summary})
    topics: dict = {}
    for position, entry in _entries(source, data, "bar topic", "bar"):
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", required=False, markdown=True)
        if entry.ok and _unique(source, topics, slug, "bar topic slug", entry.line):
            parsed.bar.append({"slug": slug, "title": title, "summary": summary, "position": position})
    slugs: dict = {}
    for position, entry in _entries(source, data, "resource", "resources"):
        slug = entry.text("slug")
        stage = entry.text("stage", required=False)
        row = {"slug": slug, "title": entry.text("title"), "position": position,
               "authors": entry.text("authors", required=False), "year": entry.text("year", required=False),
               "kind": entry.text("kind", required=False), "level": entry.text("level", required=False),
               "time": entry.text("time", required=False),
               "summary": entry.text("summary", required=False, markdown=True),
               "gives": entry.text("gives", required=False, markdown=True)}
        row["topics"] = entry.strings("topics")
        stage_number = _stage_number(stage, parsed.stages)
        if stage and stage_number is None:
            entry.ok = False
            source.error(entry.line, f"{entry.where}: no stage '{stage}' (give its number or slug).")
        for topic in row["topics"]:
            if topic not in topics:
                entry.ok = False
                source.error(entry.line, f"{entry.where}: no bar topic '{topic}'.")
        if entry.ok and _unique(source, slugs, slug, "resource slug", entry.line):
            row["stage"] = stage_number
            parsed.resources.append(row)


def _stage_number(stage: str, stages: list[dict]) -> int | None:
    for row in stages:
        if stage == row["slug"] or stage == str(row["number"]):
            return row["number"]
    return None


def _known_misconceptions() -> set[str]:
    import calculators.engine.procedures  # noqa: F401 - registers the families' own ids
    from calculators.engine.misconceptions import MISCONCEPTIONS

    return set(MISCONCEPTIONS)


def _read_questions(parsed: _Parsed) -> None:
    folder = parsed.root / "questions"
    if not folder.is_dir():
        parsed.skipped.append("questions")
        return
    parsed.questions = []
    slugs: dict = {}
    known = _known_misconceptions()
    chapter_slugs = {chapter["slug"] for chapter in parsed.chapters or ()}
    for path in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")):
        source = _read(path, parsed.errors, parsed.warnings)
        if source is None:
            continue
        data = _yaml(source)
        if data is None and source.text.strip():
            continue
        chapter = path.stem
        if chapter not in chapter_slugs and parsed.chapters is not None and chapter not in BANK_FILES:
            source.warn(None, f"no chapter '{chapter}' is written yet: its questions load without one.")
        for position, entry in _entries(source, data or [], "question"):
            slug = entry.text("slug")
            kind = entry.text("kind", required=False) or "open"
            prompt = entry.text("prompt", markdown=True)
            answer = entry.text("model_answer", markdown=True)
            rubric = entry.strings("rubric", markdown=True)
            topic = entry.text("topic", required=False)
            difficulty = entry.integer("difficulty", required=False, low=1, high=3) or 2
            roles = entry.strings("roles")
            misconceptions = entry.strings("misconceptions")
            details = _read_details(parsed, entry, kind, topic)
            if kind not in BANK_KINDS:
                entry.ok = False
                source.error(entry.line, f"{entry.where}: kind should be one of {', '.join(BANK_KINDS)}.")
            wrong_roles = [role for role in roles if role not in ROLES]
            if wrong_roles:
                entry.ok = False
                source.error(entry.line, f"{entry.where}: roles are {', '.join(ROLES)}, not "
                                         f"{', '.join(wrong_roles)}.")
            if known is not None:
                for unknown in [m for m in misconceptions if m not in known]:
                    source.warn(entry.line, f"{entry.where}: the grader has no misconception '{unknown}'.")
            if entry.ok and _unique(source, slugs, slug, "question slug", entry.line):
                parsed.questions.append({
                    "slug": slug, "kind": kind, "prompt": prompt, "model_answer": answer, "rubric": rubric,
                    "topic": topic, "difficulty": difficulty, "roles": roles, "misconceptions": misconceptions,
                    "position": position, "chapter": chapter, "details": details,
                    "source_path": str(path.relative_to(parsed.root)),
                })


def _check_markdown_tree(source: _Source, value: Any) -> None:
    """Check the shortcodes of every string inside ``value`` (a mapping, a list or a string)."""
    if isinstance(value, str):
        source.check_shortcodes(value)
    elif isinstance(value, dict):
        for item in value.values():
            _check_markdown_tree(source, item)
    elif isinstance(value, list):
        for item in value:
            _check_markdown_tree(source, item)


def _read_details(parsed: _Parsed, entry: _Entry, kind: str, topic: str) -> dict:
    """A bank item's ``details``: every string checked as Markdown; a design prompt's shape checked too."""
    source = entry.source
    value = entry.data.get("details")
    if value is None:
        if kind == "design":
            entry.ok = False
            source.error(entry.line, f"{entry.where}: a design prompt needs 'details' (numbers, levels, "
                                     "follow_ups, resources).")
        return {}
    if not isinstance(value, dict):
        entry.ok = False
        source.error(entry.line, f"{entry.where}: 'details' should be a mapping.")
        return {}
    _check_markdown_tree(source, value)
    if kind == "design":
        return _design_details(parsed, entry, value, topic)
    return _plain(value)


def _design_details(parsed: _Parsed, entry: _Entry, value: dict, topic: str) -> dict:
    """``{numbers, levels: {mid, senior, staff}, follow_ups: [{ask, listen_for}], resources: [slugs]}``."""
    source, where = entry.source, entry.where
    line = next((v.line for v in value.values() if isinstance(v, _Marked)), entry.line)

    def fail(message: str) -> None:
        entry.ok = False
        source.error(line, f"{where}: {message}")

    numbers = value.get("numbers")
    if not isinstance(numbers, str) or not numbers.strip():
        fail("details.numbers should be Markdown: the numbers a strong answer derives.")
    levels = value.get("levels")
    if not isinstance(levels, dict) or any(
            not isinstance(levels.get(level), list) or not levels.get(level) for level in DESIGN_LEVELS):
        fail(f"details.levels should give a list of points for each of {', '.join(DESIGN_LEVELS)}.")
        levels = {}
    follow_ups = []
    for item in value.get("follow_ups") or []:
        if isinstance(item, str):
            follow_ups.append({"ask": str(item).strip(), "listen_for": ""})
        elif isinstance(item, dict) and isinstance(item.get("ask"), str):
            listen_for = str(item.get("listen_for") or "").strip()
            follow_ups.append({"ask": str(item["ask"]).strip(), "listen_for": listen_for})
        else:
            fail("each of details.follow_ups should be text or a mapping with 'ask' (and 'listen_for').")
    if not follow_ups:
        fail("details.follow_ups should list the questions an interviewer pushes on.")
    resources = value.get("resources") or []
    if not isinstance(resources, list) or not resources or not all(isinstance(r, str) for r in resources):
        fail("details.resources should list reading-list slugs.")
        resources = []
    known = {row["slug"] for row in parsed.resources} if parsed.resources is not None else None
    if known is not None:
        unknown = [slug for slug in resources if slug not in known]
        if unknown:
            fail(f"details.resources: no resource {', '.join(repr(str(s)) for s in unknown)} in reading.yaml.")
    topics = {row["slug"] for row in parsed.bar} if parsed.bar is not None else None
    if topics is not None and topic and topic not in topics:
        source.warn(entry.line, f"{where}: the topic '{topic}' is not a bar topic of reading.yaml.")
    extra = {key: _plain(item) for key, item in value.items()
             if key not in ("numbers", "levels", "follow_ups", "resources")}
    return {**extra, "numbers": str(numbers or "").strip(),
            "levels": {level: [str(point).strip() for point in levels.get(level, [])] for level in DESIGN_LEVELS},
            "follow_ups": follow_ups, "resources": [str(slug) for slug in resources]}


def _read_critiques(parsed: _Parsed) -> None:
    """``critiques/*.yaml``: one design document per file, its numbered lines and its planted errors."""
    folder = parsed.root / "critiques"
    if not folder.is_dir():
        parsed.skipped.append("critiques")
        return
    parsed.critiques = []
    slugs: dict = {}
    taken = {row["slug"]: row["source_path"] for row in parsed.questions or ()}
    for path in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")):
        source = _read(path, parsed.errors, parsed.warnings)
        if source is None:
            continue
        data = _yaml(source)
        if data is None:
            if not source.text.strip():
                source.error(1, "is empty: a critique file holds one design document.")
            continue
        entry = _Entry(source, data, f"the critique in {path.name}", line=1)
        if not entry.ok:
            continue
        slug = entry.text("slug")
        entry.where = f"critique '{slug}'" if slug else entry.where
        title = entry.text("title")
        prompt = entry.text("prompt", markdown=True)
        answer = entry.text("model_answer", markdown=True)
        rubric = entry.strings("rubric", markdown=True)
        topic = entry.text("topic", required=False) or "design-critique"
        difficulty = entry.integer("difficulty", required=False, low=1, high=3) or 2
        roles = entry.strings("roles")
        wrong_roles = [role for role in roles if role not in ROLES]
        if wrong_roles:
            entry.ok = False
            source.error(entry.line, f"{entry.where}: roles are {', '.join(ROLES)}, not {', '.join(wrong_roles)}.")
        lines = _critique_lines(entry)
        planted = _planted_errors(entry, len(lines))
        if slug in taken:
            entry.ok = False
            source.error(1, f"the slug '{slug}' is already a question ({taken[slug]}).")
        if entry.ok and _unique(source, slugs, slug, "critique slug", 1):
            if slug != path.stem:
                source.warn(1, f"the slug '{slug}' differs from the file name '{path.stem}'.")
            parsed.critiques.append({
                "slug": slug, "kind": "critique", "prompt": prompt, "model_answer": answer, "rubric": rubric,
                "topic": topic, "difficulty": difficulty, "roles": roles, "misconceptions": [],
                "position": 0, "details": {"title": title, "lines": lines, "planted": planted},
                "source_path": str(path.relative_to(parsed.root)),
            })


def _critique_lines(entry: _Entry) -> list[str]:
    source, value = entry.source, entry.data.get("lines")
    if not isinstance(value, list) or not value or not all(isinstance(item, (str, int, float)) for item in value):
        entry.ok = False
        source.error(entry.line, f"{entry.where}: 'lines' should be a list of the document's lines (text).")
        return []
    for item in value:
        source.check_shortcodes(item)
    low, high = CRITIQUE_LINES
    if not low <= len(value) <= high:
        source.warn(entry.line, f"{entry.where}: {len(value)} lines; a critique document has {low} to {high}.")
    return [str(item).strip() for item in value]


def _planted_errors(entry: _Entry, count: int) -> list[dict]:
    source, value = entry.source, entry.data.get("planted")
    if not isinstance(value, list) or not value:
        entry.ok = False
        source.error(entry.line, f"{entry.where}: 'planted' should list the errors planted in the document.")
        return []
    planted: list[dict] = []
    seen: dict = {}
    for position, item in enumerate(value, start=1):
        error = _Entry(source, item, f"{entry.where}, planted error {position}")
        if not error.ok:
            entry.ok = False
            continue
        line = error.integer("line", low=1, high=max(count, 1))
        category = error.text("category")
        explanation = error.text("explanation", markdown=True)
        corrected = error.text("corrected", markdown=True)
        carried = error.numbers("carried")
        if category and category not in CRITIQUE_CATEGORIES:
            error.ok = False
            source.error(error.line, f"{error.where}: no category '{category}'; known: "
                                     f"{', '.join(CRITIQUE_CATEGORIES)}.")
        if corrected and not re.search(r"\{\{\s*[a-z]+\s", corrected):
            error.ok = False
            source.error(error.line, f"{error.where}: 'corrected' should give the right value as an engine "
                                     "shortcode.")
        outside = [n for n in carried if not 1 <= n <= count or n == line]
        if outside:
            error.ok = False
            source.error(error.line, f"{error.where}: carried lines {', '.join(map(str, outside))} are not other "
                                     f"lines of the document (1 to {count}).")
        if error.ok and line in seen:
            error.ok = False
            source.error(error.line, f"{error.where}: line {line} already holds planted error {seen[line]}.")
        if not error.ok:
            entry.ok = False
            continue
        seen[line] = position
        label, erratum = CRITIQUE_CATEGORIES[category]
        planted.append({"line": line, "category": category, "label": label, "erratum": erratum,
                        "explanation": explanation, "corrected": corrected, "carried": carried})
    flagged = {row["line"] for row in planted}
    for row in planted:
        overlap = [n for n in row["carried"] if n in flagged]
        if overlap:
            entry.ok = False
            source.error(entry.line, f"{entry.where}: line {overlap[0]} is both a planted error and carried from "
                                     f"line {row['line']}.")
    return sorted(planted, key=lambda row: row["line"])


# --- writing --------------------------------------------------------------------------


def _sync(model: type[models.Model], rows: list[dict], tally: Tally, *, key: str = "slug",
          scope: models.QuerySet | None = None, m2m: dict[str, Callable[[dict], set[int]]] | None = None,
          protected: Callable[[models.Model], bool] | None = None, warnings: list[str] | None = None) -> None:
    """Make ``scope`` (default: every row of ``model``) hold exactly ``rows``, matched by ``key``."""
    scope = scope if scope is not None else model._default_manager.all()
    wanted = {row[key] for row in rows}
    stale = scope.exclude(**{f"{key}__in": wanted})
    tally.removed += stale.count()
    stale.delete()
    existing = {getattr(obj, key): obj for obj in model._default_manager.filter(**{f"{key}__in": wanted})}
    for row in rows:
        row = dict(row)
        relations = {name: ids(row) for name, ids in (m2m or {}).items()}
        obj = existing.get(row[key])
        if obj is not None and protected is not None and protected(obj):
            if warnings is not None:
                warnings.append(f"{model._meta.verbose_name} '{row[key]}' was written in the app: left as it is.")
            continue
        if obj is None:
            obj = model(**row)
            obj.save()
            for name, ids in relations.items():
                getattr(obj, name).set(ids)
            tally.created += 1
            continue
        changed = [name for name, value in row.items() if getattr(obj, name) != value]
        changed_relations = [name for name, ids in relations.items()
                             if set(getattr(obj, name).values_list("pk", flat=True)) != ids]
        if changed:
            for name in changed:
                setattr(obj, name, row[name])
            obj.save()
        for name in changed_relations:
            getattr(obj, name).set(relations[name])
        if changed or changed_relations:
            tally.updated += 1
        else:
            tally.unchanged += 1


def _search_text(*parts: str) -> str:
    return "\n".join(part for part in parts if part)


def _bank_model() -> type[models.Model] | None:
    """The question bank's model, reached through ``Chapter.questions`` (the runbook never imports drills)."""
    try:
        return Chapter._meta.get_field("questions").related_model
    except Exception:
        return None


def _write(parsed: _Parsed, report: LoadReport) -> None:
    tally = report.tallies.setdefault
    if parsed.tracks is not None:
        _sync(Track, parsed.tracks, tally("tracks", Tally()), key="letter")
    if parsed.chapters is not None:
        rows = [{**row, "search_text": _search_text(row["title"], plain_text(row["summary"]),
                                                    plain_text(row["body"]))} for row in parsed.chapters]
        _sync(Chapter, rows, tally("chapters", Tally()))
    chapters = {chapter.slug: chapter for chapter in Chapter.objects.all()}
    if parsed.documents is not None:
        tracks = dict(Track.objects.values_list("letter", "pk"))
        rows = [{"number": d["number"], "slug": d["slug"], "title": d["title"], "summary": d["summary"],
                 "track_id": tracks.get(d["track"]),
                 "chapter_id": chapters[d["slug"]].pk if d["slug"] in chapters else None}
                for d in parsed.documents]
        _sync(Document, rows, tally("documents", Tally()))
    else:
        for document in Document.objects.all():
            chapter_id = chapters[document.slug].pk if document.slug in chapters else None
            if document.chapter_id != chapter_id:
                Document.objects.filter(pk=document.pk).update(chapter_id=chapter_id)
    if parsed.paths is not None:
        _sync(ReadingPath, parsed.paths, tally("paths", Tally()))
    if parsed.glossary is not None:
        rows = [{**row, "search_text": _search_text(plain_text(row["answer"]),
                                                    "Also: " + ", ".join(row["aliases"]) if row["aliases"] else "")}
                for row in parsed.glossary]
        _sync(GlossaryTerm, rows, tally("glossary", Tally()))
    if parsed.errata is not None:
        rows = [{**row, "search_text": _search_text(row["title"], *(plain_text(row[name]) for name in
                                                                    ("claimed", "truth", "why", "proof")))}
                for row in parsed.errata]
        _sync(ErratumEntry, rows, tally("errata", Tally()))
    if parsed.stages is not None:
        _sync(Stage, parsed.stages, tally("stages", Tally()))
        _sync(BarTopic, parsed.bar, tally("bar topics", Tally()))
        stages = dict(Stage.objects.values_list("number", "pk"))
        topics = dict(BarTopic.objects.values_list("slug", "pk"))
        rows = []
        for row in parsed.resources:
            row = dict(row)
            topic_ids = {topics[slug] for slug in row.pop("topics")}
            stage = row.pop("stage")
            row["stage_id"] = stages[stage] if stage is not None else None
            row["search_text"] = _search_text(row["title"], row["authors"], plain_text(row["summary"]),
                                              plain_text(row["gives"]))
            rows.append((row, topic_ids))
        by_slug = {row["slug"]: ids for row, ids in rows}
        _sync(Resource, [row for row, _ in rows], tally("resources", Tally()),
              m2m={"topics": lambda row: by_slug[row["slug"]]})
    bank = _bank_model()
    if parsed.questions is not None and bank is not None:
        rows = []
        for question in parsed.questions:
            row = {key: value for key, value in question.items() if key != "chapter"}
            chapter = chapters.get(question["chapter"])
            row["chapter_id"] = chapter.pk if chapter else None
            row["track"] = chapter.track if chapter else ""
            rows.append(row)  # the item computes its own search text when saved
        _sync(bank, rows, tally("questions", Tally()),
              # Only items that came from fixture files (a source path): a deleted coach's questions have no
              # author and no source path, and are kept (archived), never removed by a reload.
              scope=bank._default_manager.filter(author__isnull=True).exclude(source_path="")
              .exclude(source_path__startswith="critiques/")
              .exclude(source_path__startswith="engine:"),  # problem templates: drills.bank.problem_templates
              protected=lambda item: item.author_id is not None, warnings=report.warnings)
    if parsed.critiques is not None and bank is not None:
        rows = [{**row, "chapter_id": None, "track": ""} for row in parsed.critiques]
        _sync(bank, rows, tally("critiques", Tally()),
              scope=bank._default_manager.filter(author__isnull=True, source_path__startswith="critiques/"),
              protected=lambda item: item.author_id is not None, warnings=report.warnings)


def load_content(root: Path | str) -> LoadReport:
    """Check every content file under ``root``, then load them all in one transaction.

    Raises :class:`ContentError` (nothing written) when any file has a problem,
    and ``FileNotFoundError`` when ``root`` is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder of content files.")
    parsed = read_tree(root)
    if parsed.errors:
        raise ContentError(parsed.errors)
    report = LoadReport(skipped=list(parsed.skipped), warnings=list(parsed.warnings))
    with transaction.atomic():
        _write(parsed, report)
    report.tallies = {kind: report.tallies[kind] for kind in KINDS if kind in report.tallies}
    return report

"""The critique drills' content reader: ``critiques/*.yaml``, one design document per file.

Each file holds a short design document (its numbered ``lines``) and the errors
planted in it (``planted``: line, category, explanation, the corrected value as
an engine shortcode, and the lines that only carry the error forward). Loaded as
bank items of kind ``critique``; graded by :mod:`drills.critique.services`.
"""

from __future__ import annotations

import re

from drills.bank.readers import check_roles
from drills.bank.topics import curated_topic
from drills.models import BankItem
from runbook.loading import ContentTree, Entry, LoadReport, Reader, parse_yaml, sync, unique

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
    "cache-shared-across-tenants": ("A prefix cache shared across tenants taken as free and safe", ""),
}
# A critique document's length in lines (outside it: a warning).
CRITIQUE_LINES = (15, 40)


def read_critiques(tree: ContentTree) -> None:
    """``critiques/*.yaml``: one design document per file, its numbered lines and its planted errors."""
    paths = tree.folder("critiques", "critiques")
    if paths is None:
        return
    critiques = tree.rows["critiques"] = []
    slugs: dict = {}
    taken = {row["slug"]: row["source_path"] for row in tree.get("questions") or ()}
    for path in paths:
        source = tree.source(path)
        if source is None:
            continue
        data = parse_yaml(source)
        if data is None:
            if not source.text.strip():
                source.error(1, "is empty: a critique file holds one design document.")
            continue
        entry = Entry(source, data, f"the critique in {path.name}", line=1)
        if not entry.ok:
            continue
        slug = entry.text("slug")
        entry.where = f"critique '{slug}'" if slug else entry.where
        row = {"slug": slug, "kind": "critique", "title": entry.text("title"),
               "prompt": entry.text("prompt", markdown=True), "model_answer": entry.text("model_answer", markdown=True),
               "rubric": entry.strings("rubric", markdown=True),
               "topic": curated_topic(entry.text("topic", required=False) or "design critique"),
               "difficulty": entry.integer("difficulty", required=False, low=1, high=3) or 2,
               "roles": entry.strings("roles")}
        check_roles(entry, row["roles"])
        lines = _critique_lines(entry)
        planted = _planted_errors(entry, len(lines))
        if slug in taken:
            entry.fail(f"the slug '{slug}' is already a question ({taken[slug]}).", 1)
        if entry.ok and unique(source, slugs, slug, "critique slug", 1):
            if slug != path.stem:
                source.warn(1, f"the slug '{slug}' differs from the file name '{path.stem}'.")
            title = row.pop("title")
            critiques.append({**row, "misconceptions": [], "position": 0, "source_path": tree.relative(path),
                              "details": {"title": title, "lines": lines, "planted": planted}})


def _critique_lines(entry: Entry) -> list[str]:
    source, value = entry.source, entry.data.get("lines")
    if not isinstance(value, list) or not value or not all(isinstance(item, (str, int, float)) for item in value):
        entry.fail(f"{entry.where}: 'lines' should be a list of the document's lines (text).")
        return []
    for item in value:
        source.check_shortcodes(item)
    low, high = CRITIQUE_LINES
    if not low <= len(value) <= high:
        source.warn(entry.line, f"{entry.where}: {len(value)} lines; a critique document has {low} to {high}.")
    return [str(item).strip() for item in value]


def _planted_error(error: Entry, count: int, seen: dict) -> dict | None:
    """One planted error's fields, checked against the document's ``count`` lines; ``None`` after a problem."""
    line = error.integer("line", low=1, high=max(count, 1))
    category = error.text("category")
    explanation = error.text("explanation", markdown=True)
    corrected = error.text("corrected", markdown=True)
    carried = error.numbers("carried")
    if category and category not in CRITIQUE_CATEGORIES:
        error.fail(f"{error.where}: no category '{category}'; known: {', '.join(CRITIQUE_CATEGORIES)}.")
    if corrected and not re.search(r"\{\{\s*[a-z]+\s", corrected):
        error.fail(f"{error.where}: 'corrected' should give the right value as an engine shortcode.")
    outside = [n for n in carried if not 1 <= n <= count or n == line]
    if outside:
        error.fail(f"{error.where}: carried lines {', '.join(map(str, outside))} are not other lines of the "
                   f"document (1 to {count}).")
    if error.ok and line in seen:
        error.fail(f"{error.where}: line {line} already holds planted error {seen[line]}.")
    if not error.ok:
        return None
    label, erratum = CRITIQUE_CATEGORIES[category]
    return {"line": line, "category": category, "label": label, "erratum": erratum, "explanation": explanation,
            "corrected": corrected, "carried": carried}


def _planted_errors(entry: Entry, count: int) -> list[dict]:
    value = entry.data.get("planted")
    if not isinstance(value, list) or not value:
        entry.fail(f"{entry.where}: 'planted' should list the errors planted in the document.")
        return []
    planted: list[dict] = []
    seen: dict = {}
    for position, item in enumerate(value, start=1):
        error = Entry(entry.source, item, f"{entry.where}, planted error {position}")
        row = _planted_error(error, count, seen) if error.ok else None
        if row is None:
            entry.ok = False
            continue
        seen[row["line"]] = position
        planted.append(row)
    flagged = {row["line"] for row in planted}
    for row in planted:
        overlap = [n for n in row["carried"] if n in flagged]
        if overlap:
            entry.fail(f"{entry.where}: line {overlap[0]} is both a planted error and carried from line "
                       f"{row['line']}.")
    return sorted(planted, key=lambda row: row["line"])


def write_critiques(tree: ContentTree, report: LoadReport) -> None:
    """The critique drills, as bank items of no chapter; only those loaded from ``critiques/`` are removed."""
    if tree.get("critiques") is None:
        return
    rows = [{**row, "chapter_id": None, "track": ""} for row in tree.rows["critiques"]]
    sync(BankItem, rows, report.tally("critiques"),
         scope=BankItem.objects.filter(author__isnull=True, source_path__startswith="critiques/"),
         protected=lambda item: item.author_id is not None, warnings=report.warnings)


CRITIQUES = Reader("critiques", read=read_critiques, write=write_critiques, kinds=("critiques",),
                   needs=("questions",))

"""The question bank's content reader: ``questions/*.yaml`` (one file per chapter, plus ``design.yaml``).

A file's questions belong to the chapter its name gives. Bank items carry a
``details`` mapping whose strings are Markdown, checked like any other; a
design prompt's (kind ``design``) must hold its numbers, levels, follow-ups and
reading-list resources. Items written by a coach (``author`` set) are never
updated or removed; problem templates (``source_path`` ``engine:…``) and
critique drills (``critiques/…``) are other readers' rows.
"""

from __future__ import annotations

import calculators.engine.procedures  # noqa: F401 - registers the families' own misconception ids
from calculators.engine.mistakes import MISCONCEPTIONS
from drills.bank.topics import curated_topic, is_curated
from drills.models import BankItem
from runbook.loading import (
    ContentTree,
    Entry,
    LoadReport,
    Marked,
    Reader,
    check_markdown_tree,
    entries,
    parse_yaml,
    plain,
    sync,
    unique,
)
from runbook.models import Chapter

BANK_KINDS = ("open", "problem", "critique", "design")
# Files of questions/ that hold bank items of no chapter (their stem names no document).
BANK_FILES = ("design",)
DESIGN_LEVELS = ("mid", "senior", "staff")
ROLES = ("architect", "engineer", "manager")


def check_roles(entry: Entry, roles: list[str]) -> None:
    """An error on ``entry`` for each role that is not one of :data:`ROLES`."""
    wrong = [role for role in roles if role not in ROLES]
    if wrong:
        entry.fail(f"{entry.where}: roles are {', '.join(ROLES)}, not {', '.join(wrong)}.")


def read_questions(tree: ContentTree) -> None:
    """``questions/*.yaml``: each item's fields, roles and details checked; rows in ``questions``."""
    paths = tree.folder("questions", "questions")
    if paths is None:
        return
    questions = tree.rows["questions"] = []
    slugs: dict = {}
    chapters = tree.get("chapters")
    chapter_slugs = {row["slug"] for row in chapters or ()}
    for path in paths:
        source = tree.source(path)
        if source is None:
            continue
        data = parse_yaml(source)
        if data is None and source.text.strip():
            continue
        chapter = path.stem
        if chapter not in chapter_slugs and chapters is not None and chapter not in BANK_FILES:
            source.warn(None, f"no chapter '{chapter}' is written yet: its questions load without one.")
        for position, entry in entries(source, data or [], "question"):
            row = _question(tree, entry)
            if entry.ok and unique(source, slugs, row["slug"], "question slug", entry.line):
                questions.append({**row, "position": position, "chapter": chapter,
                                  "source_path": tree.relative(path)})


def _question(tree: ContentTree, entry: Entry) -> dict:
    """One question's fields, read with checks (``entry.ok`` false after a problem)."""
    source = entry.source
    row = {"slug": entry.text("slug"), "kind": entry.text("kind", required=False) or "open",
           "prompt": entry.text("prompt", markdown=True), "model_answer": entry.text("model_answer", markdown=True),
           "rubric": entry.strings("rubric", markdown=True), "topic": entry.text("topic", required=False),
           "difficulty": entry.integer("difficulty", required=False, low=1, high=3) or 2,
           "roles": entry.strings("roles"), "misconceptions": entry.strings("misconceptions")}
    row["details"] = _details(tree, entry, row["kind"], row["topic"])
    written, row["topic"] = row["topic"], curated_topic(row["topic"])  # one filter entry per subject
    if not is_curated(row["topic"]):
        source.warn(entry.line, f"{entry.where}: the topic '{written}' is under none of the curated topics "
                                "(drills/bank/topics.py): add a rule there.")
    if row["kind"] not in BANK_KINDS:
        entry.fail(f"{entry.where}: kind should be one of {', '.join(BANK_KINDS)}.")
    check_roles(entry, row["roles"])
    for unknown in [m for m in row["misconceptions"] if m not in MISCONCEPTIONS]:
        source.warn(entry.line, f"{entry.where}: the grader has no misconception '{unknown}'.")
    return row


def _details(tree: ContentTree, entry: Entry, kind: str, topic: str) -> dict:
    """A bank item's ``details``: every string checked as Markdown; a design prompt's shape checked too."""
    value = entry.data.get("details")
    if value is None:
        if kind == "design":
            entry.fail(f"{entry.where}: a design prompt needs 'details' (numbers, levels, follow_ups, resources).")
        return {}
    if not isinstance(value, dict):
        entry.fail(f"{entry.where}: 'details' should be a mapping.")
        return {}
    check_markdown_tree(entry.source, value)
    if kind == "design":
        return _design_details(tree, entry, value, topic)
    return plain(value)


def _design_details(tree: ContentTree, entry: Entry, value: dict, topic: str) -> dict:
    """``{numbers, levels: {mid, senior, staff}, follow_ups: [{ask, listen_for}], resources: [slugs], bar_topic}``."""
    line = next((v.line for v in value.values() if isinstance(v, Marked)), entry.line)

    def fail(message: str) -> None:
        entry.fail(f"{entry.where}: {message}", line)

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
    known = tree.get("resources")
    unknown = [slug for slug in resources if slug not in {row["slug"] for row in known}] if known is not None else []
    if unknown:
        fail(f"details.resources: no resource {', '.join(repr(str(s)) for s in unknown)} in reading.yaml.")
    topics = tree.get("bar topics")
    if topics is not None and topic and topic not in {row["slug"] for row in topics}:
        entry.source.warn(entry.line, f"{entry.where}: the topic '{topic}' is not a bar topic of reading.yaml.")
    extra = {key: plain(item) for key, item in value.items() if key not in ("numbers", "levels", "follow_ups",
                                                                           "resources")}
    return {**extra, "numbers": str(numbers or "").strip(),
            "levels": {level: [str(point).strip() for point in levels.get(level, [])] for level in DESIGN_LEVELS},
            "follow_ups": follow_ups, "resources": [str(slug) for slug in resources],
            "bar_topic": topic}  # the written topic names its bar topic; the item's topic is the curated one


def write_questions(tree: ContentTree, report: LoadReport) -> None:
    """The items of the question files, each in its chapter's track; only fixture-loaded items are removed."""
    if tree.get("questions") is None:
        return
    chapters = {chapter.slug: chapter for chapter in Chapter.objects.all()}
    rows = []
    for question in tree.rows["questions"]:
        row = {key: value for key, value in question.items() if key != "chapter"}
        chapter = chapters.get(question["chapter"])
        row["chapter_id"] = chapter.pk if chapter else None
        row["track"] = chapter.track if chapter else ""
        rows.append(row)  # the item computes its own search text when saved
    sync(BankItem, rows, report.tally("questions"),
         # Only items that came from fixture files (a source path): a deleted coach's questions have no author and
         # no source path, and are kept (archived), never removed by a reload. Critique drills and problem
         # templates (engine:) are other readers' rows.
         scope=BankItem.objects.filter(author__isnull=True).exclude(source_path="")
         .exclude(source_path__startswith="critiques/").exclude(source_path__startswith="engine:"),
         protected=lambda item: item.author_id is not None, warnings=report.warnings)


QUESTIONS = Reader("questions", read=read_questions, write=write_questions, kinds=("questions",),
                   needs=("documents", "reading list"))

"""The runbook's reference files: ``glossary.yaml``, ``errata.yaml`` and ``reading.yaml`` (stages, bar, resources)."""

from __future__ import annotations

from runbook.content import heading_anchors, plain_text
from runbook.loading import ContentTree, LoadReport, Reader, entries, search_text, sync, unique
from runbook.models import BarTopic, ErratumEntry, GlossaryTerm, Resource, Stage
from runbook.readers.documents import DOCUMENT_SLUGS


def _chapter_anchors(tree: ContentTree) -> dict[str, list[str] | None]:
    """Heading anchors per chapter slug (chapters read; ``None`` for a document not written)."""
    anchors: dict[str, list[str] | None] = {slug: None for slug in DOCUMENT_SLUGS}
    for document in tree.get("documents") or ():
        anchors.setdefault(document["slug"], None)
    for chapter in tree.get("chapters") or ():
        try:
            anchors[chapter["slug"]] = heading_anchors(chapter["body"])
        except ValueError:
            anchors[chapter["slug"]] = []
    return anchors


def read_glossary(tree: ContentTree) -> None:
    """``glossary.yaml``: terms, each pointing (a warning if not) at a real chapter and section."""
    source, data = tree.yaml_file("glossary.yaml", ("glossary",))
    if source is None:
        return
    terms = tree.rows["glossary"] = []
    slugs: dict = {}
    anchors = _chapter_anchors(tree)
    for _, entry in entries(source, data, "term"):
        slug = entry.text("slug")
        term = entry.text("term")
        answer = entry.text("answer", markdown=True)
        aliases = entry.strings("aliases")
        chapter = entry.text("chapter", required=False)
        section = entry.text("section", required=False).lstrip("#")
        if not entry.ok or not unique(source, slugs, slug, "glossary slug", entry.line):
            continue
        if chapter and chapter not in anchors:
            source.warn(entry.line, f"{entry.where}: no document '{chapter}'.")
        elif chapter and section and anchors.get(chapter) is not None and section not in anchors[chapter]:
            source.warn(entry.line, f"{entry.where}: {chapter} has no section '#{section}'.")
        terms.append({"slug": slug, "term": term, "aliases": aliases, "answer": answer, "chapter_slug": chapter,
                      "section": section})


def write_glossary(tree: ContentTree, report: LoadReport) -> None:
    """The terms, with their answer and aliases as search text."""
    if tree.get("glossary") is None:
        return
    rows = [{**row, "search_text": search_text(plain_text(row["answer"]),
                                               "Also: " + ", ".join(row["aliases"]) if row["aliases"] else "")}
            for row in tree.rows["glossary"]]
    sync(GlossaryTerm, rows, report.tally("glossary"))


def read_errata(tree: ContentTree) -> None:
    """``errata.yaml``: an erratum needs its claim, the truth and why (a proof, or a warning)."""
    source, data = tree.yaml_file("errata.yaml", ("errata",))
    if source is None:
        return
    errata = tree.rows["errata"] = []
    slugs: dict = {}
    kinds = [kind for kind, _ in ErratumEntry.KINDS]
    for position, entry in entries(source, data, "entry"):
        slug = entry.text("slug")
        kind = entry.text("kind", required=False) or ErratumEntry.ERRATUM
        title = entry.text("title")
        strict = kind == ErratumEntry.ERRATUM
        claimed = entry.text("claimed", required=strict, markdown=True)
        truth = entry.text("truth", required=strict, markdown=True)
        why = entry.text("why", required=strict, markdown=True)
        proof = entry.text("proof", required=False, markdown=True)
        if kind not in kinds:
            entry.fail(f"{entry.where}: kind should be one of {', '.join(kinds)}, not '{kind}'.")
        if strict and entry.ok and not proof:
            source.warn(entry.line, f"{entry.where} has no proof (an engine computation).")
        if entry.ok and unique(source, slugs, slug, "errata slug", entry.line):
            errata.append({"slug": slug, "kind": kind, "title": title, "claimed": claimed, "truth": truth,
                           "why": why, "proof": proof, "position": position})


def write_errata(tree: ContentTree, report: LoadReport) -> None:
    """The entries, with their title and four texts as search text."""
    if tree.get("errata") is None:
        return
    rows = [{**row, "search_text": search_text(row["title"], *(plain_text(row[name]) for name in
                                                               ("claimed", "truth", "why", "proof")))}
            for row in tree.rows["errata"]]
    sync(ErratumEntry, rows, report.tally("errata"))


def read_reading(tree: ContentTree) -> None:
    """``reading.yaml``: stages, bar topics, and resources naming a real stage and real topics."""
    source, data = tree.yaml_file("reading.yaml", ("stages", "bar topics", "resources"))
    if source is None:
        return
    stages, bar, resources = tree.rows["stages"], tree.rows["bar topics"], tree.rows["resources"] = [], [], []
    stage_numbers: dict = {}
    stage_slugs: dict = {}
    for _, entry in entries(source, data, "stage", "stages"):
        number = entry.integer("number", high=99)
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", required=False, markdown=True)
        if entry.ok and unique(source, stage_numbers, number, "stage number", entry.line) and \
                unique(source, stage_slugs, slug, "stage slug", entry.line):
            stages.append({"number": number, "slug": slug, "title": title, "summary": summary})
    topics: dict = {}
    for position, entry in entries(source, data, "bar topic", "bar"):
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", required=False, markdown=True)
        if entry.ok and unique(source, topics, slug, "bar topic slug", entry.line):
            bar.append({"slug": slug, "title": title, "summary": summary, "position": position})
    slugs: dict = {}
    for position, entry in entries(source, data, "resource", "resources"):
        slug = entry.text("slug")
        stage = entry.text("stage", required=False)
        row = {"slug": slug, "title": entry.text("title"), "position": position,
               "authors": entry.text("authors", required=False), "year": entry.text("year", required=False),
               "kind": entry.text("kind", required=False), "level": entry.text("level", required=False),
               "time": entry.text("time", required=False),
               "summary": entry.text("summary", required=False, markdown=True),
               "gives": entry.text("gives", required=False, markdown=True)}
        row["topics"] = entry.strings("topics")
        stage_number = next((s["number"] for s in stages if stage in (s["slug"], str(s["number"]))), None)
        if stage and stage_number is None:
            entry.fail(f"{entry.where}: no stage '{stage}' (give its number or slug).")
        for topic in row["topics"]:
            if topic not in topics:
                entry.fail(f"{entry.where}: no bar topic '{topic}'.")
        if entry.ok and unique(source, slugs, slug, "resource slug", entry.line):
            row["stage"] = stage_number
            resources.append(row)


def write_reading(tree: ContentTree, report: LoadReport) -> None:
    """Stages and bar topics, then resources linked to their stage and topics."""
    if tree.get("stages") is None:
        return
    sync(Stage, tree.rows["stages"], report.tally("stages"))
    sync(BarTopic, tree.rows["bar topics"], report.tally("bar topics"))
    stages = dict(Stage.objects.values_list("number", "pk"))
    topics = dict(BarTopic.objects.values_list("slug", "pk"))
    rows = []
    for row in tree.rows["resources"]:
        row = dict(row)
        topic_ids = {topics[slug] for slug in row.pop("topics")}
        stage = row.pop("stage")
        row["stage_id"] = stages[stage] if stage is not None else None
        row["search_text"] = search_text(row["title"], row["authors"], plain_text(row["summary"]),
                                         plain_text(row["gives"]))
        rows.append((row, topic_ids))
    by_slug = {row["slug"]: ids for row, ids in rows}
    sync(Resource, [row for row, _ in rows], report.tally("resources"),
         m2m={"topics": lambda row: by_slug[row["slug"]]})


GLOSSARY = Reader("glossary", read=read_glossary, write=write_glossary, kinds=("glossary",), needs=("documents",))
ERRATA = Reader("errata", read=read_errata, write=write_errata, kinds=("errata",))
READING_LIST = Reader("reading list", read=read_reading, write=write_reading,
                      kinds=("stages", "bar topics", "resources"))

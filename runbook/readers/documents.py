"""The runbook's map: chapters (``runbook/*.md``) and ``tracks.yaml`` (tracks, documents, reading paths).

One reader for both, since a document row links its chapter and its track:
tracks are written first, then chapters, then documents and paths.
"""

from __future__ import annotations

import hashlib

import yaml

from runbook.content import plain_text
from runbook.loading import (
    ContentTree,
    Entry,
    LoadReport,
    Reader,
    entries,
    load_yaml,
    search_text,
    split_front_matter,
    sync,
    unique,
)
from runbook.models import Chapter, Document, ReadingPath, Track

# The sixteen documents of the map (CONTENT.md); tracks.yaml lists them with their titles.
DOCUMENT_SLUGS = (
    "00-map", "01-tokenisation", "02-forward-pass", "03-journey-of-a-token", "04-gpu-roofline",
    "05-prefill-and-decode", "06-kv-cache", "07-attention-variants", "08-rope-and-long-context",
    "09-number-formats", "10-paged-memory-and-prefix-caching", "11-multi-gpu", "12-engines",
    "13-speculative-and-constrained", "14-capacity-planning", "15-production",
)
TRACK_LETTERS = ("A", "B", "C", "D", "E")


def read_chapters(tree: ContentTree) -> None:
    """``runbook/*.md``: front matter checked, body shortcodes checked at their lines; rows in ``chapters``."""
    folder = tree.root / "runbook"
    if not folder.is_dir():
        tree.skipped.append("chapters")
        return
    chapters = tree.rows["chapters"] = []
    numbers: dict = {}
    slugs: dict = {}
    for path in sorted(folder.glob("*.md")):
        source = tree.source(path)
        split = split_front_matter(source) if source is not None else None
        if split is None:
            continue
        front, body, body_line = split
        try:
            meta = load_yaml(front)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            source.error(mark.line + 2 if mark else 1, f"the front matter is not valid YAML: "
                                                       f"{getattr(exc, 'problem', None) or exc}.")
            continue
        entry = Entry(source, meta, "the front matter", line=1)
        if not entry.ok:
            continue
        number = entry.integer("number", high=99)
        slug = entry.text("slug")
        title = entry.text("title")
        summary = entry.text("summary", markdown=True)
        minutes = entry.integer("reading_minutes", low=1, high=600)
        track = entry.text("track", required=number not in (0, None)).upper()
        if track and track not in TRACK_LETTERS:
            entry.fail(f"the front matter's track should be one of A–E, not '{track}'.", 1)
        prerequisites = entry.strings("prerequisites")
        source.check_shortcodes(body, first_line=body_line)
        if not entry.ok:
            continue
        if slug != path.stem:
            source.warn(1, f"the slug '{slug}' differs from the file name '{path.stem}'.")
        if slug not in DOCUMENT_SLUGS:
            source.warn(1, f"'{slug}' is not one of the sixteen documents of CONTENT.md.")
        if not (unique(source, numbers, number, "chapter number", 1) & unique(source, slugs, slug, "slug", 1)):
            continue
        for prerequisite in prerequisites:
            if prerequisite not in DOCUMENT_SLUGS:
                source.warn(1, f"the prerequisite '{prerequisite}' is not a document slug.")
        chapters.append({
            "number": number, "slug": slug, "track": track, "title": title, "summary": summary,
            "reading_minutes": minutes, "prerequisites": prerequisites, "body": str(body),
            "source_path": tree.relative(path), "content_hash": hashlib.sha256(source.text.encode()).hexdigest(),
        })


def read_tracks(tree: ContentTree) -> None:
    """``tracks.yaml``: its tracks, documents and reading paths, each list checked; rows under those kinds."""
    source, data = tree.yaml_file("tracks.yaml", ("tracks", "documents", "paths"))
    if source is None:
        return
    tracks, documents, paths = tree.rows["tracks"], tree.rows["documents"], tree.rows["paths"] = [], [], []
    letters: dict = {}
    track_of: dict[int, str] = {}
    for _, entry in entries(source, data, "track", "tracks"):
        letter = entry.text("letter").upper()
        title = entry.text("title")
        settles = entry.text("settles", markdown=True)
        skip_cost = entry.text("skip_cost", markdown=True)
        numbers = entry.numbers("documents")
        if letter and letter not in TRACK_LETTERS:
            entry.fail(f"{entry.where}: the letter should be one of A–E, not '{letter}'.")
        if entry.ok and unique(source, letters, letter, "track letter", entry.line):
            tracks.append({"letter": letter, "title": title, "settles": settles, "skip_cost": skip_cost})
            for number in numbers:
                track_of[number] = letter
    numbers_seen: dict = {}
    slugs: dict = {}
    for _, entry in entries(source, data, "document", "documents"):
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
        if unique(source, numbers_seen, number, "document number", entry.line) and \
                unique(source, slugs, slug, "document slug", entry.line):
            documents.append({"number": number, "slug": slug, "title": title, "summary": summary, "track": track})
    path_slugs: dict = {}
    for position, entry in entries(source, data, "path", "paths"):
        slug = entry.text("slug")
        title = entry.text("title")
        description = entry.text("description", markdown=True)
        numbers = entry.numbers("documents")
        unknown = [n for n in numbers if n not in numbers_seen]
        if unknown and numbers_seen:
            source.warn(entry.line, f"{entry.where}: no document numbered {', '.join(map(str, unknown))}.")
        if entry.ok and unique(source, path_slugs, slug, "path slug", entry.line):
            paths.append({"slug": slug, "title": title, "description": description, "document_numbers": numbers,
                          "position": position})


def read(tree: ContentTree) -> None:
    """Chapters, then ``tracks.yaml``."""
    read_chapters(tree)
    read_tracks(tree)


def write(tree: ContentTree, report: LoadReport) -> None:
    """Tracks, chapters (with their search text), documents linked to both, and paths."""
    if tree.get("tracks") is not None:
        sync(Track, tree.rows["tracks"], report.tally("tracks"), key="letter")
    if tree.get("chapters") is not None:
        rows = [{**row, "search_text": search_text(row["title"], plain_text(row["summary"]),
                                                   plain_text(row["body"]))} for row in tree.rows["chapters"]]
        sync(Chapter, rows, report.tally("chapters"))
    chapters = dict(Chapter.objects.values_list("slug", "pk"))
    if tree.get("documents") is not None:
        tracks = dict(Track.objects.values_list("letter", "pk"))
        rows = [{"number": d["number"], "slug": d["slug"], "title": d["title"], "summary": d["summary"],
                 "track_id": tracks.get(d["track"]), "chapter_id": chapters.get(d["slug"])}
                for d in tree.rows["documents"]]
        sync(Document, rows, report.tally("documents"))
    else:
        # No tracks.yaml this time: the documents already loaded still point at the chapters as they now are.
        for document in Document.objects.all():
            chapter_id = chapters.get(document.slug)
            if document.chapter_id != chapter_id:
                Document.objects.filter(pk=document.pk).update(chapter_id=chapter_id)
    if tree.get("paths") is not None:
        sync(ReadingPath, tree.rows["paths"], report.tally("paths"))


DOCUMENTS = Reader("documents", read=read, write=write, kinds=("tracks", "documents", "paths", "chapters"))

"""The test app's reader: ``notes.yaml`` (a list of ``{slug, text}``), each note written as an auth group.

Groups, because no other reader touches them: a group named ``note:<slug>``
is a row this reader wrote. ``CALLS`` records the steps run; a note whose slug
is ``boom`` makes the write step fail after it has written.
"""

from django.contrib.auth.models import Group

from runbook.loading import Reader, entries

CALLS: list[str] = []


def read(tree) -> None:
    CALLS.append("read")
    source, data = tree.yaml_file("notes.yaml", ("notes",))
    if source is None:
        return
    notes = tree.rows["notes"] = []
    for _, entry in entries(source, data, "note"):
        row = {"slug": entry.text("slug"), "text": entry.text("text", markdown=True)}
        if entry.ok:
            notes.append(row)


def write(tree, report) -> None:
    CALLS.append("write")
    for note in tree.get("notes") or ():
        _, created = Group.objects.get_or_create(name=f"note:{note['slug']}")
        if created:
            report.tally("notes").created += 1
        else:
            report.tally("notes").unchanged += 1
        if note["slug"] == "boom":
            raise RuntimeError("the write step failed after writing")


# Needs the runbook's chapters (it runs after them), to show an app's reader ordered among the others.
READERS = (Reader("test notes", read=read, write=write, kinds=("notes",), needs=("documents",)),)
# A reader named like one of the runbook's, for the duplicate-name test.
CLASH = Reader("glossary", read=read, write=write)

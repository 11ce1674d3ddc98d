"""Reading content files with checks: YAML that remembers lines, entries with typed fields, front matter.

The machinery every content reader uses (docs/architecture.md §3, "Content
loading"). A :class:`Source` is one file being read; its problems go to the
load's shared error and warning lists as ``path:line: what``. An
:class:`Entry` is one mapping of a YAML list (or a chapter's front matter)
whose fields are read with checks: a missing required field, a wrong type or a
number out of range is an error naming the entry and the field, and every
Markdown field has its shortcodes checked with
:func:`runbook.shortcodes.find_errors` at their line in the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runbook.shortcodes import find_errors


class Marked(str):
    """A string from a YAML file, with the offset (``index``) and 1-based ``line`` where its value starts."""

    index: int = 0
    line: int = 1


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, building :class:`Marked` strings (never arbitrary objects)."""


def _construct_marked(loader: _Loader, node: yaml.ScalarNode) -> Marked:
    value = Marked(loader.construct_scalar(node))
    value.index = node.start_mark.index
    value.line = node.start_mark.line + 1
    return value


_Loader.add_constructor("tag:yaml.org,2002:str", _construct_marked)


def load_yaml(text: str) -> Any:
    """``text`` parsed as YAML (safe: plain data only), its strings :class:`Marked`; raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=_Loader)


def plain(value: Any) -> Any:
    """Marked strings back to ``str`` (recursively through lists and mappings), for the database."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return value


@dataclass
class Source:
    """One file being read: its display path, its text, and the load's lists of errors and warnings."""

    path: Path
    text: str
    errors: list[str]
    warnings: list[str]

    def error(self, line: int | None, message: str) -> None:
        """Record a problem that stops the load, as ``path:line: message`` (``path: message`` with no line)."""
        self.errors.append(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")

    def warn(self, line: int | None, message: str) -> None:
        """Record a warning (the load goes on), formatted like :meth:`error`."""
        self.warnings.append(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")

    def line_of(self, value: Any) -> int | None:
        """The line where ``value`` starts, if it came from this file's YAML."""
        return value.line if isinstance(value, Marked) else None

    def check_shortcodes(self, value: Any, first_line: int | None = None) -> None:
        """Every unresolvable shortcode of a Markdown field, at its line in the file.

        ``first_line`` is the file line of the value's first line when the value is
        not a YAML string (a chapter's body).
        """
        if not isinstance(value, str) or "{{" not in value:
            return
        for number, shortcode, reason in find_errors(value):
            self.errors.append(f"{self.path}:{self._locate(value, number, shortcode, first_line)}: "
                               f"{shortcode}: {reason}")

    def _locate(self, value: str, number: int, shortcode: str, first_line: int | None) -> int:
        if first_line is not None:
            return first_line + number - 1
        if isinstance(value, Marked):
            # The n-th line of the value, found by its text from where the value starts.
            needle = value.splitlines()[number - 1].strip() if number <= len(value.splitlines()) else shortcode
            for probe in (shortcode, needle):
                position = self.text.find(probe, value.index) if probe else -1
                if position >= 0:
                    return self.text.count("\n", 0, position) + 1
            return value.line + number - 1
        return number


def read_source(path: Path, errors: list[str], warnings: list[str]) -> Source | None:
    """The file at ``path`` as a :class:`Source`; ``None`` (and an error recorded) when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{path}: cannot be read ({exc}).")
        return None
    return Source(path, text, errors, warnings)


def parse_yaml(source: Source) -> Any:
    """The source's YAML; ``None`` (and an error at the faulty line) when it is not valid YAML."""
    try:
        return load_yaml(source.text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        source.error(mark.line + 1 if mark else None, f"not valid YAML: {problem}.")
        return None


def split_front_matter(source: Source) -> tuple[str, str, int] | None:
    """A Markdown file's (front matter, body, file line of the body's first line); ``None`` after an error."""
    lines = source.text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        source.error(1, "should start with front matter between two '---' lines.")
        return None
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1:]), index + 2
    source.error(1, "the front matter is never closed by a '---' line.")
    return None


def check_markdown_tree(source: Source, value: Any) -> None:
    """Check the shortcodes of every string inside ``value`` (a mapping, a list or a string)."""
    if isinstance(value, str):
        source.check_shortcodes(value)
    elif isinstance(value, dict):
        for item in value.values():
            check_markdown_tree(source, item)
    elif isinstance(value, list):
        for item in value:
            check_markdown_tree(source, item)


class Entry:
    """One mapping of a YAML list (or a chapter's front matter), its fields read with checks.

    ``where`` names the entry in messages ("term 'kv-cache'"); ``ok`` turns false
    at the first problem, and the reader then leaves the entry out.
    """

    def __init__(self, source: Source, data: Any, where: str, line: int | None = None):
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
                self.line = next((v.line for v in data.values() if isinstance(v, Marked)), None)

    def fail(self, message: str, line: int | None = None) -> None:
        """Record ``message`` about this entry (at ``line``, default the entry's) and mark the entry bad."""
        self.ok = False
        self.source.error(line or self.line, message)

    def _missing(self, name: str) -> None:
        self.fail(f"{self.where} is missing the field '{name}'.")

    def text(self, name: str, *, required: bool = True, markdown: bool = False) -> str:
        """Field ``name`` as stripped text ("" when absent); ``markdown`` checks its shortcodes."""
        value = self.data.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self._missing(name)
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.fail(f"{self.where}: '{name}' should be text.", self.source.line_of(value))
            return ""
        if markdown:
            self.source.check_shortcodes(value)
        return str(value).strip()

    def integer(self, name: str, *, required: bool = True, low: int = 0, high: int = 10_000) -> int | None:
        """Field ``name`` as a whole number in [``low``, ``high``]; ``None`` when absent or wrong."""
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
            self.fail(f"{self.where}: '{name}' should be a whole number from {low} to {high}, not {value!r}.",
                      self.source.line_of(value))
            return None
        return number

    def strings(self, name: str, *, markdown: bool = False) -> list[str]:
        """Field ``name`` as a list of stripped texts (one text counts as a list of one)."""
        value = self.data.get(name)
        if value in (None, ""):
            return []
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, (str, int)) for item in value):
            self.fail(f"{self.where}: '{name}' should be a list.")
            return []
        if markdown:
            for item in value:
                self.source.check_shortcodes(item)
        return [str(item).strip() for item in value if str(item).strip()]

    def numbers(self, name: str) -> list[int]:
        """Field ``name`` as a list of document numbers."""
        items = self.strings(name)
        numbers = []
        for item in items:
            try:
                numbers.append(int(item))
            except ValueError:
                self.fail(f"{self.where}: '{name}' should list document numbers, not {item!r}.")
        return numbers


def entries(source: Source, data: Any, label: str, key: str | None = None) -> list[tuple[int, Entry]]:
    """The mappings of a YAML list (``data`` itself, or ``data[key]``), each with its 1-based position.

    Each entry is named "``label`` 'slug'" in messages (or "``label`` N" without a slug).
    """
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
    found = []
    for position, item in enumerate(data, start=1):
        slug = item.get("slug") if isinstance(item, dict) else None
        where = f"{label} '{slug}'" if slug else f"{label} {position}"
        found.append((position, Entry(source, item, where)))
    return found


def unique(source: Source, seen: dict, value: Any, what: str, line: int | None) -> bool:
    """Whether ``value`` is new in ``seen`` (then remembered there); an error naming both places if not."""
    if value in seen:
        source.error(line, f"the {what} '{value}' is used twice (also {seen[value]}).")
        return False
    seen[value] = f"{source.path}:{line}" if line else str(source.path)
    return True

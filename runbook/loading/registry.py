"""Content readers and their registry: each app says which content files it reads and how it writes them.

An app lists its readers in a ``content_readers`` module (``READERS``, a
sequence of :class:`Reader`); :meth:`ReaderRegistry.installed` finds those
modules in the installed apps, the runbook's first (the base the others build
on), then the rest in ``INSTALLED_APPS`` order. Reader names are unique across
apps. Readers run in registration order, except that a reader runs after the
readers it ``needs`` (whose rows it reads from the :class:`ContentTree`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from django.apps import AppConfig, apps
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import module_has_submodule

from runbook.loading.files import Source, parse_yaml, read_source
from runbook.loading.report import LoadReport

# The module of an app that lists its readers, and the app whose readers come first.
MODULE = "content_readers"
BASE_APP = "runbook"


@dataclass
class ContentTree:
    """The folder being loaded and what the readers found in it (nothing written yet).

    ``rows`` maps a kind ("chapters", "questions") to the rows read for it, for
    the reader that writes them and for later readers that check against them;
    a kind whose file is absent is not in ``rows`` and is listed in ``skipped``.
    """

    root: Path
    rows: dict[str, list[dict]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def get(self, kind: str) -> list[dict] | None:
        """The rows read for ``kind``; ``None`` when its file is absent (or no reader reads it)."""
        return self.rows.get(kind)

    def source(self, path: Path) -> Source | None:
        """The file at ``path`` as a :class:`~runbook.loading.files.Source` reporting to this load."""
        return read_source(path, self.errors, self.warnings)

    def folder(self, name: str, kind: str) -> list[Path] | None:
        """The YAML files of folder ``name``, sorted; ``None`` (``kind`` skipped) when there is no such folder."""
        folder = self.root / name
        if not folder.is_dir():
            self.skipped.append(kind)
            return None
        return sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))

    def yaml_file(self, name: str, kinds: Iterable[str]) -> tuple[Source | None, Any]:
        """File ``name`` and its YAML; ``(None, None)`` when absent (``kinds`` skipped) or unreadable."""
        path = self.root / name
        if not path.is_file():
            self.skipped.extend(kinds)
            return None, None
        source = self.source(path)
        if source is None:
            return None, None
        return source, parse_yaml(source)

    def relative(self, path: Path) -> str:
        """``path`` relative to the root, as stored in a row's ``source_path``."""
        return str(path.relative_to(self.root))


def _read_nothing(tree: ContentTree) -> None:
    """The read step of a reader that has no files (its rows come from code)."""


@dataclass(frozen=True)
class Reader:
    """One kind of content: how it is read and checked, and how it is written.

    ``read(tree)`` reads its files under ``tree.root``, records problems with the
    tree's sources and puts its rows in ``tree.rows``; it writes nothing.
    ``write(tree, report)`` runs inside the load's one transaction, after every
    reader has read without an error, and counts its rows in ``report``.
    ``kinds`` are the kinds it reports, in report order; ``needs`` the names of
    the readers that run before it (whose rows it reads, or must not overwrite).
    """

    name: str
    write: Callable[[ContentTree, LoadReport], None]
    read: Callable[[ContentTree], None] = _read_nothing
    kinds: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


class ReaderRegistry:
    """The content readers of a load, by unique name, in registration order."""

    def __init__(self) -> None:
        self._readers: dict[str, tuple[Reader, str]] = {}

    def register(self, reader: Reader, origin: str = "") -> Reader:
        """Add ``reader`` (``origin``: where it came from, for messages).

        Raises ``ImproperlyConfigured`` when a reader of that name is registered already.
        """
        if reader.name in self._readers:
            raise ImproperlyConfigured(f"Two content readers are named '{reader.name}': "
                                       f"{self._readers[reader.name][1] or 'one'} and {origin or 'another'}.")
        self._readers[reader.name] = (reader, origin)
        return reader

    def names(self) -> list[str]:
        """The registered readers' names, in registration order."""
        return list(self._readers)

    def ordered(self) -> list[Reader]:
        """The readers in the order they run: registration order, each after the readers it needs.

        Raises ``ImproperlyConfigured`` for a need no reader meets or a circle of needs.
        """
        pending = [reader for reader, _ in self._readers.values()]
        for reader in pending:
            missing = [name for name in reader.needs if name not in self._readers]
            if missing:
                raise ImproperlyConfigured(f"The content reader '{reader.name}' needs "
                                           f"{', '.join(repr(name) for name in missing)}, which no app registers.")
        done: list[Reader] = []
        placed: set[str] = set()
        while pending:
            ready = next((reader for reader in pending if placed.issuperset(reader.needs)), None)
            if ready is None:
                raise ImproperlyConfigured("The content readers need one another in a circle: "
                                           f"{', '.join(reader.name for reader in pending)}.")
            pending.remove(ready)
            done.append(ready)
            placed.add(ready.name)
        return done

    @classmethod
    def installed(cls, app_configs: Sequence[AppConfig] | None = None) -> ReaderRegistry:
        """The readers listed by the ``content_readers`` modules of the installed apps (or of ``app_configs``)."""
        configs = list(app_configs if app_configs is not None else apps.get_app_configs())
        configs.sort(key=lambda config: config.name != BASE_APP)  # stable: the rest keep INSTALLED_APPS order
        registry = cls()
        for config in configs:
            if not module_has_submodule(config.module, MODULE):
                continue
            module_name = f"{config.name}.{MODULE}"
            for reader in import_module(module_name).READERS:
                registry.register(reader, origin=module_name)
        return registry

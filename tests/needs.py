"""What a test needs from the machine: a tool, a Python package, a free port, a server that answers.

Without it a test is skipped, with the way to get it; under ``CI=true`` it fails instead: CI (``.ci/run``)
provides every tool, package, port and server the suite uses, so a skip there would be a test that silently
stopped running. A test skipped for another reason (the other database's half, a PostgreSQL-only lock) is not
one of these and skips as usual.
"""

from __future__ import annotations

import os
import shutil
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as ``.ci/run`` exports)."""
    return os.environ.get("CI", "").lower() == "true"


def missing(reason: str) -> NoReturn:
    """Skip the calling test (or module) because the machine lacks what ``reason`` names; under CI, fail."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: .ci/run must provide it)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def tool(name: str) -> str:
    """The path of the executable ``name`` on PATH (:func:`missing` when there is none)."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not installed")
    return path


def file(path: Path | str, how: str) -> Path:
    """``path`` when it exists (:func:`missing`, saying ``how`` to get it, when it does not)."""
    path = Path(path)
    if not path.exists():
        missing(f"{path} is missing: {how}")
    return path


def module(name: str) -> ModuleType:
    """The Python module ``name`` imported (:func:`missing` when it is not installed), as ``pytest.importorskip``."""
    try:
        return import_module(name)
    except ImportError:
        missing(f"the Python package {name} is not installed (pip install -e '.[dev]')")

"""docs/architecture.md §3 draws the layers that pyproject.toml's import-linter contract checks, in the same order."""

from __future__ import annotations

import re
import tomllib

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def contract_layers() -> list[str]:
    """The layers of the ``layers`` contract, highest first."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "layers"]
    return contract["layers"]


def section_3() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    return text.split("## §3 ", 1)[1].split("\n## ", 1)[0]


def test_the_contracts_layers_are_the_ones_the_architecture_names():
    section = section_3()
    chain = re.search(r"\*Layers\*: `([^`]+)`", section.replace("\n  ", " "))
    assert chain, "docs/architecture.md §3 names no layer chain"
    assert [name.strip() for name in chain.group(1).split("→")] == contract_layers()


def test_the_picture_lists_the_apps_in_the_layers_order():
    apps = section_3().split("```", 2)[1].split("below every app", 1)[0]  # the engine and simulator come after
    drawn = [line.split("/", 1)[0] for line in apps.splitlines() if re.match(r"[a-z_]+/\s", line)]
    assert drawn == contract_layers()

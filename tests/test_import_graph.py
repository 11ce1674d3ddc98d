"""No import circle between the project's modules, and no module over the size limit.

The graph is read with :mod:`ast` from every ``import`` statement of the
project's packages, at module level and inside functions alike (an import
inside a function still makes a circle; it only hides it until the function
runs). A module importing ``package.module`` depends on that module; one
importing a name from a package (``from drills.models import Card``) depends on
the package's ``__init__`` or on the submodule of that name. The only imports
left out are those under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("accounts", "api", "calculators", "coaching", "config", "drills", "outbox", "runbook")


def project_modules(root: Path = ROOT, packages=PACKAGES) -> dict[str, Path]:
    """Dotted module name → file, for every Python file of ``packages`` under ``root`` (migrations left out)."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node of ``tree``, except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the project modules it imports."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for candidate in candidates:
                # The deepest project module the name resolves to (a name from a module is that module).
                while candidate and candidate not in modules:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    targets.add(candidate)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _without_parents(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop the edges from a package's modules to the package itself (``__init__`` runs first anyway)."""
    return {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}


def test_no_import_circle_between_the_projects_modules():
    assert circles(_without_parents(import_graph(project_modules()))) == []


def test_the_circle_check_finds_one_hidden_in_a_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "services.py").write_text("from pkg.models import Row\n\ndef assign():\n    from .tasks import notify\n")
    (package / "tasks.py").write_text("from . import services\n")
    (package / "models.py").write_text("from typing import TYPE_CHECKING\n"
                                       "if TYPE_CHECKING:\n    from pkg import tasks\n")
    graph = import_graph(project_modules(tmp_path, ("pkg",)))
    assert graph["pkg.services"] == {"pkg.models", "pkg.tasks"} and graph["pkg.models"] == set()
    assert circles(_without_parents(graph)) == [["pkg.services", "pkg.tasks"]]


# --- module size ---------------------------------------------------------------------------------------------

MAX_LINES = 400

# Modules still over the limit, each to be split (see docs/architecture.md §3); the list only shrinks.
OVER_THE_LIMIT: set[str] = set()


def modules_over(limit: int, modules: dict[str, Path]) -> dict[str, int]:
    """Module → line count, for the modules longer than ``limit`` lines."""
    return {name: n for name, path in modules.items() if (n := len(path.read_text().splitlines())) > limit}


def test_no_module_is_over_the_size_limit():
    """Every module of the project's packages (migrations left out) is at most MAX_LINES lines, bar the listed."""
    over = modules_over(MAX_LINES, project_modules())
    assert {name: n for name, n in over.items() if name not in OVER_THE_LIMIT} == {}


def test_the_size_check_counts_lines(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "at_limit.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "pkg" / "over.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert modules_over(MAX_LINES, project_modules(tmp_path, ("pkg",))) == {"pkg.over": MAX_LINES + 1}
